//! Every backoff formula of the model, named after the system it follows. Each takes the retry
//! number `n` (1-based) and one uniform draw `u` in [0, 1) from the caller's own stream, and
//! returns the delay before that retry; the callers decide only which formula and which stream.

use crate::sim::SimTime;

/// The jitter applied to an exponential or constant delay `d`, in AWS's names ("Exponential
/// Backoff And Jitter", AWS Architecture Blog, 2015).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Jitter {
    /// `d`.
    None,
    /// `U(0, d)`.
    Full,
    /// `d/2 + U(0, d/2)`.
    Equal,
    /// `d · U(1 − f, 1 + f)`: ±f around the delay (Polly v8's `UseJitter`, resilience4j's
    /// `randomizationFactor`).
    Proportional(f64),
}

/// Envoy's retry backoff (`base_interval`, `max_interval`): `base · 2^(n−1)` (or a constant
/// `base` when `exponential` is false) capped at `max`, then [`Jitter`] (Envoy's own is full
/// jitter). Added retry layers (`layers.*.backoff`). A zero base waits 0 s.
pub(crate) fn envoy(
    exponential: bool,
    base: f64,
    max: f64,
    jitter: Jitter,
    n: u32,
    u: f64,
) -> SimTime {
    let d = if !exponential {
        base
    } else if base == 0.0 {
        0.0
    } else {
        base * libm::pow(2.0, f64::from(n) - 1.0)
    }
    .min(max);
    let jittered = match jitter {
        Jitter::None => d,
        Jitter::Full => d * u,
        Jitter::Equal => d / 2.0 + d / 2.0 * u,
        Jitter::Proportional(f) => d * (1.0 - f + 2.0 * f * u),
    };
    secs(jittered)
}

/// LangChain's ToolRetryMiddleware (`initial_delay`, `backoff_factor`, `max_delay`, `jitter`):
/// `initial · factor^(n−1)`, capped at `max`, times `U(1 − jitter, 1 + jitter)`. The executor's
/// own retry (`executor.retry`). A zero `initial` waits 0 s whatever the factor (so `0 × ∞`
/// never turns into a NaN that the cap would read as `max`); a power that overflows is capped
/// like any other large value.
pub(crate) fn langchain(
    initial: f64,
    factor: f64,
    max: f64,
    jitter: f64,
    n: u32,
    u: f64,
) -> SimTime {
    let base = if initial == 0.0 {
        0.0
    } else {
        initial * libm::pow(factor, f64::from(n) - 1.0)
    };
    let capped = base.min(max);
    secs(capped * (1.0 - jitter + 2.0 * jitter * u))
}

/// Stripe's SDKs' network retries, as DESIGN §1 states it: `min(0.5·2^(n−1), 5) s × U(0.5, 1)`,
/// at least 0.5 s (stripe-python's exponential form; stripe-node grows as `0.5·(n−1)²` under
/// the same cap, jitter and floor). `stripe_client.max_network_retries`.
pub(crate) fn stripe_sdk(n: u32, u: f64) -> SimTime {
    let base = (0.5 * libm::pow(2.0, f64::from(n) - 1.0)).min(5.0);
    secs((base * (0.5 + 0.5 * u)).max(0.5))
}

/// Seconds (negative as 0) as a [`SimTime`], truncated to the nanosecond.
fn secs(s: f64) -> SimTime {
    SimTime::from_nanos((s.max(0.0) * 1e9) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: SimTime) -> f64 {
        t.as_nanos() as f64 / 1e9
    }

    #[test]
    fn each_formula_follows_its_source() {
        // Envoy: 25 ms base doubling to a 250 ms cap; full jitter at u = 0.5 halves.
        assert_eq!(s(envoy(true, 0.025, 0.25, Jitter::None, 1, 0.9)), 0.025);
        assert_eq!(s(envoy(true, 0.025, 0.25, Jitter::None, 5, 0.9)), 0.25);
        assert_eq!(s(envoy(true, 2.0, 60.0, Jitter::Full, 1, 0.25)), 0.5);
        assert_eq!(s(envoy(true, 2.0, 60.0, Jitter::Equal, 1, 0.5)), 1.5);
        assert_eq!(s(envoy(false, 0.3, 60.0, Jitter::None, 7, 0.9)), 0.3);
        // ±25 % (Polly v8): u = 0 is 0.75 d, u = 0.5 is d, u → 1 is 1.25 d.
        let p = Jitter::Proportional(0.25);
        assert_eq!(s(envoy(false, 2.0, 60.0, p, 1, 0.0)), 1.5);
        assert_eq!(s(envoy(false, 2.0, 60.0, p, 1, 0.5)), 2.0);
        assert_eq!(s(envoy(true, 2.0, 60.0, p, 2, 0.75)), 4.5);
        // LangChain: 1 s · 2^(n−1), cap 60 s, ±jitter.
        assert_eq!(s(langchain(1.0, 2.0, 60.0, 0.0, 3, 0.9)), 4.0);
        assert_eq!(s(langchain(1.0, 2.0, 60.0, 0.5, 1, 0.0)), 0.5);
        assert_eq!(s(langchain(0.0, 1e308, 60.0, 0.0, 9, 0.5)), 0.0);
        // stripe-python: 0.5 s doubling to 5 s, × U(0.5, 1), at least 0.5 s.
        assert_eq!(s(stripe_sdk(1, 0.0)), 0.5);
        assert_eq!(s(stripe_sdk(3, 1.0)), 2.0);
        assert_eq!(s(stripe_sdk(9, 0.0)), 2.5);
    }
}
