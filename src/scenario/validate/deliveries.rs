//! `deliveries`: the duplicate probability and the delay of the second delivery.

use crate::scenario::config::Scenario;
use crate::scenario::rules::{latency, probability, Check};

/// `duplicate_probability` in [0, 1]; `duplicate_delay` a valid latency (not a script).
pub(super) fn validate(s: &Scenario) -> Check {
    probability(
        "deliveries.duplicate_probability",
        s.deliveries.duplicate_probability,
    )?;
    latency("deliveries.duplicate_delay", &s.deliveries.duplicate_delay)
}
