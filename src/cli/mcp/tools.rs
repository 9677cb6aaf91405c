//! What each tool computes: the same library call the CLI command makes, on the call's
//! [`Inputs`], answered as the command's `--json` (the structured content) and a short text.
//! These run on a blocking thread ([`super::server`]); each returns the CLI's one-line message
//! on bad input.

use serde_json::Value;

use refundsim::scenario::{self, RunBudget};
use refundsim::{gate, lint, report};

use super::args::{self, CheckArgs, FixArgs, LintArgs, SimulateArgs};
use super::inputs::Inputs;

/// Most seeds one `check_policy` call runs.
pub(crate) const MAX_SEEDS: u64 = 200;

/// Most cases of one `check_policy` call's bounded exploration.
pub(crate) const MAX_EXPLORE_CASES: u32 = 4096;

/// Most candidates one `suggest_fix` call verifies (`refundsim fix --max-candidates`).
pub(crate) const MAX_CANDIDATES: u32 = 200;

/// Most alternatives one `suggest_fix` call lists (`refundsim fix --alternatives`).
pub(crate) const MAX_ALTERNATIVES: u32 = 20;

/// A tool's answer: the command's `--json` object and a short text rendering of it.
pub(crate) struct Answer {
    /// What the CLI's `--json` prints for the same inputs.
    pub(crate) structured: Value,
    /// A few lines for a reader.
    pub(crate) text: String,
}

/// Runs tool `name` on `arguments`.
///
/// # Errors
/// The one-line message the CLI prints for the same input (after `error: `), or one naming
/// the argument at fault.
pub(crate) fn call(
    name: &str,
    arguments: Option<serde_json::Map<String, Value>>,
    budget: RunBudget,
) -> Result<Answer, String> {
    match name {
        "simulate" => simulate(args::parse(arguments)?, budget),
        "check_policy" => check_policy(args::parse(arguments)?, budget),
        "lint_tools" => lint_tools(args::parse(arguments)?),
        "suggest_fix" => suggest_fix(args::parse(arguments)?, budget),
        other => Err(format!("unknown tool {other:?}")),
    }
}

/// `refundsim run SCENARIO --ticket T --json`, T the given ticket or the first duplicated one.
fn simulate(a: SimulateArgs, budget: RunBudget) -> Result<Answer, String> {
    let inputs = Inputs::new(a.scenario.as_ref(), &a.policies, &a.set, Vec::new())?;
    let mut opts = report::cli::CliOptions {
        scenario: inputs.scenario.clone(),
        seed: a.seed,
        policies: inputs.policies.clone(),
        sets: inputs.sets.clone(),
        json: true,
        ticket: a.ticket.clone(),
        budget,
        ..Default::default()
    };
    let run = |opts: &report::cli::CliOptions| -> Result<Value, String> {
        let out = report::cli::cli_run(opts).map_err(|e| inputs.error(e))?;
        serde_json::from_str(&out.stdout).map_err(|e| format!("run --json: {e}"))
    };
    let mut v = run(&opts)?;
    if opts.ticket.is_none() {
        let first = v["duplicated_ticket_ids"]
            .as_array()
            .and_then(|ids| ids.first())
            .and_then(Value::as_u64);
        if let Some(t) = first {
            // The same seed again, keeping that ticket's events for its story: a run is a
            // pure function of (scenario, seed), so the numbers are those of the first run.
            opts.ticket = Some(t.to_string());
            v = run(&opts)?;
        }
    }
    let v = inputs.relabel_value(v);
    let text = simulate_text(&v, opts.ticket.as_deref());
    Ok(Answer {
        structured: v,
        text,
    })
}

/// The run in a few lines: counts, the invariants that broke, the story, the replay command.
fn simulate_text(v: &Value, ticket: Option<&str>) -> String {
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    let mut text = format!(
        "{} (seed {}): {} tickets, {} duplicated ({} extra, ${:.2} over), {} false failures; \
         expectations {}\n",
        v["scenario"].as_str().unwrap_or("scenario"),
        n("seed"),
        n("tickets"),
        n("duplicate_refund_tickets"),
        n("extra_refunds"),
        n("over_refund_cents") as f64 / 100.0,
        n("false_failures"),
        if v["expectations_met"] == true {
            "met"
        } else {
            "not met"
        },
    );
    for inv in v["invariants"].as_array().into_iter().flatten() {
        if inv["holds"] == false {
            text += &format!(
                "invariant {} broken: {} violations, first ticket {}\n",
                inv["name"].as_str().unwrap_or("?"),
                inv["violations"],
                inv["first_ticket"]
            );
        }
    }
    for cause in v["causes"].as_array().into_iter().flatten() {
        if let Some(t) = cause["text"].as_str() {
            text += &format!("cause: {t}\n");
        }
    }
    if let (Some(t), Some(lines)) = (ticket, v["story"].as_array()) {
        text += &format!("ticket {t}:\n");
        for l in lines.iter().filter_map(Value::as_str) {
            text += &format!("  {l}\n");
        }
    }
    if let Some(r) = v["replay"].as_str() {
        text += &format!("replay: {r}\n");
    }
    text
}

/// `refundsim check SCENARIO --policy … --json`, within this server's seed and exploration
/// bounds.
fn check_policy(a: CheckArgs, budget: RunBudget) -> Result<Answer, String> {
    let inputs = Inputs::new(a.scenario.as_ref(), &a.policies, &a.set, Vec::new())?;
    let seeds = gate_bounds(&inputs, a.seeds.as_deref(), a.explore_cases)?;
    let opts = gate::CheckOptions {
        scenarios: vec![inputs.scenario.clone()],
        policies: inputs.policies.clone(),
        sets: inputs.sets.clone(),
        seeds,
        explore_cases: a.explore_cases,
        budget,
    };
    let report = gate::check(&opts).map_err(|e| inputs.error(e))?;
    let v = serde_json::to_value(&report).map_err(|e| format!("check --json: {e}"))?;
    Ok(Answer {
        structured: inputs.relabel_value(v),
        text: inputs.relabel(&gate::check_text(&report)),
    })
}

/// The seeds and exploration of a gate-like call (`check_policy`, `suggest_fix`), within this
/// server's bounds: `seeds` parsed as `--seeds`; without `seeds` or `explore_cases`, the
/// scenario's `gate` (which the defaults come from) is read and refused when over the bounds.
///
/// # Errors
/// The CLI's message for a malformed range, or one naming the bound and how to stay within it.
fn gate_bounds(
    inputs: &Inputs,
    seeds: Option<&str>,
    explore_cases: Option<u32>,
) -> Result<Option<gate::SeedRange>, String> {
    let seeds = seeds
        .map(|s| gate::SeedRange::parse("--seeds", s))
        .transpose()
        .map_err(|e| e.to_string())?;
    if let Some(r) = seeds {
        if r.last - r.first >= MAX_SEEDS {
            return Err(format!(
                "--seeds {r}: expected at most {MAX_SEEDS} seeds per call of this server \
                 (run the CLI for more)"
            ));
        }
    }
    if let Some(n) = explore_cases.filter(|&n| n > MAX_EXPLORE_CASES) {
        return Err(format!(
            "--explore-cases {n}: expected at most {MAX_EXPLORE_CASES} per call of this server \
             (run the CLI for more)"
        ));
    }
    if seeds.is_some() && explore_cases.is_some() {
        return Ok(seeds);
    }
    let sc = scenario::load_within(&inputs.scenario, &[], &inputs.sets, &RunBudget::UNLIMITED)
        .map_err(|e| inputs.error(e))?;
    let file = inputs.relabel(&inputs.scenario.display().to_string());
    if seeds.is_none() && sc.gate.seeds > MAX_SEEDS {
        return Err(format!(
            "{file}: gate.seeds: {} seeds, and this server runs at most {MAX_SEEDS} per call; \
             expected `seeds`, e.g. \"1..{MAX_SEEDS}\"",
            sc.gate.seeds
        ));
    }
    if explore_cases.is_none() && sc.gate.explore_cases > MAX_EXPLORE_CASES {
        return Err(format!(
            "{file}: gate.explore_cases: {} cases, and this server explores at most \
             {MAX_EXPLORE_CASES} per call; expected `explore_cases`, e.g. 1024",
            sc.gate.explore_cases
        ));
    }
    Ok(seeds)
}

/// `refundsim lint SCENARIO --policy … --set … --json`, SCENARIO the one `refundsim new`
/// writes for `tools` (or the given scenario, or the incident), the plain fields set first.
fn lint_tools(a: LintArgs) -> Result<Answer, String> {
    let inputs = Inputs::new(a.scenario.as_ref(), &a.policies, &a.set, a.plain_sets())?;
    let file = match (&a.tools, &a.scenario) {
        (Some(_), Some(_)) => {
            return Err(
                "arguments: expected `tools` or `scenario`, not both (the tools are \
                        linted in the scenario `refundsim new` writes for them)"
                    .into(),
            )
        }
        (None, _) if a.tool.is_some() => {
            return Err(
                "arguments.tool: expected `tools` beside it (the tool definitions \
                        to pick it from)"
                    .into(),
            )
        }
        (Some(tools), None) => {
            let mut text = serde_json::to_string_pretty(tools).expect("JSON serializes");
            text.push('\n');
            let path = inputs.write("tools.json", &text)?;
            let mut opts = refundsim::new::NewOptions::new();
            opts.tool = a.tool.clone();
            let starter =
                refundsim::new::new_scenario(&path, &opts).map_err(|e| inputs.error(e))?;
            inputs.write("scenario.json", &starter.text)?
        }
        (None, _) => inputs.scenario.clone(),
    };
    let report = lint::lint_files_with(&[file], &inputs.policies, &inputs.sets)
        .map_err(|e| inputs.error(e))?;
    let v = serde_json::to_value(&report).map_err(|e| format!("lint --json: {e}"))?;
    Ok(Answer {
        structured: inputs.relabel_value(v),
        text: inputs.relabel(&lint::lint_text(&report)),
    })
}

/// `refundsim fix SCENARIO --json`: the cheapest verified policy change, within this server's
/// seed, exploration and candidate bounds.
fn suggest_fix(a: FixArgs, budget: RunBudget) -> Result<Answer, String> {
    let inputs = Inputs::new(a.scenario.as_ref(), &a.policies, &a.set, Vec::new())?;
    let alternatives = a.alternatives.unwrap_or(3);
    if alternatives > MAX_ALTERNATIVES {
        return Err(format!(
            "arguments.alternatives: expected at most {MAX_ALTERNATIVES}, got {alternatives}"
        ));
    }
    let defaults = refundsim::fix::FixOptions::new(std::path::PathBuf::new());
    let max_candidates = a.max_candidates.unwrap_or(defaults.max_candidates as u32);
    if !(1..=MAX_CANDIDATES).contains(&max_candidates) {
        return Err(format!(
            "arguments.max_candidates: expected from 1 to {MAX_CANDIDATES} per call of this \
             server, got {max_candidates}"
        ));
    }
    let seeds = gate_bounds(&inputs, a.seeds.as_deref(), a.explore_cases)?;
    let opts = refundsim::fix::FixOptions {
        policies: inputs.policies.clone(),
        sets: inputs.sets.clone(),
        seeds,
        explore_cases: a.explore_cases,
        costs: a.cost.iter().map(|(k, w)| format!("{k}={w}")).collect(),
        alternatives: alternatives as usize,
        max_candidates: max_candidates as usize,
        budget,
        ..refundsim::fix::FixOptions::new(inputs.scenario.clone())
    };
    let report = refundsim::fix::fix(&opts).map_err(|e| inputs.error(e))?;
    let v = serde_json::to_value(&report).map_err(|e| format!("fix --json: {e}"))?;
    Ok(Answer {
        structured: inputs.relabel_value(v),
        text: inputs.relabel(&refundsim::fix::fix_text(&report)),
    })
}
