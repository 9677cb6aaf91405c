//! The arguments of the server's tools, with the JSON Schemas `tools/list` gives (generated
//! from these types by schemars; each field's doc is its description). Every tool takes the
//! CLI's inputs: `scenario`, `policies` and `set`; field names are the CLI's flags.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// A scenario or policy: a path, or the object itself.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum Source {
    /// A JSON file, relative to the server's working directory (as the CLI reads it).
    Path(String),
    /// The file's content as an object: read exactly as that file would be (aliases,
    /// `$comment`, validation); errors name it `scenario.json` or `policy-N.json`.
    Inline(serde_json::Map<String, Value>),
}

/// `simulate`: one run, as `refundsim run SCENARIO --ticket T --json`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SimulateArgs {
    /// The scenario: a path or a scenario object (`refundsim schema`). Default: the incident,
    /// scenarios/carrier-outage.json (built in).
    #[serde(default)]
    pub(crate) scenario: Option<Source>,
    /// RFC 7396 merge patches applied over the scenario in order, each a path or an object
    /// (`--policy`), e.g. the incident's fix policies/fixed.json.
    #[serde(default)]
    pub(crate) policies: Vec<Source>,
    /// Overrides applied after the policies: dotted field paths to values, e.g.
    /// {"executor.timeout": "15s", "refunds_service.pool_size": 8} (`--set PATH=VALUE`).
    #[serde(default)]
    pub(crate) set: BTreeMap<String, Value>,
    /// Root seed. Default: the scenario's `seed`.
    #[serde(default)]
    pub(crate) seed: Option<u64>,
    /// The ticket whose story to tell (`--ticket`): its id, or a recording's text id.
    /// Default: the first duplicated ticket, if any.
    #[serde(default)]
    pub(crate) ticket: Option<String>,
}

/// `check_policy`: the CI gate, as `refundsim check SCENARIO --policy … --json`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckArgs {
    /// The scenario: a path or a scenario object. Default: the incident,
    /// scenarios/carrier-outage.json (built in).
    #[serde(default)]
    pub(crate) scenario: Option<Source>,
    /// Policies, each a path or a merge-patch object; as `check --policy`, the scenario is
    /// checked bare and then under each policy, separately.
    #[serde(default)]
    pub(crate) policies: Vec<Source>,
    /// Overrides applied to every case after its policy: dotted field paths to values
    /// (`--set PATH=VALUE`).
    #[serde(default)]
    pub(crate) set: BTreeMap<String, Value>,
    /// Seeds `A..B` (inclusive) or one seed `N`, at most 200 of them. Default: 1..N, N the
    /// scenario's `gate.seeds` (30 unless set).
    #[serde(default)]
    pub(crate) seeds: Option<String>,
    /// Cases of the bounded exploration of each case that claims safety; 0 turns it off; at
    /// most 4096. Default: the scenario's `gate.explore_cases` (1024 unless set).
    #[serde(default)]
    pub(crate) explore_cases: Option<u32>,
}

/// `lint_tools`: tool definitions and a retry policy in plain fields, linted as the scenario
/// `refundsim new` writes for the tools (or the given scenario) with those fields set.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LintArgs {
    /// Tool definitions: an MCP `tools/list` result or response, an Anthropic tool or a list
    /// of them, an OpenAI function tool (Chat Completions or Responses shape) or a list of
    /// them. Without them, the scenario's own tools are linted.
    #[serde(default)]
    pub(crate) tools: Option<Value>,
    /// Which of the tools makes the effect (`refundsim new --tool`). Default: the one tool
    /// not marked readOnlyHint.
    #[serde(default)]
    pub(crate) tool: Option<String>,
    /// A scenario (path or object) to lint instead of the one written for `tools`. Default
    /// without `tools`: the incident.
    #[serde(default)]
    pub(crate) scenario: Option<Source>,
    /// Merge patches applied over the scenario in order, each a path or an object.
    #[serde(default)]
    pub(crate) policies: Vec<Source>,
    /// Overrides applied last: dotted field paths to values (`--set PATH=VALUE`).
    #[serde(default)]
    pub(crate) set: BTreeMap<String, Value>,
    /// The executor's time limit for one tool call (`executor.timeout`), e.g. "8s".
    #[serde(default)]
    pub(crate) timeout: Option<String>,
    /// What the executor tells the model when the limit passes (`executor.on_timeout`):
    /// `report_error` (a failure, as in the incident) or `probe_status` (ask the service
    /// first).
    #[serde(default)]
    pub(crate) on_timeout: Option<OnTimeout>,
    /// Who retries, 1: the model's retries of a failed call (`agent.retry.max_retries`).
    #[serde(default)]
    pub(crate) model_retries: Option<u32>,
    /// Who retries, 2: which tools the model retries (`agent.retry.applies_to`): `any_tool`
    /// (the incident) or `idempotent_tools` (readOnlyHint or idempotentHint only).
    #[serde(default)]
    pub(crate) model_retries_apply_to: Option<AppliesTo>,
    /// Who retries, 3: the provider SDK's network retries inside one call
    /// (`refunds_service.stripe_client.max_network_retries`).
    #[serde(default)]
    pub(crate) sdk_retries: Option<u32>,
    /// Keys: the idempotency key the service sends (`refunds_service.idempotency_key`):
    /// `none`, `per_attempt` or `per_ticket`.
    #[serde(default)]
    pub(crate) idempotency_key: Option<KeyMode>,
}

/// `executor.on_timeout`.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum OnTimeout {
    /// The timeout is reported to the model as a failure.
    ReportError,
    /// The executor probes the ticket's status before answering.
    ProbeStatus,
}

/// `agent.retry.applies_to`.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AppliesTo {
    /// Every tool.
    AnyTool,
    /// Tools marked readOnlyHint or idempotentHint.
    IdempotentTools,
}

/// `refunds_service.idempotency_key`.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum KeyMode {
    /// No key.
    None,
    /// A new key per attempt.
    PerAttempt,
    /// One key per ticket.
    PerTicket,
}

impl LintArgs {
    /// The plain fields as `PATH=VALUE` overrides, in the order of the fields.
    pub(crate) fn plain_sets(&self) -> Vec<String> {
        let mut sets = Vec::new();
        if let Some(t) = &self.timeout {
            sets.push(super::inputs::set_arg(
                "executor.timeout",
                &Value::String(t.clone()),
            ));
        }
        if let Some(o) = self.on_timeout {
            sets.push(format!("executor.on_timeout={}", o.name()));
        }
        if let Some(n) = self.model_retries {
            sets.push(format!("agent.retry.max_retries={n}"));
        }
        if let Some(a) = self.model_retries_apply_to {
            sets.push(format!("agent.retry.applies_to={}", a.name()));
        }
        if let Some(n) = self.sdk_retries {
            sets.push(format!(
                "refunds_service.stripe_client.max_network_retries={n}"
            ));
        }
        if let Some(k) = self.idempotency_key {
            sets.push(format!("refunds_service.idempotency_key={}", k.name()));
        }
        sets
    }
}

/// The snake_case name each enum deserializes from, to write it back as a `--set` value.
impl OnTimeout {
    fn name(self) -> &'static str {
        match self {
            OnTimeout::ReportError => "report_error",
            OnTimeout::ProbeStatus => "probe_status",
        }
    }
}

impl AppliesTo {
    fn name(self) -> &'static str {
        match self {
            AppliesTo::AnyTool => "any_tool",
            AppliesTo::IdempotentTools => "idempotent_tools",
        }
    }
}

impl KeyMode {
    fn name(self) -> &'static str {
        match self {
            KeyMode::None => "none",
            KeyMode::PerAttempt => "per_attempt",
            KeyMode::PerTicket => "per_ticket",
        }
    }
}

/// `suggest_fix`: `refundsim fix`'s answer for a scenario, as `refundsim fix SCENARIO --json`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FixArgs {
    /// The scenario to make safe: a path or a scenario object. Default: the incident,
    /// scenarios/carrier-outage.json (built in).
    #[serde(default)]
    pub(crate) scenario: Option<Source>,
    /// Merge patches applied over the scenario first, in order, each a path or an object; the
    /// fix goes on top.
    #[serde(default)]
    pub(crate) policies: Vec<Source>,
    /// Overrides applied after the policies: dotted field paths to values.
    #[serde(default)]
    pub(crate) set: BTreeMap<String, Value>,
    /// Seeds `A..B` every candidate must hold on, at most 200. Default: 1..N, N the
    /// scenario's `gate.seeds`.
    #[serde(default)]
    pub(crate) seeds: Option<String>,
    /// Cases of the exploration that confirms an answer, at most 4096. Default: the
    /// scenario's `gate.explore_cases`.
    #[serde(default)]
    pub(crate) explore_cases: Option<u32>,
    /// Cost weights (`--cost FIELD=WEIGHT`): a metric to weight × its mean increase (e.g.
    /// {"latency_tool_call_p99_ms": 0.001}) or a field to weight × the change of its number
    /// (ms for a duration, e.g. {"refunds_service.pool_size": 0.5}); each changed field costs
    /// 1 besides.
    #[serde(default)]
    pub(crate) cost: BTreeMap<String, f64>,
    /// Alternatives to list after the cheapest answer (0 to 20). Default: 3.
    #[serde(default)]
    pub(crate) alternatives: Option<u32>,
    /// Most candidates to verify by simulation before giving up (1 to 200). Default: 80.
    #[serde(default)]
    pub(crate) max_candidates: Option<u32>,
}

/// Deserializes a tool's arguments; errors name the argument at fault (`arguments.seeds`) and
/// what was expected, in one line.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    arguments: Option<serde_json::Map<String, Value>>,
) -> Result<T, String> {
    let v = Value::Object(arguments.unwrap_or_default());
    serde_path_to_error::deserialize(&v).map_err(|e| {
        let path = e.path().to_string();
        let mut message = e.inner().to_string();
        if message.contains("did not match any variant of untagged enum Source") {
            message = "expected a path (a string) or an object".to_string();
        }
        if path == "." {
            format!("arguments: {message}")
        } else {
            format!("arguments.{path}: {message}")
        }
    })
}
