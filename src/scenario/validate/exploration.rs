//! The knobs `explore` sets: `tie_break` and `stripe.latency_choices`.

use std::time::Duration;

use super::MAX_DURATION;
use crate::scenario::config::Scenario;
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
    Ok(())
}
