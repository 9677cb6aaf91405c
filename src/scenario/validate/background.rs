//! `background_load`: other traffic on the refunds service's connection pool.

use crate::scenario::config::Scenario;
use crate::scenario::rules::{fail, latency, rate, Check};

/// The rate, the requests it makes before the horizon, the hold time, and whether background
/// load alone fits the pool.
pub(super) fn validate(s: &Scenario) -> Check {
    let bg = &s.background_load;
    rate("background_load.rate_per_s", bg.rate_per_s)?;
    latency("background_load.hold", &bg.hold)?;
    // Background load alone must fit the pool, or its queue grows without bound.
    let bg_busy = bg.rate_per_s * bg.hold.median().as_secs_f64();
    let pool = f64::from(s.refunds_service.pool_size);
    if bg.rate_per_s > 0.0 && pool > 0.0 && bg_busy >= pool {
        return fail(
            "background_load.rate_per_s",
            format!(
                "would not finish: background load alone keeps {} connections busy \
                 (rate_per_s × the median of hold) but refunds_service.pool_size is {}; expected less than the pool",
                crate::text::about_tenths(bg_busy),
                s.refunds_service.pool_size
            ),
        );
    }
    Ok(())
}
