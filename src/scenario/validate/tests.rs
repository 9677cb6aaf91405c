//! Tests of [`super::validate`]: each rule names the field at fault.

use super::*;
use crate::scenario::limits::METRICS;
use crate::scenario::load_str;
use crate::scenario::test_support::{rejects, with, MINIMAL};

#[test]
fn defaults_pass_validation() {
    let s = load_str(MINIMAL, "x.json").unwrap();
    assert_eq!(validate(&s), Ok(()));
    for metric in s.expect.keys() {
        assert!(
            METRICS.contains(&metric.as_str()),
            "default expect names unknown metric {metric}"
        );
    }
}

#[test]
fn zero_retention_and_zero_acquire_timeout_are_rejected() {
    rejects(
        r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"1m","rate_per_s":1}]},"stripe":{"idempotency_key_retention":"0s"}}"#,
        &[
            "stripe.idempotency_key_retention",
            "expected a duration > 0",
        ],
    );
    rejects(
        r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"1m","rate_per_s":1}]},"refunds_service":{"acquire_timeout":"0s"}}"#,
        &["refunds_service.acquire_timeout", "expected a duration > 0"],
    );
}

#[test]
fn empty_schedule_is_rejected() {
    rejects(
        r#"{"name":"t","horizon":"1h","arrivals":{}}"#,
        &[
            "x.json:1:",
            "arrivals.schedule",
            "empty schedule",
            "expected",
        ],
    );
    rejects(
        r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[]}}"#,
        &["arrivals.schedule: empty schedule"],
    );
}

#[test]
fn explicit_tickets_replace_schedule() {
    let text = r#"{"name":"t","horizon":"1h","arrivals":{"tickets":[
            {"id":1,"opened_at":"1s","amount_cents":100,"charge_amount_cents":100}]}}"#;
    assert!(load_str(text, "x.json").is_ok());
}

#[test]
fn rates_over_the_run_budget() {
    rejects(
        &with(r#"{"arrivals":{"schedule":[{"duration":"1h","rate_per_s":100000}]}}"#),
        &[
            "arrivals.schedule",
            "over the run budget",
            "360,000,000 tickets",
            "budget is 300,000,000 engine events",
            "--max-events",
        ],
    );
    rejects(
        &with(
            r#"{"horizon":"30d","background_load":{"rate_per_s":1000,"hold":{"p50":"1ms","p99":"2ms"}}}"#,
        ),
        &["background_load.rate_per_s", "over the run budget"],
    );
    // The 30-day run at 1 ticket/s with the incident's background load is within the budget.
    let month = with(
        r#"{"horizon":"30d","arrivals":{"schedule":[{"duration":"30d","rate_per_s":1}]},"background_load":{"rate_per_s":2.5}}"#,
    );
    assert!(load_str(&month, "x.json").is_ok());
    rejects(
        &with(r#"{"arrivals":{"schedule":[{"duration":"1m","rate_per_s":-1}]}}"#),
        &[
            "arrivals.schedule.0.rate_per_s",
            "expected a finite number ≥ 0, got -1",
        ],
    );
    // A long schedule is fine: arrivals stop at the horizon.
    let ok = with(
        r#"{"horizon":"10m","arrivals":{"schedule":[{"duration":"10m","rate_per_s":1},{"duration":"300d","rate_per_s":1000}]}}"#,
    );
    assert!(load_str(&ok, "x.json").is_ok());
}

#[test]
fn horizon_bounds() {
    rejects(
        &with(r#"{"horizon":"0s"}"#),
        &[
            "horizon",
            "expected a duration > 0 and at most 30 days",
            "got 0s",
        ],
    );
    rejects(
        &with(r#"{"horizon":"31days"}"#),
        &["horizon", "at most 30 days", "got 31d"],
    );
    assert!(load_str(&with(r#"{"horizon":"30d"}"#), "x.json").is_ok());
}

#[test]
fn ticket_rules() {
    let t = |tickets: &str| with(&format!(r#"{{"arrivals":{{"tickets":{tickets}}}}}"#));
    rejects(
        &t(r#"[{"id":1,"opened_at":"2h","amount_cents":100,"charge_amount_cents":100}]"#),
        &[
            "arrivals.tickets.0.opened_at",
            "at or before the horizon (1h)",
            "2h",
        ],
    );
    rejects(
        &t(
            r#"[{"id":1,"opened_at":"1s","amount_cents":100,"charge_amount_cents":100},
                   {"id":1,"opened_at":"2s","amount_cents":100,"charge_amount_cents":100}]"#,
        ),
        &["arrivals.tickets.1.id", "unique ticket id"],
    );
    rejects(
        &t(r#"[{"id":1,"opened_at":"1s","amount_cents":0,"charge_amount_cents":100}]"#),
        &["arrivals.tickets.0.amount_cents", "≥ 1, got 0"],
    );
    rejects(
        &t(r#"[{"id":1,"opened_at":"1s","amount_cents":500,"charge_amount_cents":100}]"#),
        &[
            "arrivals.tickets.0.charge_amount_cents",
            "expected ≥ amount_cents (500), got 100",
        ],
    );
}

#[test]
fn agent_tool_must_be_defined() {
    rejects(
        &with(r#"{"agent":{"tool":"refund_it"}}"#),
        &["agent.tool", "issue_refund", "\"refund_it\""],
    );
    let text = with(r#"{"tools":[{"name":"refund_v2","annotations":{"idempotentHint":true}}]}"#);
    rejects(
        &text,
        &[
            "agent.tool",
            "expected the name of a tool in `tools` (refund_v2)",
        ],
    );
    let ok = with(r#"{"agent":{"tool":"refund_v2"},"tools":[{"name":"refund_v2"}]}"#);
    assert!(load_str(&ok, "x.json").is_ok());
}

#[test]
fn clock_origin_must_be_rfc3339() {
    rejects(
        &with(r#"{"clock_origin":"yesterday at 4"}"#),
        &["clock_origin", "RFC 3339", "2024-05-14T16:00:00Z"],
    );
    assert!(load_str(
        &with(r#"{"clock_origin":"2024-05-14T16:00:00Z"}"#),
        "x.json"
    )
    .is_ok());
}

#[test]
fn expect_keys_and_bounds() {
    rejects(
        &with(r#"{"expect":{"duplicates":{"max":0}}}"#),
        &[
            "expect.duplicates",
            "unknown metric",
            "duplicate_refund_tickets",
        ],
    );
    rejects(
        &with(r#"{"expect":{"tickets":{"min":5,"max":1}}}"#),
        &["expect.tickets", "min ≤ max"],
    );
    rejects(
        &with(r#"{"expect":{"tickets":{"mn":5}}}"#),
        &["expect.tickets.mn", "unknown field"],
    );
}

mod limits {
    use crate::scenario::test_support::rejects;

    const BASE: &str =
        r#""name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"1m","rate_per_s":1}]}"#;

    #[test]
    fn caps_that_keep_runs_finite_and_sums_exact() {
        let with = |extra: &str| format!("{{{BASE},{extra}}}");
        rejects(
            &with(r#""agent":{"retry":{"max_retries":100000}}"#),
            &["agent.retry.max_retries", "at most 100"],
        );
        rejects(
            &with(r#""refunds_service":{"stripe_client":{"max_network_retries":101}}"#),
            &[
                "refunds_service.stripe_client.max_network_retries",
                "at most 100",
            ],
        );
        rejects(
            &with(r#""reconciliation":{"interval":"10ms"}"#),
            &["reconciliation.interval", "at least 1s"],
        );
        rejects(
            &with(r#""reconciliation":{"stale_pending":{"after":"15m","every":"10ms"}}"#),
            &["reconciliation.stale_pending.every", "at least 1s"],
        );
        rejects(
            &with(r#""reconciliation":{"stale_pending":{"after":"0s"}}"#),
            &["reconciliation.stale_pending.after"],
        );
        rejects(
            &with(r#""reconciliation":{"stale_pending":{"every":"1m"}}"#),
            &["reconciliation.stale_pending", "after"],
        );
        rejects(
            &with(r#""stripe":{"faults":{"latency_spike_factor":1e308}}"#),
            &["latency_spike_factor", "from 1 to 1000"],
        );
        rejects(
            &with(
                r#""background_load":{"rate_per_s":100,"hold":{"p50":"1s","p99":"2s"}},"refunds_service":{"pool_size":8}"#,
            ),
            &[
                "background_load.rate_per_s",
                "would not finish",
                "100.0 connections",
            ],
        );
        rejects(&with(r#""tools":[]"#), &["tools", "empty list"]);
        rejects(
            r#"{"name":"t","horizon":"1h","arrivals":{"amount":{"p50_cents":100,"p99_cents":18446744073709551615,"min_cents":1,"max_cents":18446744073709551615},"schedule":[{"duration":"1m","rate_per_s":1}]}}"#,
            &["arrivals.amount", "at most 1000000000000 cents"],
        );
    }
}

/// A probe is a request: no faster than one per millisecond, given up on no sooner than 1 ms (a
/// 1 ns interval and timeout would loop 10^13 times over a day's `probe_max_wait`).
#[test]
fn probe_interval_and_timeout_have_a_physical_minimum() {
    let base = r#"{"name":"t","horizon":"1h","arrivals":{"schedule":[{"duration":"1m","rate_per_s":1}]},"executor":"#;
    rejects(
        &format!(r#"{base}{{"probe_interval":"999us"}}}}"#),
        &[
            "executor.probe_interval",
            "at least 1ms",
            "at most one per millisecond",
            "got 999us",
        ],
    );
    rejects(
        &format!(r#"{base}{{"probe":{{"timeout":"1ns"}}}}}}"#),
        &["executor.probe.timeout", "at least 1ms", "got 1ns"],
    );
    for ok in [
        r#"{"probe_interval":"1ms","probe":{"timeout":"1ms"}}"#,
        r#"{"probe":{"error_probability":1}}"#,
    ] {
        let s = load_str(&format!("{base}{ok}}}"), "x.json").unwrap();
        assert_eq!(validate(&s), Ok(()), "{ok}");
    }
}

#[test]
fn deliveries_are_checked_by_path() {
    rejects(
        &with(r#"{"deliveries":{"duplicate_probability":1.5}}"#),
        &[
            "deliveries.duplicate_probability",
            "expected a probability in [0, 1], got 1.5",
        ],
    );
    rejects(
        &with(r#"{"deliveries":{"duplicate_delay":{"p50":"2s","p99":"1s"}}}"#),
        &["deliveries.duplicate_delay.p99", "≥ p50 (2s), got 1s"],
    );
    rejects(
        &with(r#"{"deliveries":{"consumer_dedup":"by_id"}}"#),
        &["deliveries.consumer_dedup", "`none`", "`event_id`"],
    );
    rejects(
        &with(r#"{"deliveries":{"duplicate_probabilty":0.5}}"#),
        &["deliveries.duplicate_probabilty", "unknown field"],
    );
    rejects(
        &with(r#"{"refunds_service":{"on_key_conflict":"retry"}}"#),
        &["refunds_service.on_key_conflict", "`retry_new_key`"],
    );
    let s = load_str(
        &with(r#"{"deliveries":{"duplicate_probability":0.25,"consumer_dedup":"event_id"}}"#),
        "x.json",
    )
    .unwrap();
    assert_eq!(s.deliveries.duplicate_probability, 0.25);
    assert_eq!(
        s.deliveries.consumer_dedup,
        crate::scenario::ConsumerDedup::EventId
    );
    // At its defaults the section is left out of `show`, so old outputs stay as they were.
    let plain = load_str(MINIMAL, "x.json").unwrap();
    assert!(plain.deliveries.is_default());
    let shown = serde_json::to_value(&plain).unwrap();
    assert!(shown.get("deliveries").is_none());
}

#[test]
fn redelivery_fields_are_checked_by_path_and_default_to_the_real_systems() {
    rejects(
        &with(r#"{"deliveries":{"queue":{"visibility_timeout":"13h"}}}"#),
        &["deliveries.queue.visibility_timeout", "at most 12h"],
    );
    rejects(
        &with(r#"{"deliveries":{"queue":{"visibility_timeout":"0s"}}}"#),
        &["deliveries.queue.visibility_timeout", "> 0"],
    );
    rejects(
        &with(r#"{"deliveries":{"queue":{"max_receives":1001}}}"#),
        &["deliveries.queue.max_receives", "1 to 1000", "got 1001"],
    );
    rejects(
        &with(r#"{"deliveries":{"queue":{"max_receives":0}}}"#),
        &["deliveries.queue.max_receives", "≥ 1"],
    );
    rejects(
        &with(r#"{"deliveries":{"queue":{"crash_before_ack_probability":2}}}"#),
        &["deliveries.queue.crash_before_ack_probability", "[0, 1]"],
    );
    rejects(
        &with(r#"{"deliveries":{"queue":{},"rebalance":{"at":"1m"}}}"#),
        &[
            "deliveries.rebalance",
            "either deliveries.queue or deliveries.rebalance",
        ],
    );
    rejects(
        &with(r#"{"deliveries":{"rebalance":{}}}"#),
        &["deliveries.rebalance", "at"],
    );
    rejects(
        &with(r#"{"deliveries":{"brokers":3}}"#),
        &["deliveries.brokers", "expected 1 or 2, got 3"],
    );
    rejects(
        &with(r#"{"deliveries":{"queue":{"ack":"later"}}}"#),
        &[
            "deliveries.queue.ack",
            "`after_handler`",
            "`before_handler`",
        ],
    );
    rejects(
        &with(r#"{"deliveries":{"dedup_record":{"lifetime":"0s"}}}"#),
        &["deliveries.dedup_record.lifetime", "> 0"],
    );
    let s = load_str(
        &with(r#"{"deliveries":{"queue":{},"dedup_record":{"recorded_at":"ack"}}}"#),
        "x.json",
    )
    .unwrap();
    let q = s.deliveries.queue.as_ref().unwrap();
    // SQS: 30 s visibility, no redrive policy, 4-day retention; ack after the handler.
    assert_eq!(q.visibility_timeout, std::time::Duration::from_secs(30));
    assert_eq!(q.max_receives, None);
    assert_eq!(q.message_retention, std::time::Duration::from_secs(345_600));
    assert_eq!(q.ack, crate::scenario::AckAt::AfterHandler);
    assert!(s.deliveries.redelivers());
    let r = load_str(
        &with(r#"{"deliveries":{"rebalance":{"at":"1m"}}}"#),
        "x.json",
    )
    .unwrap();
    // Kafka: max.poll.interval.ms 300 000.
    assert_eq!(
        r.deliveries.rebalance.unwrap().drain_deadline,
        std::time::Duration::from_secs(300)
    );
    // The old fields alone keep the push model (and the old outputs).
    let old = load_str(
        &with(r#"{"deliveries":{"duplicate_probability":1,"consumer_dedup":"event_id"}}"#),
        "x.json",
    )
    .unwrap();
    assert!(!old.deliveries.redelivers());
    let shown = serde_json::to_value(&old).unwrap();
    assert_eq!(
        shown["deliveries"].as_object().unwrap().len(),
        3,
        "new fields left out at their defaults: {shown}"
    );
}
