//! Running a gate's cases on their seeds: in parallel, collected in input order.

use rayon::prelude::*;

use super::progress::Progress;
use crate::run::RunReport;
use crate::scenario;

/// Runs `run_one(case, seed)` for every seed of every case (`seeds[case]`, in order), in
/// parallel: the reports in case order, then seed order, whatever the number of threads (each
/// run's order is its index, for the run budget). Tells `progress` the number of runs, then
/// each finished run. When the run budget stopped a run, exits the process as
/// [`scenario::budget::exit_if_stopped`] does.
pub(super) fn run_cases(
    seeds: &[&[u64]],
    progress: &dyn Progress,
    run_one: impl Fn(usize, u64) -> RunReport + Sync,
) -> Vec<RunReport> {
    let jobs: Vec<(usize, u64)> = seeds
        .iter()
        .enumerate()
        .flat_map(|(i, s)| s.iter().map(move |&seed| (i, seed)))
        .collect();
    progress.start(jobs.len() as u64);
    let reports: Vec<RunReport> = jobs
        .par_iter()
        .enumerate()
        .map(|(k, &(i, seed))| {
            scenario::budget::set_run_order(k as u64);
            let report = run_one(i, seed);
            progress.run_done();
            report
        })
        .collect();
    scenario::budget::exit_if_stopped();
    reports
}
