//! `refundsim explore`: property search over interleavings, shrunk to a minimal scenario.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::explore;

use super::progress::progress_bar;
use super::{emit, exit};

#[derive(clap::Args)]
pub(crate) struct ExploreArgs {
    /// Scenario file (JSON): its policy is kept; tickets, latencies, faults and ties are perturbed.
    scenario: PathBuf,
    /// RFC 7396 JSON merge patch applied over the scenario; repeatable, applied in order.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field, e.g. `--set humans.check_probability=1`; repeatable, after policies.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Cases to try (1 to 1,000,000).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    cases: u32,
    /// Search seed (same seed ⇒ same cases and the same minimal scenario).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Events within this of each other may run in either order, e.g. `1ms`.
    #[arg(long, value_name = "DURATION", value_parser = parse_epsilon, default_value = "0s")]
    epsilon: std::time::Duration,
    /// Enumerate every schedule of a tiny scenario (≤ 3 recorded tickets) depth-first instead.
    #[arg(long)]
    exhaustive: bool,
    /// With --exhaustive: stop after this many schedules.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    max_schedules: u64,
    /// Where to write the minimal scenario [default: SCENARIO's name + `-minimal.json` here].
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub(crate) fn run(
    a: ExploreArgs,
    budget: refundsim::scenario::RunBudget,
) -> anyhow::Result<ExitCode> {
    let opts = explore::CliOptions {
        scenario: a.scenario,
        policies: a.policies,
        sets: a.sets,
        cases: a.cases,
        seed: a.seed,
        epsilon: a.epsilon,
        exhaustive: a.exhaustive,
        max_schedules: a.max_schedules,
        out: a.out,
        budget,
    };
    let bar = std::cell::OnceCell::new();
    let outcome = explore::cli_run(&opts, || bar.get_or_init(|| progress_bar(a.cases)).inc(1));
    if let Some(bar) = bar.get() {
        bar.finish_and_clear();
    }
    let (outcome, effect) = outcome?;
    // In the words of the scenario's tool.
    emit(effect.say(&outcome.to_string()))?;
    if matches!(outcome, explore::CliOutcome::Aborted { .. }) {
        // Inconclusive: neither "no violation" (0) nor a violation (1).
        return Ok(ExitCode::from(2));
    }
    Ok(exit(!outcome.found_violation()))
}

/// `--epsilon`: a humantime duration of at most 60 s (a near-tie, not a reordering of minutes).
fn parse_epsilon(s: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(s)
        .map_err(|e| format!("{e}; expected a duration like \"1ms\""))?;
    if d > std::time::Duration::from_secs(60) {
        return Err(format!("expected at most 60s, got {s}"));
    }
    Ok(d)
}
