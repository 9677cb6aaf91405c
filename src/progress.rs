//! Progress of a command's runs (`check`, `diff`, `sweep`), for a progress bar: told counts
//! only, never a result.

/// Told how many runs a [`crate::gate::check`], [`crate::gate::diff`] or
/// [`crate::sweep::sweep`] makes, then each run as it
/// finishes (from the worker threads, in any order). It sees no result, so showing progress
/// cannot change one.
pub trait Progress: Sync {
    /// The number of runs, once every input is loaded and before the first run starts.
    fn start(&self, runs: u64);
    /// One run finished.
    fn run_done(&self);
}

/// No progress: what [`crate::gate::check`] and [`crate::gate::diff`] use.
impl Progress for () {
    fn start(&self, _runs: u64) {}
    fn run_done(&self) {}
}
