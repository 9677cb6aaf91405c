//! The knobs `explore` sets (`tie_break` and `stripe.latency_choices`), the bounds it perturbs
//! within (`exploration`) and the gate's defaults (`gate`).

use std::time::Duration;

use crate::scenario::config::Scenario;
use crate::scenario::limits::MAX_DURATION;
use crate::scenario::rules::{at_most, fail, fmt_d, Check};

/// `tie_break.epsilon` at most 60 s, then each latency choice at most [`MAX_DURATION`].
pub(super) fn validate(s: &Scenario) -> Check {
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
    bounds(s)
}

/// `exploration` within its ranges, `finds` a safety invariant, `gate.seeds` 1 to 10,000.
fn bounds(s: &Scenario) -> Check {
    let e = &s.exploration;
    if !(1..=30).contains(&e.max_tickets) {
        return fail(
            "exploration.max_tickets",
            format!("invalid value: expected 1 to 30, got {}", e.max_tickets),
        );
    }
    if e.arrival_window > Duration::from_secs(3600) {
        return fail(
            "exploration.arrival_window",
            format!(
                "invalid value: expected at most 1h, got {}",
                fmt_d(e.arrival_window)
            ),
        );
    }
    if !(0.0..=1.0).contains(&e.fault_probability_max) {
        return fail(
            "exploration.fault_probability_max",
            format!(
                "invalid value: expected a probability in [0, 1], got {}",
                e.fault_probability_max
            ),
        );
    }
    if let Some(inv) = &e.finds {
        if !crate::scenario::gate_config::SAFETY_INVARIANTS.contains(&inv.as_str()) {
            return fail(
                "exploration.finds",
                format!(
                    "unknown invariant {inv:?}: expected one of {}",
                    crate::scenario::gate_config::SAFETY_INVARIANTS.join(", ")
                ),
            );
        }
    }
    if s.gate.explore_cases > crate::scenario::gate_config::MAX_EXPLORE_CASES {
        return fail(
            "gate.explore_cases",
            format!(
                "invalid value: expected 0 to {} cases, got {}",
                crate::scenario::gate_config::MAX_EXPLORE_CASES,
                s.gate.explore_cases
            ),
        );
    }
    if !(1..=10_000).contains(&s.gate.seeds) {
        return fail(
            "gate.seeds",
            format!(
                "invalid value: expected 1 to 10000 seeds, got {}",
                s.gate.seeds
            ),
        );
    }
    Ok(())
}
