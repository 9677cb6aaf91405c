//! Human-readable output: the run summary, one ticket's story, the pool's queueing oracle
//! ([`queueing`]), a run as a Perfetto / `chrome://tracing` timeline ([`perfetto`]), as
//! OpenTelemetry traces in OTLP/JSON ([`otlp`]) and as Stripe's list of refunds
//! ([`stripe_list`]), `refundsim run` as a library call ([`cli_run`]), and the self-contained
//! HTML report of `refundsim report` ([`html`]).

pub mod cli;
pub mod html;
pub mod otlp;
pub(crate) mod perfetto;
mod sinks;
pub(crate) mod stripe_list;
mod summary;

/// The pool's queueing oracle, kept at its old path: it lives in [`crate::analysis::queueing`],
/// below `report/` and `lint/`, which both read it.
pub use crate::analysis::queueing;
pub use crate::analysis::story::{incident_shaped, story};
pub use summary::summary;
pub(crate) use summary::summary_with_oracle;

pub use cli::cli_run;
pub(crate) use sinks::Sinks;
