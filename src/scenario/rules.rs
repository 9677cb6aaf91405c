//! Field rules shared by [`validate`](super::validate::validate()): each checks one value and names its
//! path in the error.

use std::time::Duration;

use super::config::{AmountDist, FactorRange, LatencyDist, MAX_EMPIRICAL_SAMPLES};
use super::error::ValidationError;
use super::limits::{MAX_CENTS, MAX_DURATION, MAX_RETRIES};
use crate::text::short_numbers;

pub(super) type Check = Result<(), ValidationError>;

///
/// Every number in `message` longer than 24 characters (a value such as `1e300` printed by
/// `{}` as 301 digits) is written back in scientific notation (`1e300`), whichever rule wrote
/// the message: an error never prints a 300-digit number.
pub(super) fn fail(path: impl Into<String>, message: impl Into<String>) -> Check {
    Err(ValidationError {
        path: path.into(),
        message: short_numbers(&message.into()),
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

/// `d` is at least `min`, a physical minimum named by `why` (e.g. a probe more often than every
/// millisecond), and at most [`MAX_DURATION`].
pub(super) fn at_least(path: &str, d: Duration, min: Duration, why: &str) -> Check {
    if d < min {
        return fail(
            path,
            format!(
                "invalid value: expected a duration of at least {} ({why}), got {}",
                fmt_d(min),
                fmt_d(d)
            ),
        );
    }
    at_most(path, d, MAX_DURATION)
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

/// A latency distribution anywhere but `stripe.latency`: any form but `script`.
pub(super) fn latency(path: &str, d: &LatencyDist) -> Check {
    if let LatencyDist::Script(_) = d {
        return fail(
            format!("{path}.kind"),
            format!(
                "invalid value: a `script` latency is only meaningful for stripe.latency (its keys \
                 name a Stripe request's ticket, model attempt and SDK try); expected `lognormal`, \
                 `constant`, `exponential` or `empirical` for {path}"
            ),
        );
    }
    form(path, d)
}

/// `stripe.latency`: any form, a `script` included (its `otherwise` is not a script).
pub(super) fn scripted_latency(path: &str, d: &LatencyDist) -> Check {
    let LatencyDist::Script(s) = d else {
        return form(path, d);
    };
    for (key, value) in &s.by_request {
        positive(&format!("{path}.by_request.{key}"), *value)?;
    }
    let otherwise = format!("{path}.otherwise");
    if let LatencyDist::Script(_) = *s.otherwise {
        return fail(
            format!("{otherwise}.kind"),
            "invalid value: a script's `otherwise` cannot be a script; expected `lognormal`, \
             `constant`, `exponential` or `empirical`",
        );
    }
    form(&otherwise, &s.otherwise)
}

/// The rules of one form other than `script`.
fn form(path: &str, d: &LatencyDist) -> Check {
    match d {
        LatencyDist::Lognormal { p50, p99 } => {
            positive(&format!("{path}.p50"), *p50)?;
            if p99 < p50 {
                return fail(
                    format!("{path}.p99"),
                    format!(
                        "invalid value: expected a duration ≥ p50 ({}), got {}",
                        fmt_d(*p50),
                        fmt_d(*p99)
                    ),
                );
            }
            at_most(&format!("{path}.p99"), *p99, MAX_DURATION)
        }
        LatencyDist::Constant { value } => positive(&format!("{path}.value"), *value),
        LatencyDist::Exponential { mean } => positive(&format!("{path}.mean"), *mean),
        LatencyDist::Empirical { samples } => {
            if samples.is_empty() || samples.len() > MAX_EMPIRICAL_SAMPLES {
                return fail(
                    format!("{path}.samples"),
                    format!(
                        "invalid value: expected 1 to {MAX_EMPIRICAL_SAMPLES} durations, got {}",
                        samples.len()
                    ),
                );
            }
            for (i, sample) in samples.iter().enumerate() {
                positive(&format!("{path}.samples.{i}"), *sample)?;
            }
            Ok(())
        }
        LatencyDist::Script(_) => latency(path, d),
    }
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

pub(super) fn at_most_retries(path: &str, n: u32) -> Check {
    if n > MAX_RETRIES {
        return fail(
            path,
            format!("invalid value: expected at most {MAX_RETRIES} retries, got {n}"),
        );
    }
    Ok(())
}

pub(super) fn at_most_cents(path: &str, c: u64) -> Check {
    if c > MAX_CENTS {
        return fail(
            path,
            format!("invalid value: expected at most {MAX_CENTS} cents ($10 billion), got {c}"),
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
    fn latency_forms_load() {
        use crate::scenario::{LatencyDist, RequestKey};
        use std::time::Duration;
        let ms = Duration::from_millis;
        let load = |latency: &str| {
            load_str(
                &with(&format!(r#"{{"stripe":{{"latency":{latency}}}}}"#)),
                "x.json",
            )
            .unwrap_or_else(|e| panic!("{latency}: {e}"))
            .stripe
            .latency
        };
        assert_eq!(
            load(r#"{"kind":"lognormal","p50":"1s","p99":"2s"}"#),
            load(r#"{"p50":"1s","p99":"2s"}"#)
        );
        assert_eq!(
            load(r#"{"kind":"constant","value":"400ms"}"#),
            LatencyDist::constant(ms(400))
        );
        assert_eq!(
            load(r#"{"kind":"exponential","mean":"400ms"}"#),
            LatencyDist::exponential(ms(400))
        );
        assert_eq!(
            load(r#"{"kind":"empirical","samples":["1s","2ms"]}"#),
            LatencyDist::empirical(vec![ms(1000), ms(2)])
        );
        let script = load(
            r#"{"kind":"script","by_request":{"7/0/0":"9700ms","7/human/2":"1s"},
                "otherwise":{"p50":"380ms","p99":"1600ms"}}"#,
        );
        assert_eq!(
            script,
            LatencyDist::script(
                [
                    (RequestKey::service(7, 0, 0), ms(9700)),
                    (RequestKey::human(7, 2), ms(1000)),
                ]
                .into_iter()
                .collect(),
                LatencyDist::new(ms(380), ms(1600)),
            )
        );
        // Round trip: the lognormal is written without `kind`, as before.
        let text = serde_json::to_string(&script).unwrap();
        assert!(
            text.contains(r#""otherwise":{"p50":"380ms","p99":"1s 600ms"}"#),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<LatencyDist>(&text).unwrap(), script);
        // The median and 99th percentile estimates read by lint and explore.
        let e = LatencyDist::empirical((1..=100).map(ms).collect());
        assert_eq!((e.median(), e.p99()), (ms(50), ms(99)));
        assert_eq!(script.median(), ms(380));
        assert_eq!(script.p99(), ms(9700));
        let x = LatencyDist::exponential(ms(1000));
        assert_eq!(x.median().as_millis(), 693);
        assert_eq!(x.p99().as_millis(), 4605);
    }

    #[test]
    fn latency_form_errors_name_the_field() {
        let stripe = |latency: &str| with(&format!(r#"{{"stripe":{{"latency":{latency}}}}}"#));
        rejects(
            &stripe(r#"{"kind":"weibull","p50":"1s"}"#),
            &[
                "stripe.latency.kind",
                "unknown variant `weibull`",
                "`exponential`",
            ],
        );
        rejects(
            &stripe(r#"{"kind":"constant"}"#),
            &["stripe.latency.value: missing field `value`"],
        );
        rejects(
            &stripe(r#"{"kind":"constant","value":"1s","p99":"2s"}"#),
            &["stripe.latency.p99: unknown field `p99` for a constant latency, expected `kind`, `value`"],
        );
        rejects(
            &stripe(r#"{"mean":"1s"}"#),
            &["stripe.latency.mean: unknown field `mean`", "add `kind`"],
        );
        rejects(
            &stripe(r#"{"kind":"exponential","mean":"1s","shape":2}"#),
            &[
                "stripe.latency.shape: unknown field `shape`",
                "expected one of",
            ],
        );
        rejects(
            &stripe(r#"{"p50":"1s"}"#),
            &["stripe.latency.p99: missing field `p99`"],
        );
        rejects(
            &stripe(r#"{"kind":"exponential","mean":"0s"}"#),
            &["stripe.latency.mean", "duration > 0"],
        );
        rejects(
            &stripe(r#"{"kind":"constant","value":"400d"}"#),
            &["stripe.latency.value", "at most 365d"],
        );
        rejects(
            &stripe(r#"{"kind":"empirical","samples":[]}"#),
            &[
                "stripe.latency.samples",
                "expected 1 to 100000 durations, got 0",
            ],
        );
        rejects(
            &stripe(r#"{"kind":"empirical","samples":["1s","0s"]}"#),
            &["stripe.latency.samples.1", "duration > 0"],
        );
        rejects(
            &stripe(r#"{"kind":"empirical","samples":["1s","soon"]}"#),
            &["stripe.latency.samples.1", "expected a duration like"],
        );
        rejects(
            &stripe(r#"{"kind":"script","by_request":{"7/0/0":"1s"}}"#),
            &["stripe.latency.otherwise: missing field `otherwise`"],
        );
        rejects(
            &stripe(
                r#"{"kind":"script","by_request":{"7-0-0":"1s"},"otherwise":{"kind":"constant","value":"1s"}}"#,
            ),
            &[
                "stripe.latency.by_request",
                "\"TICKET/ATTEMPT/TRY\"",
                "got \"7-0-0\"",
            ],
        );
        rejects(
            &stripe(
                r#"{"kind":"script","by_request":{"07/0/0":"1s"},"otherwise":{"kind":"constant","value":"1s"}}"#,
            ),
            &["stripe.latency.by_request", "got \"07/0/0\""],
        );
        rejects(
            &stripe(
                r#"{"kind":"script","by_request":{"7/0/0":"0s"},"otherwise":{"kind":"constant","value":"1s"}}"#,
            ),
            &["stripe.latency.by_request.7/0/0", "duration > 0"],
        );
        rejects(
            &stripe(
                r#"{"kind":"script","by_request":{},"otherwise":{"kind":"script","by_request":{},"otherwise":{"kind":"constant","value":"1s"}}}"#,
            ),
            &["stripe.latency.otherwise.kind", "cannot be a script"],
        );
        rejects(
            &stripe(r#"{"kind":"script","by_request":{},"otherwise":{"p50":"2s","p99":"1s"}}"#),
            &["stripe.latency.otherwise.p99", "≥ p50 (2s)"],
        );
        for field in [
            r#"{"agent":{"think_time":"#,
            r#"{"background_load":{"hold":"#,
            r#"{"humans":{"pickup_delay":"#,
        ] {
            let text = with(&format!(
                r#"{field}{{"kind":"script","by_request":{{}},"otherwise":{{"kind":"constant","value":"1s"}}}}}}}}"#
            ));
            let path = field
                .trim_start_matches("{\"")
                .replace("\":{\"", ".")
                .trim_end_matches("\":")
                .to_string();
            rejects(
                &text,
                &[
                    &format!("{path}.kind"),
                    "`script` latency is only meaningful for stripe.latency",
                ],
            );
        }
        // Every other form is accepted everywhere.
        for latency in [
            r#"{"kind":"constant","value":"30ms"}"#,
            r#"{"kind":"exponential","mean":"30ms"}"#,
            r#"{"kind":"empirical","samples":["30ms","40ms"]}"#,
        ] {
            let text = with(&format!(
                r#"{{"agent":{{"think_time":{latency}}},"humans":{{"pickup_delay":{latency}}},"background_load":{{"hold":{latency}}}}}"#
            ));
            assert!(load_str(&text, "x.json").is_ok(), "{latency}");
        }
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
            "connect_failure",
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
            &["executor.probe_interval", "at least 1ms", "got 0s"],
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
