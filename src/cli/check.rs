//! `refundsim check`: the CI gate over scenarios × policies × seeds.

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::gate;

use super::progress::RunsBar;
use super::{display, emit, exit, print_json};

#[derive(clap::Args)]
pub(crate) struct CheckArgs {
    /// Scenario files, or directories of them (`*.json` except `*.tool.json`).
    #[arg(required = true, value_name = "SCENARIO|DIR")]
    scenarios: Vec<PathBuf>,
    /// Also run every scenario under this policy (separately); repeatable.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field in every case, after its policy, e.g. `--set executor.timeout=15s`;
    /// repeatable. A change to the scenario makes the safety invariants its gate.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// Seeds `A..B` (inclusive) [default: 1..N, N the scenario's `gate.seeds`, 30 unless set].
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    seeds: Option<String>,
    /// Cases of the bounded `explore` of each case that claims safety (or asserts a hole with
    /// `exploration.finds`); 0 turns it off [default: the scenario's `gate.explore_cases`, 256
    /// unless set].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    explore_cases: Option<u32>,
    /// Write a JUnit XML report to FILE (whole or not at all).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(
    a: CheckArgs,
    budget: refundsim::scenario::RunBudget,
) -> anyhow::Result<ExitCode> {
    if let Some(path) = &a.junit {
        let inputs: Vec<&PathBuf> = a.scenarios.iter().chain(a.policies.iter()).collect();
        refundsim::output::refuse_overwriting_inputs("--junit", path, &inputs)
            .map_err(anyhow::Error::msg)?;
        refundsim::output::check_writable(path)
            .map_err(|e| anyhow::anyhow!("--junit {}: {e}", display(path)))?;
    }
    let opts = gate::CheckOptions {
        scenarios: a.scenarios,
        policies: a.policies,
        sets: a.sets,
        seeds: a
            .seeds
            .map(|s| gate::SeedRange::parse("--seeds", &s))
            .transpose()?,
        explore_cases: a.explore_cases,
        budget,
    };
    let bar = RunsBar::new("check");
    let report = gate::check_with_progress(&opts, &bar);
    bar.0.finish_and_clear();
    let report = report?;
    // stdout first: a run that cannot print its report (exit 2) leaves no JUnit file that a
    // CI step with `if: always()` would publish as a verdict.
    if a.json {
        print_json(&report)?;
    } else {
        emit(gate::check_text(&report))?;
    }
    if let Some(path) = &a.junit {
        gate::write_atomically(path, &gate::junit_xml(&report))
            .map_err(|e| anyhow::anyhow!("--junit {}: {e}", display(path)))?;
    }
    Ok(exit(report.passed))
}
