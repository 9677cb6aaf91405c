//! `layers` and `stack`: the built-in layers once each and in order, every added layer defined,
//! placed where its kind may sit and in range, and the stack's retries within
//! [`MAX_TRIES_PER_TOOL_CALL`].

use crate::scenario::config::Scenario;
use crate::scenario::layer_kinds::{defaults, MAX_HEDGED_TRIES};
use crate::scenario::layers::{
    layers_at, stack_of, Jitter, Position, RetryLayer, RetryOn, BUILT_IN_LAYERS,
};
use crate::scenario::limits::{MAX_DURATION, MAX_RETRIES, MAX_TRIES_PER_TOOL_CALL};
use crate::scenario::modes::{AppliesTo, Cancellation};
use crate::scenario::retry_layer::Backoff;
use crate::scenario::rules::{at_most, fail, positive, probability, Check};
use crate::scenario::stack::Stack;
use crate::text::thousands;

/// Checks `layers` and `stack`: the built-in layers appear once each, in their order; every
/// other name is a key of `layers` and sits between `model_retry` and `executor` or between
/// `executor` and `refunds_service` (the two places refundsim models so far); every entry of
/// `layers` is in the stack; each layer's fields are in range.
pub(super) fn validate(s: &Scenario) -> Check {
    needs_schema_2(s)?;
    for (name, layer) in &s.layers {
        validate_layer(&format!("layers.{name}"), name, layer)?;
    }
    let per_call = Stack::of(s).fan_out();
    if per_call > MAX_TRIES_PER_TOOL_CALL {
        return fail(
            "layers",
            format!(
                "would not finish: the retries of the stack multiply to {} Stripe \
                 requests for one ticket (model × added layers × executor × SDK, each \
                 retries + 1); expected at most {}",
                thousands(per_call),
                thousands(MAX_TRIES_PER_TOOL_CALL)
            ),
        );
    }
    let stack = stack_of(s);
    validate_stack(s, &stack)?;
    if let Some(name) = s.layers.keys().find(|n| !stack.contains(n)) {
        return fail(
            format!("layers.{name}"),
            format!("layer {name:?} is not in `stack`; expected its name in `stack` where it sits"),
        );
    }
    // `cancellation` acts on the work a dropped try leaves behind in the service (queued for the
    // pool, or in flight at the provider); below `sdk` a try is already at the provider, which
    // nothing closing a connection undoes, so the setting would mean nothing there.
    for (name, l) in layers_at(s, Position::BeforeProvider) {
        if l.cancellation != Cancellation::None {
            return fail(
                format!("layers.{name}.cancellation"),
                format!(
                    "a proxy after `sdk` drops a try that is already at the provider, which runs \
                     it to its end whatever the proxy closes; expected \"none\" (or place \
                     {name:?} above `refunds_service`, where cancelling reaches queued work)"
                ),
            );
        }
    }
    Ok(())
}

/// `layers` and `stack` need schema version 2.
fn needs_schema_2(s: &Scenario) -> Check {
    if s.schema_version < 2 && (!s.layers.is_empty() || s.stack.is_some()) {
        let field = if s.layers.is_empty() {
            "stack"
        } else {
            "layers"
        };
        return fail(
            field,
            format!(
                "`{field}` needs schema_version 2; expected `\"schema_version\": 2` (or no \
                 schema_version) in a file with layers, got schema_version {}",
                s.schema_version
            ),
        );
    }
    Ok(())
}

/// The built-in layers once each and in order, then each added layer's place in `stack`.
fn validate_stack(s: &Scenario, stack: &[String]) -> Check {
    let built_in: Vec<&str> = stack
        .iter()
        .map(String::as_str)
        .filter(|n| BUILT_IN_LAYERS.contains(n))
        .collect();
    if built_in != BUILT_IN_LAYERS {
        return fail(
            "stack",
            format!(
                "invalid value: expected the built-in layers once each and in this order: {}; got {}",
                BUILT_IN_LAYERS.join(", "),
                if stack.is_empty() {
                    "an empty list".to_string()
                } else {
                    stack.join(", ")
                }
            ),
        );
    }
    added_layers_placed(s, stack)
}

/// Each added layer in `stack`: defined in `layers`, listed once, and in a place its kind may
/// take (a `run_retry` above `model_retry`; `retry`/`proxy`/`circuit_breaker` between
/// `model_retry` and `refunds_service`; only a `proxy` or a `circuit_breaker` after `sdk`).
fn added_layers_placed(s: &Scenario, stack: &[String]) -> Check {
    let top = stack.iter().position(|n| n == "model_retry").unwrap_or(0);
    let service = stack
        .iter()
        .position(|n| n == "refunds_service")
        .unwrap_or(0);
    for (i, name) in stack.iter().enumerate() {
        if BUILT_IN_LAYERS.contains(&name.as_str()) {
            continue;
        }
        if !s.layers.contains_key(name) {
            let known: Vec<&str> = s.layers.keys().map(String::as_str).collect();
            return fail(
                format!("stack.{i}"),
                format!(
                    "unknown layer {name:?}; expected a built-in layer ({}) or a key of `layers` ({})",
                    BUILT_IN_LAYERS.join(", "),
                    if known.is_empty() { "none defined".to_string() } else { known.join(", ") }
                ),
            );
        }
        if stack[..i].iter().filter(|n| *n == name).count() > 0 {
            return fail(
                format!("stack.{i}"),
                format!("layer {name:?} appears twice"),
            );
        }
        let kind = s.layers[name].kind;
        if i < top && !defaults(kind).above_model {
            return fail(
                format!("stack.{i}"),
                format!(
                    "layer {name:?} sits above model_retry; expected only a run_retry layer there"
                ),
            );
        }
        if i > top && defaults(kind).above_model {
            return fail(
                format!("stack.{i}"),
                format!("layer {name:?} is a run_retry, which re-runs the whole agent turn; expected it above model_retry"),
            );
        }
        if i < top && stack[..i].iter().any(|n| s.layers.contains_key(n)) {
            return fail(
                format!("stack.{i}"),
                format!("layer {name:?}: expected at most one run_retry layer above model_retry"),
            );
        }
        let executor = stack.iter().position(|n| n == "executor").unwrap_or(0);
        if s.layers[name].retriable_status_codes.is_some() && i < executor {
            return fail(
                format!("layers.{name}.retriable_status_codes"),
                format!(
                    "layer {name:?} sits above the executor, where it reads a tool result, not \
                     an HTTP status; expected `retriable_status_codes` only on a layer between \
                     executor and refunds_service or after sdk"
                ),
            );
        }
        let sdk = stack.iter().position(|n| n == "sdk").unwrap_or(0);
        if i > service && i < sdk {
            return fail(
                format!("stack.{i}"),
                format!(
                    "layer {name:?} sits between refunds_service and sdk, which run in one \
                     process; expected it between model_retry and executor, between executor and \
                     refunds_service, or (a proxy) after sdk"
                ),
            );
        }
        let executor = stack.iter().position(|n| n == "executor").unwrap_or(0);
        if defaults(kind).tool_client && !(i > top && i < executor) {
            return fail(
                format!("stack.{i}"),
                format!(
                    "layer {name:?} is an mcp_client, which sends tool calls to the tool server; \
                     expected it between model_retry and executor"
                ),
            );
        }
        if i > sdk && !defaults(kind).network_proxy && !defaults(kind).circuit_breaker {
            return fail(
                format!("stack.{i}"),
                format!(
                    "layer {name:?} sits after sdk; expected only a proxy or a circuit_breaker \
                     there (the hop from the SDK to the provider)"
                ),
            );
        }
    }
    Ok(())
}

fn validate_layer(path: &str, name: &str, l: &RetryLayer) -> Check {
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if name.is_empty() || !name.chars().all(plain) {
        return fail(
            path,
            format!(
                "invalid layer name {name:?}; expected letters, digits, `_` or `-` (a name is \
                 how `--set layers.NAME.FIELD` and policies reach the layer)"
            ),
        );
    }
    if l.checkpoint != crate::scenario::Checkpoint::None && !defaults(l.kind).above_model {
        return fail(
            format!("{path}.checkpoint"),
            "`checkpoint` is the step semantics of a run-level retry that replays whole turns; expected none on a retry or proxy layer".to_string(),
        );
    }
    if l.applies_to != AppliesTo::AnyTool && !defaults(l.kind).tool_filter {
        return fail(
            format!("{path}.applies_to"),
            format!(
                "`applies_to` is the tool filter of a framework `retry` layer; expected none on a \
                 {} layer",
                defaults(l.kind).name
            ),
        );
    }
    mcp_client_settings(path, l)?;
    hedge_fields(path, l)?;
    validate_breaker(path, l)?;
    if l.max_delay() < l.base() {
        return fail(
            format!("{path}.backoff.max"),
            format!(
                "invalid value: expected a cap ≥ backoff.base ({}), got {}",
                humantime::format_duration(l.base()),
                humantime::format_duration(l.max_delay())
            ),
        );
    }
    if BUILT_IN_LAYERS.contains(&name) {
        return fail(
            path,
            format!(
                "{name:?} is a built-in layer, configured by its own section (model_retry: \
                 agent.retry, executor: executor, refunds_service: refunds_service, sdk: \
                 refunds_service.stripe_client); expected another name"
            ),
        );
    }
    if l.retries() > MAX_RETRIES {
        return fail(
            format!("{path}.max_retries"),
            format!(
                "invalid value: expected at most {MAX_RETRIES} retries, got {}",
                l.retries()
            ),
        );
    }
    let k = defaults(l.kind);
    if k.circuit_breaker || k.hedges || k.tool_client {
        for (field, set) in [
            ("deadline", l.deadline.is_some()),
            ("timeout_retries", l.timeout_retries.is_some()),
        ] {
            if set {
                return fail(
                    format!("{path}.{field}"),
                    format!(
                        "`{field}` bounds or adds retries of a layer's retry loop; expected none \
                         on a {} layer, which runs a loop of its own",
                        k.name
                    ),
                );
            }
        }
    }
    if l.retriable_status_codes.as_ref().is_some_and(Vec::is_empty) {
        return fail(
            format!("{path}.retriable_status_codes"),
            "invalid value: expected at least one HTTP status to retry, e.g. [503]",
        );
    }
    let lists_codes = l
        .retry_on
        .as_deref()
        .is_some_and(|r| r.contains(&RetryOn::RetriableStatusCodes));
    match &l.retriable_status_codes {
        Some(codes) => {
            if let Some((i, c)) = codes
                .iter()
                .enumerate()
                .find(|(_, c)| !(100..=599).contains(*c))
            {
                return fail(
                    format!("{path}.retriable_status_codes.{i}"),
                    format!("invalid value: expected an HTTP status in 100–599, got {c}"),
                );
            }
            if !lists_codes {
                return fail(
                    format!("{path}.retry_on"),
                    "`retriable_status_codes` is set but `retry_on` does not list \
                     \"retriable-status-codes\", so no status would be retried by it (Envoy's rule); \
                     expected it in retry_on",
                );
            }
        }
        None if lists_codes => {
            return fail(
                format!("{path}.retriable_status_codes"),
                "`retry_on` lists \"retriable-status-codes\"; expected the statuses to retry, \
                 e.g. [503]",
            );
        }
        None => {}
    }
    if l.timeout_retries.is_some_and(|n| n > MAX_RETRIES) {
        return fail(
            format!("{path}.timeout_retries"),
            format!(
                "invalid value: expected at most {MAX_RETRIES} retries, got {}",
                l.timeout_retries.unwrap_or(0)
            ),
        );
    }
    if let Some(t) = l.per_try_timeout {
        positive(&format!("{path}.per_try_timeout"), t)?;
        at_most(&format!("{path}.per_try_timeout"), t, MAX_DURATION)?;
    }
    if let Some(t) = l.deadline {
        positive(&format!("{path}.deadline"), t)?;
        at_most(&format!("{path}.deadline"), t, MAX_DURATION)?;
    }
    match (l.backoff.jitter, l.backoff.jitter_factor) {
        (Jitter::Proportional, Some(f)) if !(f.is_finite() && (0.0..=1.0).contains(&f)) => {
            return fail(
                format!("{path}.backoff.jitter_factor"),
                format!("invalid value: expected a number in [0, 1], got {f}"),
            );
        }
        (Jitter::Proportional, _) | (_, None) => {}
        (_, Some(_)) => {
            return fail(
                format!("{path}.backoff.jitter_factor"),
                "`jitter_factor` is the factor of `jitter: \"proportional\"`; expected none with another jitter",
            );
        }
    }
    at_most(&format!("{path}.backoff.base"), l.base(), MAX_DURATION)?;
    at_most(&format!("{path}.backoff.max"), l.max_delay(), MAX_DURATION)?;
    if let Some(t) = &l.retry_throttling {
        if !(1..=1000).contains(&t.max_tokens) {
            return fail(
                format!("{path}.retry_throttling.max_tokens"),
                format!(
                    "invalid value: expected 1 to 1000 (gRFC A6: in (0, 1000]), got {}",
                    t.max_tokens
                ),
            );
        }
        if !(t.token_ratio.is_finite() && t.token_ratio > 0.0 && t.token_ratio <= 1000.0) {
            return fail(
                format!("{path}.retry_throttling.token_ratio"),
                format!(
                    "invalid value: expected a number above 0 (gRFC A6), at most 1000, got {}",
                    t.token_ratio
                ),
            );
        }
    }
    if let Some(b) = &l.budget {
        if !(b.budget_percent.is_finite() && (0.0..=100.0).contains(&b.budget_percent)) {
            return fail(
                format!("{path}.budget.budget_percent"),
                format!(
                    "invalid value: expected a number in [0, 100], got {}",
                    b.budget_percent
                ),
            );
        }
    }
    Ok(())
}

/// An `mcp_client`'s own settings in range, and none of them on another kind; no
/// `per_try_timeout` on an `mcp_client` (its timeout is `request_timeout`), and `retry_on`
/// naming only `timeout` there (a broken stream is re-issued by `reissue_on_stream_break`).
fn mcp_client_settings(path: &str, l: &RetryLayer) -> Check {
    let set = [
        (
            "stream_break_probability",
            l.stream_break_probability.is_some(),
        ),
        ("stream_break_requests", l.stream_break_requests.is_some()),
        (
            "reissue_on_stream_break",
            l.reissue_on_stream_break.is_some(),
        ),
        ("request_timeout", l.request_timeout.is_some()),
        ("send_cancelled", l.send_cancelled.is_some()),
        (
            "duplicate_send_probability",
            l.duplicate_send_probability.is_some(),
        ),
        ("duplicate_send_gap", l.duplicate_send_gap.is_some()),
    ];
    if !defaults(l.kind).tool_client {
        if let Some((field, _)) = set.iter().find(|(_, on)| *on) {
            return fail(
                format!("{path}.{field}"),
                format!(
                    "`{field}` is a setting of an `mcp_client` layer; expected none on a {} layer",
                    defaults(l.kind).name
                ),
            );
        }
        return Ok(());
    }
    for (field, p) in [
        ("stream_break_probability", l.stream_break_probability),
        ("duplicate_send_probability", l.duplicate_send_probability),
    ] {
        if let Some(p) = p {
            probability(&format!("{path}.{field}"), p)?;
        }
    }
    if let Some(script) = &l.stream_break_requests {
        if let Some((i, n)) = script
            .iter()
            .enumerate()
            .find(|(_, n)| **n == 0 || **n > l.retries().saturating_add(1))
        {
            return fail(
                format!("{path}.stream_break_requests.{i}"),
                format!(
                    "invalid value: expected a request of the tool call from 1 (the first \
                     tools/call) to {} (its last re-issue under max_retries {}), got {n}",
                    l.retries().saturating_add(1),
                    l.retries()
                ),
            );
        }
    }
    if let Some(t) = l.request_timeout {
        positive(&format!("{path}.request_timeout"), t)?;
        at_most(&format!("{path}.request_timeout"), t, MAX_DURATION)?;
    }
    if let Some(g) = l.duplicate_send_gap {
        at_most(&format!("{path}.duplicate_send_gap"), g, MAX_DURATION)?;
    }
    if l.per_try_timeout.is_some() {
        return fail(
            format!("{path}.per_try_timeout"),
            "an mcp_client times a request out with `request_timeout`; expected no `per_try_timeout`",
        );
    }
    if let Some(other) = l
        .retry_on
        .iter()
        .flatten()
        .find(|c| **c != crate::scenario::RetryOn::Timeout)
    {
        return fail(
            format!("{path}.retry_on"),
            format!(
                "an mcp_client re-sends only a timed-out request (`retry_on: [\"timeout\"]`) and \
                 re-issues a broken stream by `reissue_on_stream_break`; expected no {}",
                crate::model::layers::retry_on_name(*other)
            ),
        );
    }
    Ok(())
}

/// A `hedge` layer's own fields: at most 4 hedged tries (gRPC caps `maxAttempts`, the first
/// try included, at 5), `hedging_delay` only on a hedge and at most [`MAX_DURATION`], and no
/// `backoff` or `per_try_timeout` (a hedge waits `hedging_delay` and never gives up on a try).
fn hedge_fields(path: &str, l: &RetryLayer) -> Check {
    if !defaults(l.kind).hedges {
        if l.additional_request_chance.is_some() {
            return fail(
                format!("{path}.additional_request_chance"),
                format!(
                    "`additional_request_chance` is Envoy's chance of a second try sent at once \
                     by a `hedge` layer; expected none on a {} layer (or `\"kind\": \"hedge\"`)",
                    defaults(l.kind).name
                ),
            );
        }
        if l.hedging_delay.is_some() {
            return fail(
                format!("{path}.hedging_delay"),
                format!(
                    "`hedging_delay` is the wait of a `hedge` layer before its next try; expected \
                     none on a {} layer (or `\"kind\": \"hedge\"`)",
                    defaults(l.kind).name
                ),
            );
        }
        return Ok(());
    }
    if l.retries() > MAX_HEDGED_TRIES {
        return fail(
            format!("{path}.max_retries"),
            format!(
                "invalid value: a hedge sends at most {MAX_HEDGED_TRIES} hedged tries beside the \
                 first (gRPC caps hedgingPolicy.maxAttempts, the first try included, at 5), got {}",
                l.retries()
            ),
        );
    }
    at_most(
        &format!("{path}.hedging_delay"),
        l.hedging_delay(),
        MAX_DURATION,
    )?;
    if let Some(p) = l.additional_request_chance {
        crate::scenario::rules::probability(&format!("{path}.additional_request_chance"), p)?;
    }
    if l.per_try_timeout.is_some() {
        return fail(
            format!("{path}.per_try_timeout"),
            "a hedge never gives up on a try: it sends the next one `hedging_delay` after it \
             and keeps waiting for both; expected no per_try_timeout (Envoy's \
             `hedge_on_per_try_timeout` is a hedge whose `hedging_delay` is that per-try timeout)",
        );
    }
    if l.backoff != Backoff::default() {
        return fail(
            format!("{path}.backoff"),
            "a hedge does not back off: it waits `hedging_delay` before its next try, or none \
             after a failure `retry_on` names; expected no backoff (set hedging_delay)",
        );
    }
    Ok(())
}

/// A `circuit_breaker`'s settings in range, and none of a retry's settings on it; `breaker` on
/// no other kind.
fn validate_breaker(path: &str, l: &RetryLayer) -> Check {
    if !defaults(l.kind).circuit_breaker {
        if l.breaker.is_some() {
            return fail(
                format!("{path}.breaker"),
                format!(
                    "`breaker` holds a circuit breaker's settings; expected none on a {} layer \
                     (or `\"kind\": \"circuit_breaker\"`)",
                    defaults(l.kind).name
                ),
            );
        }
        return Ok(());
    }
    let retry_setting = [
        ("max_retries", l.max_retries.is_some_and(|n| n > 0)),
        ("per_try_timeout", l.per_try_timeout.is_some()),
        ("retry_on", l.retry_on.is_some()),
        ("budget", l.budget.is_some()),
        ("retry_throttling", l.retry_throttling.is_some()),
        (
            "backoff",
            l.backoff.base.is_some()
                || l.backoff.max.is_some()
                || l.backoff.jitter_factor.is_some(),
        ),
        ("cancellation", l.cancellation != Cancellation::None),
    ]
    .into_iter()
    .find(|(_, set)| *set);
    if let Some((field, _)) = retry_setting {
        return fail(
            format!("{path}.{field}"),
            format!(
                "a circuit_breaker does not retry or time tries out (Polly: it \"does not manage \
                 retries\"); expected no `{field}` on it (put a `retry` layer above or below it, \
                 and the counted outcomes in `breaker.failure_on`)"
            ),
        );
    }
    let Some(b) = &l.breaker else { return Ok(()) };
    let at = |f: &str| format!("{path}.breaker.{f}");
    if let Some(r) = b.failure_ratio {
        if !(r.is_finite() && r > 0.0 && r <= 1.0) {
            return fail(
                at("failure_ratio"),
                format!("invalid value: expected a ratio in (0, 1] (Polly's FailureRatio 0.1, resilience4j's 50 % as 0.5), got {r}"),
            );
        }
    }
    for (field, v) in [
        ("minimum_throughput", b.minimum_throughput),
        ("window_calls", b.window_calls),
        ("half_open_calls", b.half_open_calls),
    ] {
        match v {
            Some(0) => {
                return fail(at(field), "invalid value: expected at least 1, got 0");
            }
            Some(n) if n > MAX_BREAKER_CALLS => {
                return fail(
                    at(field),
                    format!("invalid value: expected at most {MAX_BREAKER_CALLS}, got {n}"),
                );
            }
            _ => {}
        }
    }
    if b.sampling_duration.is_some() && b.window_calls.is_some() {
        return fail(
            at("window_calls"),
            "a breaker's window is either time-based (`sampling_duration`, Polly) or count-based \
             (`window_calls`, resilience4j); expected one of them",
        );
    }
    let cfg = l.breaker_config();
    if let crate::scenario::layer_kinds::BreakerWindow::Calls(n) = cfg.window {
        if cfg.minimum_throughput > n {
            return fail(
                at("minimum_throughput"),
                format!(
                    "invalid value: a count window of {n} calls never holds {} calls, so the \
                     breaker could never open; expected minimum_throughput ≤ window_calls",
                    cfg.minimum_throughput
                ),
            );
        }
    }
    for (field, d) in [
        ("sampling_duration", b.sampling_duration),
        ("break_duration", b.break_duration),
    ] {
        if let Some(d) = d {
            positive(&at(field), d)?;
            at_most(&at(field), d, MAX_DURATION)?;
        }
    }
    if b.failure_on.as_ref().is_some_and(|f| f.is_empty()) {
        return fail(
            at("failure_on"),
            "invalid value: a breaker that counts no outcome never opens; expected at least one \
             class, or no `failure_on` (every failure counts)",
        );
    }
    Ok(())
}

/// The most calls a breaker's `minimum_throughput`, `window_calls` or `half_open_calls` may
/// name (resilience4j's defaults are 100 and 10; a window is kept call by call).
const MAX_BREAKER_CALLS: u32 = 100_000;
