//! `stripe`: the fake Stripe's latency, idempotency-key retention and faults.

use crate::scenario::config::Stripe;
use crate::scenario::limits::MAX_SPIKE_FACTOR;
use crate::scenario::rules::{fail, positive, probability, scripted_latency, Check};

/// Latency, key retention, each fault's probability, then the latency spike factor.
/// (`stripe.latency_choices` is checked with the other exploration knobs.)
pub(super) fn validate(st: &Stripe) -> Check {
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
        ("connect_failure", f.connect_failure),
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
    Ok(())
}
