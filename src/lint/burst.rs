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

use std::time::Duration;

use crate::scenario::{LatencyDist, Scenario};

/// z for the 99th percentile of a normal.
const Z99: f64 = 2.326;

/// The estimate and what went into it.
#[derive(Clone, Debug, PartialEq)]
pub struct BurstEstimate {
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

/// Mean of a latency distribution, seconds: for a lognormal by its p50 and p99,
/// `p50 · e^(σ²/2)`; the value, the mean, or the samples' mean for the other forms; a script's
/// `otherwise` (its scripted requests are a handful among many).
pub fn mean_secs(d: &LatencyDist) -> f64 {
    match d {
        LatencyDist::Lognormal { p50, p99 } => {
            let p50 = p50.as_secs_f64();
            let sigma = (p99.as_secs_f64() / p50).ln() / Z99;
            p50 * (sigma * sigma / 2.0).exp()
        }
        LatencyDist::Constant { value } => value.as_secs_f64(),
        LatencyDist::Exponential { mean } => mean.as_secs_f64(),
        LatencyDist::Empirical { samples } => {
            let total: f64 = samples.iter().map(Duration::as_secs_f64).sum();
            total / samples.len().max(1) as f64
        }
        LatencyDist::Script(s) => mean_secs(&s.otherwise),
    }
}

/// Erlang C: the probability that an arrival waits, for `c` servers and offered load `a` < c.
pub fn erlang_c(c: u32, a: f64) -> f64 {
    if a <= 0.0 {
        return 0.0;
    }
    // Erlang B by its stable recurrence, then C = B / (1 − ρ(1 − B)).
    let mut b = 1.0;
    for k in 1..=c {
        b = a * b / (f64::from(k) + a * b);
    }
    let rho = a / f64::from(c);
    b / (1.0 - rho * (1.0 - b))
}

/// The busiest rate and its duration, seconds.
fn peak(s: &Scenario) -> (f64, f64) {
    let a = &s.arrivals;
    if !a.tickets.is_empty() {
        let mut t: Vec<Duration> = a.tickets.iter().map(|t| t.opened_at).collect();
        t.sort();
        let window = Duration::from_secs(10);
        let most = (0..t.len())
            .map(|i| t[i..].iter().take_while(|x| **x < t[i] + window).count())
            .max()
            .unwrap_or(0);
        return (most as f64 / 10.0, 10.0);
    }
    let horizon = s.horizon.as_secs_f64();
    let mut start = 0.0;
    let mut best = (0.0, 0.0);
    for p in &a.schedule {
        let d = p.duration.as_secs_f64().min((horizon - start).max(0.0));
        if p.rate_per_s > best.0 && d > 0.0 {
            best = (p.rate_per_s, d);
        }
        start += p.duration.as_secs_f64();
    }
    best
}

/// The estimate for scenario `s`.
pub fn estimate(s: &Scenario) -> BurstEstimate {
    let (ticket_rate, peak_s) = peak(s);
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
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/carrier-outage.json");
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
