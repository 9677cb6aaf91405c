//! `refundsim lint`: static rules over scenarios, policies and tool definitions, without
//! simulating. Each finding has a rule id, a severity, the JSON path at fault and a fix hint;
//! any `error` finding makes the command exit 1.
//!
//! Rules (ids): `retry-non-idempotent`, `tool-idempotent-claim-unbacked`,
//! `idempotency-key-missing`, `idempotency-key-per-attempt`, `timeout-reports-error`,
//! `timeout-below-burst-p99` (see [`burst`] for the estimate), `sdk-retries-without-stable-key`,
//! `key-retention-too-short`; on the layers of the call path ([`layers`])
//! `layer-retry-without-stable-key`, `layer-timeout-below-p99`, `key-rotated-on-unknown-outcome`,
//! `proxy-retry-without-budget`; on what the path does with an unknown outcome
//! (`src/lint/outcomes.rs`) `abort-in-flight`, `acquire-retries-past-timeout`,
//! `unknown-outcome-as-failure`, `sdk-timeout-probe-race`; on deliveries and racing handlers
//! (`src/lint/deliveries.rs`) `consumer-without-event-dedup`,
//! `key-conflict-retried-under-new-key`; and on tools alone
//! `tool-annotations-missing`. A tool list alone only gets tool rules; a policy alone is linted
//! over the defaults ([`DEFAULTS_BASE`]).
//!
//! Besides findings, each scenario or policy gets the pool's queueing oracle (Erlang C and
//! Allen–Cunneen with their inputs λ, E[S], c, ρ; "unstable" when ρ ≥ 1; see
//! [`crate::report::queueing`]), printed before the closing count and in `--json` as `queueing`.

pub mod burst;
mod deliveries;
mod error;
mod finding;
mod input;
pub mod layers;
mod outcomes;
mod providers;
mod rules;
mod tools;

use std::path::PathBuf;

use crate::report::queueing::pool_oracle;

pub use error::LintError;
pub use finding::{lint_text, Finding, LintReport, LintedFile, LintedQueue, Severity};
pub use input::{read_input, LintInput, DEFAULTS_BASE};
pub use rules::scenario_rules;
pub use tools::{tool_facts, tool_rules, ToolFacts};

/// The findings of one input.
pub fn lint_input(input: &LintInput) -> Vec<Finding> {
    match input {
        LintInput::Scenario(s) | LintInput::Policy(s) => scenario_rules(s),
        LintInput::Tools(t) => t.iter().flat_map(tool_rules).collect(),
    }
}

/// Reads every file first (any bad input is an error before any finding is reported), then
/// lints each.
pub fn lint_files(files: &[PathBuf]) -> Result<LintReport, LintError> {
    let inputs = files
        .iter()
        .map(|f| read_input(f).map(|i| (f.display().to_string(), i)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut report = LintReport::default();
    for (file, input) in &inputs {
        report.files.push(LintedFile {
            file: file.clone(),
            kind: input.kind(),
        });
        report
            .findings
            .extend(lint_input(input).into_iter().map(|f| f.in_file(file)));
        if let LintInput::Scenario(s) | LintInput::Policy(s) = input {
            report.queueing.push(LintedQueue {
                file: file.clone(),
                loads: pool_oracle(s),
            });
        }
    }
    Ok(report)
}
