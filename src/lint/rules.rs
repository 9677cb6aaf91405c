//! Rules on a whole scenario (or a policy over the defaults): retries, idempotency keys,
//! timeouts, SDK retries and key retention around the agent's tool.

use std::time::Duration;

use super::burst::estimate;
use super::deliveries::{
    consumer_without_event_dedup, event_dedup_misses_other_trigger,
    key_conflict_retried_under_new_key,
};
use super::finding::{Finding, Severity};
use super::guard::{ticket_id_fix, ticket_id_recognised};
use super::layers::{
    breaker_counts_timeouts, client_key_replaces_service_key, hedge_below_ledger,
    hedge_without_stable_key, key_rotated_on_unknown_outcome, layer_retry_without_stable_key,
    layer_timeout_below_p99, proxy_retry_without_budget,
};
use super::mcp_client::mcp_client_resends_without_key;
use super::outcomes::{
    abort_in_flight, acquire_retries_past_timeout, sdk_timeout_probe_race,
    unknown_outcome_as_failure,
};
use super::providers::{provider_rules, Retriers};
use super::redelivery::{
    dedup_record_deleted_on_duplicate, dedup_record_lifetime_too_short,
    rebalance_drain_below_handler, visibility_timeout_below_handler,
};
use super::tools::{tool_rules, ToolFacts};
use crate::scenario::{AppliesTo, KeyMode, KeyRotation, OnTimeout, ProviderKind, Scenario, Stack};

/// Every rule over `s`, in a fixed order: tool rules for each tool, then the rules on the
/// agent's tool path.
pub fn scenario_rules(s: &Scenario) -> Vec<Finding> {
    let tools: Vec<ToolFacts> = s
        .tools
        .iter()
        .enumerate()
        .map(|(i, t)| ToolFacts::of_definition(t, format!("tools.{i}")))
        .collect();
    let mut out: Vec<Finding> = tools
        .iter()
        .enumerate()
        .flat_map(|(i, t)| {
            tool_rules(t)
                .into_iter()
                .map(move |f| stated_annotations_fix(s, i, f))
        })
        .collect();
    let Some(tool) = tools.iter().find(|t| t.name == s.agent.tool) else {
        return out;
    };
    if tool.mutating() {
        out.extend(retry_non_idempotent(s, tool));
        out.extend(idempotent_claim_unbacked(s, tool));
        out.extend(key_mode(s, tool));
        out.extend(timeout_reports_error(s, tool));
        out.extend(work_after_refund_past_timeout(s, tool));
        out.extend(sdk_retries(s, tool));
        out.extend(key_retention(s));
        out.extend(layer_retry_without_stable_key(s, tool));
        out.extend(mcp_client_resends_without_key(s, tool));
        out.extend(hedge_without_stable_key(s, tool));
        out.extend(hedge_below_ledger(s, tool));
        out.extend(breaker_counts_timeouts(s, tool));
        out.extend(key_rotated_on_unknown_outcome(s, tool));
        out.extend(proxy_retry_without_budget(s));
        out.extend(abort_in_flight(s, tool));
        out.extend(sdk_timeout_probe_race(s, tool));
        out.extend(acquire_retries_past_timeout(s, tool));
        let retriers = Retriers {
            model: model_retries(s, tool),
            executor: executor_retries(s),
        };
        // A circuit breaker never retries: a stack whose only added layers are breakers is
        // retried from above by nothing but the model's rule and the executor's retry.
        let retried_above = retriers.model
            || retriers.executor
            || s.layers
                .values()
                .any(|l| !crate::scenario::layer_kinds::defaults(l.kind).circuit_breaker);
        out.extend(unknown_outcome_as_failure(s, tool, retried_above));
        out.extend(client_key_replaces_service_key(s, tool, retried_above));
        out.extend(provider_rules(s, tool, retried_above, retriers));
        out.extend(consumer_without_event_dedup(s, tool));
        out.extend(event_dedup_misses_other_trigger(s, tool));
        out.extend(key_conflict_retried_under_new_key(s, tool));
        out.extend(stale_pending_marked_failed(s, tool));
        out.extend(visibility_timeout_below_handler(s, &tool.name));
        out.extend(rebalance_drain_below_handler(s, &tool.name));
        out.extend(dedup_record_lifetime_too_short(s, &tool.name));
        out.extend(dedup_record_deleted_on_duplicate(s, &tool.name));
    }
    out.extend(timeout_below_burst(s));
    out.extend(layer_timeout_below_p99(s));
    out
}

fn s_(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// MCP's defaults, stated: what a tool without annotations is taken to be.
const DEFAULT_HINTS: &str =
    r#"{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}"#;

/// `tool-annotations-missing` on the scenario's tool `i`, with its fix as one `--set` of the
/// whole `tools` array (MCP's defaults stated on tool `i`): `--set tools.0.annotations=…`
/// cannot reach the tools a scenario leaves to the defaults, and RFC 7396 replaces arrays whole.
fn stated_annotations_fix(s: &Scenario, i: usize, f: Finding) -> Finding {
    if f.id != "tool-annotations-missing" {
        return f;
    }
    let mut tools = serde_json::to_value(&s.tools).unwrap_or_default();
    let hints: serde_json::Value =
        serde_json::from_str(DEFAULT_HINTS).expect("the default hints are JSON");
    match tools.get_mut(i).and_then(|t| t.as_object_mut()) {
        Some(t) => {
            t.insert("annotations".into(), hints);
            f.with_fix([format!("tools={tools}")])
        }
        None => f,
    }
}

fn model_retries(s: &Scenario, tool: &ToolFacts) -> bool {
    let r = &s.agent.retry;
    r.max_retries > 0 && (r.applies_to == AppliesTo::AnyTool || tool.read_only || tool.idempotent)
}

pub(super) fn executor_retries(s: &Scenario) -> bool {
    s.executor.retry.as_ref().is_some_and(|r| r.max_retries > 0)
}

pub(super) fn retry_non_idempotent(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    if tool.idempotent {
        return out;
    }
    let r = &s.agent.retry;
    if r.max_retries > 0 && r.applies_to == AppliesTo::AnyTool {
        // With a per-ticket key (or business id) the provider recognises the repeat, so the
        // retry cannot refund twice (policies/keys-and-probe.json, the headline claim): a
        // warning that the tool's annotations do not say so, not an error that blocks the
        // safe policy in a pipeline.
        let recognised = ticket_id_recognised(s);
        out.push(Finding::new(
            "retry-non-idempotent",
            if recognised { Severity::Warning } else { Severity::Error },
            "agent.retry.applies_to",
            format!(
                "the agent may retry `{}` ({} retr{} on any tool), which is neither readOnlyHint nor idempotentHint: {}",
                tool.name,
                r.max_retries,
                if r.max_retries == 1 { "y" } else { "ies" },
                if recognised {
                    "the provider recognises the repeat by the per-ticket key, so a call that timed out but succeeded is replayed, not refunded again; the tool's annotations do not say so"
                } else {
                    "a call that timed out but succeeded is repeated"
                }
            ),
            "set agent.retry.applies_to to \"idempotent_tools\" (or agent.retry.max_retries to 0)",
        ).with_fix(["agent.retry.applies_to=idempotent_tools"]));
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
            "remove executor.retry for this tool (executor.retry: null), or give the service a per-ticket idempotency key first",
        ).with_fix(["executor.retry=null"]));
    }
    out
}

fn idempotent_claim_unbacked(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let svc = &s.refunds_service;
    if !tool.idempotent || svc.local_dedup || ticket_id_recognised(s) {
        return None;
    }
    let missing = match s.provider.kind {
        ProviderKind::Stripe => "the service has no per-ticket key and no local dedup",
        ProviderKind::BusinessId => {
            "the service sends no per-ticket business id (which provider.kind \"business_id\" recognises a repeat by) and has no local dedup"
        }
        ProviderKind::KeysIgnored | ProviderKind::DedupWindow => {
            "the provider recognises no key the service could send and the service has no local dedup"
        }
    };
    let (fix, fix_text) = ticket_id_fix(s);
    Some(
        Finding::new(
            "tool-idempotent-claim-unbacked",
            Severity::Error,
            format!("{}.annotations.idempotentHint", tool.path),
            format!(
                "`{}` claims idempotentHint but {missing}, so a repeated call refunds again",
                tool.name
            ),
            format!("{fix_text} (or remove the claim)"),
        )
        .with_fix(fix),
    )
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
    Some(
        Finding::new(
            id,
            Severity::Error,
            "refunds_service.idempotency_key",
            format!("`{}` moves money but its service {what}", tool.name),
            "set refunds_service.idempotency_key to \"per_ticket\" (a key written once per ticket)",
        )
        .with_fix(["refunds_service.idempotency_key=per_ticket"]),
    )
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
        .with_fix(["executor.on_timeout=probe_status"])
    })
}

/// `work-after-effect-past-timeout`: the tool run goes on after its refund commits
/// (`refunds_service.work_after_refund`) past the executor's timeout, and the executor reports
/// a timeout as a failure: every call that commits is told to the model as failed. An error
/// when the model or the executor retries the tool, a warning otherwise.
fn work_after_refund_past_timeout(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let svc = &s.refunds_service;
    if svc.work_after_refund.is_zero() || s.executor.on_timeout != OnTimeout::ReportError {
        return None;
    }
    let run = svc.overhead + s.stripe.latency.median() + svc.work_after_refund;
    if run <= s.executor.timeout {
        return None;
    }
    let retried = model_retries(s, tool) || executor_retries(s);
    let severity = if retried {
        Severity::Error
    } else {
        Severity::Warning
    };
    Some(
        Finding::new(
            "work-after-effect-past-timeout",
            severity,
            "refunds_service.work_after_refund",
            format!(
                "`{}` keeps running {} after its refund commits, so a typical call (overhead {} + provider p50 {} + that work) outlives the executor's {} timeout and is reported to the model as failed although the refund was made{}",
                tool.name,
                s_(svc.work_after_refund),
                s_(svc.overhead),
                s_(s.stripe.latency.median()),
                s_(s.executor.timeout),
                if retried { "; the retry refunds again" } else { "" }
            ),
            "probe the ticket's status before reporting a timeout (executor.on_timeout: probe_status: the ledger records the refund when it commits), or answer once the refund commits and do the rest in the background (refunds_service.work_after_refund: 0s)",
        )
        .with_fix(["executor.on_timeout=probe_status"]),
    )
}

/// `stale-pending-marked-failed`: the stale-pending sweep closes rows without asking the
/// provider (`reconciliation.stale_pending.check_provider: false`). A row pending that long is
/// most often a request whose outcome was lost, and its refund may exist: marked failed, the
/// service's status says `none` to whoever looks next, and with a per-ticket key that the
/// service rotates after a definite failure, the next request goes out under a new key. An
/// error in that case, a warning otherwise.
fn stale_pending_marked_failed(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    let sp = s.reconciliation.stale_pending.as_ref()?;
    if sp.check_provider {
        return None;
    }
    let svc = &s.refunds_service;
    let rotates = svc.idempotency_key == KeyMode::PerTicket
        && (svc.new_nonce_after_error || svc.rotate_key != KeyRotation::Never);
    let (severity, then) = if rotates {
        (
            Severity::Error,
            "the service counts that as a definite failure and writes a new key for the ticket, so the next `{tool}` request (a human's re-run, a retry) is a second refund",
        )
    } else {
        (
            Severity::Warning,
            "the service's status then says `none` to whoever looks next (a probe, a human), who may refund again",
        )
    };
    Some(
        Finding::new(
            "stale-pending-marked-failed",
            severity,
            "reconciliation.stale_pending.check_provider",
            format!(
                "the stale-pending sweep marks a refund pending for {} as failed without asking the provider, although a request pending that long most often lost its response after the provider committed; {}",
                s_(sp.after),
                then.replace("{tool}", &tool.name)
            ),
            "list the charge's refunds at the provider before closing a stale row (reconciliation.stale_pending.check_provider: true)",
        )
        .with_fix(["reconciliation.stale_pending.check_provider=true"]),
    )
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
    let to = e.p99_s.ceil().max(1.0);
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
            "raise executor.timeout to {to:.0} s or more, or enlarge refunds_service.pool_size"
        ),
    )
    .with_fix([format!("executor.timeout={to:.0}s")]))
}

/// `sdk-retries-without-stable-key`, on Stripe only: elsewhere the SDK's key is ignored, and
/// what the provider does recognise is the provider rules' (`business-id-not-stable`,
/// `provider-ignores-keys`, `retry-outside-dedup-window`).
fn sdk_retries(s: &Scenario, tool: &ToolFacts) -> Option<Finding> {
    if s.provider.kind != ProviderKind::Stripe {
        return None;
    }
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
        .with_fix(["refunds_service.idempotency_key=per_ticket"])
    })
}

/// The longest time from a first request to a retry of it, and which path that is: the
/// model's retries ([`Stack::model_retries_span`]), the executor's whole deadline
/// ([`Stack::executor_deadline`]: its tries and their longest backoffs), or a human's pickup.
fn longest_retry_path(s: &Scenario) -> (Duration, &'static str) {
    let stack = Stack::of(s);
    let mut best = (stack.model_retries_span(), "the model's retries");
    if s.executor.retry.is_some() && stack.executor_deadline() > best.0 {
        best = (stack.executor_deadline(), "the executor's retries");
    }
    if s.humans.enabled && s.humans.pickup_delay.p99() > best.0 {
        best = (
            s.humans.pickup_delay.p99(),
            "a human picking up an escalation (p99)",
        );
    }
    best
}

/// `key-retention-too-short`: the provider forgets what it recognises a repeat by before the
/// longest path to a retry is over. Stripe keeps a sent idempotency key, a `business_id`
/// provider a sent business id, both for `stripe.idempotency_key_retention`; a `keys_ignored`
/// provider keeps nothing, and a `dedup_window` provider's window is
/// `retry-outside-dedup-window`'s.
fn key_retention(s: &Scenario) -> Option<Finding> {
    let svc = &s.refunds_service;
    let (what, one) = match s.provider.kind {
        ProviderKind::Stripe if svc.idempotency_key != KeyMode::None => ("idempotency keys", "key"),
        ProviderKind::BusinessId if svc.business_id != KeyMode::None => {
            ("business ids", "business id")
        }
        _ => return None,
    };
    let retention = s.stripe.idempotency_key_retention;
    let (path, why) = longest_retry_path(s);
    if retention >= path {
        return None;
    }
    // Stripe's 24 h, or the path rounded up to the minute when it is longer.
    let day = Duration::from_secs(24 * 3600);
    let keep = if path < day {
        day
    } else {
        Duration::from_secs(path.as_secs().div_ceil(60) * 60 + 60)
    };
    Some(
        Finding::new(
            "key-retention-too-short",
            Severity::Error,
            "stripe.idempotency_key_retention",
            format!(
                "{what} are kept {} but a retry can come {} after the first request ({why}); an expired {one} runs as a new refund",
                s_(retention),
                s_(path)
            ),
            "keep keys longer than the longest path to a retry (Stripe keeps them 24 h), or shorten that path",
        )
        .with_fix([format!("stripe.idempotency_key_retention={}", s_(keep))]),
    )
}
