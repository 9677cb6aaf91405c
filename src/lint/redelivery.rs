//! Rules on deliveries that come again because of the ack (`deliveries.queue`,
//! `deliveries.rebalance`, `deliveries.brokers`, `deliveries.dedup_record`):
//! `visibility-timeout-below-handler`, `rebalance-drain-below-handler`,
//! `dedup-record-lifetime-too-short`, `dedup-record-deleted-on-duplicate`.

use std::time::Duration;

use super::finding::{Finding, Severity};
use super::guard::ticket_id_recognised;
use crate::scenario::{AckAt, ConsumerDedup, Scenario, Stack};

fn s_(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// An error when nothing downstream recognises a second handler's refund, a warning when a
/// per-ticket key or business id does (within its retention).
fn severity(s: &Scenario) -> Severity {
    if ticket_id_recognised(s) {
        Severity::Warning
    } else {
        Severity::Error
    }
}

/// A lower estimate of a handler's (one agent run's) worst-case duration: each of the
/// model's tool calls (1 + `agent.retry.max_retries`) after a think time at its p99, each
/// taking as long as the executor can keep the model waiting (its deadline, or its answer
/// after probing when that is longer), then a last think time to read the result.
pub(crate) fn handler_worst_case(s: &Scenario) -> Duration {
    let stack = Stack::of(s);
    let think = s.agent.think_time.p99();
    let call = stack.executor_deadline().max(stack.executor_answer());
    let calls = 1 + s.agent.retry.max_retries;
    (think + call) * calls + think
}

/// How long after a ticket's first delivery a copy of its event can still reach the
/// consumer: the sender's resend (`duplicate_delay` p99), a queue's last receive (the
/// `max_receives`-th, one visibility timeout apart, or the message retention without a
/// redrive policy), the rebalance's drain deadline after its start. Zero when no copy comes
/// later than the first (two brokers deliver at once).
pub(crate) fn redelivery_horizon(s: &Scenario) -> Duration {
    let d = &s.deliveries;
    let mut h = Duration::ZERO;
    if d.at_least_once() {
        h = h.max(d.duplicate_delay.p99());
    }
    if let Some(q) = d.queue.as_ref().filter(|q| q.ack == AckAt::AfterHandler) {
        let last = match q.max_receives {
            Some(m) => q.visibility_timeout * m.saturating_sub(1),
            None => q.message_retention,
        };
        h = h.max(last);
    }
    if let Some(r) = &d.rebalance {
        h = h.max(r.at + r.drain_deadline);
    }
    h
}

/// `visibility-timeout-below-handler`: a queue's consumer acks after the handler, the
/// visibility timeout is shorter than the handler's worst case, and nothing extends it: the
/// message is received again while the first run still works (AWS: set the visibility
/// timeout longer than the processing; Celery: longer than the longest task).
pub(crate) fn visibility_timeout_below_handler(s: &Scenario, tool: &str) -> Option<Finding> {
    let q = s.deliveries.queue.as_ref()?;
    if q.ack != AckAt::AfterHandler || q.extend_visibility {
        return None;
    }
    let worst = handler_worst_case(s);
    if q.visibility_timeout >= worst {
        return None;
    }
    let keep = Duration::from_secs(worst.as_secs().div_ceil(60) * 60 + 60);
    Some(
        Finding::new(
            "visibility-timeout-below-handler",
            severity(s),
            "deliveries.queue.visibility_timeout",
            format!(
                "a message stays invisible {} after a receive, but one agent run can take {} \
                 (think time p99 and the executor's deadline per tool call): the message is \
                 received again while the run works, and a second run calls `{tool}` again",
                s_(q.visibility_timeout),
                s_(worst)
            ),
            format!(
                "set deliveries.queue.visibility_timeout above the handler's worst case ({}), \
                 or extend it while the handler runs (deliveries.queue.extend_visibility)",
                s_(keep)
            ),
        )
        .with_fix([format!("deliveries.queue.visibility_timeout={}", s_(keep))]),
    )
}

/// `rebalance-drain-below-handler`: a consumer group's rebalance timeout
/// (`max.poll.interval.ms`) is shorter than the handler's worst case, so a rebalance during a
/// run leaves its batch uncommitted and the next owner consumes it again.
pub(crate) fn rebalance_drain_below_handler(s: &Scenario, tool: &str) -> Option<Finding> {
    let r = s.deliveries.rebalance.as_ref()?;
    let worst = handler_worst_case(s);
    if r.drain_deadline >= worst {
        return None;
    }
    let keep = Duration::from_secs(worst.as_secs().div_ceil(60) * 60 + 60);
    Some(
        Finding::new(
            "rebalance-drain-below-handler",
            severity(s),
            "deliveries.rebalance.drain_deadline",
            format!(
                "the consumer has {} (max.poll.interval.ms) to commit its batch in a \
                 rebalance, but one agent run can take {}: every message past the last \
                 committed offset is consumed again, and each runs `{tool}` again",
                s_(r.drain_deadline),
                s_(worst)
            ),
            format!(
                "set deliveries.rebalance.drain_deadline (max.poll.interval.ms) above the \
                 handler's worst case ({}), and dedup by event id",
                s_(keep)
            ),
        )
        .with_fix([format!("deliveries.rebalance.drain_deadline={}", s_(keep))]),
    )
}

/// `dedup-record-lifetime-too-short`: the consumer dedups by event id but forgets an event
/// before its last copy can come ([`redelivery_horizon`]).
pub(crate) fn dedup_record_lifetime_too_short(s: &Scenario, tool: &str) -> Option<Finding> {
    let d = &s.deliveries;
    let lifetime = d.dedup_record.lifetime?;
    if d.consumer_dedup != ConsumerDedup::EventId {
        return None;
    }
    let horizon = redelivery_horizon(s);
    if lifetime >= horizon {
        return None;
    }
    Some(
        Finding::new(
            "dedup-record-lifetime-too-short",
            severity(s),
            "deliveries.dedup_record.lifetime",
            format!(
                "the consumer keeps an event id {} but a copy of the event can come {} after \
                 the first: that copy finds no record and runs `{tool}` again",
                s_(lifetime),
                s_(horizon)
            ),
            format!(
                "keep dedup records at least for the redelivery horizon ({})",
                s_(horizon)
            ),
        )
        .with_fix([format!("deliveries.dedup_record.lifetime={}", s_(horizon))]),
    )
}

/// `dedup-record-deleted-on-duplicate`: the consumer deletes its record at the second copy,
/// but a third can come (two brokers and a resend, a queue's receive, a rebalance).
pub(crate) fn dedup_record_deleted_on_duplicate(s: &Scenario, tool: &str) -> Option<Finding> {
    let d = &s.deliveries;
    if !d.dedup_record.delete_on_duplicate || d.consumer_dedup != ConsumerDedup::EventId {
        return None;
    }
    let sources = usize::from(d.brokers > 1)
        + usize::from(d.at_least_once())
        + usize::from(
            d.queue
                .as_ref()
                .is_some_and(|q| q.ack == AckAt::AfterHandler),
        )
        + usize::from(d.rebalance.is_some());
    let third = d.brokers > 1 && sources > 1
        || d.queue
            .as_ref()
            .is_some_and(|q| q.ack == AckAt::AfterHandler)
        || d.rebalance.is_some();
    if !third {
        return None;
    }
    Some(
        Finding::new(
            "dedup-record-deleted-on-duplicate",
            severity(s),
            "deliveries.dedup_record.delete_on_duplicate",
            format!(
                "the consumer deletes an event's dedup record when it drops the second copy, \
                 but a third copy can come (brokers {}, resend probability {}, {}): it finds \
                 no record and runs `{tool}` again",
                d.brokers,
                d.duplicate_probability,
                if d.queue.is_some() {
                    "a queue that redelivers un-acked messages"
                } else if d.rebalance.is_some() {
                    "a rebalance that redelivers the batch"
                } else {
                    "no queue"
                }
            ),
            "keep the record for the redelivery horizon (deliveries.dedup_record.delete_on_duplicate false)",
        )
        .with_fix(["deliveries.dedup_record.delete_on_duplicate=false"]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lint::scenario_rules;
    use crate::scenario::load_str;

    fn ids(extra: &str) -> Vec<(String, Severity, String)> {
        let text = format!(
            r#"{{"name":"t","horizon":"1h","arrivals":{{"schedule":[{{"duration":"1m","rate_per_s":1}}]}},"agent":{{"think_time":{{"kind":"constant","value":"40s"}}}}{extra}}}"#
        );
        let s = load_str(&text, "t.json").unwrap();
        scenario_rules(&s)
            .into_iter()
            .filter(|f| {
                f.id.contains("visibility")
                    || f.id.contains("rebalance")
                    || f.id.contains("dedup-record")
            })
            .map(|f| (f.id.to_string(), f.severity, f.path))
            .collect()
    }

    #[test]
    fn handler_worst_case_counts_each_tool_call_and_a_last_think() {
        let s = load_str(
            r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"1m","rate_per_s":1}]},"agent":{"think_time":{"kind":"constant","value":"40s"}}}"#,
            "t.json",
        )
        .unwrap();
        // Incident defaults: 1 retry, executor timeout 8 s: 2 × (40 + 8) + 40 = 136 s.
        assert_eq!(handler_worst_case(&s), Duration::from_secs(136));
    }

    #[test]
    fn visibility_rule_fires_below_the_handler_and_clears_when_longer_or_extended() {
        let q = r#","deliveries":{"queue":{"visibility_timeout":"30s"}}"#;
        assert_eq!(
            ids(q),
            [(
                "visibility-timeout-below-handler".into(),
                Severity::Error,
                "deliveries.queue.visibility_timeout".into()
            )]
        );
        assert!(ids(r#","deliveries":{"queue":{"visibility_timeout":"136s"}}"#).is_empty());
        assert_eq!(
            ids(r#","deliveries":{"queue":{"visibility_timeout":"135s"}}"#).len(),
            1
        );
        assert!(ids(r#","deliveries":{"queue":{"extend_visibility":true}}"#).is_empty());
        assert!(ids(r#","deliveries":{"queue":{"ack":"before_handler"}}"#).is_empty());
        let keyed = format!(r#"{q},"refunds_service":{{"idempotency_key":"per_ticket"}}"#);
        assert_eq!(ids(&keyed)[0].1, Severity::Warning);
    }

    #[test]
    fn rebalance_rule_compares_the_drain_deadline_with_the_handler() {
        let r = r#","deliveries":{"rebalance":{"at":"1m"}}"#;
        assert!(ids(r).is_empty(), "5 min default over a 136 s handler");
        let short = r#","deliveries":{"rebalance":{"at":"1m","drain_deadline":"2m"}}"#;
        assert_eq!(ids(short)[0].0, "rebalance-drain-below-handler");
    }

    #[test]
    fn dedup_record_rules_compare_lifetime_with_the_horizon_and_count_copies() {
        let resend = r#""duplicate_probability":1,"duplicate_delay":{"kind":"constant","value":"10m"},"consumer_dedup":"event_id""#;
        let short = format!(r#","deliveries":{{{resend},"dedup_record":{{"lifetime":"5m"}}}}"#);
        assert_eq!(ids(&short)[0].0, "dedup-record-lifetime-too-short");
        let long = format!(r#","deliveries":{{{resend},"dedup_record":{{"lifetime":"10m"}}}}"#);
        assert!(ids(&long).is_empty());
        // Two brokers alone: exactly two copies, deleting at the second is safe.
        let two = r#","deliveries":{"brokers":2,"consumer_dedup":"event_id","dedup_record":{"delete_on_duplicate":true}}"#;
        assert!(ids(two).is_empty());
        let three = format!(
            r#","deliveries":{{"brokers":2,{resend},"dedup_record":{{"delete_on_duplicate":true}}}}"#
        );
        assert_eq!(ids(&three)[0].0, "dedup-record-deleted-on-duplicate");
        // A queue's horizon without a redrive policy is its message retention (4 days).
        let q = r#","deliveries":{"queue":{"extend_visibility":true},"consumer_dedup":"event_id","dedup_record":{"lifetime":"1d"}}"#;
        assert_eq!(ids(q)[0].0, "dedup-record-lifetime-too-short");
    }
}
