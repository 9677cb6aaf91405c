//! Human-readable output: the run summary and one ticket's story.

mod story;
mod summary;

pub use story::{incident_shaped, story};
pub use summary::{summary, LISTED_DUPLICATES};
