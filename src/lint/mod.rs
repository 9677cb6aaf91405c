//! `refundsim lint`: static rules over scenarios, policies and tool definitions, without
//! simulating. Each finding has a rule id, a severity, the JSON path at fault, a fix hint and
//! that fix as `--set` overrides that clear the finding ([`Finding::fix`]); any `error` finding
//! makes the command exit 1. Every rule is listed in [`RULES`].
//!
//! Before a rule calls a retry unsafe or suggests a key, it asks what the provider recognises a
//! repeated request by (`src/lint/guard.rs`): Stripe's idempotency key, a `business_id`
//! provider's business id, nothing but the service's own dedup on `keys_ignored`, a retry
//! within the window on `dedup_window`.
//!
//! Rules (ids): `retry-non-idempotent`, `tool-idempotent-claim-unbacked`,
//! `idempotency-key-missing`, `idempotency-key-per-attempt`, `timeout-reports-error`,
//! `timeout-below-burst-p99` (see [`burst`] for the estimate), `sdk-retries-without-stable-key`,
//! `key-retention-too-short`; on the layers of the call path ([`layers`])
//! `layer-retry-without-stable-key`, `layer-timeout-below-p99`, `key-rotated-on-unknown-outcome`,
//! `proxy-retry-without-budget`; on an MCP client (`src/lint/mcp_client.rs`)
//! `mcp-client-resends-without-key`; on what the path does with an unknown outcome
//! `proxy-retry-without-budget`, `hedge-without-stable-key`, `hedge-below-ledger`; on what the path does with an unknown outcome
//! (`src/lint/outcomes.rs`) `abort-in-flight`, `acquire-retries-past-timeout`,
//! `unknown-outcome-as-failure`, `sdk-timeout-probe-race`; on deliveries and racing handlers
//! (`src/lint/deliveries.rs`) `consumer-without-event-dedup`,
//! `key-conflict-retried-under-new-key`; on deliveries that come again because of the ack
//! (`src/lint/redelivery.rs`) `visibility-timeout-below-handler`,
//! `rebalance-drain-below-handler`, `dedup-record-lifetime-too-short`,
//! `dedup-record-deleted-on-duplicate`; and on tools alone
//! `tool-annotations-missing`. A tool list alone only gets tool rules; a policy alone is linted
//! over the defaults ([`DEFAULTS_BASE`]); a scenario with `--policy`/`--set`
//! ([`lint_files_with`]) is linted merged, as `refundsim show` prints it.
//!
//! `refundsim lint --mcp-server` lints the tools a live MCP server lists against a scenario's
//! policy, or the incident's rule by default (`src/lint/server.rs`).
//!
//! Besides findings, each scenario or policy gets the pool's queueing oracle (Erlang C and
//! Allen–Cunneen with their inputs λ, E[S], c, ρ; "unstable" when ρ ≥ 1; see
//! [`crate::analysis::queueing`]), printed before the closing count and in `--json` as `queueing`.

pub(crate) mod burst;
mod deliveries;
mod error;
mod finding;
mod guard;
mod input;
pub(crate) mod layers;
mod mcp_client;
mod outcomes;
mod providers;
mod redelivery;
mod rules;
mod server;
mod spans;
mod tools;

use std::path::PathBuf;

use crate::analysis::queueing::pool_oracle;

pub use error::LintError;
pub use finding::{lint_text, Finding, LintReport, LintedFile, LintedQueue, Severity};
pub use input::DEFAULTS_BASE;
pub(crate) use input::{read_input, tool_list_in, LintInput};
pub use rules::scenario_rules;
pub use server::{
    lint_server, server_lint_text, ListedTool, PolicyUsed, ServerLintReport, ServerListing, HINTS,
};
pub(crate) use tools::{tool_facts, tool_rules};

/// Every rule id, in the order `docs/ci.md` lists them: every finding's `id` is one of these.
/// A test lints the shipped scenarios and fixtures, requires each rule here to fire on one of
/// them, and applies each finding's [`Finding::fix`] to the file that triggered it, requiring
/// that finding gone.
pub const RULES: &[&str] = &[
    "retry-non-idempotent",
    "tool-idempotent-claim-unbacked",
    "idempotency-key-missing",
    "idempotency-key-per-attempt",
    "timeout-reports-error",
    "work-after-effect-past-timeout",
    "timeout-below-burst-p99",
    "sdk-retries-without-stable-key",
    "key-retention-too-short",
    "layer-retry-without-stable-key",
    "layer-timeout-below-p99",
    "key-rotated-on-unknown-outcome",
    "proxy-retry-without-budget",
    "mcp-client-resends-without-key",
    "hedge-without-stable-key",
    "hedge-below-ledger",
    "abort-in-flight",
    "acquire-retries-past-timeout",
    "unknown-outcome-as-failure",
    "sdk-timeout-probe-race",
    "consumer-without-event-dedup",
    "event-dedup-misses-other-trigger",
    "key-conflict-retried-under-new-key",
    "visibility-timeout-below-handler",
    "rebalance-drain-below-handler",
    "dedup-record-lifetime-too-short",
    "dedup-record-deleted-on-duplicate",
    "provider-ignores-keys",
    "retry-outside-dedup-window",
    "business-id-not-stable",
    "pending-row-conflict",
    "duplicate-refused-read-as-failure",
    "client-key-replaces-service-key",
    "stored-failure-replayed",
    "stale-pending-marked-failed",
    "breaker-counts-timeouts",
    "tool-annotations-missing",
];

/// The findings of one input.
pub(crate) fn lint_input(input: &LintInput) -> Vec<Finding> {
    match input {
        // In the scenario's own words: a charge tool's findings speak of charges.
        LintInput::Scenario(s) | LintInput::Policy(s) => {
            let effect = s.effect();
            scenario_rules(s)
                .into_iter()
                .map(|f| f.in_words(&effect))
                .collect()
        }
        LintInput::Tools(t) => t.iter().flat_map(tool_rules).collect(),
    }
}

/// Reads every file first (any bad input is an error before any finding is reported), then
/// lints each.
pub fn lint_files(files: &[PathBuf]) -> Result<LintReport, LintError> {
    lint_files_with(files, &[], &[])
}

/// [`lint_files`], with each scenario merged with `policies` and `sets` first: the scenario
/// linted is exactly the one `refundsim show SCENARIO --policy … --set …` prints (both come
/// from [`crate::scenario::load`]). With policies or sets, every file must be a scenario.
///
/// # Errors
/// [`LintError`] naming the file (or the `--set`) at fault; a policy or tool list given with
/// `--policy`/`--set` is an error that says to lint it alone.
pub fn lint_files_with(
    files: &[PathBuf],
    policies: &[PathBuf],
    sets: &[String],
) -> Result<LintReport, LintError> {
    let applied: Vec<String> = policies
        .iter()
        .map(|p| format!("policy {}", p.display()))
        .chain(sets.iter().map(|a| format!("--set {a}")))
        .collect();
    let inputs = files
        .iter()
        .map(|f| {
            let input = read_input(f)?;
            let input = if applied.is_empty() {
                input
            } else {
                merged(f, &input, policies, sets)?
            };
            Ok((f.display().to_string(), input))
        })
        .collect::<Result<Vec<_>, LintError>>()?;
    let mut report = LintReport::default();
    for (file, input) in &inputs {
        report.files.push(LintedFile {
            file: file.clone(),
            kind: input.kind(),
            applied: applied.clone(),
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

/// A scenario file read again with policies and sets applied.
fn merged(
    file: &std::path::Path,
    input: &LintInput,
    policies: &[PathBuf],
    sets: &[String],
) -> Result<LintInput, LintError> {
    if !matches!(input, LintInput::Scenario(_)) {
        return Err(LintError::Shape {
            file: file.display().to_string(),
            path: String::new(),
            message: format!(
                "--policy and --set apply to scenarios, and this is a {}; expected a scenario file \
                 (lint a policy over its scenario: refundsim lint SCENARIO --policy POLICY, or alone)",
                input.kind()
            ),
        });
    }
    // Lint simulates nothing: no run budget applies.
    let unlimited = crate::scenario::RunBudget::UNLIMITED;
    let s = crate::scenario::load_within(file, policies, sets, &unlimited)?;
    Ok(LintInput::Scenario(Box::new(s)))
}

#[cfg(test)]
mod tests {
    use super::RULES;

    /// Every rule id a finding is made with in `src/lint/` (a string literal right after
    /// `Finding::new(`) is in [`RULES`], and every entry of [`RULES`] is in the source (as a
    /// string literal): the test that applies each rule's fix walks [`RULES`], so a rule
    /// missing from it would go untested.
    #[test]
    fn rules_lists_every_rule_made_in_the_source() {
        let dir = crate::repo_root().join("src/lint");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let mut source = String::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            // The code, without its tests (which make findings of their own).
            source.push_str(text.split("#[cfg(test)]").next().unwrap());
        }
        // Without the list itself.
        let list = source.find("pub const RULES").unwrap();
        let end = list + source[list..].find("];").unwrap();
        source.replace_range(list..end, "");
        let mut made = std::collections::BTreeSet::new();
        for (at, call) in source.match_indices("Finding::new(") {
            let args = source[at + call.len()..].trim_start();
            if let Some(rest) = args.strip_prefix('"') {
                made.insert(rest[..rest.find('"').unwrap()].to_string());
            }
        }
        assert!(made.len() > 15, "{made:?}");
        for id in &made {
            assert!(RULES.contains(&id.as_str()), "{id} is not in RULES");
        }
        for id in RULES {
            assert!(
                source.contains(&format!("\"{id}\"")),
                "{id} is made nowhere"
            );
        }
        let distinct: std::collections::BTreeSet<&&str> = RULES.iter().collect();
        assert_eq!(RULES.len(), distinct.len(), "a rule listed twice");
    }
}
