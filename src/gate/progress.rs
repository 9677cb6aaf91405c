//! Progress of a gate's runs, for a progress bar: told counts only, never a result.

/// Told how many runs a [`super::check`] or [`super::diff`] makes, then each run as it
/// finishes (from the worker threads, in any order). It sees no result, so showing progress
/// cannot change one.
pub trait Progress: Sync {
    /// The number of runs, once every input is loaded and before the first run starts.
    fn start(&self, runs: u64);
    /// One run finished.
    fn run_done(&self);
}

/// No progress: what [`super::check`] and [`super::diff`] use.
impl Progress for () {
    fn start(&self, _runs: u64) {}
    fn run_done(&self) {}
}
