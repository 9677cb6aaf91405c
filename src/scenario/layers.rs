//! The call path as a stack of named layers (DESIGN §1b): the `layers` and `stack` sections of a
//! scenario: where the added layers sit and the stack a scenario compiles to. One layer's
//! settings are in `retry_layer.rs` (re-exported here), their validation in
//! `validate/layers.rs`.
//!
//! The four built-in layers are configured by today's sections and keep their names:
//! `model_retry` (`agent.retry`), `executor` (`executor`), `refunds_service`
//! (`refunds_service`) and `sdk` (`refunds_service.stripe_client`). `layers` adds named retry
//! layers — a framework's retry middleware (`kind: "retry"`) or a proxy / sidecar
//! (`kind: "proxy"`) — and `stack` says where each sits. Layers are reached by name, so a policy
//! (`{"layers": {"sidecar": {"max_retries": 0}}}`) or `--set layers.sidecar.max_retries=0`
//! changes one layer's field without restating the stack (RFC 7396 replaces arrays whole).

use super::config::Scenario;
pub use super::retry_layer::{
    Backoff, BackoffKind, BreakerDefaults, BreakerSettings, Checkpoint, Jitter, LayerKind, Layers,
    Position, ReportTimeout, RetryBudget, RetryLayer, RetryOn, RetryThrottling,
    DEFAULT_JITTER_FACTOR, MCP_DEFAULT_DUPLICATE_GAP, MCP_DEFAULT_REQUEST_TIMEOUT,
};

/// The built-in layers, top to bottom: the default stack.
pub(crate) const BUILT_IN_LAYERS: [&str; 4] = ["model_retry", "executor", "refunds_service", "sdk"];

/// The stack a scenario compiles to, top (the agent's side) to bottom (the provider's side):
/// `stack` if given, else the built-in layers.
pub fn stack_of(s: &Scenario) -> Vec<String> {
    match &s.stack {
        Some(names) => names.clone(),
        None => BUILT_IN_LAYERS.iter().map(|n| n.to_string()).collect(),
    }
}

/// `s` as `refundsim show` prints it: every default written out and `stack` set to the stack
/// it compiles to, so the old sections' implicit path is visible (and the output loads as a
/// scenario that runs the same).
pub fn compiled(s: &Scenario) -> Scenario {
    let mut out = s.clone();
    out.stack = Some(stack_of(s));
    out
}

/// The added layers at `position`, top to bottom, with their names.
pub fn layers_at(s: &Scenario, position: Position) -> Vec<(&str, &RetryLayer)> {
    let stack = stack_of(s);
    let (from, to) = match position {
        Position::AboveModel => ("", "model_retry"),
        Position::AroundTool => ("model_retry", "executor"),
        Position::BeforeService => ("executor", "refunds_service"),
        Position::BeforeProvider => ("sdk", ""),
    };
    let start = stack.iter().position(|n| n == from).map_or(0, |i| i + 1);
    let end = if to.is_empty() {
        stack.len()
    } else {
        stack.iter().position(|n| n == to).unwrap_or(start)
    };
    stack[start..end.max(start)]
        .iter()
        .filter_map(|n| s.layers.get_key_value(n.as_str()))
        .map(|(k, v)| (k.as_str(), v))
        .collect()
}
