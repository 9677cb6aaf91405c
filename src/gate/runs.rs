//! Running a gate's cases on their seeds: in parallel, collected in input order.

use rayon::prelude::*;

use crate::progress::Progress;
use crate::run::{run_watched, Invocation, RunReport};
use crate::scenario::{OverBudget, RunBudget, RunWatch, Scenario};

/// Runs every seed of every case (`seeds[case]`, in order; case `i` is `scenarios[i]`, replayed
/// by `how[i]`) in parallel under `budget`: the reports in case order, then seed order,
/// whatever the number of threads. Tells `progress` the number of runs, then each finished
/// run.
///
/// # Errors
/// [`OverBudget`]: the first run in this order that went past the budget while running (each
/// run's order is its index), the same at any thread count.
pub(crate) fn run_cases(
    cases: &[(&Scenario, &Invocation, &[u64])],
    budget: RunBudget,
    progress: &dyn Progress,
) -> Result<Vec<RunReport>, OverBudget> {
    let jobs: Vec<(usize, u64)> = cases
        .iter()
        .enumerate()
        .flat_map(|(i, (_, _, s))| s.iter().map(move |&seed| (i, seed)))
        .collect();
    progress.start(jobs.len() as u64);
    let watch = RunWatch::new(budget);
    let reports: Vec<Result<RunReport, OverBudget>> = jobs
        .par_iter()
        .enumerate()
        .map(|(k, &(i, seed))| {
            let (scenario, how, _) = cases[i];
            let report = run_watched(scenario, seed, how, &watch, k as u64).map(|o| o.report);
            progress.run_done();
            report
        })
        .collect();
    watch.verdict()?;
    reports.into_iter().collect()
}
