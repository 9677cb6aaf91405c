//! Validation: the rules the types cannot express, and the limits that keep a run finite.

use std::collections::BTreeSet;
use std::time::Duration;

use super::config::Scenario;
use super::error::ValidationError;
use super::rules::{
    amount, at_least_one, at_most, factor, fail, fmt_d, latency, not_below, positive, probability,
    rate, scripted_latency, Check,
};

/// Metric names a scenario's `expect` may bound. This list must match the metric names of the
/// run report (`metrics` / `report`); a name missing here cannot be bounded, a name here that the
/// report lacks would never be checked.
pub const METRICS: &[&str] = &[
    "tickets",
    "tool_calls",
    "executor_timeouts",
    "retries",
    "escalations",
    "refunds_created",
    "duplicate_refund_tickets",
    "extra_refunds",
    "over_refund_cents",
    "lost_refunds",
    "false_failures",
    "stripe_replays",
    "stripe_409",
    "stripe_400",
    "stripe_429",
    "stripe_500",
    "stripe_no_response",
    "manual_refunds",
    "conservation_violations",
    "max_pool_queue_depth",
    "reconciliation_alerts",
];

/// Upper bound on the expected number of generated tickets (Σ rate × phase time before the
/// horizon); more would not finish in reasonable time.
pub const MAX_EXPECTED_TICKETS: f64 = 200_000.0;
/// Upper bound on the expected number of background requests (rate × horizon).
pub const MAX_EXPECTED_BACKGROUND: f64 = 20_000_000.0;
/// Longest allowed horizon: 30 days.
pub const MAX_HORIZON: Duration = Duration::from_secs(30 * 24 * 3600);
/// Longest allowed value of any other duration field: 365 days (virtual time is an integer count
/// of nanoseconds, which holds about 584 years; the cap keeps sums of durations far from overflow).
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// Largest allowed `arrivals.first_ticket_id` (2^53, so ticket ids stay exact in JSON readers).
pub const MAX_FIRST_TICKET_ID: u64 = 1 << 53;
/// Largest amount in cents anywhere in a scenario ($10 billion), so money sums cannot overflow.
pub const MAX_CENTS: u64 = 1_000_000_000_000;
/// Largest retry count (model, executor layer, SDK) and human attempts: 100.
pub const MAX_RETRIES: u32 = 100;
/// Largest `stripe.faults.latency_spike_factor`: 1000.
pub const MAX_SPIKE_FACTOR: f64 = 1000.0;
/// Shortest `reconciliation.interval`: 1 s.
pub const MIN_RECONCILIATION_INTERVAL: Duration = Duration::from_secs(1);

fn at_most_retries(path: &str, n: u32) -> Check {
    if n > MAX_RETRIES {
        return fail(
            path,
            format!("invalid value: expected at most {MAX_RETRIES} retries, got {n}"),
        );
    }
    Ok(())
}

fn at_most_cents(path: &str, c: u64) -> Check {
    if c > MAX_CENTS {
        return fail(
            path,
            format!("invalid value: expected at most {MAX_CENTS} cents ($10 billion), got {c}"),
        );
    }
    Ok(())
}

const RFC3339_EXAMPLE: &str = r#""2024-05-14T16:00:00Z""#;

/// Checks the rules the types cannot express (each error names the field's path):
///
/// - `horizon` in (0, 30 days]; every other duration at most 365 days; timeouts, intervals and
///   every latency `p50` > 0; every latency `p99` ≥ its `p50`;
/// - `arrivals`: a non-empty `schedule` or non-empty `tickets`; rates finite and ≥ 0; at most
///   [`MAX_EXPECTED_TICKETS`] expected tickets before the horizon and [`MAX_EXPECTED_BACKGROUND`]
///   background requests (else the run "would not finish"); tickets with unique ids,
///   `opened_at` ≤ horizon, `amount_cents` > 0 and `charge_amount_cents` ≥ `amount_cents`;
///   amount p99 ≥ p50 > 0, `max_cents` ≥ `min_cents` > 0; charge factors 1 ≤ min ≤ max;
/// - probabilities in [0, 1]; `stripe.faults.latency_spike_factor` ≥ 1; `executor.retry`
///   `backoff_factor` ≥ 1 and `jitter` in [0, 1); `refunds_service.pool_size` ≥ 1;
/// - `agent.tool` names one of `tools`; `clock_origin` is RFC 3339 UTC; `expect` keys are in
///   [`METRICS`] and each bound is consistent (see `bound_rules`: finite numbers, `min` ≤ `max`,
///   `mean_min` ≤ `mean_max`, `violating_seeds_max` in `[0, 1]` and only beside `min`/`max`).
///
/// A schedule longer than the horizon is allowed: arrivals stop at the horizon.
pub fn validate(s: &Scenario) -> Result<(), ValidationError> {
    if !(1..=super::config::SCHEMA_VERSION).contains(&s.schema_version) {
        return fail(
            "schema_version",
            format!(
                "invalid value: expected 1 or {}, got {} (a newer refundsim wrote this file?)",
                super::config::SCHEMA_VERSION,
                s.schema_version
            ),
        );
    }
    if s.horizon.is_zero() || s.horizon > MAX_HORIZON {
        return fail(
            "horizon",
            format!(
                "invalid value: expected a duration > 0 and at most 30 days (\"30d\"), got {}",
                fmt_d(s.horizon)
            ),
        );
    }
    if let Some(origin) = &s.clock_origin {
        if humantime::parse_rfc3339(origin).is_err() {
            return fail(
                "clock_origin",
                format!("invalid value: expected an RFC 3339 UTC time like {RFC3339_EXAMPLE}, got {origin:?}"),
            );
        }
    }
    validate_arrivals(s)?;

    let bg = &s.background_load;
    rate("background_load.rate_per_s", bg.rate_per_s)?;
    let bg_expected = bg.rate_per_s * s.horizon.as_secs_f64();
    if bg_expected > MAX_EXPECTED_BACKGROUND {
        return fail(
            "background_load.rate_per_s",
            format!(
                "would not finish: {} per second over the {} horizon is about {bg_expected:.0} requests; \
                 expected at most {MAX_EXPECTED_BACKGROUND:.0}",
                bg.rate_per_s,
                fmt_d(s.horizon)
            ),
        );
    }
    latency("background_load.hold", &bg.hold)?;
    // Background load alone must fit the pool, or its queue grows without bound.
    let bg_busy = bg.rate_per_s * bg.hold.median().as_secs_f64();
    let pool = f64::from(s.refunds_service.pool_size);
    if bg.rate_per_s > 0.0 && pool > 0.0 && bg_busy >= pool {
        return fail(
            "background_load.rate_per_s",
            format!(
                "would not finish: background load alone keeps about {bg_busy:.1} connections busy \
                 (rate_per_s × the median of hold) but refunds_service.pool_size is {}; expected less than the pool",
                s.refunds_service.pool_size
            ),
        );
    }

    let agent = &s.agent;
    if s.tools.is_empty() {
        return fail(
            "tools",
            format!(
                "empty list; expected at least the tool agent.tool names ({:?})",
                agent.tool
            ),
        );
    }
    at_most_retries("agent.retry.max_retries", agent.retry.max_retries)?;
    if let Some(r) = &s.executor.retry {
        at_most_retries("executor.retry.max_retries", r.max_retries)?;
    }
    at_most_retries(
        "refunds_service.stripe_client.max_network_retries",
        s.refunds_service.stripe_client.max_network_retries,
    )?;
    if agent.retry.amount_drift_cents.unsigned_abs() > MAX_CENTS {
        at_most_cents(
            "agent.retry.amount_drift_cents",
            agent.retry.amount_drift_cents.unsigned_abs(),
        )?;
    }
    if !s.tools.iter().any(|t| t.name == agent.tool) {
        let names: Vec<&str> = s.tools.iter().map(|t| t.name.as_str()).collect();
        return fail(
            "agent.tool",
            format!(
                "invalid value: expected the name of a tool in `tools` ({}), got {:?}",
                names.join(", "),
                agent.tool
            ),
        );
    }
    latency("agent.think_time", &agent.think_time)?;
    at_most("agent.call_overhead", agent.call_overhead, MAX_DURATION)?;
    probability("agent.retry.compliance", agent.retry.compliance)?;
    probability(
        "agent.retry.amount_drift_probability",
        agent.retry.amount_drift_probability,
    )?;

    let ex = &s.executor;
    positive("executor.timeout", ex.timeout)?;
    positive("executor.probe_interval", ex.probe_interval)?;
    at_most("executor.probe_max_wait", ex.probe_max_wait, MAX_DURATION)?;
    if let Some(r) = &ex.retry {
        at_most(
            "executor.retry.initial_delay",
            r.initial_delay,
            MAX_DURATION,
        )?;
        at_most("executor.retry.max_delay", r.max_delay, MAX_DURATION)?;
        if !(r.backoff_factor.is_finite() && r.backoff_factor >= 1.0) {
            return fail(
                "executor.retry.backoff_factor",
                format!(
                    "invalid value: expected a finite number ≥ 1, got {}",
                    r.backoff_factor
                ),
            );
        }
        if !(0.0..1.0).contains(&r.jitter) {
            return fail(
                "executor.retry.jitter",
                format!(
                    "invalid value: expected a number in [0, 1), got {}",
                    r.jitter
                ),
            );
        }
    }

    let svc = &s.refunds_service;
    at_least_one("refunds_service.pool_size", u64::from(svc.pool_size))?;
    at_most_retries("refunds_service.acquire_retries", svc.acquire_retries)?;
    at_most(
        "refunds_service.acquire_retry_backoff",
        svc.acquire_retry_backoff,
        MAX_DURATION,
    )?;
    if let Some(t) = svc.acquire_timeout {
        positive("refunds_service.acquire_timeout", t)?;
    }
    at_most("refunds_service.overhead", svc.overhead, MAX_DURATION)?;
    positive(
        "refunds_service.stripe_client.timeout",
        svc.stripe_client.timeout,
    )?;

    let st = &s.stripe;
    scripted_latency("stripe.latency", &st.latency)?;
    positive(
        "stripe.idempotency_key_retention",
        st.idempotency_key_retention,
    )?;
    let f = &st.faults;
    for (name, p) in [
        ("error_500_after_commit", f.error_500_after_commit),
        ("response_lost_after_commit", f.response_lost_after_commit),
        ("lock_timeout", f.lock_timeout),
        ("latency_spike", f.latency_spike),
        ("refund_pending", f.refund_pending),
        ("refund_failed", f.refund_failed),
    ] {
        probability(&format!("stripe.faults.{name}"), p)?;
    }
    if !(f.latency_spike_factor.is_finite()
        && (1.0..=MAX_SPIKE_FACTOR).contains(&f.latency_spike_factor))
    {
        return fail(
            "stripe.faults.latency_spike_factor",
            format!(
                "invalid value: expected a number from 1 to {MAX_SPIKE_FACTOR}, got {}",
                f.latency_spike_factor
            ),
        );
    }

    latency("humans.pickup_delay", &s.humans.pickup_delay)?;
    probability("humans.check_probability", s.humans.check_probability)?;
    positive("reconciliation.interval", s.reconciliation.interval)?;
    if s.reconciliation.interval < MIN_RECONCILIATION_INTERVAL {
        return fail(
            "reconciliation.interval",
            format!(
                "invalid value: expected at least 1s, got {}",
                fmt_d(s.reconciliation.interval)
            ),
        );
    }
    if let Some(tb) = &s.tie_break {
        if tb.epsilon > Duration::from_secs(60) {
            return fail(
                "tie_break.epsilon",
                format!(
                    "invalid value: expected at most 60s, got {}",
                    fmt_d(tb.epsilon)
                ),
            );
        }
    }
    for (i, d) in s.stripe.latency_choices.iter().enumerate() {
        at_most(&format!("stripe.latency_choices.{i}"), *d, MAX_DURATION)?;
    }

    for (metric, bound) in &s.expect {
        if !METRICS.contains(&metric.as_str()) {
            return fail(
                format!("expect.{metric}"),
                format!(
                    "unknown metric {metric:?}; expected one of: {}",
                    METRICS.join(", ")
                ),
            );
        }
        super::bound_rules::bound(&format!("expect.{metric}"), bound)?;
    }
    // Last: the layers' cap multiplies retries that the rules above bound one by one.
    super::layers::validate_layers(s)?;
    Ok(())
}

fn validate_arrivals(s: &Scenario) -> Check {
    let a = &s.arrivals;
    if a.schedule.is_empty() && a.tickets.is_empty() {
        return fail(
            "arrivals.schedule",
            "empty schedule: expected at least one phase in arrivals.schedule (e.g. \
             {\"duration\": \"10m\", \"rate_per_s\": 0.1}) or one ticket in arrivals.tickets",
        );
    }
    if a.first_ticket_id > MAX_FIRST_TICKET_ID {
        return fail(
            "arrivals.first_ticket_id",
            format!(
                "invalid value: expected at most 2^53 ({MAX_FIRST_TICKET_ID}), got {}",
                a.first_ticket_id
            ),
        );
    }
    if a.tickets.is_empty() {
        let mut start = Duration::ZERO;
        let mut expected = 0.0;
        for (i, phase) in a.schedule.iter().enumerate() {
            rate(
                &format!("arrivals.schedule.{i}.rate_per_s"),
                phase.rate_per_s,
            )?;
            at_most(
                &format!("arrivals.schedule.{i}.duration"),
                phase.duration,
                MAX_DURATION,
            )?;
            let end = start.saturating_add(phase.duration);
            let within = end.min(s.horizon).saturating_sub(start.min(s.horizon));
            expected += phase.rate_per_s * within.as_secs_f64();
            start = end;
        }
        if expected > MAX_EXPECTED_TICKETS {
            return fail(
                "arrivals.schedule",
                format!(
                    "would not finish: the schedule opens about {expected:.0} tickets before the horizon; \
                     expected at most {MAX_EXPECTED_TICKETS:.0} (lower rate_per_s or shorten the phases)"
                ),
            );
        }
    }
    let mut seen = BTreeSet::new();
    for (i, t) in a.tickets.iter().enumerate() {
        let p = format!("arrivals.tickets.{i}");
        if !seen.insert(t.id) {
            return fail(
                format!("{p}.id"),
                format!(
                    "invalid value: expected a unique ticket id, got {} again",
                    t.id
                ),
            );
        }
        if t.opened_at > s.horizon {
            return fail(
                format!("{p}.opened_at"),
                format!(
                    "invalid value: expected a time at or before the horizon ({}), got {}",
                    fmt_d(s.horizon),
                    fmt_d(t.opened_at)
                ),
            );
        }
        at_most_cents(&format!("{p}.charge_amount_cents"), t.charge_amount_cents)?;
        at_least_one(format!("{p}.amount_cents"), t.amount_cents)?;
        not_below(
            format!("{p}.charge_amount_cents"),
            t.charge_amount_cents,
            "amount_cents",
            t.amount_cents,
        )?;
    }
    amount("arrivals.amount", &a.amount)?;
    at_most_cents("arrivals.amount.max_cents", a.amount.max_cents)?;
    at_most_cents("arrivals.amount.p99_cents", a.amount.p99_cents)?;
    if a.charge_factor.max > 1000.0 {
        return fail(
            "arrivals.charge_factor.max",
            format!(
                "invalid value: expected at most 1000, got {}",
                a.charge_factor.max
            ),
        );
    }
    factor("arrivals.charge_factor", &a.charge_factor)
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn rates_that_would_not_finish() {
        rejects(
            &with(r#"{"arrivals":{"schedule":[{"duration":"1h","rate_per_s":1000}]}}"#),
            &["arrivals.schedule", "would not finish", "3600000", "200000"],
        );
        rejects(
            &with(r#"{"horizon":"30d","background_load":{"rate_per_s":10000}}"#),
            &["background_load.rate_per_s", "would not finish"],
        );
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
        let text =
            with(r#"{"tools":[{"name":"refund_v2","annotations":{"idempotentHint":true}}]}"#);
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
}

#[cfg(test)]
mod limits {
    use super::super::test_support::rejects;

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
