//! The CI regression gate (`refundsim check`, `refundsim diff`): scenarios × policies × seeds
//! checked against their `expect` bounds, paired policy comparisons, and JUnit XML reports.
//!
//! **What fails the gate.** A case's `expect` bounds are its contract: `check` fails when
//! any bound fails (per seed `min` / `max`, or over the seeds `mean_min`, `mean_max`, `p90_max`,
//! with `violating_seeds_max` tolerating a fraction of failing seeds), and always when the
//! `conservation` invariant breaks (a model bug). Which `expect`: the scenario's own for the
//! scenario as written (a scenario that *demonstrates* duplicates says so in it); once a policy
//! or `--set` changes what is simulated, the safety invariants, each replaced by the bound the
//! policy's `expect` names (see [`crate::scenario::load`]). The invariants of DESIGN §3 are
//! also counted and shown.

mod bounds;
mod check;
mod diff;
mod error;
mod explore_check;
mod inputs;
mod junit;
mod runs;
mod table;
mod text;
mod units;

// Shared with `sweep` and `explore`, which the gate does not own: re-exported at their old
// paths.
pub use crate::analysis::stats::{mean, paired};
pub use crate::output::write_atomically;
pub use crate::progress::Progress;
pub use crate::seeds::SeedRange;
pub(crate) use bounds::fmt_num;
pub(crate) use bounds::{check_bounds, invariant_of};
pub use bounds::{BoundCheck, Rule};
pub use check::{
    check, check_with_progress, CaseReport, CheckOptions, CheckReport, InvariantCount, Violation,
};
pub use diff::{
    diff, diff_with_progress, DiffOptions, DiffReport, MetricDiff, SafetyCount, ScenarioDiff,
};
pub use error::GateError;
pub(crate) use explore_check::explore_check;
pub use explore_check::{explores, ExploreCheck, Found};
pub use inputs::scenario_files;
pub use junit::junit_xml;
pub(crate) use runs::run_cases;
pub use text::{check_text, diff_text};
pub use units::unit_of;
