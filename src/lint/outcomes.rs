//! Rules on what the call path does with a call whose outcome is unknown: aborting it, queueing
//! it past its caller's timeout, or reporting it as a failure to a layer that retries.

use super::finding::{Finding, Severity};
use super::tools::ToolFacts;
use crate::scenario::{Cancellation, KeyMode, OnUnknownOutcome, Scenario};

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
