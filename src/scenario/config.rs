//! The scenario file's types (DESIGN §4). Sections mirror the components of DESIGN §1.
//!
//! Durations are humantime strings (`"8s"`, `"400ms"`, `"53m"`); money is integer cents in fields
//! ending `_cents`; rates end `_per_s`. Unknown fields are errors. Each default is written beside
//! its field. Where the incident write-up gives a value (8 s timeout reported as an error, retry
//! once on any tool, no idempotency key, no reconciliation) it is the default; the sizes of the
//! incident's pool, load and latencies are in `scenarios/carrier-outage.json`, not defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::deliveries::Deliveries;
use super::gate_config::{Exploration, GateConfig};
pub use super::latency::{LatencyDist, LatencyScript, RequestKey, MAX_EMPIRICAL_SAMPLES};
pub use super::modes::{AppliesTo, Cancellation, KeyMode};
use super::provider::Provider;
use super::retry_layer::RetryLayer;

fn d_ms(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// A whole scenario: one world to simulate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Scenario {
    /// Version of the scenario format: 1 (the first model's sections only) or 2 (adds `layers`
    /// and `stack`). Files without it are read as the current version; both versions load.
    /// Default: [`SCHEMA_VERSION`].
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    /// Short name, printed in summaries and reports (`scenario`).
    pub name: String,
    /// Free text: what the scenario demonstrates. Default: empty.
    #[serde(default)]
    pub description: String,
    /// Free text for the reader of the file, ignored by refundsim (JSON Schema's `$comment`
    /// convention). A policy uses it to state its scope in the file itself. Not kept when a
    /// policy is merged over a scenario that has one: the policy's replaces it. Default: none.
    #[serde(rename = "$comment", default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Root seed used when `--seed` is not given. Default: 1.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// How long new work (tickets, background load, reconciliation runs) keeps arriving. After the
    /// horizon, in-flight work drains to completion. At most 30 days.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub horizon: Duration,
    /// UTC instant (RFC 3339, e.g. `"2024-05-14T16:00:00Z"`) that virtual time 0 maps to, so
    /// stories print wall-clock times like the incident log. Default: midnight, `00:00:00.000`.
    #[serde(default)]
    pub clock_origin: Option<String>,
    /// Refund tickets: a rate schedule or an explicit list.
    pub arrivals: Arrivals,
    /// How each ticket's triggering event reaches the agent: duplicate deliveries and consumer
    /// dedup (see [`Deliveries`]). Default: every event delivered once.
    #[serde(default, skip_serializing_if = "Deliveries::is_default")]
    pub deliveries: Deliveries,
    /// Other requests that share the refunds service's connection pool. Default: none.
    #[serde(default)]
    pub background_load: BackgroundLoad,
    /// The LLM agent's timing and retry rule.
    #[serde(default)]
    pub agent: Agent,
    /// Tool definitions (Anthropic / MCP shape). Default: the incident's `issue_refund`, which has
    /// no annotations and is therefore not idempotent.
    #[serde(default = "default_tools")]
    pub tools: Vec<ToolDefinition>,
    /// The tool executor: timeout and what happens on a timeout.
    #[serde(default)]
    pub executor: Executor,
    /// The refunds service, its connection pool and idempotency-key mode.
    #[serde(default)]
    pub refunds_service: RefundsService,
    /// The fake Stripe: latency, idempotency-key retention, rate limit and faults.
    #[serde(default)]
    pub stripe: Stripe,
    /// Which provider answers `POST /v1/refunds` and how it treats a repeated request. Default:
    /// Stripe, every rule (see [`super::provider`]). Not printed when it is the default.
    #[serde(default, skip_serializing_if = "Provider::is_default")]
    pub provider: Provider,
    /// Humans who take escalated tickets. A scenario without a `humans` section has none (an
    /// escalated ticket is left unhandled: the model's words are the last); a `humans` object
    /// without `enabled` has them, with the defaults below.
    #[serde(default = "Humans::none")]
    pub humans: Humans,
    /// The reconciliation job that alerts on tickets with more than one refund.
    #[serde(default)]
    pub reconciliation: Reconciliation,
    /// Added layers of the call path, by name: framework retry middleware (`kind: "retry"`) and
    /// proxies (`kind: "proxy"`); see [`super::layers`]. Default: none.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub layers: BTreeMap<String, RetryLayer>,
    /// The call path, top (agent) to bottom (provider): the built-in layers `model_retry`,
    /// `executor`, `refunds_service`, `sdk` in that order, with names from `layers` between
    /// them. Default: the built-in layers alone (the first model's fixed path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<Vec<String>>,
    /// Bounds on report metrics, by metric name (e.g. `{"duplicate_refund_tickets": {"max": 0}}`),
    /// counts and cents as the report has them, latency percentiles in ms as
    /// `latency_{tool_call,pool_wait,stripe}_{p50,p99,max}_ms` (e.g.
    /// `{"latency_tool_call_p99_ms": {"max": 9000}}`). Default: the safety invariants hold (no
    /// duplicates, no over-refund, no lost refund, no conservation violation). Holds for the
    /// scenario as written: once a policy or `--set` changes what is simulated, the safety
    /// invariants apply instead, each replaced by the bound a policy's `expect` names for that
    /// metric (`null` drops one).
    #[serde(default = "default_expect")]
    #[schemars(schema_with = "expect_schema")]
    pub expect: BTreeMap<String, Bound>,
    /// What the CI gate runs without flags: its seed set and its bounded exploration (see
    /// [`super::GateConfig`]). Not part of the simulated world. Default: 30 seeds, 256 cases.
    #[serde(default, skip_serializing_if = "GateConfig::is_default")]
    pub gate: GateConfig,
    /// The perturbations `explore` may make (see [`super::Exploration`]). Not part of the
    /// simulated world. Default: up to 30 tickets in 60 s, faults up to 0.5, added layers.
    #[serde(default, skip_serializing_if = "Exploration::is_default")]
    pub exploration: Exploration,
    /// Exploration mode: same-instant (and near-tie) events run in an order chosen by a seeded
    /// tie-break instead of schedule order. Written by `refundsim explore` into the minimal
    /// scenarios it finds, so `refundsim run` replays the same interleaving. Default: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_break: Option<TieBreakConfig>,
    /// A recorded incident replayed exactly, written by `refundsim import` (see
    /// [`super::replay`]). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<super::replay::Replay>,
}

impl Scenario {
    /// The `t` of P(pool wait > t): `refunds_service.pool_wait_threshold`, else
    /// `executor.timeout`.
    pub fn pool_wait_threshold(&self) -> Duration {
        self.refunds_service
            .pool_wait_threshold
            .unwrap_or(self.executor.timeout)
    }

    /// The effect of the tool the agent calls (`agent.tool`): its `effect` and `operation`, or
    /// a refund by `POST /v1/refunds` when it declares neither (or is not in `tools`).
    pub fn effect(&self) -> super::Effect {
        let tool = self.tools.iter().find(|t| t.name == self.agent.tool);
        super::Effect::new(
            &self.agent.tool,
            tool.and_then(|t| t.effect.as_deref()),
            tool.and_then(|t| t.operation.as_deref()),
        )
    }
}

/// A seeded tie-break for same-instant and near-tie events.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TieBreakConfig {
    /// Seed of the tie-break's stream (independent of the run's root seed).
    pub seed: u64,
    /// Timers due within this of the earliest are candidates too. Default: 0 (exact ties only).
    #[serde(default, with = "humantime_serde")]
    #[schemars(with = "String")]
    pub epsilon: Duration,
}

impl TieBreakConfig {
    /// A tie-break with `seed` and `epsilon`.
    pub fn new(seed: u64, epsilon: Duration) -> Self {
        TieBreakConfig { seed, epsilon }
    }
}

fn default_seed() -> u64 {
    1
}

/// The scenario format's current version (see `Scenario::schema_version`).
pub(crate) const SCHEMA_VERSION: u32 = 2;

fn schema_version() -> u32 {
    SCHEMA_VERSION
}

/// The incident's tool definition as published (`scenarios/issue_refund.tool.json`, a copy of
/// `tests/fixtures/incident/issue_refund.tool.json`).
pub(crate) fn default_tools() -> Vec<ToolDefinition> {
    let t: ToolDefinition =
        serde_json::from_str(include_str!("../../scenarios/issue_refund.tool.json"))
            .expect("embedded tool definition is valid");
    vec![t]
}

/// `expect`'s schema: a map of bounds whose keys are the names in [`super::limits::METRICS`] and
/// their effect-neutral aliases ([`super::effect::METRIC_ALIASES`]), so an editor checks and
/// completes them.
fn expect_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = <BTreeMap<String, Bound>>::json_schema(generator);
    let names: Vec<&str> = super::limits::METRICS
        .iter()
        .copied()
        .chain(super::effect::METRIC_ALIASES.iter().map(|(_, n)| *n))
        .collect();
    schema.insert(
        "propertyNames".to_string(),
        serde_json::json!({ "enum": names }),
    );
    schema
}

/// The metrics of the safety invariants of DESIGN §3 (at most one refund per ticket, no
/// over-refund, no lost refund, conservation), each 0 when its invariant holds.
pub(crate) const SAFETY_METRICS: &[&str] = &[
    "duplicate_refund_tickets",
    "over_refund_cents",
    "lost_refunds",
    "conservation_violations",
];

/// The default `expect`: the safety invariants of DESIGN §3 hold ([`SAFETY_METRICS`] ≤ 0).
pub(crate) fn default_expect() -> BTreeMap<String, Bound> {
    SAFETY_METRICS
        .iter()
        .copied()
        .map(|m| (m.to_string(), Bound::at_most(0.0)))
        .collect()
}

/// Inclusive bounds on one metric. `min` / `max` hold per run (per seed: `refundsim run` and
/// `refundsim check` both check them); the other fields hold over the seeds of one
/// `refundsim check` (scenario × policy), where `run` ignores them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Bound {
    /// Per seed: the metric must be ≥ this. Default: unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Per seed: the metric must be ≤ this. Default: unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Over the seeds (`check`): the mean must be ≥ this. Default: unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_min: Option<f64>,
    /// Over the seeds (`check`): the mean must be ≤ this. Default: unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_max: Option<f64>,
    /// Over the seeds (`check`): the nearest-rank 90th percentile must be ≤ this.
    /// Default: unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_max: Option<f64>,
    /// Over the seeds (`check`): the largest fraction of seeds, in `[0, 1]`, allowed to break
    /// `min` or `max`; needs `min` or `max`. Default: 0 (every seed must hold them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violating_seeds_max: Option<f64>,
}

impl Bound {
    /// `{"max": max}`: the metric must be ≤ `max` on every seed.
    pub fn at_most(max: f64) -> Self {
        Bound {
            max: Some(max),
            ..Bound::default()
        }
    }
}

/// Where refund tickets come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Arrivals {
    /// Id of the first generated ticket; later ones count up. Default: 1.
    #[serde(default = "default_first_ticket")]
    pub first_ticket_id: u64,
    /// A piecewise-constant Poisson rate schedule: phases run back to back from time 0. Ignored
    /// when `tickets` is given. Default: empty.
    #[serde(default)]
    pub schedule: Vec<RatePhase>,
    /// An explicit, recorded list of tickets. When non-empty it replaces `schedule`.
    #[serde(default)]
    pub tickets: Vec<TicketSpec>,
    /// Refund amount of generated tickets (cents): lognormal by median and p99, clamped to
    /// `[min_cents, max_cents]`. Default: p50 $120, p99 $600, min $5, max $2,000.
    #[serde(default)]
    pub amount: AmountDist,
    /// A generated ticket's charge is `amount × U(min, max)`, rounded up: a factor ≥ 2 lets a
    /// duplicate partial refund succeed; 1 makes the refund a full refund. Default: 2.0 to 4.0.
    #[serde(default)]
    pub charge_factor: FactorRange,
}

fn default_first_ticket() -> u64 {
    1
}

/// One phase of the arrival rate schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RatePhase {
    /// A name for reports (e.g. `"burst"`). Default: `phase{i}`.
    #[serde(default)]
    pub label: Option<String>,
    /// How long the phase lasts.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub duration: Duration,
    /// Mean ticket arrivals per second during the phase (Poisson); ≥ 0.
    pub rate_per_s: f64,
}

/// One recorded ticket.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct TicketSpec {
    /// Ticket id (unique).
    pub id: u64,
    /// When the ticket opens, after time 0.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub opened_at: Duration,
    /// Approved refund amount in cents; > 0.
    pub amount_cents: u64,
    /// The charge being refunded, in cents; ≥ `amount_cents`.
    pub charge_amount_cents: u64,
}

/// Distribution of refund amounts in cents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AmountDist {
    /// Median refund, cents.
    pub p50_cents: u64,
    /// 99th-percentile refund, cents; ≥ `p50_cents`.
    pub p99_cents: u64,
    /// Smallest refund, cents; > 0.
    pub min_cents: u64,
    /// Largest refund, cents; ≥ `min_cents`.
    pub max_cents: u64,
}

impl Default for AmountDist {
    fn default() -> Self {
        AmountDist {
            p50_cents: 12_000,
            p99_cents: 60_000,
            min_cents: 500,
            max_cents: 200_000,
        }
    }
}

/// A uniform range of multipliers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct FactorRange {
    /// Lower end; ≥ 1.
    pub min: f64,
    /// Upper end; ≥ `min`.
    pub max: f64,
}

impl Default for FactorRange {
    fn default() -> Self {
        FactorRange { min: 2.0, max: 4.0 }
    }
}

/// Requests from other features that share the refunds service's pool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct BackgroundLoad {
    /// Poisson arrivals per second, until the horizon. Default: 0 (off).
    #[serde(default)]
    pub rate_per_s: f64,
    /// How long each one holds a pool connection. Default: p50 300 ms, p99 1.5 s.
    #[serde(default = "default_bg_hold")]
    pub hold: LatencyDist,
}

fn default_bg_hold() -> LatencyDist {
    LatencyDist::new(d_ms(300), d_ms(1500))
}

impl Default for BackgroundLoad {
    fn default() -> Self {
        BackgroundLoad {
            rate_per_s: 0.0,
            hold: default_bg_hold(),
        }
    }
}

/// The LLM agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Agent {
    /// The tool the agent calls to refund. Must be in `tools`. Default: `issue_refund`.
    #[serde(default = "default_tool_name")]
    pub tool: String,
    /// Time from reading a ticket or a tool result to the model's decision. Default: p50 30 ms,
    /// p99 120 ms (the incident log shows 29 ms).
    #[serde(default = "default_think")]
    pub think_time: LatencyDist,
    /// Time from the decision to the tool call reaching the executor. Default: 4 ms (incident log).
    #[serde(default = "default_overhead", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub call_overhead: Duration,
    /// The retry rule from the system prompt.
    #[serde(default)]
    pub retry: RetryRule,
    /// Chance that the model's LLM call reading a successful tool result fails (a 5xx or 529
    /// overloaded from the model API), in `[0, 1]`: the refund is done, but the turn ends in an
    /// error. A `run_retry` layer whose `retry_on` has `llm-error` replays the whole turn, tool
    /// call included; without one the run fails and is escalated. Default: 0.
    #[serde(default)]
    pub llm_error_after_tool: f64,
}

fn default_tool_name() -> String {
    "issue_refund".into()
}
fn default_think() -> LatencyDist {
    LatencyDist::new(d_ms(30), d_ms(120))
}
fn default_overhead() -> Duration {
    d_ms(4)
}

impl Default for Agent {
    fn default() -> Self {
        Agent {
            tool: default_tool_name(),
            think_time: default_think(),
            call_overhead: default_overhead(),
            retry: RetryRule::default(),
            llm_error_after_tool: 0.0,
        }
    }
}

/// The model's retry rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RetryRule {
    /// Retries allowed per ticket after a failed call. Default: 1.
    #[serde(default = "one")]
    pub max_retries: u32,
    /// Which tools may be retried. Default: `any_tool` (the incident).
    #[serde(default = "any_tool")]
    pub applies_to: AppliesTo,
    /// Probability the model does what the rule says (retry when allowed, escalate when not);
    /// otherwise it does the opposite. In `[0, 1]`. Default: 1.
    #[serde(default = "one_f")]
    pub compliance: f64,
    /// Probability a retry carries a different amount ("argument drift"). Default: 0.
    #[serde(default)]
    pub amount_drift_probability: f64,
    /// Cents added to the amount of a drifted retry. Default: 100.
    #[serde(default = "hundred")]
    pub amount_drift_cents: i64,
}

fn one() -> u32 {
    1
}
fn one_f() -> f64 {
    1.0
}
fn hundred() -> i64 {
    100
}
fn any_tool() -> AppliesTo {
    AppliesTo::AnyTool
}

impl Default for RetryRule {
    fn default() -> Self {
        RetryRule {
            max_retries: 1,
            applies_to: AppliesTo::AnyTool,
            compliance: 1.0,
            amount_drift_probability: 0.0,
            amount_drift_cents: 100,
        }
    }
}

/// A tool definition in the Anthropic / MCP shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// Tool name.
    pub name: String,
    /// Description shown to the model. Default: empty.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the input (Anthropic `input_schema`, MCP `inputSchema`).
    #[serde(
        default,
        alias = "inputSchema",
        skip_serializing_if = "Option::is_none"
    )]
    pub input_schema: Option<serde_json::Value>,
    /// A bare parameter block, as in the incident's published definition (not a full schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_json::Value>,
    /// MCP ToolAnnotations. Absent means all defaults: not read-only, destructive, not
    /// idempotent, open-world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// What one successful call does in the world, as a noun the outputs use: `refund`,
    /// `charge`, `payout`, `transfer`, `order`, `message`, or a free noun of lower-case words
    /// (`gift card`). Stories, lint, reports and text labels speak of it (`duplicate-charge
    /// tickets`). Not part of MCP's or Anthropic's tool shape: refundsim's own. Default:
    /// `refund`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
    /// The provider operation that makes one effect, as the story prints it (`POST
    /// /v1/payment_intents`). Default: the known effect's Stripe endpoint (`refund`: `POST
    /// /v1/refunds`, `charge`: `POST /v1/payment_intents`, `payout`: `POST /v1/payouts`,
    /// `transfer`: `POST /v1/transfers`), `POST /orders`, `POST /messages`, or `POST /{plural}`
    /// for a free noun.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
}

impl ToolDefinition {
    /// Retry-eligible under `applies_to: idempotent_tools`: `readOnlyHint || idempotentHint`.
    pub fn is_idempotent(&self) -> bool {
        self.annotations
            .as_ref()
            .is_some_and(|a| a.read_only_hint || a.idempotent_hint)
    }
}

/// MCP ToolAnnotations (spec 2025-03-26), with the spec's defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// Human-readable title. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment. Default: false.
    #[serde(default)]
    pub read_only_hint: bool,
    /// The tool may perform destructive updates. Default: true.
    #[serde(default = "yes")]
    pub destructive_hint: bool,
    /// Calling it again with the same arguments has no additional effect. Default: false.
    #[serde(default)]
    pub idempotent_hint: bool,
    /// The tool interacts with an open world of external entities. Default: true.
    #[serde(default = "yes")]
    pub open_world_hint: bool,
}

fn yes() -> bool {
    true
}

/// What the executor does when a call times out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnTimeout {
    /// Tell the model the call failed (the incident: an `info` outcome shown as `fail`).
    ReportError,
    /// Poll the refunds service's `get_status` for the ticket before telling the model anything.
    ProbeStatus,
}

impl OnTimeout {
    /// The setting's name in a scenario file and in the trace: `report_error` or `probe_status`.
    pub fn as_str(self) -> &'static str {
        match self {
            OnTimeout::ReportError => "report_error",
            OnTimeout::ProbeStatus => "probe_status",
        }
    }
}

/// The tool executor.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Executor {
    /// Time limit of one tool call. Default: 8 s (the incident; the fix uses 15 s).
    #[serde(default = "default_timeout", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub timeout: Duration,
    /// What a timeout does. Default: `report_error`.
    #[serde(default = "report_error")]
    pub on_timeout: OnTimeout,
    /// With `probe_status`: time between status probes. Default: 1 s.
    #[serde(default = "default_probe_interval", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub probe_interval: Duration,
    /// With `probe_status`: how long to keep probing a `pending` ticket before reporting
    /// "outcome unknown, do not retry" to the model. Default: 60 s.
    #[serde(default = "default_probe_max", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub probe_max_wait: Duration,
    /// With `probe_status`: what makes the executor probe before answering the model —
    /// `timeout` (its own timeout, the fix as first shipped), `unknown_outcome` (also a 502 or
    /// 409 answer: the refund may exist) or `any_failure` (before reporting any failure, so a
    /// failure is shown only when the status says no refund was made). A probe answering
    /// `none` after an error answer is a failure the executor's retry layer may retry.
    /// Default: `timeout`.
    #[serde(default = "probe_after_timeout")]
    pub probe_after: ProbeAfter,
    /// With `probe_status`: the probe itself, a `get_status` request to the refunds service
    /// that takes time and can fail or time out. Default: see [`StatusProbe`].
    #[serde(default)]
    pub probe: StatusProbe,
    /// An executor-level retry layer under the model (e.g. LangChain ToolRetryMiddleware).
    /// Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<ExecutorRetry>,
    /// What happens to the request when the executor's timeout fires: `none` (it keeps
    /// running, the incident), `queued_only` or `abort_in_flight`. Default: `none`.
    #[serde(default = "cancel_none")]
    pub cancellation: Cancellation,
    /// The tool server's request idempotency key on `tools/call`, as proposed in MCP SEP-3182
    /// "Request Idempotency" (PR #3182, 2026-08; closed without being adopted into the
    /// specification): the MCP client sends one `params.idempotencyKey` per tool call, kept
    /// across its re-issues and duplicated copies, and the server rejects a key whose call is
    /// still running (`idempotency_key_in_progress`), returns the stored result of a finished
    /// one ("MUST return the previously produced result — whether that result was a successful
    /// response or an error"), and rejects a key sent with other arguments
    /// (`idempotency_key_conflict`). Default: none (the 2026-07-28 specification has no
    /// idempotency key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_idempotency: Option<RequestIdempotency>,
}

/// The tool server's `tools/call` idempotency key (MCP SEP-3182, proposed and not adopted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RequestIdempotency {
    /// How long the server keeps a finished call's result under its key; a key seen again
    /// later runs the tool again. SEP-3182 leaves retention to the server and cites Stripe's
    /// 24 h, PayPal's up to 45 days and SQS FIFO's 5 min. Default: 24 h.
    #[serde(default = "day", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub retention: Duration,
}

fn day() -> Duration {
    Duration::from_secs(24 * 3600)
}

impl Default for RequestIdempotency {
    fn default() -> Self {
        RequestIdempotency { retention: day() }
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(8)
}
fn probe_after_timeout() -> ProbeAfter {
    ProbeAfter::Timeout
}

/// When the executor probes with `probe_status` (see `Executor::probe_after`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ProbeAfter {
    /// After its own timeout only.
    Timeout,
    /// After a timeout, or an answer that leaves the outcome unknown (502, 409).
    UnknownOutcome,
    /// After a timeout or any error answer.
    AnyFailure,
}

/// The executor's status probe: one `get_status(ticket)` request to the refunds service. It
/// answers `none`, `pending`, `refunded` or — when it fails or times out, or when the service
/// itself does not know — `unknown`. What the answer is based on is the service's
/// `refunds_service.status_source`, read when the request reaches the service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StatusProbe {
    /// Time from sending the probe to the service reading its status source (the answer
    /// returns at once after that). Default: p50 30 ms, p99 200 ms (a small read).
    #[serde(default = "default_probe_latency")]
    pub latency: LatencyDist,
    /// The executor gives up on one probe after this long and counts it `unknown`; > 0.
    /// Default: 2 s.
    #[serde(default = "default_probe_timeout", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub timeout: Duration,
    /// Probability that one probe fails (the service answers 5xx): counted `unknown`.
    /// Default: 0.
    #[serde(default)]
    pub error_probability: f64,
}

fn default_probe_latency() -> LatencyDist {
    LatencyDist::new(d_ms(30), d_ms(200))
}
fn default_probe_timeout() -> Duration {
    Duration::from_secs(2)
}

impl Default for StatusProbe {
    fn default() -> Self {
        StatusProbe {
            latency: default_probe_latency(),
            timeout: default_probe_timeout(),
            error_probability: 0.0,
        }
    }
}
fn report_error() -> OnTimeout {
    OnTimeout::ReportError
}
fn default_probe_interval() -> Duration {
    Duration::from_secs(1)
}
fn default_probe_max() -> Duration {
    Duration::from_secs(60)
}

impl Default for Executor {
    fn default() -> Self {
        Executor {
            timeout: default_timeout(),
            on_timeout: OnTimeout::ReportError,
            probe_interval: default_probe_interval(),
            probe_max_wait: default_probe_max(),
            probe_after: ProbeAfter::Timeout,
            probe: StatusProbe::default(),
            retry: None,
            cancellation: Cancellation::None,
            request_idempotency: None,
        }
    }
}

/// An executor-level retry layer; defaults are LangChain ToolRetryMiddleware's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ExecutorRetry {
    /// Retries after the first attempt. Default: 2.
    #[serde(default = "two")]
    pub max_retries: u32,
    /// Delay before the first retry. Default: 1 s.
    #[serde(default = "default_probe_interval", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub initial_delay: Duration,
    /// Multiplier per retry. Default: 2.
    #[serde(default = "two_f")]
    pub backoff_factor: f64,
    /// Cap on one delay. Default: 60 s.
    #[serde(default = "default_probe_max", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub max_delay: Duration,
    /// Relative jitter: each delay is multiplied by `U(1 − jitter, 1 + jitter)`. Default: 0.25.
    #[serde(default = "quarter")]
    pub jitter: f64,
}

fn two() -> u32 {
    2
}
fn two_f() -> f64 {
    2.0
}
fn quarter() -> f64 {
    0.25
}

/// How the refunds service handles a Stripe key conflict (409 or 400 `idempotency_error`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnKeyConflict {
    /// Report an error to the caller.
    Fail,
    /// Look up the charge's refunds and answer with the one found ("409 means in progress,
    /// look it up": the mitigation).
    Lookup,
    /// Write a new nonce for the ticket and send the request again, once, under the new key:
    /// the bug in real reports of two handlers racing on one key, where the loser treats the
    /// 409 as "my key is bad" and starts over. Stripe sees a new refund.
    RetryNewKey,
}

fn key_conflict_fail() -> OnKeyConflict {
    OnKeyConflict::Fail
}

/// How a human issues a manual refund.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ManualRefundVia {
    /// From the Stripe dashboard, with no idempotency key.
    Dashboard,
    /// By re-running the refund tool through the executor and the refunds service (whose key
    /// mode then applies, within Stripe's key retention).
    Tool,
}

fn via_dashboard() -> ManualRefundVia {
    ManualRefundVia::Dashboard
}

/// The refunds service.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct RefundsService {
    /// Connections in the pool to Stripe; ≥ 1. FIFO wait. Default: 8 (the incident's pool was 3,
    /// see `scenarios/carrier-outage.json`).
    #[serde(default = "default_pool")]
    pub pool_size: u32,
    /// Give up waiting for a connection after this long (answer 503); > 0. Default: wait forever.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub acquire_timeout: Option<Duration>,
    /// The `t` of the report's `pool_wait_over_threshold_fraction` (the fraction of pool
    /// requests that waited longer than `t` for a connection) and of the queueing oracle's
    /// P(wait > t); > 0. Default: `executor.timeout`, since a request that waits that long for a
    /// connection has outlived its caller's timeout before it reaches Stripe. Changes no
    /// simulated behaviour.
    #[serde(
        default,
        with = "humantime_serde::option",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub pool_wait_threshold: Option<Duration>,
    /// Idempotency-key mode. Default: `none` (the incident).
    #[serde(default = "key_none")]
    pub idempotency_key: KeyMode,
    /// Drop work whose caller's deadline passed before it got a connection (deadline
    /// propagation). Default: false (the incident).
    #[serde(default)]
    pub deadline_propagation: bool,
    /// Local dedup: a pending row per ticket; a second request for a ticket with a pending or
    /// refunded row waits for / returns that row's result instead of calling Stripe. Default: false.
    #[serde(default)]
    pub local_dedup: bool,
    /// What the service does when Stripe answers a key conflict — 409 `idempotency_key_in_use`
    /// or 400 `idempotency_error`. `fail` reports an error (default); `lookup` treats it as "a
    /// request with this key is or was in progress" and polls the charge's refunds (every 1 s,
    /// up to 60 s), answering with the refund found; `retry_new_key` writes a new nonce and
    /// sends the request again under the new key (the bug of two handlers racing on one key).
    #[serde(default = "key_conflict_fail")]
    pub on_key_conflict: OnKeyConflict,
    /// A bug seen in the wild: after a failed request the service writes a new nonce, so the
    /// next request for the ticket goes out under a new key. Default: false. The same as
    /// `rotate_key: "after_error"`.
    #[serde(default)]
    pub new_nonce_after_error: bool,
    /// When the service writes a new nonce (a new per-ticket key) for the ticket: `never`,
    /// `after_error` (after any error, including an unknown outcome: the bug), or
    /// `after_definite_failure` (only when the error says nothing was done; a 502 from Stripe
    /// failing or going silent, or a 409 in progress, keeps the key). Default: `never`
    /// (`after_error` when `new_nonce_after_error` is true).
    #[serde(default = "rotate_never")]
    pub rotate_key: KeyRotation,
    /// What the service does after an unknown outcome from Stripe (a 5xx, a dropped connection,
    /// an SDK timeout, after the SDK's own retries): `fail` (answer 502) or `lookup` (poll the
    /// charge's refunds as `on_key_conflict: lookup` does, and answer with the refund found).
    /// Default: `fail`.
    #[serde(default = "unknown_fail")]
    pub on_unknown_outcome: OnUnknownOutcome,
    /// What the service's `get_status(ticket)` (the executor's probe, a human's look at the
    /// admin page) is based on: `completed_only`, `ledger` or `provider`. Default: `ledger`.
    #[serde(default = "status_ledger")]
    pub status_source: StatusSource,
    /// How the service's ledger records a Stripe call that ended without a definite answer —
    /// an SDK timeout, a lost connection, an abort, a 5xx (after the SDK's own retries):
    /// `failed` (the row is left as if nothing happened, so `get_status` reads `none` while
    /// Stripe may still commit) or `unknown` (the row is marked, and `get_status` answers
    /// `unknown` until a refund is recorded). Default: `failed` (what the incident's service
    /// did).
    #[serde(default = "recorded_failed")]
    pub sdk_timeout_recorded_as: UnknownOutcomeRecord,
    /// Retries of a pool acquire that timed out (`acquire_timeout`), each after
    /// `acquire_retry_backoff`; the request waits at the back of the queue again. At most 100.
    /// Default: 0.
    #[serde(default)]
    pub acquire_retries: u32,
    /// Pause before each acquire retry. Default: 100 ms.
    #[serde(default = "default_acquire_backoff", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub acquire_retry_backoff: Duration,
    /// Service time outside the pool and Stripe (parsing, ledger writes). Default: 20 ms.
    #[serde(default = "default_service_overhead", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub overhead: Duration,
    /// The business id (a merchant reference) the service puts in the request body, which a
    /// `provider.kind: business_id` provider recognises duplicates by: `none`, `per_attempt`
    /// (`ref_{ticket}_{request}`: a new id per request, so a retry is never recognised — the
    /// bug) or `per_ticket` (`ref_{ticket}`: one id per logical refund). Other providers ignore
    /// it. Default: `none`.
    #[serde(default = "key_none")]
    pub business_id: KeyMode,
    /// With `local_dedup`, what a second request for a ticket whose row is pending gets: `wait`
    /// (it waits for that request's result and answers with its refund) or `conflict` (409 at
    /// once, as a unique constraint on the ticket's row answers). Default: `wait`.
    #[serde(default)]
    pub on_pending_row: OnPendingRow,
    /// Before sending a create for a ticket whose ledger records no refund, list the charge's
    /// refunds at the provider (as `GET /v1/refunds?charge=…` would) and answer with a refund
    /// that moves money if there is one: "check before act", for a provider that has no
    /// idempotency keys and a service that may have forgotten a call (a crash before its ledger
    /// write). Only a refund the provider has committed is listed, so without `local_dedup` two
    /// concurrent requests still both create. Default: false.
    #[serde(default)]
    pub lookup_before_create: bool,
    /// Chance, per Stripe call that returned a refund, that the service fails before its ledger
    /// write (a crash, an OOM kill, a failed database write): the refund exists at Stripe, the
    /// ledger does not record it, and the caller's connection drops (it sees a 502). In `[0, 1]`.
    /// Default: 0.
    #[serde(default)]
    pub crash_after_provider_ok: f64,
    /// Work the tool run still does after its refund has committed at the provider and been
    /// written to the ledger, before the service answers its caller (rendering and emailing a
    /// credit note, syncing a CRM, a second API call): the effect commits part-way through the
    /// run while the run goes on. A caller that times out in this window is told of a failure
    /// for a refund that exists; a status probe finds it (the ledger already records it).
    /// Default: 0 (the service answers as soon as the refund is recorded). Also spelled
    /// `work_after_effect`.
    #[serde(default, with = "humantime_serde")]
    #[schemars(with = "String")]
    pub work_after_refund: Duration,
    /// The Stripe SDK inside the service.
    #[serde(default)]
    pub stripe_client: StripeClient,
}

/// What a request for a ticket whose ledger row another request holds gets (see
/// `RefundsService::on_pending_row`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnPendingRow {
    /// Wait for the holder's result (polling the row every 100 ms).
    #[default]
    Wait,
    /// Answer 409 `refund already in progress` at once (a unique constraint's violation).
    Conflict,
}

fn default_pool() -> u32 {
    8
}
fn rotate_never() -> KeyRotation {
    KeyRotation::Never
}
fn status_ledger() -> StatusSource {
    StatusSource::Ledger
}
fn recorded_failed() -> UnknownOutcomeRecord {
    UnknownOutcomeRecord::Failed
}

/// What the refunds service's `get_status(ticket)` knows (see `RefundsService::status_source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusSource {
    /// Only refunds the ledger recorded as completed: `refunded` or `none`. The naive version
    /// many teams ship first: a request in flight reads `none`.
    CompletedOnly,
    /// The ledger: `refunded` if a refund is recorded, else `pending` while a request for the
    /// ticket is being worked on, else `unknown` if a call's outcome was recorded as unknown
    /// (`sdk_timeout_recorded_as: unknown`), else `none`.
    Ledger,
    /// The ledger, and first a lookup of the charge's refunds at the provider (as `GET
    /// /v1/refunds?charge=…` would): `refunded` if the provider lists a money-moving refund
    /// for the ticket's charge. A refund the provider has not committed yet is not listed.
    Provider,
}

/// How the ledger records a Stripe call without a definite answer (see
/// `RefundsService::sdk_timeout_recorded_as`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnknownOutcomeRecord {
    /// As a failure: nothing is recorded.
    Failed,
    /// As an unknown outcome: `get_status` answers `unknown` until a refund is recorded.
    Unknown,
}
fn unknown_fail() -> OnUnknownOutcome {
    OnUnknownOutcome::Fail
}
fn default_acquire_backoff() -> Duration {
    d_ms(100)
}

/// When the refunds service rotates a ticket's key (see `RefundsService::rotate_key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyRotation {
    /// Never: one key per ticket for good.
    Never,
    /// After any error, unknown outcomes included (the bug).
    AfterError,
    /// Only after a definite failure (nothing was done: 4xx other than 409, the service's own
    /// 503/504 before Stripe).
    AfterDefiniteFailure,
}

/// What the refunds service does after an unknown outcome (see
/// `RefundsService::on_unknown_outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnUnknownOutcome {
    /// Answer 502.
    Fail,
    /// Look the charge's refunds up and answer with the one found.
    Lookup,
}

fn cancel_none() -> Cancellation {
    Cancellation::None
}
fn key_none() -> KeyMode {
    KeyMode::None
}
fn default_service_overhead() -> Duration {
    d_ms(20)
}

impl Default for RefundsService {
    fn default() -> Self {
        RefundsService {
            pool_size: default_pool(),
            acquire_timeout: None,
            pool_wait_threshold: None,
            idempotency_key: KeyMode::None,
            deadline_propagation: false,
            local_dedup: false,
            on_key_conflict: OnKeyConflict::Fail,
            new_nonce_after_error: false,
            rotate_key: KeyRotation::Never,
            on_unknown_outcome: OnUnknownOutcome::Fail,
            status_source: StatusSource::Ledger,
            sdk_timeout_recorded_as: UnknownOutcomeRecord::Failed,
            acquire_retries: 0,
            acquire_retry_backoff: default_acquire_backoff(),
            overhead: default_service_overhead(),
            business_id: KeyMode::None,
            lookup_before_create: false,
            on_pending_row: OnPendingRow::Wait,
            crash_after_provider_ok: 0.0,
            work_after_refund: Duration::ZERO,
            stripe_client: StripeClient::default(),
        }
    }
}

/// The Stripe SDK's network retries (stripe-node / stripe-python rules).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StripeClient {
    /// Network retries inside one logical call, reusing one key (auto-generated when the
    /// service sends none). Default: 0 (the incident; stripe-node's own default is 1… set 2 to
    /// model the common configuration).
    #[serde(default)]
    pub max_network_retries: u32,
    /// The SDK's own request timeout. Default: 80 s (stripe-node).
    #[serde(default = "default_sdk_timeout", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub timeout: Duration,
    /// The key the SDK sends on its network retries when the service sent none: `reuse` (one
    /// key generated per logical call and sent on every try, as stripe-node and stripe-python do
    /// today), `new_per_retry` (a fresh key on every try, as some older SDK versions did, which
    /// protects nothing) or `none` (no key at all); with these three a key the service sends is
    /// always reused. `replace_per_call`: a client or interceptor that sets its own key on every
    /// logical call, replacing the service's key (see [`SdkKey::ReplacePerCall`]).
    /// Default: `reuse`.
    #[serde(default = "sdk_key_reuse")]
    pub key: SdkKey,
    /// stripe-node's retry of a dropped connection: `off` (the default), `without_key` (one retry
    /// even at `max_network_retries = 0`, sent without an idempotency key, before stripe-node
    /// fixed it) or `with_key` (the fixed version: the retry carries the call's key).
    #[serde(default = "reset_retry_off")]
    pub retry_dropped_connection: DroppedConnectionRetry,
    /// Whether the SDK honours the provider's retry headers, as stripe-node and stripe-python
    /// do: `Stripe-Should-Retry` decides (`true` retries even a 429, `false` forbids a retry),
    /// and a `Retry-After` of up to 60 s is the least wait before the retry. `false` is a generic
    /// HTTP client's retry: connection errors, 409 and 5xx, never a 429, with its own backoff.
    /// Default: true.
    #[serde(default = "yes")]
    pub honour_retry_headers: bool,
}

/// The SDK's key on network retries (see `StripeClient::key`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SdkKey {
    /// One generated key per logical call, sent on every try (stripe-node, stripe-python).
    Reuse,
    /// A new generated key on every try (older SDK versions).
    NewPerRetry,
    /// No generated key.
    None,
    /// The client sets its own key on every logical call and it *replaces* the key the service
    /// put on the request: one generated key per call, sent on each of the SDK's network tries,
    /// whatever the service sent. What an HTTP interceptor does that sets `Idempotency-Key` with
    /// replace semantics (OkHttp's `Request.Builder.header`, axios' `headers.set`, as opposed to
    /// adding the header only when absent) and a UUID per request; also client wrappers that
    /// take no key argument and generate one per call. A retry from above the service is a new
    /// call, so it goes out under a new key: the service's per-ticket key protects nothing.
    ReplacePerCall,
}

/// stripe-node's retry of a dropped connection (see `StripeClient::retry_dropped_connection`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DroppedConnectionRetry {
    /// No such retry.
    Off,
    /// One retry of a dropped connection even at `max_network_retries = 0`, without a key.
    WithoutKey,
    /// The same retry, carrying the call's key (the fixed stripe-node).
    WithKey,
}

fn sdk_key_reuse() -> SdkKey {
    SdkKey::Reuse
}
fn reset_retry_off() -> DroppedConnectionRetry {
    DroppedConnectionRetry::Off
}

fn default_sdk_timeout() -> Duration {
    Duration::from_secs(80)
}

impl Default for StripeClient {
    fn default() -> Self {
        StripeClient {
            max_network_retries: 0,
            timeout: default_sdk_timeout(),
            key: SdkKey::Reuse,
            retry_dropped_connection: DroppedConnectionRetry::Off,
            honour_retry_headers: true,
        }
    }
}

/// The fake Stripe (DESIGN §6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Stripe {
    /// `POST /v1/refunds` latency; the only latency that may be a `script` (exact latencies
    /// per request, keyed by ticket, model attempt and SDK try). Default: p50 350 ms, p99 1.5 s.
    #[serde(default = "default_stripe_latency")]
    pub latency: LatencyDist,
    /// When non-empty, each request's latency is one of these instead of a `latency` draw
    /// (uniform from the request's stream; in exhaustive exploration every choice is visited).
    /// Default: empty.
    #[serde(
        default,
        with = "humantime_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[schemars(with = "Vec<String>")]
    pub latency_choices: Vec<Duration>,
    /// How long an idempotency key is kept; an older key runs as a fresh request; > 0.
    /// Default: 24 h (Stripe's retention).
    #[serde(default = "default_retention", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub idempotency_key_retention: Duration,
    /// Requests per second before 429 `rate_limit` (live mode 100, sandbox 25); 0 means no limit.
    /// Default: 100.
    #[serde(default = "default_rate_limit")]
    pub rate_limit_per_s: u32,
    /// Injected faults. Default: none.
    #[serde(default)]
    pub faults: Faults,
}

fn default_stripe_latency() -> LatencyDist {
    LatencyDist::new(d_ms(350), d_ms(1500))
}
fn default_retention() -> Duration {
    Duration::from_secs(24 * 3600)
}
fn default_rate_limit() -> u32 {
    100
}

impl Default for Stripe {
    fn default() -> Self {
        Stripe {
            latency: default_stripe_latency(),
            latency_choices: Vec::new(),
            idempotency_key_retention: default_retention(),
            rate_limit_per_s: default_rate_limit(),
            faults: Faults::default(),
        }
    }
}

/// Fault probabilities per Stripe request, each in `[0, 1]`. Default: all 0.
///
/// `refundsim explore --exhaustive` makes `lock_timeout`, `error_500_after_commit` and
/// `response_lost_after_commit` a choice per request instead of a draw: each request is run with
/// no fault and with each of them whose probability is above 0 (a probability of 1 rules out
/// the outcomes it excludes). The other faults are drawn from the seed as in any run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Faults {
    /// The refund is created, then the response is a 500 (outcome unknown to the client).
    #[serde(default)]
    pub error_500_after_commit: f64,
    /// The refund is created, then the response is lost (client sees a connection reset).
    #[serde(default)]
    pub response_lost_after_commit: f64,
    /// 429 `lock_timeout` with `Stripe-Should-Retry: true`, before anything runs.
    #[serde(default)]
    pub lock_timeout: f64,
    /// The request's latency is multiplied by `latency_spike_factor`.
    #[serde(default)]
    pub latency_spike: f64,
    /// Multiplier for a latency spike. Default: 10.
    #[serde(default = "ten")]
    pub latency_spike_factor: f64,
    /// The refund is created with status `pending` (money still moves). Also spelled
    /// `effect_pending`.
    #[serde(default)]
    pub refund_pending: f64,
    /// The refund is created with status `failed` (no money moves). Also spelled
    /// `effect_failed`.
    #[serde(default)]
    pub refund_failed: f64,
    /// The service's request never reaches Stripe: the TCP connection cannot be made (refused
    /// or reset during the handshake), so nothing runs and nothing is saved under the key, and
    /// the client knows it at once (no latency). What Envoy's `retry_on: connect-failure`
    /// matches and every HTTP client may retry safely; stripe-node retries it as a connection
    /// error. Drawn per HTTP try (each proxy try too) from its own stream, so scenarios without
    /// it draw nothing new. Applies to the service's requests, not a human's dashboard.
    /// Default: 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub connect_failure: f64,
}

fn is_zero(p: &f64) -> bool {
    *p == 0.0
}

fn ten() -> f64 {
    10.0
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            error_500_after_commit: 0.0,
            response_lost_after_commit: 0.0,
            lock_timeout: 0.0,
            latency_spike: 0.0,
            latency_spike_factor: ten(),
            refund_pending: 0.0,
            refund_failed: 0.0,
            connect_failure: 0.0,
        }
    }
}

/// Humans who take escalated tickets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Humans {
    /// Whether anyone takes escalations; if not, an escalated ticket with no refund is lost.
    /// Default: true inside a `humans` section; a scenario without the section has none
    /// ([`Humans::none`]).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Time from escalation to a human acting. Default: p50 20 min, p99 2 h.
    #[serde(default = "default_pickup")]
    pub pickup_delay: LatencyDist,
    /// Probability the human checks the Stripe dashboard for an existing refund first; otherwise
    /// they issue a manual refund (no idempotency key). In `[0, 1]`. Default: 0.8.
    #[serde(default = "default_check")]
    pub check_probability: f64,
    /// How a human refunds when they do. Default: `dashboard`. Also spelled
    /// `manual_effect_via`.
    #[serde(default = "via_dashboard")]
    pub manual_refund_via: ManualRefundVia,
    /// A human who checks also reads the refunds service's status for the ticket and, while it
    /// is `pending` (a request still queued or in flight), waits and checks again instead of
    /// refunding. Default: false (they look at the Stripe dashboard only).
    #[serde(default)]
    pub check_service_status: bool,
}

fn default_pickup() -> LatencyDist {
    LatencyDist::new(Duration::from_secs(20 * 60), Duration::from_secs(2 * 3600))
}
fn default_check() -> f64 {
    0.8
}

impl Humans {
    /// No humans: what a scenario without a `humans` section gets, so that a run has no manual
    /// refunds the file did not ask for.
    pub fn none() -> Self {
        Humans {
            enabled: false,
            ..Humans::default()
        }
    }
}

impl Default for Humans {
    fn default() -> Self {
        Humans {
            enabled: true,
            pickup_delay: default_pickup(),
            check_probability: default_check(),
            manual_refund_via: ManualRefundVia::Dashboard,
            check_service_status: false,
        }
    }
}

/// The reconciliation job.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Reconciliation {
    /// Whether the job runs. Default: false (the incident had none; the fix adds it).
    #[serde(default)]
    pub enabled: bool,
    /// Time between runs; the first run is at one interval, the last at or before the horizon.
    /// Default: 1 h.
    #[serde(default = "default_recon", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub interval: Duration,
    /// A sweep of the refunds service's own ledger for refunds stuck pending (a request still
    /// in flight, or an outcome recorded as unknown) longer than `after`, as payment systems
    /// run to close "stuck in processing" records. Runs whether or not `enabled` is set (that
    /// is the duplicate alert). Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_pending: Option<StalePending>,
}

/// The stale-pending sweep (`reconciliation.stale_pending`): every `every`, each ledger row
/// pending for at least `after` is closed. With `check_provider: false` it is marked failed
/// without asking the provider: the service's status then says `none`, and the service
/// treats it as a definite failure, so its `rotate_key` rule writes a new key for the next
/// request — if the pending request had in fact committed, that request is a second refund.
/// With `check_provider: true` the sweep first lists the charge's refunds at the provider
/// (`GET /v1/refunds?charge=…`) and records one that moves money as the ticket's refund (Stripe's
/// guidance for an unknown outcome: look the object up before trying again); only a ticket
/// with none is marked failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StalePending {
    /// How long a row must have been pending, measured from the request that made it pending;
    /// > 0. Required.
    #[serde(with = "humantime_serde")]
    #[schemars(with = "String")]
    pub after: Duration,
    /// Time between sweeps; the first at one `every`. At least 1 s. Default: 1 min.
    #[serde(default = "default_sweep", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub every: Duration,
    /// Ask the provider before marking a row failed. Default: false (the bug).
    #[serde(default)]
    pub check_provider: bool,
}

fn default_sweep() -> Duration {
    Duration::from_secs(60)
}

fn default_recon() -> Duration {
    Duration::from_secs(3600)
}

impl Default for Reconciliation {
    fn default() -> Self {
        Reconciliation {
            enabled: false,
            interval: default_recon(),
            stale_pending: None,
        }
    }
}

/// serde for a list of humantime durations.
mod humantime_list {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(transparent)]
    struct D(#[serde(with = "humantime_serde")] Duration);

    pub(super) fn serialize<S: Serializer>(v: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        v.iter().map(|d| D(*d)).collect::<Vec<_>>().serialize(s)
    }

    pub(super) fn deserialize<'de, De: Deserializer<'de>>(
        d: De,
    ) -> Result<Vec<Duration>, De::Error> {
        Ok(Vec::<D>::deserialize(d)?.into_iter().map(|x| x.0).collect())
    }
}
