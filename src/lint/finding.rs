//! A lint finding and the report of one `lint` call.

use std::fmt::Write;

use serde::Serialize;

use crate::analysis::queueing::{oracle_rows, PoolOracle};

/// How bad a finding is. `error` makes `refundsim lint` exit 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Worth a look; does not fail.
    Warning,
    /// Can duplicate or lose money; fails the lint.
    Error,
}

/// One rule broken at one place.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The file as given.
    pub file: String,
    /// Rule id, e.g. `retry-non-idempotent`.
    pub id: &'static str,
    /// Severity.
    pub severity: Severity,
    /// Dot-separated JSON path of the field at fault (as `--set` takes it).
    pub path: String,
    /// What is wrong, with the numbers behind it.
    pub message: String,
    /// How to fix it.
    pub hint: String,
    /// The hint's first remedy as `PATH=VALUE` overrides, in the form `--set` takes them:
    /// applied to the linted scenario (`refundsim lint FILE --set …`), they clear this finding
    /// (a test applies every rule's fix to a scenario that triggers it). Empty when the remedy
    /// is not a change of fields.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix: Vec<String>,
}

impl Finding {
    /// The finding in `effect`'s words ([`Effect::say`](crate::scenario::Effect::say)): its
    /// message, hint, path and fix (`refunds_service.…` paths as their alias `service.…`).
    pub(crate) fn in_words(mut self, effect: &crate::scenario::Effect) -> Self {
        if effect.is_refund() {
            return self;
        }
        self.message = effect.say(&self.message);
        self.hint = effect.say(&self.hint);
        self.path = effect.say(&self.path);
        self.fix = self.fix.iter().map(|f| effect.say(f)).collect();
        self
    }

    /// A finding in `file` (set later by the caller through [`Finding::in_file`]).
    pub fn new(
        id: &'static str,
        severity: Severity,
        path: impl Into<String>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Finding {
            file: String::new(),
            id,
            severity,
            path: path.into(),
            message: crate::scenario::shorten_backquoted(&message.into()),
            hint: hint.into(),
            fix: Vec::new(),
        }
    }

    /// The same finding with its fix as `PATH=VALUE` overrides (see [`Finding::fix`]).
    pub fn with_fix<S: Into<String>>(mut self, sets: impl IntoIterator<Item = S>) -> Self {
        self.fix = sets.into_iter().map(Into::into).collect();
        self
    }

    /// The same finding, naming `file`.
    pub fn in_file(mut self, file: &str) -> Self {
        self.file = file.to_string();
        self
    }
}

/// A file linted and what it was read as.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LintedFile {
    /// The file as given.
    pub file: String,
    /// `scenario`, `policy` or `tools`.
    pub kind: &'static str,
    /// The policies (`policy FILE`) and overrides (`--set PATH=VALUE`) merged into the scenario
    /// before linting, in order; empty for a file linted as written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<String>,
}

/// What `lint` found in its files, in file order then rule order.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LintReport {
    /// Each file linted, in argument order.
    pub files: Vec<LintedFile>,
    /// Every finding.
    pub findings: Vec<Finding>,
    /// The pool's queueing oracle of each scenario or policy linted, in file order.
    pub queueing: Vec<LintedQueue>,
}

/// The queueing oracle of one linted scenario (or policy over the defaults): what Erlang C and
/// Allen–Cunneen predict for its connection pool (see [`crate::analysis::queueing`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LintedQueue {
    /// The file as given.
    pub file: String,
    /// At the mean load, then at the peak when the ticket rate varies.
    pub loads: Vec<PoolOracle>,
}

impl LintReport {
    /// Any error-level finding.
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// Findings as text, one block each: `FILE: SEVERITY[ID] PATH: MESSAGE`, then `  fix: HINT`
/// and, when the fix is a change of fields, `  apply: --set …`.
pub(crate) fn findings_text(findings: &[Finding]) -> String {
    let mut s = String::new();
    for f in findings {
        let sev = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(s, "{}: {sev}[{}] {}: {}", f.file, f.id, f.path, f.message);
        let _ = writeln!(s, "  fix: {}", f.hint);
        if !f.fix.is_empty() {
            let sets: Vec<String> = f
                .fix
                .iter()
                .map(|a| format!("--set {}", crate::run::quote(a)))
                .collect();
            let _ = writeln!(s, "  apply: {}", sets.join(" "));
        }
    }
    s
}

/// The report as text: one block per finding, the queueing oracle of each scenario, then a
/// count.
pub fn lint_text(r: &LintReport) -> String {
    let mut s = findings_text(&r.findings);
    for q in &r.queueing {
        let _ = writeln!(s, "{}: pool queueing (no run; estimates only):", q.file);
        for (k, v) in q.loads.iter().flat_map(oracle_rows) {
            let _ = writeln!(s, "  {k:<42} {v}");
        }
    }
    let kinds: Vec<String> = r
        .files
        .iter()
        .map(|f| {
            if f.applied.is_empty() {
                format!("{} ({})", f.file, f.kind)
            } else {
                format!("{} ({} after {})", f.file, f.kind, f.applied.join(", "))
            }
        })
        .collect();
    let _ = writeln!(s, "{}", count_line(&r.findings, &kinds.join(", ")));
    s
}

/// The closing line of a report: `lint ok: …` or `lint FAILED: …`, the counts, and what was
/// linted (`what`).
pub(crate) fn count_line(findings: &[Finding], what: &str) -> String {
    let errors = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    format!(
        "lint {}: {} error(s), {} warning(s) in {what}",
        if errors == 0 { "ok" } else { "FAILED" },
        errors,
        findings.len() - errors,
    )
}

#[cfg(test)]
mod shorten_tests {
    use super::*;

    #[test]
    fn a_long_name_in_a_finding_is_shortened() {
        let name = "t".repeat(309);
        let f = Finding::new(
            "x",
            Severity::Warning,
            "",
            format!("tool `{name}` is odd"),
            "",
        );
        assert_eq!(
            f.message,
            format!("tool `{}… (309 characters)` is odd", "t".repeat(48))
        );
    }
}
