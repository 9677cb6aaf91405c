//! `deliveries`: the duplicate probability and the delay of the second delivery; the queue's
//! visibility timeout, receives and crash probability; the rebalance; the brokers; the dedup
//! record's lifetime.

use crate::scenario::config::Scenario;
use crate::scenario::deliveries::SQS_MAX_VISIBILITY_TIMEOUT;
use crate::scenario::rules::{at_least_one, at_most, fail, latency, positive, probability, Check};
use crate::scenario::MAX_DURATION;

/// `duplicate_probability` in [0, 1]; `duplicate_delay` a valid latency (not a script);
/// `queue.visibility_timeout` in (0, 12 h] (SQS's range, 0 excluded: a message visible at once
/// is received again at once); `queue.max_receives` in [1, 1000] (SQS `maxReceiveCount`);
/// `queue` and `rebalance` not both; `brokers` 1 or 2; `dedup_record.lifetime` > 0.
pub(super) fn validate(s: &Scenario) -> Check {
    let d = &s.deliveries;
    probability("deliveries.duplicate_probability", d.duplicate_probability)?;
    latency("deliveries.duplicate_delay", &d.duplicate_delay)?;
    if d.duplicate_from == crate::scenario::DuplicateFrom::OtherTrigger {
        if d.duplicate_probability == 0.0 {
            return fail(
                "deliveries.duplicate_from",
                "`other_trigger` is where the second delivery comes from; expected \
                 deliveries.duplicate_probability above 0 for a second delivery to come",
            );
        }
        if d.redelivers() {
            return fail(
                "deliveries.duplicate_from",
                "`other_trigger` applies to the sender's second delivery of a pushed event; \
                 expected no queue, rebalance, second broker or dedup_record with it",
            );
        }
    }
    if let Some(q) = &d.queue {
        positive("deliveries.queue.visibility_timeout", q.visibility_timeout)?;
        at_most(
            "deliveries.queue.visibility_timeout",
            q.visibility_timeout,
            SQS_MAX_VISIBILITY_TIMEOUT,
        )?;
        if let Some(n) = q.max_receives {
            at_least_one("deliveries.queue.max_receives", u64::from(n))?;
            if n > 1000 {
                return fail(
                    "deliveries.queue.max_receives",
                    format!("invalid value: expected 1 to 1000 (SQS maxReceiveCount), got {n}"),
                );
            }
        }
        positive("deliveries.queue.message_retention", q.message_retention)?;
        probability(
            "deliveries.queue.crash_before_ack_probability",
            q.crash_before_ack_probability,
        )?;
        if d.rebalance.is_some() {
            return fail(
                "deliveries.rebalance",
                "a consumer group (rebalance) reads a log, not a queue with a visibility \
                 timeout: set either deliveries.queue or deliveries.rebalance",
            );
        }
    }
    if let Some(r) = &d.rebalance {
        at_most("deliveries.rebalance.at", r.at, MAX_DURATION)?;
        at_most(
            "deliveries.rebalance.drain_deadline",
            r.drain_deadline,
            MAX_DURATION,
        )?;
    }
    if !(1..=2).contains(&d.brokers) {
        return fail(
            "deliveries.brokers",
            format!("invalid value: expected 1 or 2, got {}", d.brokers),
        );
    }
    if let Some(l) = d.dedup_record.lifetime {
        positive("deliveries.dedup_record.lifetime", l)?;
    }
    Ok(())
}
