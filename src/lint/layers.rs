//! Rules on the call path as layers (DESIGN §1b): retries at every layer, per-try timeouts,
//! keys rotated on an unknown outcome, proxies retrying POST without a budget, and hedges
//! resending a refund that is still running.
//!
//! They complement the older rules rather than repeat them: the model's retry rule and the
//! executor's `retry` stay with `retry-non-idempotent` (which fires there whatever the key), and
//! the executor's timeout stays with `timeout-below-burst-p99`; the rules here cover the added
//! layers (`layers`) and the SDK.

use std::time::Duration;

use super::burst::estimate;
use super::finding::{Finding, Severity};
use super::guard::{guard, rotates_on_any_error, Origin};
use super::spans::{layer_span, sdk_span};
use super::tools::ToolFacts;
use crate::scenario::layer_kinds::defaults;
use crate::scenario::{
    layers_at, AppliesTo, DroppedConnectionRetry, KeyMode, LayerKind, Position, ProviderKind,
    RetryLayer, RetryOn, Scenario, SdkKey, Stack, StripeClient,
};

fn s_(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Whether `l` retries an outcome after which the request may have reached Stripe and
/// committed: a reset, a 5xx (502–504 included) or a timeout. `connect-failure`, `429`,
/// `retriable-4xx` and `pool-exhausted` alone leave nothing committed. Uncounted re-runs of a
/// timed-out try (`timeout_retries`) repeat it whatever `retry_on` says.
fn retries_unknown_outcomes(l: &RetryLayer) -> bool {
    (l.retries() > 0
        && [RetryOn::Reset, RetryOn::GatewayError, RetryOn::Timeout]
            .into_iter()
            .any(|c| l.retries_on(c)))
        || l.timeout_retries.is_some_and(|n| n > 0)
}

/// The `retry_on` classes of `l` that may repeat a committed request, for messages.
fn unknown_classes(l: &RetryLayer) -> String {
    let mut out = Vec::new();
    if l.retries_on(RetryOn::Reset) {
        out.push("reset");
    }
    if l.retries_on(RetryOn::FiveXx) {
        out.push("5xx");
    } else if l.retries_on(RetryOn::GatewayError) {
        out.push("gateway-error");
    }
    if l.retries_on(RetryOn::Timeout) {
        out.push("timeout");
    }
    if defaults(l.kind).above_model && l.retries_on(RetryOn::LlmError) {
        out.push("llm-error");
    }
    out.join(", ")
}

fn retries_word(n: u32) -> &'static str {
    if n == 1 {
        "retry"
    } else {
        "retries"
    }
}

fn where_(s: &Scenario, position: Position) -> String {
    match position {
        Position::AboveModel => "above model_retry".into(),
        Position::AroundTool => "between model_retry and executor".into(),
        Position::BeforeService => "between executor and refunds_service".into(),
        Position::BeforeProvider => format!("between sdk and {}", provider_name(s)),
    }
}

fn kind_name(k: LayerKind) -> &'static str {
    defaults(k).name
}

/// Who answers the refund POST, for messages: `Stripe`, or `the provider` for the others.
pub(super) fn provider_name(s: &Scenario) -> &'static str {
    match s.provider.kind {
        ProviderKind::Stripe => "Stripe",
        _ => "the provider",
    }
}

/// `layer-retry-without-stable-key`: one finding per added layer, and one for the SDK, that
/// retries the non-idempotent `tool` after an unknown outcome without something the provider
/// recognises the retry by ([`guard`]): on Stripe the service's per-ticket key, never rotated;
/// on a `business_id` provider a per-ticket business id (any business id for a proxy after the
/// SDK, which resends the same body); on `keys_ignored` the service's own dedup for a layer
/// above the service and nothing below it; on `dedup_window` a retry that reaches the provider
/// within the window ([`layer_span`]) or the service's own dedup. The fix is the provider's:
/// the key, the business id, or the dedup, or else the layer narrowed.
pub(crate) fn layer_retry_without_stable_key(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    if tool.idempotent {
        return out;
    }
    for position in [
        Position::AboveModel,
        Position::AroundTool,
        Position::BeforeService,
        Position::BeforeProvider,
    ] {
        for (name, l) in layers_at(s, position) {
            out.extend(layer_retry_finding(s, tool, position, name, l));
        }
    }
    out.extend(sdk_retry_without_key(s, tool));
    out
}

/// [`layer_retry_without_stable_key`] for added layer `name` (`l`) at `position`: a finding
/// when it retries an unknown outcome (or, above the model, replays a tool call that succeeded)
/// and nothing the provider recognises the retry by protects it.
fn layer_retry_finding(
    s: &Scenario,
    tool: &ToolFacts,
    position: Position,
    name: &str,
    l: &RetryLayer,
) -> Option<Finding> {
    // A hedge resends without a failure: `hedge-without-stable-key` covers it.
    if defaults(l.kind).hedges {
        return None;
    }
    // The tool filter applies around tool execution only (a proxy knows no tools).
    if position == Position::AroundTool && l.applies_to == AppliesTo::IdempotentTools {
        return None;
    }
    // An MCP client's re-sends are `mcp-client-resends-without-key`'s.
    if defaults(l.kind).tool_client {
        return None;
    }
    // Above the model, a retry on `llm-error` replays a tool call that succeeded.
    let replays_done =
        position == Position::AboveModel && l.retries() > 0 && l.retries_on(RetryOn::LlmError);
    if !retries_unknown_outcomes(l) && !replays_done {
        return None;
    }
    let g = guard(s, Origin::at(position), layer_span(s, position, l));
    if g.holds {
        return None;
    }
    let (narrow, narrowed) = narrowing(s, position, name);
    let (hint, fix) = g.hint_or(&narrow, narrowed);
    let n = l.all_retries();
    Some(
        Finding::new(
            "layer-retry-without-stable-key",
            Severity::Error,
            format!("layers.{name}.max_retries"),
            format!(
                "layer `{name}` ({} layer {}) retries `{}` ({n} {} on {}), which is neither readOnlyHint nor idempotentHint, but {}: a try that reached {} before failing is refunded again",
                kind_name(l.kind),
                where_(s, position),
                tool.name,
                retries_word(n),
                unknown_classes(l),
                g.problem,
                provider_name(s)
            ),
            hint,
        )
        .with_fix(fix),
    )
}

/// `hedge-without-stable-key`: one finding per `hedge` layer that sends hedged tries of the
/// non-idempotent `tool` (`max_retries` > 0) when nothing the provider recognises a repeat by
/// protects them ([`guard`], with the hedge's span: `max_retries × hedging_delay`). A hedge
/// needs no failure to resend: every request slower than `hedging_delay` is sent again while
/// the first is still running, and both run to the provider. The fix is the provider's (with
/// Stripe's per-ticket key the loser gets 409 `idempotency_key_in_use`, or a replay), or
/// hedging off for the refund (`max_retries` 0), as gRPC's A6 ("only for methods that are safe
/// to execute multiple times") and cristalhq/hedgedhttp#61 ("return 0 for POST") say.
pub(crate) fn hedge_without_stable_key(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    if tool.idempotent {
        return out;
    }
    for position in [
        Position::AroundTool,
        Position::BeforeService,
        Position::BeforeProvider,
    ] {
        for (name, l) in layers_at(s, position) {
            if !defaults(l.kind).hedges || l.retries() == 0 {
                continue;
            }
            let g = guard(s, Origin::at(position), layer_span(s, position, l));
            if g.holds {
                continue;
            }
            let off = format!("layers.{name}.max_retries=0");
            let narrow = format!("turn hedging off for the refund (layers.{name}.max_retries 0)");
            let (hint, fix) = g.hint_or(&narrow, off);
            let n = l.retries();
            out.push(
                Finding::new(
                    "hedge-without-stable-key",
                    Severity::Error,
                    format!("layers.{name}.max_retries"),
                    format!(
                        "hedge `{name}` ({}) sends `{}`, which is neither readOnlyHint nor idempotentHint, again while the first request is still running ({n} hedged {} after {} without an answer), but {}: both requests run to {} whichever answers first, so every refund slower than the hedging delay is made twice",
                        where_(s, position),
                        tool.name,
                        if n == 1 { "try" } else { "tries" },
                        s_(l.hedging_delay()),
                        g.problem,
                        provider_name(s)
                    ),
                    hint,
                )
                .with_fix(fix),
            );
        }
    }
    out
}

/// `hedge-below-ledger`: a `hedge` layer after `sdk` (`max_retries` > 0) that hedges a
/// money-moving tool. It sits below the service's ledger: the service sees one request, and the
/// hedge answers it with whichever try answers first. When that is a definite failure (a
/// provider's answer to an in-flight duplicate, 422 on some gateways, or a 429) the service
/// records a failure while another try is still executing at the provider and commits, and the
/// status probe (or a human reading the service's status) is told no refund was made. The claim's
/// keys and probe do not cover it (`tests/it/prop_hedges.rs`); in front of the service the hedge's
/// tries are the service's own requests, pending in its ledger until they end. The fix moves the
/// hedge in front of `refunds_service`.
pub(crate) fn hedge_below_ledger(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    for (name, l) in layers_at(s, Position::BeforeProvider) {
        if !defaults(l.kind).hedges || l.retries() == 0 {
            continue;
        }
        let mut moved: Vec<String> = crate::scenario::stack_of(s)
            .into_iter()
            .filter(|n| n != name)
            .collect();
        let at = moved
            .iter()
            .position(|n| n == "refunds_service")
            .unwrap_or(0);
        moved.insert(at, name.to_string());
        let stack = serde_json::to_string(&moved).unwrap_or_default();
        out.push(
            Finding::new(
                "hedge-below-ledger",
                Severity::Warning,
                "stack",
                format!(
                    "hedge `{name}` sits after sdk, below the service's ledger: it answers the service's one request of `{}` with the first try to answer, and when that is a definite failure (an in-flight duplicate refused, a 429) the service records a failure while another try still executes at {} and commits, so the status probe says no refund was made",
                    tool.name,
                    provider_name(s)
                ),
                format!(
                    "place `{name}` in front of refunds_service, where each hedged try is a request the service records as pending until it ends"
                ),
            )
            .with_fix([format!("stack={stack}")]),
        );
    }
    out
}

/// How to narrow layer `name` at `position` so that it no longer retries what may have reached
/// the provider: the hint's words and the `--set` that does it.
fn narrowing(s: &Scenario, position: Position, name: &str) -> (String, String) {
    match position {
        Position::AboveModel => (
            format!("narrow layers.{name}.retry_on to failures that never reach {} ([\"pool-exhausted\"])", provider_name(s)),
            format!("layers.{name}.retry_on=[\"pool-exhausted\"]"),
        ),
        Position::AroundTool => (
            format!("set layers.{name}.applies_to to \"idempotent_tools\""),
            format!("layers.{name}.applies_to=idempotent_tools"),
        ),
        Position::BeforeService | Position::BeforeProvider => (
            format!("narrow layers.{name}.retry_on to [\"connect-failure\"]"),
            format!("layers.{name}.retry_on=[\"connect-failure\"]"),
        ),
    }
}

/// The SDK's part of `layer-retry-without-stable-key`: its network retries and stripe-node's
/// retry of a dropped connection. On Stripe, when the service sends no key and the SDK's own key
/// does not carry over; on another provider, when what it recognises a repeat by does not
/// carry over to the SDK's tries ([`guard`] from below: a business id, a try within the
/// duplicate window; nothing on `keys_ignored`). One finding for the layer, at the first
/// offending field.
fn sdk_retry_without_key(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    if s.provider.kind != ProviderKind::Stripe {
        return sdk_resends_unrecognised(s, tool);
    }
    let svc = &s.refunds_service;
    if svc.idempotency_key != KeyMode::None {
        // A key the service sends is reused on every SDK try.
        return None;
    }
    let c = &svc.stripe_client;
    let key = match c.key {
        SdkKey::Reuse => "reuse",
        SdkKey::NewPerRetry => "new_per_retry",
        SdkKey::None => "none",
        SdkKey::ReplacePerCall => "replace_per_call",
    };
    // `replace_per_call` sends one key per logical call on every try, as `reuse` does.
    let stable = matches!(c.key, SdkKey::Reuse | SdkKey::ReplacePerCall);
    let network = c.max_network_retries > 0 && !stable;
    let dropped = match c.retry_dropped_connection {
        DroppedConnectionRetry::Off => false,
        DroppedConnectionRetry::WithoutKey => true,
        DroppedConnectionRetry::WithKey => !stable,
    };
    let path = if network {
        "refunds_service.stripe_client.max_network_retries"
    } else if dropped {
        "refunds_service.stripe_client.retry_dropped_connection"
    } else {
        return None;
    };
    let what = sdk_retries_without_key(c, key, network, dropped);
    let (hint, fix) = if network || !stable {
        (
            "set refunds_service.stripe_client.key to \"reuse\" (one key per logical call, as stripe-node and stripe-python do), or refunds_service.idempotency_key to \"per_ticket\"",
            "refunds_service.stripe_client.key=reuse",
        )
    } else {
        (
            "set refunds_service.stripe_client.retry_dropped_connection to \"with_key\" (the fixed stripe-node), or refunds_service.idempotency_key to \"per_ticket\"",
            "refunds_service.stripe_client.retry_dropped_connection=with_key",
        )
    };
    Some(
        Finding::new(
            "layer-retry-without-stable-key",
            Severity::Error,
            path,
            format!(
                "the Stripe SDK retries `{}` (neither readOnlyHint nor idempotentHint), the service sends no idempotency key, and {}: a request lost after Stripe committed is refunded again",
                tool.name,
                what.join("; ")
            ),
            hint,
        )
        .with_fix([fix]),
    )
}

/// What the SDK (`c`, its key setting named `key`) resends without a key that carries over:
/// its network retries (when `network`) and its retry of a dropped connection (when
/// `dropped`), as the finding's words.
fn sdk_retries_without_key(
    c: &StripeClient,
    key: &str,
    network: bool,
    dropped: bool,
) -> Vec<String> {
    let mut what = Vec::new();
    if network {
        what.push(format!(
            "its {} network {} carry the SDK's key `{key}`",
            c.max_network_retries,
            retries_word(c.max_network_retries)
        ));
    }
    if dropped {
        what.push(match c.retry_dropped_connection {
            DroppedConnectionRetry::WithoutKey => {
                "its retry of a dropped connection goes out without a key (retry_dropped_connection: without_key)".to_string()
            }
            _ => format!(
                "its retry of a dropped connection carries the SDK's key `{key}`"
            ),
        });
    }
    what
}

/// [`sdk_retry_without_key`] on a provider other than Stripe, where the SDK's key means nothing:
/// every network retry and every retry of a dropped connection resends the request, and only
/// what the provider recognises protects it.
fn sdk_resends_unrecognised(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let c = &s.refunds_service.stripe_client;
    let network = c.max_network_retries > 0;
    let dropped = c.retry_dropped_connection != DroppedConnectionRetry::Off;
    if !network && !dropped {
        return None;
    }
    let span = if dropped {
        sdk_span(s).max(s.stripe.latency.p99())
    } else {
        sdk_span(s)
    };
    let g = guard(s, Origin::Below, span);
    if g.holds {
        return None;
    }
    let mut what = Vec::new();
    let mut off = Vec::new();
    let mut off_text = Vec::new();
    if network {
        what.push(format!(
            "{} network {}",
            c.max_network_retries,
            retries_word(c.max_network_retries)
        ));
        off.push("refunds_service.stripe_client.max_network_retries=0".to_string());
        off_text.push("refunds_service.stripe_client.max_network_retries to 0");
    }
    if dropped {
        what.push("its retry of a dropped connection".to_string());
        off.push("refunds_service.stripe_client.retry_dropped_connection=off".to_string());
        off_text.push("refunds_service.stripe_client.retry_dropped_connection to \"off\"");
    }
    let turn_off = format!("set {}", off_text.join(" and "));
    let (hint, fix) = if g.fix.is_empty() {
        (turn_off, off)
    } else {
        (format!("{}, or {turn_off}", g.fix_text), g.fix)
    };
    let path = if network {
        "refunds_service.stripe_client.max_network_retries"
    } else {
        "refunds_service.stripe_client.retry_dropped_connection"
    };
    Some(
        Finding::new(
            "layer-retry-without-stable-key",
            Severity::Error,
            path,
            format!(
                "the SDK resends `{}` (neither readOnlyHint nor idempotentHint; {}), but {}: a request lost after the provider committed is refunded again",
                tool.name,
                what.join(" and "),
                g.problem
            ),
            hint,
        )
        .with_fix(fix),
    )
}

/// `client-key-replaces-service-key`: the Stripe client sets its own key on every logical call
/// (`stripe_client.key: replace_per_call`), replacing the key the service sends, and something
/// above the service retries (`retried_above`: the model, the executor, a layer or a delivery):
/// each retry is a new call under a new key, so a retry after an unknown outcome is a second
/// refund although the service keys per ticket. Stripe only (other providers read no key).
pub(crate) fn client_key_replaces_service_key(
    s: &Scenario,
    tool: &ToolFacts,
    retried_above: bool,
) -> Option<Finding> {
    let svc = &s.refunds_service;
    if s.provider.kind != ProviderKind::Stripe
        || svc.stripe_client.key != SdkKey::ReplacePerCall
        || svc.idempotency_key == KeyMode::None
        || !retried_above
    {
        return None;
    }
    Some(
        Finding::new(
            "client-key-replaces-service-key",
            Severity::Error,
            "refunds_service.stripe_client.key",
            format!(
                "the service sends a {} idempotency key, but the Stripe client replaces it with its own key per call (key: replace_per_call), and `{}` is retried above the service: each retry goes out under a new key, so one that follows an unknown outcome is a second refund",
                key_mode_name(svc.idempotency_key),
                tool.name
            ),
            "let the service's key through: set refunds_service.stripe_client.key to \"reuse\" (the client generates a key only when the request has none)",
        )
        .with_fix(["refunds_service.stripe_client.key=reuse"]),
    )
}

/// The `idempotency_key` spelling of a key mode.
fn key_mode_name(m: KeyMode) -> &'static str {
    match m {
        KeyMode::None => "none",
        KeyMode::PerAttempt => "per-attempt",
        KeyMode::PerTicket => "per-ticket",
    }
}

/// `key-rotated-on-unknown-outcome`: a key that changes after an error whose outcome is
/// unknown (a timeout, a 5xx, a dropped connection): the service's `new_nonce_after_error` with a
/// per-ticket key, or the SDK's `key: new_per_retry` when the SDK's key is the one sent. Stripe
/// only: the other providers read no key (a `business_id` provider's business id does not
/// rotate), so a rotated key changes nothing there.
pub(crate) fn key_rotated_on_unknown_outcome(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    if s.provider.kind != ProviderKind::Stripe {
        return out;
    }
    let svc = &s.refunds_service;
    if rotates_on_any_error(s) && svc.idempotency_key == KeyMode::PerTicket {
        let path = if svc.new_nonce_after_error {
            "refunds_service.new_nonce_after_error"
        } else {
            "refunds_service.rotate_key"
        };
        out.push(Finding::new(
            "key-rotated-on-unknown-outcome",
            Severity::Error,
            path,
            format!(
                "the service writes a new nonce for the ticket after any failed request, so the next try of `{}` goes out under a new key; a timeout or 5xx has an unknown outcome, and the refund it may have made is not replayed but repeated",
                tool.name
            ),
            "set refunds_service.rotate_key to \"after_definite_failure\" (and new_nonce_after_error to false): rotate a key only after a definite failure, e.g. a 4xx that Stripe did not execute",
        ).with_fix([
            "refunds_service.rotate_key=after_definite_failure",
            "refunds_service.new_nonce_after_error=false",
        ]));
    }
    let c = &svc.stripe_client;
    let sdk_key_sent = svc.idempotency_key == KeyMode::None
        && (c.max_network_retries > 0
            || c.retry_dropped_connection == DroppedConnectionRetry::WithKey);
    if sdk_key_sent && c.key == SdkKey::NewPerRetry {
        out.push(Finding::new(
            "key-rotated-on-unknown-outcome",
            Severity::Error,
            "refunds_service.stripe_client.key",
            format!(
                "the Stripe SDK sends `{}` under a new idempotency key on every retry (key: new_per_retry), and it retries after a timeout, a 5xx or a dropped connection, whose outcome is unknown: Stripe runs the retry as a new refund",
                tool.name
            ),
            "set refunds_service.stripe_client.key to \"reuse\" (one key per logical call), or send refunds_service.idempotency_key \"per_ticket\"",
        ).with_fix(["refunds_service.stripe_client.key=reuse"]));
    }
    out
}

/// `proxy-retry-without-budget`: a `proxy` layer that retries POSTs after an unknown outcome
/// (`retry_on` includes `reset`, `5xx`, `gateway-error` or `timeout`; its default does) with no
/// retry `budget`, so in a storm every request may be sent `max_retries + 1` times.
pub(crate) fn proxy_retry_without_budget(s: &Scenario) -> Vec<Finding> {
    let provider = provider_name(s);
    let unrecognised = match s.provider.kind {
        ProviderKind::Stripe => "a stable key",
        ProviderKind::BusinessId => "the ticket's business id",
        ProviderKind::KeysIgnored | ProviderKind::DedupWindow => "the service's own dedup",
    };
    s.layers
        .iter()
        .filter(|(_, l)| defaults(l.kind).network_proxy && l.budget.is_none())
        .filter(|(_, l)| {
            retries_unknown_outcomes(l) || (defaults(l.kind).hedges && l.retries() > 0)
        })
        .map(|(name, l)| {
            let n = l.retries();
            if defaults(l.kind).hedges {
                return Finding::new(
                    "proxy-retry-without-budget",
                    Severity::Warning,
                    format!("layers.{name}.budget"),
                    format!(
                        "hedge `{name}` sends the refund POST again {} after it started whenever it has not answered ({n} hedged {}), with no retry budget: when the service or {provider} slows down past the hedging delay, every request is sent {} times, and each hedged try that reaches {provider} without {unrecognised} is another refund",
                        s_(l.hedging_delay()),
                        if n == 1 { "try" } else { "tries" },
                        n + 1
                    ),
                    format!(
                        "set layers.{name}.budget (e.g. {{\"budget_percent\": 20, \"min_retry_concurrency\": 3}}, Envoy's defaults; Envoy counts hedges against the retry budget, gRPC's retryThrottling covers hedges)"
                    ),
                )
                .with_fix([format!(
                    "layers.{name}.budget={{\"budget_percent\":20,\"min_retry_concurrency\":3}}"
                )]);
            }
            Finding::new(
                "proxy-retry-without-budget",
                Severity::Warning,
                format!("layers.{name}.budget"),
                format!(
                    "proxy `{name}` retries the refund POST ({n} {} on {}) with no retry budget: when the service or {provider} slows down, every request is sent up to {} times, and each retry that reaches {provider} without {unrecognised} is another refund",
                    retries_word(n),
                    unknown_classes(l),
                    n + 1
                ),
                format!(
                    "set layers.{name}.budget (e.g. {{\"budget_percent\": 20, \"min_retry_concurrency\": 3}}, Envoy's defaults), or narrow layers.{name}.retry_on to [\"connect-failure\"]"
                ),
            )
            .with_fix([format!(
                "layers.{name}.budget={{\"budget_percent\":20,\"min_retry_concurrency\":3}}"
            )])
        })
        .collect()
}

/// `layer-timeout-below-p99`: an added layer whose `per_try_timeout` is below the modelled p99
/// of one try of the path below it: the burst estimate of one service request (overhead + pool
/// wait + Stripe p99, see [`super::burst`]), and for a layer above the executor at most the
/// executor's answer time (its timeout, plus `probe_max_wait` when it probes). The executor's
/// own timeout is `timeout-below-burst-p99`.
pub(crate) fn layer_timeout_below_p99(s: &Scenario) -> Vec<Finding> {
    let e = estimate(s);
    let executor_answer = Stack::of(s).executor_answer();
    let mut out = Vec::new();
    for position in [Position::AroundTool, Position::BeforeService] {
        for (name, l) in layers_at(s, position) {
            let Some(t) = l.per_try_timeout else { continue };
            let (below, what) = match position {
                Position::AroundTool if executor_answer.as_secs_f64() < e.p99_s => (
                    executor_answer.as_secs_f64(),
                    format!("the executor's answer time {}", s_(executor_answer)),
                ),
                _ => (
                    e.p99_s,
                    format!(
                        "the modelled burst p99 of a service request, {:.1} s (overhead {} + pool wait {:.1} s + Stripe p99 {})",
                        e.p99_s,
                        s_(s.refunds_service.overhead),
                        e.pool_wait_s,
                        s_(s.stripe.latency.p99())
                    ),
                ),
            };
            if t.as_secs_f64() >= below {
                continue;
            }
            let to = below.ceil().max(1.0);
            out.push(Finding::new(
                "layer-timeout-below-p99",
                Severity::Warning,
                format!("layers.{name}.per_try_timeout"),
                format!(
                    "layer `{name}` gives up on a try after {}, below {what}: tries that would have succeeded are abandoned (their work keeps running) and {}",
                    s_(t),
                    if l.retries() > 0 && l.retries_on(RetryOn::Timeout) {
                        "retried"
                    } else {
                        "reported as timeouts"
                    }
                ),
                format!(
                    "raise layers.{name}.per_try_timeout to {to:.0} s or more, or remove it"
                ),
            ).with_fix([format!("layers.{name}.per_try_timeout={to:.0}s")]));
        }
    }
    out
}

/// `breaker-counts-timeouts`: a circuit breaker around the non-idempotent `tool` that counts a
/// timeout as a failure (`breaker.failure_on` with `timeout`, or left out: Polly's
/// `ShouldHandle` and resilience4j's recorded exceptions include timeouts by default). A
/// timed-out refund is an unknown outcome and often committed: when slow commits open the
/// breaker, it refuses the retries at once (`circuit-open`), the keyed retry that would have
/// found the refund never runs, and the ticket is escalated as failed. An error when the
/// escalation goes to humans who may refund without checking (`humans.check_probability`
/// below 1): a second refund; a warning otherwise.
pub(crate) fn breaker_counts_timeouts(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    if tool.idempotent {
        return Vec::new();
    }
    let humans_refund = s.humans.enabled && s.humans.check_probability < 1.0;
    layers_at(s, Position::AroundTool)
        .into_iter()
        .filter(|(_, l)| defaults(l.kind).circuit_breaker && l.breaker_counts(RetryOn::Timeout))
        .map(|(name, l)| {
            let c = l.breaker_config();
            let (severity, then) = if humans_refund {
                (
                    Severity::Error,
                    format!(
                        "the ticket is escalated as failed to humans who refund without checking {} of the time: a second refund",
                        pct(1.0 - s.humans.check_probability)
                    ),
                )
            } else {
                (
                    Severity::Warning,
                    "the ticket is escalated as failed although its refund may exist".to_string(),
                )
            };
            Finding::new(
                "breaker-counts-timeouts",
                severity,
                format!("layers.{name}.breaker.failure_on"),
                format!(
                    "circuit breaker `{name}` counts timeouts of `{}` (neither readOnlyHint nor idempotentHint) as failures: when refunds are slow and committing, a failure ratio of {} over {} calls opens it for {}; it refuses every retry at once (circuit-open), the retry that would have found the refund never runs, and {then}",
                    tool.name,
                    pct(c.failure_ratio),
                    c.minimum_throughput,
                    s_(c.break_duration),
                ),
                format!(
                    "count only answers that say the call failed (layers.{name}.breaker.failure_on: [\"5xx\", \"429\"]; resilience4j ignoreExceptions(TimeoutException.class), Polly's ShouldHandle without TimeoutRejectedException), and have humans check {} before a manual refund",
                    provider_name(s)
                ),
            )
            .with_fix([format!("layers.{name}.breaker.failure_on=[\"5xx\",\"429\"]")])
        })
        .collect()
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}
