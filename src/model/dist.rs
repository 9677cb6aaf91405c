//! Sampling helpers over a seeded stream. Every draw in the model goes through these.

use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal};

use crate::scenario::{AmountDist, LatencyDist};
use crate::sim::{SimTime, StreamRng};

/// z-score of the 99th percentile of the standard normal.
const Z99: f64 = 2.326_347_874_040_841;

/// `(mu, sigma)` of the lognormal with median `p50` and 99th percentile `p99` (both > 0).
pub fn lognormal_params(p50: f64, p99: f64) -> (f64, f64) {
    let mu = p50.ln();
    let sigma = ((p99.ln() - mu) / Z99).max(0.0);
    (mu, sigma)
}

fn lognormal(rng: &mut StreamRng, p50: f64, p99: f64) -> f64 {
    let (mu, sigma) = lognormal_params(p50, p99);
    if sigma == 0.0 {
        return p50;
    }
    LogNormal::new(mu, sigma)
        .map(|d| d.sample(rng))
        .unwrap_or(p50)
}

/// A duration from a p50/p99 lognormal, rounded to whole ns.
pub fn latency(rng: &mut StreamRng, d: &LatencyDist) -> SimTime {
    let ns = lognormal(rng, d.p50.as_nanos() as f64, d.p99.as_nanos() as f64);
    SimTime::from_nanos(ns.round().clamp(0.0, u64::MAX as f64) as u64)
}

/// Cents from a p50/p99 lognormal, rounded and clamped to `[min_cents, max_cents]`.
pub fn amount(rng: &mut StreamRng, d: &AmountDist) -> u64 {
    let c = lognormal(rng, d.p50_cents as f64, d.p99_cents as f64).round() as u64;
    c.clamp(d.min_cents, d.max_cents.max(d.min_cents))
}

/// An exponential inter-arrival time for `rate_per_s` (> 0), in ns.
pub fn interarrival(rng: &mut StreamRng, rate_per_s: f64) -> SimTime {
    let secs = Exp::new(rate_per_s)
        .map(|d| d.sample(rng))
        .unwrap_or(f64::INFINITY);
    SimTime::from_nanos((secs * 1e9).min(u64::MAX as f64) as u64)
}

/// `true` with probability `p`. Always draws one number, so the stream's position does not
/// depend on `p` (keeps common random numbers aligned across policies).
pub fn chance(rng: &mut StreamRng, p: f64) -> bool {
    rng.random::<f64>() < p
}

/// Uniform in `[lo, hi)` (or `lo` when the range is empty). Always draws one number.
pub fn uniform(rng: &mut StreamRng, lo: f64, hi: f64) -> f64 {
    let u: f64 = rng.random();
    if hi > lo {
        lo + u * (hi - lo)
    } else {
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Streams;
    use std::time::Duration;

    #[test]
    fn lognormal_hits_its_percentiles() {
        let d = LatencyDist::new(Duration::from_millis(400), Duration::from_millis(2000));
        let mut rng = Streams::new(1).stream("t", &[]);
        let mut xs: Vec<u64> = (0..20_000)
            .map(|_| latency(&mut rng, &d).as_nanos())
            .collect();
        xs.sort_unstable();
        let p50 = xs[10_000] as f64 / 1e6;
        let p99 = xs[19_800] as f64 / 1e6;
        assert!((380.0..420.0).contains(&p50), "p50 {p50}");
        assert!((1800.0..2200.0).contains(&p99), "p99 {p99}");
    }

    #[test]
    fn constant_when_p99_equals_p50() {
        let d = LatencyDist::new(Duration::from_millis(7), Duration::from_millis(7));
        let mut rng = Streams::new(1).stream("t", &[]);
        assert_eq!(latency(&mut rng, &d), SimTime::from_millis(7));
    }
}
