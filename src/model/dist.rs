//! Sampling helpers over a seeded stream. Every draw in the model goes through these.
//!
//! Portability: the transcendental functions behind every draw (`log`, `exp`, `cos`, `pow`) come
//! from [`libm`], a pure-Rust port of musl's math library, not from the platform's C library
//! (whose last bits differ between glibc, macOS and Windows). With integer nanoseconds and
//! ChaCha8 streams, a run is therefore bit-identical on every platform.

use rand::Rng;

use crate::scenario::{AmountDist, LatencyDist};
use crate::sim::{SimTime, StreamRng};

/// z-score of the 99th percentile of the standard normal.
const Z99: f64 = 2.326_347_874_040_841;

/// `(mu, sigma)` of the lognormal with median `p50` and 99th percentile `p99` (both > 0).
pub fn lognormal_params(p50: f64, p99: f64) -> (f64, f64) {
    let mu = libm::log(p50);
    let sigma = ((libm::log(p99) - mu) / Z99).max(0.0);
    (mu, sigma)
}

/// A uniform draw in `(0, 1]`: never 0, so its logarithm is finite.
fn open_unit(rng: &mut StreamRng) -> f64 {
    1.0 - rng.random::<f64>()
}

/// A standard normal draw by the Box–Muller transform (cosine branch): always two uniforms.
pub fn standard_normal(rng: &mut StreamRng) -> f64 {
    let r = libm::sqrt(-2.0 * libm::log(open_unit(rng)));
    let theta = 2.0 * std::f64::consts::PI * rng.random::<f64>();
    r * libm::cos(theta)
}

fn lognormal(rng: &mut StreamRng, p50: f64, p99: f64) -> f64 {
    let (mu, sigma) = lognormal_params(p50, p99);
    let z = standard_normal(rng);
    if sigma == 0.0 {
        return p50;
    }
    libm::exp(mu + sigma * z)
}

/// A duration from a p50/p99 lognormal, rounded to whole ns. Always draws two numbers.
pub fn latency(rng: &mut StreamRng, d: &LatencyDist) -> SimTime {
    let ns = lognormal(rng, d.p50.as_nanos() as f64, d.p99.as_nanos() as f64);
    SimTime::from_nanos(ns.round().clamp(0.0, u64::MAX as f64) as u64)
}

/// Cents from a p50/p99 lognormal, rounded and clamped to `[min_cents, max_cents]`.
pub fn amount(rng: &mut StreamRng, d: &AmountDist) -> u64 {
    let c = lognormal(rng, d.p50_cents as f64, d.p99_cents as f64).round() as u64;
    c.clamp(d.min_cents, d.max_cents.max(d.min_cents))
}

/// An exponential inter-arrival time for `rate_per_s` (> 0), in ns, by inversion
/// (`−ln U / rate`). Always draws one number.
pub fn interarrival(rng: &mut StreamRng, rate_per_s: f64) -> SimTime {
    let secs = -libm::log(open_unit(rng)) / rate_per_s;
    SimTime::from_nanos((secs * 1e9).min(u64::MAX as f64).max(0.0) as u64)
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
    /// Pinned bits: the draws are computed with `libm`, so these hold on every platform; a
    /// change here moves every run's numbers (re-pin `tests/pinned/` and say so in CHANGELOG).
    #[test]
    fn draws_are_bit_identical_across_platforms() {
        let mut rng = Streams::new(1).stream("t", &[]);
        let z = standard_normal(&mut rng);
        let e = interarrival(&mut rng, 0.5);
        let d = LatencyDist::new(Duration::from_millis(380), Duration::from_millis(1600));
        let l = latency(&mut rng, &d);
        assert_eq!(z.to_bits(), 0x3fe3_78e5_86e7_026c);
        assert_eq!(e.as_nanos(), 2_262_598_552);
        assert_eq!(l.as_nanos(), 507_406_294);
    }
}
