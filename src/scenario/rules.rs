//! Field rules shared by [`validate`](super::validate()): each checks one value and names its
//! path in the error.

use std::time::Duration;

use super::config::{AmountDist, FactorRange, LatencyDist};
use super::error::ValidationError;
use super::validate::MAX_DURATION;

pub(super) type Check = Result<(), ValidationError>;

pub(super) fn fail(path: impl Into<String>, message: impl Into<String>) -> Check {
    Err(ValidationError {
        path: path.into(),
        message: message.into(),
    })
}

/// A duration as `humantime` parses it, in days at most (`31d`, `1h 30m`, `400ms`, `0s`).
pub(super) fn fmt_d(d: Duration) -> String {
    if d.is_zero() {
        return "0s".to_string();
    }
    let secs = d.as_secs();
    let nanos = d.subsec_nanos();
    let parts = [
        (secs / 86_400, "d"),
        (secs / 3600 % 24, "h"),
        (secs / 60 % 60, "m"),
        (secs % 60, "s"),
        (u64::from(nanos / 1_000_000), "ms"),
        (u64::from(nanos / 1000 % 1000), "us"),
        (u64::from(nanos % 1000), "ns"),
    ];
    let shown: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    shown.join(" ")
}

pub(super) fn at_most(path: &str, d: Duration, max: Duration) -> Check {
    if d > max {
        return fail(
            path,
            format!(
                "invalid value: expected a duration of at most {}, got {}",
                fmt_d(max),
                fmt_d(d)
            ),
        );
    }
    Ok(())
}

pub(super) fn positive(path: &str, d: Duration) -> Check {
    if d.is_zero() {
        return fail(
            path,
            format!(
                "invalid value: expected a duration > 0 like \"8s\", got {}",
                fmt_d(d)
            ),
        );
    }
    at_most(path, d, MAX_DURATION)
}

pub(super) fn probability(path: &str, p: f64) -> Check {
    if !(0.0..=1.0).contains(&p) {
        return fail(
            path,
            format!("invalid value: expected a probability in [0, 1], got {p}"),
        );
    }
    Ok(())
}

pub(super) fn latency(path: &str, d: &LatencyDist) -> Check {
    positive(&format!("{path}.p50"), d.p50)?;
    if d.p99 < d.p50 {
        return fail(
            format!("{path}.p99"),
            format!(
                "invalid value: expected a duration ≥ p50 ({}), got {}",
                fmt_d(d.p50),
                fmt_d(d.p99)
            ),
        );
    }
    at_most(&format!("{path}.p99"), d.p99, MAX_DURATION)
}

/// `value` ≥ 1 (counts and cents where 0 makes no sense).
pub(super) fn at_least_one(path: impl Into<String>, value: u64) -> Check {
    if value == 0 {
        return fail(path, "invalid value: expected an integer ≥ 1, got 0");
    }
    Ok(())
}

/// `value` ≥ `min`, where `min` is the sibling field `min_name`.
pub(super) fn not_below(path: impl Into<String>, value: u64, min_name: &str, min: u64) -> Check {
    if value < min {
        return fail(
            path,
            format!("invalid value: expected ≥ {min_name} ({min}), got {value}"),
        );
    }
    Ok(())
}

pub(super) fn amount(path: &str, a: &AmountDist) -> Check {
    at_least_one(format!("{path}.p50_cents"), a.p50_cents)?;
    not_below(
        format!("{path}.p99_cents"),
        a.p99_cents,
        "p50_cents",
        a.p50_cents,
    )?;
    at_least_one(format!("{path}.min_cents"), a.min_cents)?;
    not_below(
        format!("{path}.max_cents"),
        a.max_cents,
        "min_cents",
        a.min_cents,
    )
}

pub(super) fn factor(path: &str, f: &FactorRange) -> Check {
    if !(f.min.is_finite() && f.min >= 1.0) {
        return fail(
            format!("{path}.min"),
            format!("invalid value: expected a finite number ≥ 1, got {}", f.min),
        );
    }
    if !(f.max.is_finite() && f.max >= f.min) {
        return fail(
            format!("{path}.max"),
            format!(
                "invalid value: expected a finite number ≥ min ({}), got {}",
                f.min, f.max
            ),
        );
    }
    Ok(())
}

pub(super) fn rate(path: &str, r: f64) -> Check {
    if !(r.is_finite() && r >= 0.0) {
        return fail(
            path,
            format!("invalid value: expected a finite number ≥ 0, got {r}"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::scenario::load_str;
    use crate::scenario::test_support::{rejects, with};

    #[test]
    fn latency_distributions() {
        rejects(
            &with(r#"{"stripe":{"latency":{"p50":"2s","p99":"1s"}}}"#),
            &["stripe.latency.p99", "≥ p50 (2s), got 1s"],
        );
        rejects(
            &with(r#"{"stripe":{"latency":{"p50":"0s","p99":"1s"}}}"#),
            &["stripe.latency.p50", "> 0"],
        );
        rejects(
            &with(r#"{"agent":{"think_time":{"p50":"2s","p99":"1s"}}}"#),
            &["agent.think_time.p99"],
        );
        rejects(
            &with(r#"{"humans":{"pickup_delay":{"p50":"2s","p99":"1s"}}}"#),
            &["humans.pickup_delay.p99"],
        );
        rejects(
            &with(r#"{"background_load":{"hold":{"p50":"0s","p99":"0s"}}}"#),
            &["background_load.hold.p50"],
        );
        assert!(load_str(
            &with(r#"{"stripe":{"latency":{"p50":"1s","p99":"1s"}}}"#),
            "x.json"
        )
        .is_ok());
    }

    #[test]
    fn amounts_and_factors() {
        let a = |amount: &str| with(&format!(r#"{{"arrivals":{{"amount":{amount}}}}}"#));
        rejects(
            &a(r#"{"p50_cents":100,"p99_cents":50,"min_cents":1,"max_cents":1000}"#),
            &["arrivals.amount.p99_cents", "≥ p50_cents (100)"],
        );
        rejects(
            &a(r#"{"p50_cents":100,"p99_cents":500,"min_cents":0,"max_cents":1000}"#),
            &["arrivals.amount.min_cents", "≥ 1"],
        );
        rejects(
            &a(r#"{"p50_cents":100,"p99_cents":500,"min_cents":10,"max_cents":5}"#),
            &["arrivals.amount.max_cents", "≥ min_cents (10)"],
        );
        rejects(
            &with(r#"{"arrivals":{"charge_factor":{"min":0.5,"max":2}}}"#),
            &["arrivals.charge_factor.min", "≥ 1, got 0.5"],
        );
        rejects(
            &with(r#"{"arrivals":{"charge_factor":{"min":2,"max":1.5}}}"#),
            &["arrivals.charge_factor.max", "≥ min (2)"],
        );
    }

    #[test]
    fn probabilities_and_factors() {
        rejects(
            &with(r#"{"agent":{"retry":{"compliance":1.5}}}"#),
            &["agent.retry.compliance", "probability in [0, 1], got 1.5"],
        );
        rejects(
            &with(r#"{"agent":{"retry":{"amount_drift_probability":-0.1}}}"#),
            &["agent.retry.amount_drift_probability"],
        );
        rejects(
            &with(r#"{"humans":{"check_probability":2}}"#),
            &["humans.check_probability"],
        );
        for fault in [
            "error_500_after_commit",
            "response_lost_after_commit",
            "lock_timeout",
            "latency_spike",
            "refund_pending",
            "refund_failed",
        ] {
            let text = with(&format!(r#"{{"stripe":{{"faults":{{"{fault}":1.01}}}}}}"#));
            rejects(
                &text,
                &[&format!("stripe.faults.{fault}"), "probability in [0, 1]"],
            );
        }
        rejects(
            &with(r#"{"stripe":{"faults":{"latency_spike_factor":0.5}}}"#),
            &["stripe.faults.latency_spike_factor", "from 1 to 1000"],
        );
    }

    #[test]
    fn executor_and_reconciliation_rules() {
        rejects(
            &with(r#"{"executor":{"timeout":"0s"}}"#),
            &["executor.timeout", "duration > 0"],
        );
        rejects(
            &with(r#"{"executor":{"probe_interval":"0s"}}"#),
            &["executor.probe_interval", "duration > 0"],
        );
        rejects(
            &with(r#"{"reconciliation":{"interval":"0s"}}"#),
            &["reconciliation.interval", "duration > 0"],
        );
        rejects(
            &with(r#"{"executor":{"retry":{"backoff_factor":0.5}}}"#),
            &["executor.retry.backoff_factor", "≥ 1"],
        );
        rejects(
            &with(r#"{"executor":{"retry":{"jitter":1.0}}}"#),
            &["executor.retry.jitter", "[0, 1)"],
        );
        rejects(
            &with(r#"{"executor":{"timeout":"1000years"}}"#),
            &["executor.timeout", "at most 365d"],
        );
    }
}
