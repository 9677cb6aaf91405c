//! Rules on what the call path does with a call whose outcome is unknown: aborting it, queueing
//! it past its caller's timeout, reporting it as a failure to a layer that retries, or letting
//! the SDK's timeout turn it into `none` under the executor's status probe.

use std::time::Duration;

use super::finding::{Finding, Severity};
use super::layers::stable_service_key;
use super::tools::ToolFacts;
use crate::scenario::{
    Cancellation, KeyMode, LatencyDist, OnTimeout, OnUnknownOutcome, Scenario, UnknownOutcomeRecord,
};

fn s_(d: std::time::Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// `abort-in-flight`: a layer that closes the connection of a call already sent to the provider
/// (`cancellation: abort_in_flight`). Aborting never undoes the provider's commit, but the service
/// records a failure and its status reads `none`, so a status probe or a retry above acts on a
/// refund it cannot see.
pub fn abort_in_flight(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let mut paths = Vec::new();
    if s.executor.cancellation == Cancellation::AbortInFlight {
        paths.push("executor.cancellation".to_string());
    }
    for (name, l) in &s.layers {
        if l.cancellation == Cancellation::AbortInFlight {
            paths.push(format!("layers.{name}.cancellation"));
        }
    }
    paths
        .into_iter()
        .map(|path| {
            Finding::new(
                "abort-in-flight",
                Severity::Error,
                path,
                format!(
                    "a timed-out `{}` call already sent to the provider has its connection closed: the provider may still commit the refund, while the service records a failure and its status reads `none`",
                    tool.name
                ),
                "cancel only work that has not reached the provider (\"queued_only\"), or send a per-ticket idempotency key so a retry is replayed",
            )
        })
        .collect()
}

/// `acquire-retries-past-timeout`: the service's pool acquire retries let a request queue longer
/// than its caller waits (`acquire_timeout × (acquire_retries + 1)` plus the pauses, above
/// `executor.timeout`), without deadline propagation: the request reaches the provider after the
/// caller was told it failed.
pub fn acquire_retries_past_timeout(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    let svc = &s.refunds_service;
    let Some(acquire) = svc.acquire_timeout else {
        return Vec::new();
    };
    if svc.acquire_retries == 0 || svc.deadline_propagation {
        return Vec::new();
    }
    let tries = svc.acquire_retries + 1;
    let queued = acquire.saturating_mul(tries)
        + svc
            .acquire_retry_backoff
            .saturating_mul(svc.acquire_retries);
    if queued <= s.executor.timeout {
        return Vec::new();
    }
    vec![Finding::new(
        "acquire-retries-past-timeout",
        Severity::Error,
        "refunds_service.acquire_retries",
        format!(
            "a `{}` request may queue for the pool up to {} ({tries} acquires of {} and their pauses), past the executor's {} timeout, and still reach the provider after the caller was told it failed",
            tool.name,
            s_(queued),
            s_(acquire),
            s_(s.executor.timeout)
        ),
        "set refunds_service.deadline_propagation to true, or make the acquire retries fit inside the caller's timeout",
    )]
}

/// `unknown-outcome-as-failure`: with no per-ticket key, the service answers an unknown outcome
/// from the provider (5xx, dropped connection, SDK timeout) as a failure, and a layer above retries
/// failures (any retry rule, layer or executor retry): the refund that may exist is repeated.
pub fn unknown_outcome_as_failure(
    s: &Scenario,
    tool: &ToolFacts,
    retried_above: bool,
) -> Vec<Finding> {
    let svc = &s.refunds_service;
    if !retried_above
        || svc.idempotency_key == KeyMode::PerTicket
        || svc.on_unknown_outcome == OnUnknownOutcome::Lookup
    {
        return Vec::new();
    }
    vec![Finding::new(
        "unknown-outcome-as-failure",
        Severity::Warning,
        "refunds_service.on_unknown_outcome",
        format!(
            "the service answers a 5xx, a dropped connection or an SDK timeout from the provider as a failure (502) and a layer above retries `{}`: the refund that may already exist is made again",
            tool.name
        ),
        "set refunds_service.on_unknown_outcome to \"lookup\" (look the charge's refunds up before answering), or send a per-ticket idempotency key",
    )]
}

/// The provider's latency p99 and where it comes from: `stripe.latency_choices` when set (each
/// request takes one of them, so their nearest-rank p99), else `stripe.latency`'s
/// [`LatencyDist::p99`].
fn provider_p99(s: &Scenario) -> (Duration, &'static str) {
    let choices = &s.stripe.latency_choices;
    if choices.is_empty() {
        (s.stripe.latency.p99(), "stripe.latency")
    } else {
        (
            LatencyDist::empirical(choices.clone()).p99(),
            "stripe.latency_choices",
        )
    }
}

/// `sdk-timeout-probe-race`: the executor probes the ticket's status after a timeout
/// (`executor.on_timeout: probe_status`) while the SDK gives up on Stripe sooner than Stripe's
/// p99 (`refunds_service.stripe_client.timeout` below it). When the SDK times out, the service
/// closes the request and records a failure, so its ledger reads `none` while Stripe may still
/// be making the refund; the probe then tells the model "no refund was made", and a retry
/// without the ticket's key refunds twice. An error without a stable per-ticket key (none, per
/// attempt, or rotated after an error), a warning with one (the retry is replayed, but the
/// model, and a human who trusts the status, are still told that a refund which may exist was
/// not made). The SDK's own network retries are not counted: under a reused key they may pick
/// up the refund as a replay, so the rule errs on the side of the finding.
///
/// Mitigations, in the finding's hint: a per-ticket idempotency key, an SDK timeout above the
/// provider's p99, or recording an SDK timeout as an unknown outcome
/// (`refunds_service.sdk_timeout_recorded_as: "unknown"`, so the probe reads `unknown` and the
/// model is told not to retry), which clears the finding.
pub fn sdk_timeout_probe_race(s: &Scenario, tool: &ToolFacts) -> Vec<Finding> {
    if s.executor.on_timeout != OnTimeout::ProbeStatus
        || s.refunds_service.sdk_timeout_recorded_as == UnknownOutcomeRecord::Unknown
    {
        return Vec::new();
    }
    let sdk = s.refunds_service.stripe_client.timeout;
    let (p99, source) = provider_p99(s);
    if sdk >= p99 {
        return Vec::new();
    }
    let (severity, outcome, key_fix) = if stable_service_key(s) {
        (
            Severity::Warning,
            "the service's per-ticket key replays a retry, but the model, and a human who trusts the status, are told that a refund which may exist was not made",
            "",
        )
    } else if s.refunds_service.idempotency_key == KeyMode::PerTicket {
        (
            Severity::Error,
            "the service writes the ticket a new key after the error, so a retry goes out under a new key and refunds twice",
            "keep the ticket's key after an unknown outcome (refunds_service.rotate_key \"after_definite_failure\", new_nonce_after_error false), ",
        )
    } else {
        (
            Severity::Error,
            "a retry without the ticket's key refunds twice",
            "send a per-ticket idempotency key (refunds_service.idempotency_key \"per_ticket\", so a retry is replayed), ",
        )
    };
    vec![Finding::new(
        "sdk-timeout-probe-race",
        severity,
        "refunds_service.stripe_client.timeout",
        format!(
            "executor.on_timeout is \"probe_status\" but the SDK's timeout refunds_service.stripe_client.timeout {} is below the provider's p99 ({source} p99 {}): when the SDK gives up on Stripe during a call of `{}`, the service closes the request and its ledger reads `none` while Stripe is still working, so the status probe tells the model \"no refund was made\"; {outcome}",
            s_(sdk),
            s_(p99),
            tool.name
        ),
        format!(
            "{key_fix}raise refunds_service.stripe_client.timeout to the provider's p99 ({}) or above, or record an SDK timeout as an unknown outcome (refunds_service.sdk_timeout_recorded_as: \"unknown\") so the probe reads `unknown`",
            s_(p99)
        ),
    )]
}
