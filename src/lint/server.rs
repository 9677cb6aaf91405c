//! `refundsim lint --mcp-server`: the tools a live MCP server lists, each linted against a retry
//! and key policy (a scenario's, or by default the incident's rule).
//!
//! Talking to the server (starting it, `initialize`, every page of `tools/list`) is the CLI's
//! (`src/cli/lint_server.rs`, over rmcp); this module gets what it read ([`ServerListing`]) and
//! says what a policy makes of each tool. Per tool, in this order:
//!
//! - `tool-annotations-missing` (warning): no MCP ToolAnnotations, so the spec's defaults apply
//!   (not read-only, destructive, not idempotent);
//! - `retry-non-idempotent`: the policy retries any tool (`agent.retry.applies_to: any_tool`
//!   with `max_retries` > 0, or an executor retry), and the tool is neither `readOnlyHint` nor
//!   `idempotentHint`; a read-only tool is never flagged;
//! - `idempotency-key-missing` / `idempotency-key-per-attempt`: the tool is destructive
//!   (`destructiveHint` true, MCP's default) and not idempotent, and the policy has no key that
//!   makes a repeated call the same call (no per-ticket key or business id, no tool-server
//!   request key `executor.request_idempotency`).
//!
//! The policy-wide rules (timeouts, SDK retries, layers) are `refundsim lint SCENARIO`'s and
//! are not repeated here.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::error::LintError;
use super::finding::{count_line, findings_text, Finding, Severity};
use super::guard::{ticket_id_fix, ticket_id_recognised};
use super::input::{read_input, LintInput, DEFAULTS_BASE};
use super::rules::{executor_retries, retry_non_idempotent};
use super::tools::{tool_facts, tool_rules, ToolFacts};
use crate::scenario::{self, AppliesTo, KeyMode, ProviderKind, RunBudget, Scenario};

/// The four MCP ToolAnnotations hints, in the order the specification lists them, with their
/// defaults (MCP schema, `ToolAnnotations`).
pub const HINTS: [(&str, bool); 4] = [
    ("readOnlyHint", false),
    ("destructiveHint", true),
    ("idempotentHint", false),
    ("openWorldHint", true),
];

/// What an MCP server told `lint --mcp-server`: who it is and every tool it listed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerListing {
    /// The command line the server was started with, as given.
    pub command: String,
    /// `serverInfo.name` from the `initialize` result (empty if the server sent none).
    pub name: String,
    /// `serverInfo.version` from the `initialize` result (empty if the server sent none).
    pub version: String,
    /// The protocol version the server answered `initialize` with.
    pub protocol_version: String,
    /// How many `tools/list` pages were read (one more than the `nextCursor`s followed).
    pub pages: usize,
    /// Every tool of every page, in the server's order, as JSON (`name`, `annotations`, …).
    #[serde(skip)]
    pub tools: Vec<Value>,
}

impl ServerListing {
    /// How findings name the server: `MCP server NAME` (or the command when it sent no name).
    pub fn label(&self) -> String {
        if self.name.is_empty() {
            format!("MCP server `{}`", self.command)
        } else {
            format!("MCP server {}", self.name)
        }
    }
}

/// The policy the tools were linted against.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PolicyUsed {
    /// Where it came from: `the incident's rule` (the defaults), or the scenario file, with the
    /// policies and `--set`s applied.
    pub source: String,
    /// What it does to a tool, in words: who retries which tools, and what key a call carries.
    pub words: String,
}

/// One listed tool and its annotations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ListedTool {
    /// Tool name.
    pub name: String,
    /// The hints the server stated (of the four in [`HINTS`]), in that order; `None` when it
    /// stated none ("no annotations": MCP's defaults apply). In JSON, an object
    /// (`{"readOnlyHint": true, …}`) or `null`.
    #[serde(serialize_with = "hints_as_object")]
    pub annotations: Option<Vec<(String, bool)>>,
}

/// `[("readOnlyHint", true)]` as `{"readOnlyHint": true}`, in the list's order.
fn hints_as_object<S: serde::Serializer>(
    hints: &Option<Vec<(String, bool)>>,
    ser: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    match hints {
        None => ser.serialize_none(),
        Some(h) => {
            let mut m = ser.serialize_map(Some(h.len()))?;
            for (k, v) in h {
                m.serialize_entry(k, v)?;
            }
            m.end()
        }
    }
}

/// What `lint --mcp-server` found.
#[derive(Clone, Debug, Serialize)]
pub struct ServerLintReport {
    /// The server and what it listed.
    pub server: ServerListing,
    /// The policy the tools were linted against.
    pub policy: PolicyUsed,
    /// Every tool listed, in the server's order.
    pub tools: Vec<ListedTool>,
    /// Every finding, tool by tool; `file` names the server, `path` the tool's annotation
    /// (`tools.I.annotations.HINT`, I its place in the merged list).
    pub findings: Vec<Finding>,
}

impl ServerLintReport {
    /// Any error-level finding (`lint` exits 1).
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }
}

/// Lints every tool of `server` against the policy of `scenario` (a scenario file, or a policy
/// file applied over the defaults) with `policies` and `sets` applied, or, without
/// `scenario`, against the defaults — the incident's rule: the model may retry any tool once
/// after a failure, and no idempotency key — with `policies` and `sets` applied.
///
/// # Errors
/// [`LintError`] when the scenario, a policy or a `--set` does not load, when `scenario` is a
/// tool list, or when a listed tool is not a tool definition (a missing `name`, a hint that is
/// not a boolean), naming the server and the tool's place in the list.
pub fn lint_server(
    server: &ServerListing,
    scenario: Option<&Path>,
    policies: &[PathBuf],
    sets: &[String],
) -> Result<ServerLintReport, LintError> {
    let (s, source) = policy_of(scenario, policies, sets)?;
    let label = server.label();
    let facts = server
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| tool_facts(&label, &format!("tools.{i}"), t))
        .collect::<Result<Vec<_>, _>>()?;
    let effect = s.effect();
    let findings = facts
        .iter()
        .flat_map(|t| server_tool_rules(&s, t))
        .map(|f| f.in_words(&effect).in_file(&label))
        .collect();
    let tools = server
        .tools
        .iter()
        .zip(&facts)
        .map(|(v, t)| ListedTool {
            name: t.name.clone(),
            annotations: t.annotated.then(|| stated_hints(v)),
        })
        .collect();
    Ok(ServerLintReport {
        server: server.clone(),
        policy: PolicyUsed {
            source,
            words: policy_words(&s),
        },
        tools,
        findings,
    })
}

/// The hints a tool object states, in [`HINTS`] order.
fn stated_hints(v: &Value) -> Vec<(String, bool)> {
    let a = v.get("annotations");
    HINTS
        .iter()
        .filter_map(|(k, _)| {
            a.and_then(|a| a.get(*k))
                .and_then(Value::as_bool)
                .map(|b| (k.to_string(), b))
        })
        .collect()
}

/// The scenario to lint against and where it came from, in words.
fn policy_of(
    scenario: Option<&Path>,
    policies: &[PathBuf],
    sets: &[String],
) -> Result<(Scenario, String), LintError> {
    let unlimited = RunBudget::UNLIMITED;
    let applied: Vec<String> = policies
        .iter()
        .map(|p| format!("policy {}", p.display()))
        .chain(sets.iter().map(|a| format!("--set {a}")))
        .collect();
    let after = |what: String| {
        if applied.is_empty() {
            what
        } else {
            format!("{what} after {}", applied.join(", "))
        }
    };
    let Some(path) = scenario else {
        let s = scenario::load_text(DEFAULTS_BASE, "defaults", policies, sets, &unlimited)?;
        let source = if applied.is_empty() {
            "the incident's rule (the defaults)".to_string()
        } else {
            after("the defaults".to_string())
        };
        return Ok((s, source));
    };
    let file = path.display().to_string();
    match read_input(path)? {
        LintInput::Scenario(s) if applied.is_empty() => Ok((*s, format!("scenario {file}"))),
        LintInput::Scenario(_) => Ok((
            scenario::load_within(path, policies, sets, &unlimited)?,
            after(format!("scenario {file}")),
        )),
        LintInput::Policy(_) => {
            let all: Vec<PathBuf> = std::iter::once(path.to_path_buf())
                .chain(policies.iter().cloned())
                .collect();
            let s = scenario::load_text(DEFAULTS_BASE, "defaults", &all, sets, &unlimited)?;
            Ok((s, after(format!("policy {file} over the defaults"))))
        }
        LintInput::Tools(_) => Err(LintError::Shape {
            file,
            path: String::new(),
            message: "this is a tool list; with --mcp-server, expected a scenario or a policy \
                      to lint the server's tools against (the tools come from the server)"
                .into(),
        }),
    }
}

fn times(n: u32) -> String {
    match n {
        1 => "once".into(),
        2 => "twice".into(),
        n => format!("{n} times"),
    }
}

/// What `s` does to a tool, in words: `the model may retry any tool once after a failure; no
/// idempotency key` for the incident's rule.
pub(crate) fn policy_words(s: &Scenario) -> String {
    let r = &s.agent.retry;
    let mut parts = vec![match (r.max_retries, r.applies_to) {
        (0, _) => "the model does not retry a tool".to_string(),
        (n, AppliesTo::AnyTool) => format!("the model may retry any tool {} after a failure", times(n)),
        (n, AppliesTo::IdempotentTools) => format!(
            "the model may retry a readOnlyHint or idempotentHint tool {} after a failure, no other",
            times(n)
        ),
    }];
    if let Some(e) = s.executor.retry.as_ref().filter(|_| executor_retries(s)) {
        parts.push(format!(
            "the executor retries every call {}",
            times(e.max_retries)
        ));
    }
    let svc = &s.refunds_service;
    parts.push(match s.provider.kind {
        ProviderKind::Stripe => match svc.idempotency_key {
            KeyMode::None => "no idempotency key".into(),
            KeyMode::PerAttempt => {
                "an idempotency key per attempt (a retry gets a fresh one)".into()
            }
            KeyMode::PerTicket => {
                "an idempotency key per logical call (per ticket), kept across retries".into()
            }
        },
        ProviderKind::BusinessId => match svc.business_id {
            KeyMode::PerTicket => {
                "a business id per logical call (per ticket), kept across retries".into()
            }
            _ => "no stable business id".into(),
        },
        ProviderKind::KeysIgnored | ProviderKind::DedupWindow => {
            "a provider that recognises no key".into()
        }
    });
    if s.executor.request_idempotency.is_some() {
        parts.push(
            "the tool server takes a request idempotency key (executor.request_idempotency)".into(),
        );
    }
    parts.join("; ")
}

/// The rules on one listed tool under `s` (see the module's documentation), each finding's
/// path on the tool's annotation.
fn server_tool_rules(s: &Scenario, t: &ToolFacts) -> Vec<Finding> {
    let mut out = tool_rules(t);
    if !t.mutating() {
        return out;
    }
    let idem = format!("{}.annotations.idempotentHint", t.path);
    out.extend(retry_non_idempotent(s, t).into_iter().map(|mut f| {
        f.path = idem.clone();
        f.hint = format!(
            "{}; or, if a repeated call with the same arguments really has no additional effect, declare \"idempotentHint\": true on `{}` in the server",
            f.hint, t.name
        );
        f
    }));
    out.extend(destructive_without_key(s, t));
    out
}

/// `idempotency-key-missing` (or `-per-attempt`) on a listed tool: destructive and not
/// idempotent, and nothing in the policy makes a repeated call the same call.
fn destructive_without_key(s: &Scenario, t: &ToolFacts) -> Option<Finding> {
    if !t.destructive || t.idempotent {
        return None;
    }
    if ticket_id_recognised(s) || s.executor.request_idempotency.is_some() {
        return None;
    }
    let (id, what) = match (s.provider.kind, s.refunds_service.idempotency_key) {
        (ProviderKind::Stripe, KeyMode::PerAttempt) => (
            "idempotency-key-per-attempt",
            "derives its idempotency key per attempt, so a repeated call carries a fresh key",
        ),
        _ => (
            "idempotency-key-missing",
            "sends no key that stays the same for a repeated call",
        ),
    };
    let (fix, fix_text) = ticket_id_fix(s);
    Some(
        Finding::new(
            id,
            Severity::Error,
            format!("{}.annotations.destructiveHint", t.path),
            format!(
                "`{}` is destructive (destructiveHint {}) and not idempotent, and the policy {what} and gives the tool server no request idempotency key: a repeated call (a retry, an MCP client's re-issued request, a human's re-run) repeats its effect",
                t.name,
                if t.annotated { "true" } else { "not stated: true by default" },
            ),
            format!(
                "{fix_text}, or give the tool server a request idempotency key (executor.request_idempotency, MCP SEP-3182); if `{}` only adds and never overwrites, declare \"destructiveHint\": false on it in the server",
                t.name
            ),
        )
        .with_fix(fix),
    )
}

/// The report as text: the server, the policy in words, every tool with its annotations, then
/// the findings and a count.
pub fn server_lint_text(r: &ServerLintReport) -> String {
    use std::fmt::Write;
    let sv = &r.server;
    let mut s = String::new();
    let name = if sv.name.is_empty() {
        "(no name)"
    } else {
        &sv.name
    };
    let _ = writeln!(
        s,
        "MCP server: {name} {} (protocol {}), started as `{}`",
        sv.version, sv.protocol_version, sv.command
    );
    let _ = writeln!(s, "policy: {} — {}", r.policy.source, r.policy.words);
    let _ = writeln!(
        s,
        "tools: {} in {} page{} of tools/list",
        r.tools.len(),
        sv.pages,
        if sv.pages == 1 { "" } else { "s" }
    );
    let width = r
        .tools
        .iter()
        .map(|t| t.name.chars().count())
        .max()
        .unwrap_or(0);
    for t in &r.tools {
        let hints = match &t.annotations {
            None => "no annotations".to_string(),
            Some(h) => h
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let _ = writeln!(s, "  {:<width$}  {hints}", t.name);
    }
    s.push_str(&findings_text(&r.findings));
    let _ = writeln!(
        s,
        "{}",
        count_line(
            &r.findings,
            &format!(
                "{} ({} tools, against {})",
                sv.label(),
                r.tools.len(),
                r.policy.source
            )
        )
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(tools: Value) -> ServerListing {
        ServerListing {
            command: "srv".into(),
            name: "s".into(),
            version: "1".into(),
            protocol_version: "2025-11-25".into(),
            pages: 1,
            tools: tools.as_array().unwrap().clone(),
        }
    }

    fn ids(r: &ServerLintReport) -> Vec<(&'static str, String)> {
        r.findings.iter().map(|f| (f.id, f.path.clone())).collect()
    }

    /// Read-only is never flagged; no annotations is MCP's defaults (all three rules);
    /// additive and not idempotent is only retried; destructive and idempotent is fine.
    #[test]
    fn each_hint_decides_its_rule_under_the_incidents_rule() {
        let tools = serde_json::json!([
            {"name": "get", "annotations": {"readOnlyHint": true, "idempotentHint": false}},
            {"name": "bare"},
            {"name": "add", "annotations": {"destructiveHint": false}},
            {"name": "put", "annotations": {"idempotentHint": true}},
        ]);
        let r = lint_server(&listing(tools), None, &[], &[]).unwrap();
        assert_eq!(r.policy.source, "the incident's rule (the defaults)");
        assert_eq!(
            r.policy.words,
            "the model may retry any tool once after a failure; no idempotency key"
        );
        assert_eq!(
            ids(&r),
            [
                ("tool-annotations-missing", "tools.1.annotations".into()),
                (
                    "retry-non-idempotent",
                    "tools.1.annotations.idempotentHint".into()
                ),
                (
                    "idempotency-key-missing",
                    "tools.1.annotations.destructiveHint".into()
                ),
                (
                    "retry-non-idempotent",
                    "tools.2.annotations.idempotentHint".into()
                ),
            ]
        );
        assert!(r.findings.iter().all(|f| f.file == "MCP server s"));
        assert_eq!(r.tools[1].annotations, None);
        assert_eq!(
            r.tools[2].annotations,
            Some(vec![("destructiveHint".to_string(), false)])
        );
        assert!(r.has_errors());
    }

    #[test]
    fn a_per_attempt_key_and_an_executor_retry_are_said() {
        let tools = serde_json::json!([{"name": "x", "annotations": {"destructiveHint": true}}]);
        let sets = [
            "refunds_service.idempotency_key=per_attempt".to_string(),
            "agent.retry.max_retries=3".to_string(),
            "executor.retry={}".to_string(),
        ];
        let r = lint_server(&listing(tools), None, &[], &sets).unwrap();
        assert_eq!(
            r.policy.words,
            "the model may retry any tool 3 times after a failure; the executor retries every call twice; an idempotency key per attempt (a retry gets a fresh one)"
        );
        let got: Vec<&str> = r.findings.iter().map(|f| f.id).collect();
        assert_eq!(
            got,
            [
                "retry-non-idempotent",
                "retry-non-idempotent",
                "idempotency-key-per-attempt"
            ]
        );
    }

    #[test]
    fn a_tool_that_is_not_a_tool_names_the_server() {
        let tools = serde_json::json!([{"name": "x", "annotations": {"idempotentHint": "yes"}}]);
        let e = lint_server(&listing(tools), None, &[], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "MCP server s: tools.0.annotations.idempotentHint: expected true or false"
        );
    }
}
