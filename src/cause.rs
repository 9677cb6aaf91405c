//! Why a run broke its invariants, in one line each (issue 27): the cause chain the stories
//! show, built from the run's own counts and the scenario's settings, so a summary no longer
//! reads as fine beside "3 invariants violated". For the incident:
//! "43 tickets refunded more than once: 44 calls outlived the 8s executor timeout (pool wait p99
//! 7.9 s, pool of 3 saturated: up to 62 requests queued), each reported to the model as failed;
//! 43 retries followed; and no idempotency key let Stripe tell a retry from a new refund".

use serde::Serialize;

use crate::invariants::Metrics;
use crate::scenario::{KeyMode, OnTimeout, ProviderKind, Scenario};

/// The cause line of one violated invariant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cause {
    /// The invariant (DESIGN §3).
    pub invariant: String,
    /// One sentence: what happened and the mechanisms that led to it, with the run's counts.
    pub text: String,
}

/// One [`Cause`] per violated invariant of `m`, in the invariants' order.
pub fn causes(sc: &Scenario, m: &Metrics) -> Vec<Cause> {
    m.invariants
        .iter()
        .filter(|i| !i.holds)
        .filter_map(|i| {
            let text = match i.name.as_str() {
                "at_most_one_refund_per_ticket" => duplicates(sc, m),
                "no_over_refund" => format!(
                    "{} refunded beyond the approved amounts on {} ticket{}: the extra refunds \
                     above",
                    crate::scenario::dollars(m.over_refund_cents),
                    i.violations,
                    plural(i.violations)
                ),
                "no_lost_refund" => lost(sc, m, i.violations),
                "truthful_tool_results" => false_failures(sc, m),
                "truthful_probes" => format!(
                    "{} status probe{} told the model something the ledger did not hold",
                    m.untruthful_probes,
                    plural(m.untruthful_probes)
                ),
                "conservation" => "the model lost track of a call, a ticket, a connection or a \
                                   Stripe execution: a bug in refundsim, please report it"
                    .to_string(),
                _ => return None,
            };
            Some(Cause {
                invariant: i.name.clone(),
                text,
            })
        })
        .collect()
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn secs(ms: f64) -> String {
    format!("{:.1} s", ms / 1000.0)
}

/// Timeouts, with the pool's part when its waits reach half the timeout.
fn timeouts(sc: &Scenario, m: &Metrics) -> Option<String> {
    if m.executor_timeouts == 0 {
        return None;
    }
    let timeout = humantime::format_duration(sc.executor.timeout);
    let mut s = format!(
        "{} call{} outlived the {timeout} executor timeout",
        m.executor_timeouts,
        plural(m.executor_timeouts)
    );
    let p99 = m.get("latency_pool_wait_p99_ms").unwrap_or(0.0);
    if p99 * 2.0 >= sc.executor.timeout.as_millis() as f64 {
        s.push_str(&format!(
            " (pool wait p99 {}, pool of {} saturated: up to {} requests queued)",
            secs(p99),
            sc.refunds_service.pool_size,
            m.max_pool_queue_depth
        ));
    }
    if sc.executor.on_timeout == OnTimeout::ReportError {
        s.push_str(", each reported to the model as failed");
    }
    Some(s)
}

/// What let the repeated requests through.
fn key_clause(sc: &Scenario, m: &Metrics) -> String {
    match sc.provider.kind {
        ProviderKind::Stripe => match sc.refunds_service.idempotency_key {
            KeyMode::None => "no idempotency key let Stripe tell a retry from a new refund".into(),
            KeyMode::PerAttempt => {
                "a new idempotency key per attempt made each retry a new refund".into()
            }
            KeyMode::PerTicket if m.manual_refunds > 0 => {
                "the per-ticket idempotency key did not cover the humans' dashboard refunds".into()
            }
            KeyMode::PerTicket => {
                "the per-ticket idempotency key did not cover every path (a new key after an \
                 error, or a request past the key's retention)"
                    .into()
            }
        },
        ProviderKind::KeysIgnored => "the provider ignores idempotency keys".into(),
        _ => "the provider did not recognise the repeated request as a duplicate".into(),
    }
}

fn duplicates(sc: &Scenario, m: &Metrics) -> String {
    let mut parts: Vec<String> = Vec::new();
    parts.extend(timeouts(sc, m));
    if m.stripe_500 > 0 {
        parts.push(format!(
            "Stripe answered {} request{} with a 5xx",
            m.stripe_500,
            plural(m.stripe_500)
        ));
    }
    if m.stripe_no_response > 0 {
        parts.push(format!(
            "{} request{} lost {} response",
            m.stripe_no_response,
            plural(m.stripe_no_response),
            if m.stripe_no_response == 1 {
                "its"
            } else {
                "their"
            }
        ));
    }
    if m.duplicate_deliveries > 0 {
        parts.push(format!(
            "{} ticket event{} delivered again",
            m.duplicate_deliveries,
            plural(m.duplicate_deliveries)
        ));
    }
    if m.retries > 0 {
        parts.push(format!(
            "{} retr{} followed",
            m.retries,
            if m.retries == 1 { "y" } else { "ies" }
        ));
    }
    if m.breaker_rejections > 0 {
        parts.push(format!(
            "an open circuit breaker refused {} call{} at once (nothing sent: a retry that would have found a committed refund never ran)",
            m.breaker_rejections,
            plural(m.breaker_rejections)
        ));
    }
    if m.manual_refunds > 0 {
        parts.push(format!(
            "humans issued {} manual refund{} from the dashboard",
            m.manual_refunds,
            plural(m.manual_refunds)
        ));
    }
    if parts.is_empty() {
        // No model retry, timeout, fault or redelivery counted: the repeats came from the
        // added layers (a hedge, an MCP client's re-issue, a framework retry's tries).
        let layers: Vec<String> = sc
            .layers
            .iter()
            .map(|(name, l)| {
                format!(
                    "layer `{name}` of kind {}",
                    crate::scenario::layer_kinds::defaults(l.kind).name
                )
            })
            .collect();
        parts.push(if layers.is_empty() {
            "a ticket's refund was sent more than once (a ticket's story shows how)".to_string()
        } else {
            format!(
                "the call path's layers sent a ticket's refund more than once ({}; a ticket's \
                 story shows how)",
                layers.join(", ")
            )
        });
    }
    parts.push(format!("and {}", key_clause(sc, m)));
    format!(
        "{} ticket{} refunded more than once: {}",
        m.duplicate_refund_tickets,
        plural(m.duplicate_refund_tickets),
        parts.join("; ")
    )
}

fn lost(sc: &Scenario, m: &Metrics, n: u64) -> String {
    let mut s = format!(
        "{n} approved refund{} never made: {} escalation{}",
        plural(n),
        m.escalations,
        plural(m.escalations)
    );
    if !sc.humans.enabled {
        s.push_str(" reached nobody (humans are off)");
    } else {
        s.push_str(" were not resolved before the run ended");
    }
    s
}

fn false_failures(sc: &Scenario, m: &Metrics) -> String {
    let mut s = format!(
        "{} call{} reported failed to the model although the refund was made",
        m.false_failures,
        plural(m.false_failures)
    );
    if let Some(t) = timeouts(sc, m) {
        s.push_str(": ");
        s.push_str(&t);
    }
    s
}
