//! Rules on a whole scenario (or a policy over the defaults): retries, idempotency keys,
//! timeouts, SDK retries and key retention around the agent's tool.

use std::time::Duration;

use super::burst::estimate;
use super::deliveries::{consumer_without_event_dedup, key_conflict_retried_under_new_key};
use super::finding::{Finding, Severity};
use super::layers::{
    key_rotated_on_unknown_outcome, layer_retry_without_stable_key, layer_timeout_below_p99,
    proxy_retry_without_budget,
};
use super::outcomes::{
    abort_in_flight, acquire_retries_past_timeout, sdk_timeout_probe_race,
    unknown_outcome_as_failure,
};
use super::providers::provider_rules;
use super::tools::{tool_rules, ToolFacts};
use crate::scenario::{AppliesTo, KeyMode, OnTimeout, ProviderKind, Scenario};

/// Every rule over `s`, in a fixed order: tool rules for each tool, then the rules on the
/// agent's tool path.
pub fn scenario_rules(s: &Scenario) -> Vec<Finding> {
    let tools: Vec<ToolFacts> = s
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| ToolFacts::of_definition(t, format!("tools.{i}")))
        .collect();
    let mut out: Vec<Finding> = tools.iter().flat_map(tool_rules).collect();
    let Some(tool) = tools.iter().find(|t| t.name == s.agent.tool) else {
        return out;
    };
    if tool.mutating() {
        out.extend(retry_non_idempotent(s, tool));
        out.extend(idempotent_claim_unbacked(s, tool));
        out.extend(key_mode(s, tool));
        out.extend(timeout_reports_error(s, tool));
        out.extend(sdk_retries(s, tool));
        out.extend(key_retention(s));
        out.extend(layer_retry_without_stable_key(s, tool));
        out.extend(key_rotated_on_unknown_outcome(s, tool));
        out.extend(proxy_retry_without_budget(s));
        out.extend(abort_in_flight(s, tool));
        out.extend(sdk_timeout_probe_race(s, tool));
        out.extend(acquire_retries_past_timeout(s, tool));
        let retried_above = model_retries(s, tool) || executor_retries(s) || !s.layers.is_empty();
        out.extend(unknown_outcome_as_failure(s, tool, retried_above));
        out.extend(provider_rules(s, tool, retried_above));
        out.extend(consumer_without_event_dedup(s, tool));
        out.extend(key_conflict_retried_under_new_key(s, tool));
    }
    out.extend(timeout_below_burst(s));
    out.extend(layer_timeout_below_p99(s));
    out
}

fn s_(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn model_retries(s: &Scenario, tool: &ToolFacts) -> bool {
    let r = &s.agent.retry;
    r.max_retries > 0 && (r.applies_to == AppliesTo::AnyTool || tool.read_only || tool.idempotent)
}

fn executor_retries(s: &Scenario) -> bool {
    s.executor.retry.as_ref().is_some_and(|r| r.max_retries > 0)
}

fn retry_non_idempotent(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    if tool.idempotent {
        return out;
    }
    let r = &s.agent.retry;
    if r.max_retries > 0 && r.applies_to == AppliesTo::AnyTool {
        out.push(Finding::new(
            "retry-non-idempotent",
            Severity::Error,
            "agent.retry.applies_to",
            format!(
                "the agent may retry `{}` ({} retr{} on any tool), which is neither readOnlyHint nor idempotentHint: a call that timed out but succeeded is repeated",
                tool.name,
                r.max_retries,
                if r.max_retries == 1 { "y" } else { "ies" }
            ),
            "set agent.retry.applies_to to \"idempotent_tools\" (or agent.retry.max_retries to 0)",
        ));
    }
    if executor_retries(s) {
        out.push(Finding::new(
            "retry-non-idempotent",
            Severity::Error,
            "executor.retry",
            format!(
                "the executor retries `{}`, which is neither readOnlyHint nor idempotentHint",
                tool.name
            ),
            "remove executor.retry for this tool, or give the service a per-ticket idempotency key first",
        ));
    }
    out
}

fn idempotent_claim_unbacked(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let svc = &s.refunds_service;
    (tool.idempotent && svc.idempotency_key != KeyMode::PerTicket && !svc.local_dedup).then(|| {
        Finding::new(
            "tool-idempotent-claim-unbacked",
            Severity::Error,
            format!("{}.annotations.idempotentHint", tool.path),
            format!(
                "`{}` claims idempotentHint but the service has no per-ticket key and no local dedup, so a repeated call refunds again",
                tool.name
            ),
            "set refunds_service.idempotency_key to \"per_ticket\" (or remove the claim)",
        )
    })
}

fn key_mode(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    if s.provider.kind != ProviderKind::Stripe {
        return None; // the provider takes no keys: `provider_rules` says what protects instead
    }
    let (id, what) = match s.refunds_service.idempotency_key {
        KeyMode::PerTicket => return None,
        KeyMode::None => ("idempotency-key-missing", "sends no idempotency key"),
        KeyMode::PerAttempt => (
            "idempotency-key-per-attempt",
            "derives its idempotency key per attempt, so a retried call gets a fresh key",
        ),
    };
    Some(Finding::new(
        id,
        Severity::Error,
        "refunds_service.idempotency_key",
        format!("`{}` moves money but its service {what}", tool.name),
        "set refunds_service.idempotency_key to \"per_ticket\" (a key written once per ticket)",
    ))
}

fn timeout_reports_error(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    (s.executor.on_timeout == OnTimeout::ReportError).then(|| {
        Finding::new(
            "timeout-reports-error",
            Severity::Error,
            "executor.on_timeout",
            format!(
                "a timed-out `{}` call has an unknown outcome, but the executor reports it to the model as a failure",
                tool.name
            ),
            "set executor.on_timeout to \"probe_status\" (ask the service for the ticket's status first)",
        )
    })
}

fn timeout_below_burst(s: &Scenario) -> Option<Finding> {
    let e = estimate(s);
    let timeout = s.executor.timeout.as_secs_f64();
    if timeout >= e.p99_s {
        return None;
    }
    let severity = match s.executor.on_timeout {
        OnTimeout::ReportError => Severity::Error,
        OnTimeout::ProbeStatus => Severity::Warning,
    };
    Some(Finding::new(
        "timeout-below-burst-p99",
        severity,
        "executor.timeout",
        format!(
            "executor timeout {} is below the modelled burst p99 of the call path, {:.1} s (overhead {} + pool wait {:.1} s + Stripe p99 {}; peak {} tickets/s + {} background/s for {:.0} s on a pool of {})",
            s_(s.executor.timeout),
            e.p99_s,
            s_(s.refunds_service.overhead),
            e.pool_wait_s,
            s_(s.stripe.latency.p99()),
            e.ticket_rate,
            e.background_rate,
            e.peak_s,
            e.pool
        ),
        format!(
            "raise executor.timeout above {:.0} s, or enlarge refunds_service.pool_size",
            e.p99_s.ceil()
        ),
    ))
}

fn sdk_retries(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let n = s.refunds_service.stripe_client.max_network_retries;
    let stacked = model_retries(s, tool) || executor_retries(s);
    (n > 0 && stacked && s.refunds_service.idempotency_key != KeyMode::PerTicket).then(|| {
        Finding::new(
            "sdk-retries-without-stable-key",
            Severity::Error,
            "refunds_service.stripe_client.max_network_retries",
            format!(
                "the Stripe SDK retries ({n}) under model or executor retries; its key lives for one call only, so each upper retry runs with a fresh key"
            ),
            "set refunds_service.idempotency_key to \"per_ticket\" so every layer reuses one key",
        )
    })
}

/// The longest time from a first request to a retry of it, and which path that is.
fn longest_retry_path(s: &Scenario) -> (Duration, &'static str) {
    let ex = &s.executor;
    let probe = match ex.on_timeout {
        OnTimeout::ProbeStatus => ex.probe_max_wait,
        OnTimeout::ReportError => Duration::ZERO,
    };
    let round = ex.timeout + probe + s.agent.think_time.p99() + s.agent.call_overhead;
    let mut best = (round * s.agent.retry.max_retries, "the model's retries");
    if let Some(r) = &ex.retry {
        let mut t = ex.timeout * (r.max_retries + 1);
        for k in 0..r.max_retries {
            let d = r.initial_delay.as_secs_f64() * r.backoff_factor.powi(k as i32);
            t += Duration::from_secs_f64(d.min(r.max_delay.as_secs_f64()) * (1.0 + r.jitter));
        }
        if t > best.0 {
            best = (t, "the executor's retries");
        }
    }
    if s.humans.enabled && s.humans.pickup_delay.p99() > best.0 {
        best = (
            s.humans.pickup_delay.p99(),
            "a human picking up an escalation (p99)",
        );
    }
    best
}

fn key_retention(s: &Scenario) -> Option<Finding> {
    if s.refunds_service.idempotency_key == KeyMode::None {
        return None;
    }
    let retention = s.stripe.idempotency_key_retention;
    let (path, what) = longest_retry_path(s);
    (retention < path).then(|| {
        Finding::new(
            "key-retention-too-short",
            Severity::Error,
            "stripe.idempotency_key_retention",
            format!(
                "idempotency keys are kept {} but a retry can come {} after the first request ({what}); an expired key runs as a new refund",
                s_(retention),
                s_(path)
            ),
            "keep keys longer than the longest path to a retry (Stripe keeps them 24 h), or shorten that path",
        )
    })
}
