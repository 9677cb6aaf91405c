//! Human-readable output: the run summary and one ticket's story, and `refundsim run` as a
//! library call ([`cli_run`]).

pub mod cli;
mod story;
mod summary;

pub use story::{incident_shaped, story, IncidentShapes};
pub use summary::{summary, LISTED_DUPLICATES};

pub use cli::cli_run;
