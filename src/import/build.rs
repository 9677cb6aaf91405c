//! Recording + base scenario → replay scenario.

use super::Recording;
use crate::scenario::Scenario;

/// A distribution fitted to recorded durations, and how it compares with them.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// What was fitted (e.g. `provider latency`).
    pub what: String,
    /// How many recorded samples.
    pub samples: usize,
    /// (percentile, recorded ms, fitted ms) rows.
    pub rows: Vec<(f64, f64, f64)>,
}

/// What `import` tells the user besides the scenario.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportReport {
    /// Fits of the distributions used for requests that were never recorded.
    pub fits: Vec<Fit>,
}

/// Builds the replay scenario (not yet written).
pub fn build(_rec: &Recording, base: &Scenario) -> (Scenario, ImportReport) {
    (base.clone(), ImportReport::default())
}
