//! `refundsim fix`: the smallest policy change that makes a scenario safe, verified by
//! simulation (src/fix/).

use std::path::PathBuf;
use std::process::ExitCode;

use refundsim::fix::{self, FixOptions};

use super::{display, emit, exit, print_json};

#[derive(clap::Args)]
pub(crate) struct FixArgs {
    /// The scenario to make safe.
    #[arg(value_name = "SCENARIO")]
    scenario: PathBuf,
    /// Apply this policy first (a merge patch); repeatable, in order. The fix goes on top.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
    /// Override one field first, after the policies; repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// A cost weight, `FIELD=WEIGHT`: a metric (weight × its mean increase, e.g.
    /// `latency_tool_call_p99_ms=0.001`) or a field (weight × the change of a number, ms for a
    /// duration, e.g. `refunds_service.pool_size=0.5`); each changed field costs 1 besides.
    /// Repeatable.
    #[arg(long = "cost", value_name = "FIELD=WEIGHT")]
    costs: Vec<String>,
    /// Seeds `A..B` every candidate must hold on [default: 1..N, N the scenario's
    /// `gate.seeds`, as `check`].
    #[arg(long, value_name = "A..B", allow_hyphen_values = true)]
    seeds: Option<String>,
    /// Cases of the exploration that confirms an answer [default: the scenario's
    /// `gate.explore_cases`, as `check`]; the search itself explores at most 256.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100_000))]
    explore_cases: Option<u32>,
    /// Alternatives to list after the cheapest answer (answers at most one field dearer).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u64).range(0..=20))]
    alternatives: u64,
    /// Most candidates to verify by simulation before giving up.
    #[arg(long, value_name = "N", default_value_t = 80, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    max_candidates: u64,
    /// Write the cheapest answer here as a merge patch (a policy file for `--policy`), whole or
    /// not at all; nothing is written when no answer is found.
    #[arg(long, value_name = "PATCH.json")]
    out: PathBuf,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: FixArgs, budget: refundsim::scenario::RunBudget) -> anyhow::Result<ExitCode> {
    let inputs: Vec<&PathBuf> = std::iter::once(&a.scenario)
        .chain(a.policies.iter())
        .collect();
    refundsim::output::refuse_overwriting_inputs("--out", &a.out, &inputs)
        .map_err(anyhow::Error::msg)?;
    refundsim::output::check_writable(&a.out)
        .map_err(|e| anyhow::anyhow!("--out {}: {e}", display(&a.out)))?;
    let opts = FixOptions {
        seeds: a
            .seeds
            .map(|s| refundsim::gate::SeedRange::parse("--seeds", &s))
            .transpose()?,
        explore_cases: a.explore_cases,
        costs: a.costs,
        alternatives: a.alternatives as usize,
        max_candidates: a.max_candidates as usize,
        policies: a.policies,
        sets: a.sets,
        budget,
        ..FixOptions::new(a.scenario)
    };
    let report = fix::fix(&opts)?;
    if let Some(answer) = &report.fix {
        let text = format!("{}\n", serde_json::to_string_pretty(&answer.patch)?);
        refundsim::output::write_atomically(&a.out, &text)
            .map_err(|e| anyhow::anyhow!("--out {}: {e}", display(&a.out)))?;
    }
    if a.json {
        print_json(&report)?;
    } else {
        let mut text = fix::fix_text(&report);
        if report.fix.is_some() {
            let mut check = format!("refundsim check {}", shell(&report.scenario_path));
            for p in &report.policies {
                check.push_str(&format!(" --policy {}", shell(p)));
            }
            check.push_str(&format!(" --policy {}", shell(&display(&a.out))));
            if report.gate_budget {
                text.push_str(&format!(
                    "\nwritten: {} (verify it: {check})\n",
                    display(&a.out)
                ));
            } else {
                text.push_str(&format!(
                    "\nwritten: {}\nwarning: verified on {} seed(s) and {} explore case(s) only, not the gate's \
                     defaults: `{check}` may still break it; run fix without --seeds and \
                     --explore-cases for an answer the gate accepts\n",
                    display(&a.out),
                    report.seeds.len(),
                    report.explore_cases
                ));
            }
        }
        emit(text)?;
    }
    Ok(exit(report.ok()))
}

fn shell(s: &str) -> String {
    refundsim::run::quote(s)
}
