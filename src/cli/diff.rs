//! `refundsim diff`: a candidate policy against a baseline on the same seeds.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::gate;

use super::progress::RunsBar;
use super::{emit, exit, print_json};

#[derive(clap::Args)]
pub(crate) struct DiffArgs {
    /// Scenario files, or directories of them.
    #[arg(required = true, value_name = "SCENARIO")]
    scenarios: Vec<PathBuf>,
    /// Baseline policy file.
    #[arg(long, value_name = "FILE")]
    baseline: PathBuf,
    /// Candidate policy file.
    #[arg(long, value_name = "FILE")]
    candidate: PathBuf,
    /// Seeds `A..B` (inclusive), the same for both policies [default: 1..N, N the scenario's
    /// `gate.seeds`, 30 unless set].
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    seeds: Option<String>,
    /// Run the candidate on other seeds: an unpaired comparison (to measure what pairing buys).
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    candidate_seeds: Option<String>,
    /// Largest allowed mean difference (candidate − baseline) of a metric; repeatable
    /// [default: duplicate_refund_tickets=0, lost_refunds=0, false_failures=0].
    #[arg(long = "tolerance", value_name = "METRIC=VALUE")]
    tolerances: Vec<String>,
    /// Override one field on both sides, after their policy; repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Report an unsafe candidate (a safety invariant broken on a seed or by the exploration)
    /// without failing: the comparison alone decides. By default an unsafe candidate exits 1.
    #[arg(long)]
    allow_unsafe: bool,
    /// Fail on an unsafe candidate even when its own `expect` states what it leaves open (by
    /// default only a candidate that claims safety fails for being unsafe).
    #[arg(long, conflicts_with = "allow_unsafe")]
    require_safe: bool,
    /// Cases of the bounded `explore` of the candidate; 0 turns it off [default: the
    /// scenario's `gate.explore_cases`, 256 unless set].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    explore_cases: Option<u32>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: DiffArgs, budget: refundsim::scenario::RunBudget) -> anyhow::Result<ExitCode> {
    let opts = gate::DiffOptions {
        scenarios: a.scenarios,
        baseline: a.baseline,
        candidate: a.candidate,
        seeds: a
            .seeds
            .map(|s| gate::SeedRange::parse("--seeds", &s))
            .transpose()?,
        candidate_seeds: a
            .candidate_seeds
            .map(|s| gate::SeedRange::parse("--candidate-seeds", &s))
            .transpose()?,
        tolerances: a.tolerances,
        sets: a.sets,
        allow_unsafe: a.allow_unsafe,
        require_safe: a.require_safe,
        explore_cases: a.explore_cases,
        budget,
    };
    let bar = RunsBar::new("diff");
    let report = gate::diff_with_progress(&opts, &bar);
    bar.0.finish_and_clear();
    let report = report?;
    if a.json {
        print_json(&report)?;
    } else {
        emit(gate::diff_text(&report))?;
    }
    Ok(exit(report.passed))
}
