//! refundsim: a deterministic, virtual-time simulator of one failure class — a timeout plus a
//! retry on a non-idempotent, money-moving tool call.
//!
//! It models the whole path of an LLM support agent's `issue_refund` call (agent, tool executor,
//! refunds service and its connection pool, Stripe SDK, a fake Stripe with Stripe's idempotency
//! rules, humans, reconciliation) as `async` code over a virtual clock, replays scenario files,
//! and checks invariants over the history of each run. A run is a pure function of
//! (scenario, seed).
//!
//! The incident scenario under its default seed reproduces the write-up: 41 ± 8 tickets refunded
//! twice, all in the 53-minute burst; the fixed policy removes every duplicate on the same seed:
//!
//! ```
//! use std::path::{Path, PathBuf};
//! use refundsim::{run::run, scenario::load};
//!
//! let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
//! let incident = load(&dir.join("scenarios/carrier-outage.json"), &[], &[]).unwrap();
//! let out = run(&incident, incident.seed, &Default::default());
//! assert_eq!(out.report.seed, 157);
//! assert_eq!(out.report.metrics.duplicate_refund_tickets, 43);
//! assert_eq!(out.report.metrics.over_refund_cents, 591_711); // $5,917.11
//!
//! let policy: PathBuf = dir.join("policies/fixed.json");
//! let fixed = load(&dir.join("scenarios/carrier-outage.json"), &[policy], &[]).unwrap();
//! let out = run(&fixed, fixed.seed, &Default::default());
//! assert_eq!(out.report.metrics.duplicate_refund_tickets, 0);
//! assert_eq!(out.report.metrics.false_failures, 0);
//! ```
//!
//! Modules follow the data flow: [`scenario`] (load, validate, patch) → [`model`] (components,
//! wired by [`model::simulate`]) on the [`sim`] engine → [`history`] (events, JSONL trace) →
//! [`invariants`] (invariants and metrics) → [`run`] and [`report`] (what the CLI prints).
#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod analysis;
pub mod cause;
pub mod erlang;
pub mod error;
pub mod explore;
pub mod fix;
pub mod gate;
pub mod history;
mod id_map;
pub mod import;
pub mod input;
pub mod invariants;
pub mod lint;
pub mod model;
pub mod new;
pub mod output;
pub mod progress;
pub mod replay;
pub mod report;
pub mod run;
pub mod scenario;
pub mod seeds;
pub mod sim;
pub mod sweep;
mod text;

/// The old name of [`invariants`], kept so `refundsim::check::…` paths still compile.
#[deprecated(since = "0.1.0", note = "renamed to `refundsim::invariants`")]
#[doc(hidden)]
pub mod check {
    pub use crate::invariants::*;
}

/// The repository's root (where `scenarios/`, `policies/` and `docs/` are), for unit tests that
/// read its files. The unit tests build in `crates/unit-tests`, two directories below it (see
/// its Cargo.toml). `cargo test --lib` overrides the root library's `test = false` and builds
/// them in the root package too (at opt-level 1, and they run twice): use `-p
/// refundsim-unit-tests`.
#[cfg(test)]
pub(crate) fn repo_root() -> &'static std::path::Path {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if here.join("scenarios").is_dir() {
        here
    } else {
        here.ancestors().nth(2).unwrap_or(here)
    }
}

#[cfg(test)]
mod check_alias {
    #[test]
    #[allow(deprecated)]
    fn the_old_path_names_the_same_items() {
        let m: crate::check::Metrics = crate::invariants::Metrics::default();
        assert_eq!(crate::check::INVARIANTS, crate::invariants::INVARIANTS);
        assert_eq!(m.tickets, 0);
    }
}
