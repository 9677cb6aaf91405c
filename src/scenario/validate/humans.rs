//! `humans` and `reconciliation`: the people and the job that catch a duplicate afterwards.

use crate::scenario::config::Scenario;
use crate::scenario::limits::MIN_RECONCILIATION_INTERVAL;
use crate::scenario::rules::{fail, fmt_d, latency, positive, probability, Check};

/// Pickup delay and check probability, then the reconciliation interval (at least 1 s), then
/// the stale-pending sweep's `after` (> 0) and `every` (at least 1 s).
pub(super) fn validate(s: &Scenario) -> Check {
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
    if let Some(sp) = &s.reconciliation.stale_pending {
        positive("reconciliation.stale_pending.after", sp.after)?;
        if sp.every < MIN_RECONCILIATION_INTERVAL {
            return fail(
                "reconciliation.stale_pending.every",
                format!(
                    "invalid value: expected at least 1s, got {}",
                    fmt_d(sp.every)
                ),
            );
        }
    }
    Ok(())
}
