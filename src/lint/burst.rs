//! The modelled p99 of a tool call's path during the scenario's peak load:
//! `refunds_service.overhead` + a pool-wait estimate + `stripe.latency.p99`.
//!
//! The pool is an M/M/c queue with c = `pool_size` servers fed by the peak ticket rate plus
//! `background_load.rate_per_s`; service times are the means of the Stripe latency
//! (tickets) and background hold. The peak is the schedule phase with the highest rate (its
//! duration D), or for recorded tickets the busiest 10 s window.
//!
//! - Stable (load a = λ·E(S) < c): Erlang C gives P(wait > t) = C(c, a)·e^{−(c/E(S) − λ)t}, so the
//!   p99 wait is ln(C / 0.01) / (c/E(S) − λ) (0 when C ≤ 1 %).
//! - Overloaded, or close to it, for D seconds: the queue grows. With the p99 arrival count
//!   N = λD + 2.326·√(λD) (normal approximation of the Poisson count) and c·D/E(S) served, the
//!   last arrival waits for the backlog: max(0, N − c·D/E(S)) · E(S) / c.
//!
//! The larger of the two is the wait estimate, capped by `refunds_service.acquire_timeout`.
//! Summing p99s errs high, on purpose: a timeout should clear the tail of the burst.

pub(crate) use crate::analysis::queueing::erlang_c;
use crate::analysis::queueing::{latency_moments, peak_ticket_rate};
use crate::scenario::{LatencyDist, Scenario};

/// z for the 99th percentile of a normal.
const Z99: f64 = 2.326;

/// The estimate and what went into it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct BurstEstimate {
    /// Peak ticket arrivals per second.
    pub ticket_rate: f64,
    /// Background requests per second.
    pub background_rate: f64,
    /// How long the peak lasts, seconds.
    pub peak_s: f64,
    /// Pool size.
    pub pool: u32,
    /// Estimated p99 pool wait, seconds.
    pub pool_wait_s: f64,
    /// Service overhead + pool wait + Stripe p99, seconds.
    pub p99_s: f64,
}

/// Mean of a latency distribution, seconds (see [`latency_moments`]).
pub(crate) fn mean_secs(d: &LatencyDist) -> f64 {
    latency_moments(d).0
}

/// The estimate for scenario `s`.
pub(crate) fn estimate(s: &Scenario) -> BurstEstimate {
    let (ticket_rate, peak_s) = peak_ticket_rate(s);
    let background_rate = s.background_load.rate_per_s;
    let lambda = ticket_rate + background_rate;
    let svc = &s.refunds_service;
    let c = svc.pool_size.max(1);
    let mean_s = if lambda > 0.0 {
        (ticket_rate * mean_secs(&s.stripe.latency)
            + background_rate * mean_secs(&s.background_load.hold))
            / lambda
    } else {
        0.0
    };
    let capacity = f64::from(c) / mean_s.max(f64::MIN_POSITIVE);
    let a = lambda * mean_s;
    let steady = if a < f64::from(c) {
        let pw = erlang_c(c, a);
        if pw > 0.01 {
            (pw / 0.01).ln() / (capacity - lambda)
        } else {
            0.0
        }
    } else {
        f64::INFINITY
    };
    let arrivals = lambda * peak_s + Z99 * (lambda * peak_s).sqrt();
    let backlog = (arrivals - capacity * peak_s).max(0.0);
    let transient = backlog / capacity;
    let mut wait = if steady.is_finite() {
        steady.max(transient)
    } else {
        transient
    };
    if let Some(t) = svc.acquire_timeout {
        wait = wait.min(t.as_secs_f64());
    }
    BurstEstimate {
        ticket_rate,
        background_rate,
        peak_s,
        pool: c,
        pool_wait_s: wait,
        p99_s: svc.overhead.as_secs_f64() + wait + s.stripe.latency.p99().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erlang_c_matches_textbook_values() {
        // c = 1: C = ρ. c = 2, a = 1: C = 1/3.
        assert!((erlang_c(1, 0.5) - 0.5).abs() < 1e-12);
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn the_incident_burst_overloads_a_pool_of_three_but_not_eight() {
        let path = crate::repo_root().join("scenarios/carrier-outage.json");
        let s = crate::scenario::load(&path, &[], &[]).unwrap();
        let e = estimate(&s);
        assert_eq!(
            (e.ticket_rate, e.background_rate, e.peak_s, e.pool),
            (6.0, 2.5, 20.0, 3)
        );
        assert!((e.p99_s - 10.78).abs() < 0.05, "{e:?}");
        let fixed =
            crate::scenario::load(&path, &[], &["refunds_service.pool_size=8".into()]).unwrap();
        let e = estimate(&fixed);
        assert!(e.p99_s < 2.0, "{e:?}");
    }
}
