//! Sampling helpers over a seeded stream. Every draw in the model goes through these.
//!
//! Portability: the transcendental functions behind every draw (`log`, `exp`, `cos`, `pow`) come
//! from [`libm`], a pure-Rust port of musl's math library, not from the platform's C library
//! (whose last bits differ between glibc, macOS and Windows). With integer nanoseconds and
//! ChaCha8 streams, a run is therefore bit-identical on every platform.

use rand::Rng;

use crate::scenario::{AmountDist, LatencyDist, RequestKey};
use crate::sim::{SimTime, StreamRng};

/// z-score of the 99th percentile of the standard normal.
const Z99: f64 = 2.326_347_874_040_841;

/// `(mu, sigma)` of the lognormal with median `p50` and 99th percentile `p99` (both > 0).
pub(crate) fn lognormal_params(p50: f64, p99: f64) -> (f64, f64) {
    let mu = libm::log(p50);
    let sigma = ((libm::log(p99) - mu) / Z99).max(0.0);
    (mu, sigma)
}

/// A uniform draw in `(0, 1]`: never 0, so its logarithm is finite.
fn open_unit(rng: &mut StreamRng) -> f64 {
    1.0 - rng.random::<f64>()
}

/// A standard normal draw by the Box–Muller transform (cosine branch): always two uniforms.
pub(crate) fn standard_normal(rng: &mut StreamRng) -> f64 {
    let r = libm::sqrt(-2.0 * libm::log(open_unit(rng)));
    let theta = 2.0 * std::f64::consts::PI * rng.random::<f64>();
    r * libm::cos(theta)
}

/// A lognormal with its parameters computed once: `ln p50` and `ln p99` cost two `log` calls,
/// about as much as the draw itself, so the model's hot distributions keep them (see
/// [`Latency`]). Draws the same numbers as computing them per draw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Lognormal {
    p50: f64,
    mu: f64,
    sigma: f64,
}

impl Lognormal {
    /// The lognormal with median `p50` and 99th percentile `p99` (both > 0, in any one unit).
    pub(crate) fn new(p50: f64, p99: f64) -> Self {
        let (mu, sigma) = lognormal_params(p50, p99);
        Lognormal { p50, mu, sigma }
    }

    /// The lognormal of an amount distribution (its `p50_cents` and `p99_cents`).
    pub(crate) fn of_amount(d: &AmountDist) -> Self {
        Lognormal::new(d.p50_cents as f64, d.p99_cents as f64)
    }

    /// [`Lognormal::draw`] from each of `rngs`, stage by stage: every stream's two uniforms,
    /// then every `log`, every `cos`, every `exp`. Each number goes through the same operations
    /// as alone, so the draws are identical; the independent libm calls (chains of dependent
    /// floating-point steps) overlap in the CPU.
    pub(crate) fn draw_each<const N: usize>(&self, rngs: &mut [StreamRng; N]) -> [f64; N] {
        // As `standard_normal`: per stream, U₁ then U₂.
        let uniforms: [(f64, f64); N] = std::array::from_fn(|i| {
            let u1 = open_unit(&mut rngs[i]);
            (u1, rngs[i].random::<f64>())
        });
        let r = uniforms.map(|(u1, _)| libm::sqrt(-2.0 * libm::log(u1)));
        let c = uniforms.map(|(_, u2)| libm::cos(2.0 * std::f64::consts::PI * u2));
        std::array::from_fn(|i| {
            if self.sigma == 0.0 {
                self.p50
            } else {
                libm::exp(self.mu + self.sigma * (r[i] * c[i]))
            }
        })
    }

    /// One draw (two uniforms, through [`standard_normal`]).
    fn draw(&self, rng: &mut StreamRng) -> f64 {
        let z = standard_normal(rng);
        if self.sigma == 0.0 {
            return self.p50;
        }
        libm::exp(self.mu + self.sigma * z)
    }
}

/// A latency distribution with its lognormal parameters (its own, or its `script`'s
/// `otherwise`'s) computed once, for the distributions drawn per request. Draws exactly what
/// [`latency`] and [`request_latency`] draw from the distribution it was made from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Latency {
    dist: LatencyDist,
    lognormal: Option<Lognormal>,
}

impl Latency {
    /// `d` with its parameters computed.
    pub(crate) fn new(d: &LatencyDist) -> Self {
        let lognormal_of = |d: &LatencyDist| match d {
            LatencyDist::Lognormal { p50, p99 } => {
                Some(Lognormal::new(p50.as_nanos() as f64, p99.as_nanos() as f64))
            }
            _ => None,
        };
        let lognormal = match d {
            LatencyDist::Script(s) => lognormal_of(&s.otherwise),
            d => lognormal_of(d),
        };
        Latency {
            dist: d.clone(),
            lognormal,
        }
    }

    /// A draw, as [`latency`].
    pub(crate) fn draw(&self, rng: &mut StreamRng) -> SimTime {
        latency_of(rng, &self.dist, None, self.lognormal.as_ref())
    }

    /// A draw from each of `rngs`, as [`Latency::draw`] from each in turn. A lognormal is drawn
    /// stage by stage over all of them (every stream's two uniforms, then every `log`, every
    /// `cos`, every `exp`): each number goes through the same operations as alone, so the draws
    /// are identical, and the independent libm calls, which are chains of dependent
    /// floating-point steps, overlap in the CPU. For the background load's holds, drawn in
    /// batches.
    pub(crate) fn draw_each<const N: usize>(&self, rngs: &mut [StreamRng; N]) -> [SimTime; N] {
        let Some(ln) = self
            .lognormal
            .filter(|_| matches!(self.dist, LatencyDist::Lognormal { .. }))
        else {
            return std::array::from_fn(|i| self.draw(&mut rngs[i]));
        };
        ln.draw_each(rngs)
            .map(|ns| SimTime::from_nanos(round_to_ns(ns)))
    }

    /// A draw for the Stripe request `key`, as [`request_latency`].
    pub(crate) fn draw_for(&self, rng: &mut StreamRng, key: &RequestKey) -> SimTime {
        latency_of(rng, &self.dist, Some(key), self.lognormal.as_ref())
    }
}

/// A duration from a latency distribution, rounded to whole ns. Always draws exactly two
/// numbers, whatever the form, so changing a latency's form moves no later draw of the same
/// stream (common random numbers):
///
/// - lognormal: two uniforms through [`standard_normal`] (as before the other forms existed);
/// - constant: two uniforms, unused;
/// - exponential: `−mean · ln U₁` by inversion; `U₂` unused;
/// - empirical: sample number `⌊U₁ · n⌋` (uniform among the `n` samples); `U₂` unused;
/// - script: `otherwise`'s draw (so two uniforms), replaced by the scripted value when one is
///   keyed for the request. Without a request key (everywhere but Stripe), `otherwise` alone.
pub(crate) fn latency(rng: &mut StreamRng, d: &LatencyDist) -> SimTime {
    latency_of(rng, d, None, None)
}

/// [`latency`] for the Stripe request `key`, which a `script` looks up.
#[cfg(test)]
pub(crate) fn request_latency(rng: &mut StreamRng, d: &LatencyDist, key: &RequestKey) -> SimTime {
    latency_of(rng, d, Some(key), None)
}

/// A draw from `d`; `lognormal` is `d`'s lognormal (or its script's `otherwise`'s) when known.
fn latency_of(
    rng: &mut StreamRng,
    d: &LatencyDist,
    key: Option<&RequestKey>,
    lognormal: Option<&Lognormal>,
) -> SimTime {
    match d {
        LatencyDist::Lognormal { p50, p99 } => {
            let ln = lognormal
                .copied()
                .unwrap_or_else(|| Lognormal::new(p50.as_nanos() as f64, p99.as_nanos() as f64));
            let ns = ln.draw(rng);
            SimTime::from_nanos(round_to_ns(ns))
        }
        LatencyDist::Constant { value } => {
            let _unused: (f64, f64) = (rng.random(), rng.random());
            SimTime::from_duration(*value)
        }
        LatencyDist::Exponential { mean } => {
            let u = open_unit(rng);
            let _unused: f64 = rng.random();
            let ns = -libm::log(u) * mean.as_nanos() as f64;
            SimTime::from_nanos(round_to_ns(ns))
        }
        LatencyDist::Empirical { samples } => {
            let u: f64 = rng.random();
            let _unused: f64 = rng.random();
            let n = samples.len();
            let i = ((u * n as f64) as usize).min(n.saturating_sub(1));
            samples
                .get(i)
                .map_or(SimTime::ZERO, |d| SimTime::from_duration(*d))
        }
        LatencyDist::Script(s) => {
            let drawn = latency_of(rng, &s.otherwise, None, lognormal);
            key.and_then(|k| s.by_request.get(k))
                .map_or(drawn, |d| SimTime::from_duration(*d))
        }
    }
}

/// `x.round().clamp(0.0, u64::MAX as f64) as u64`, the same for every `x` (NaN, negatives and
/// the huge included), without a call to libm's `round` for the usual `0 ≤ x < 2^52` (x86_64's
/// baseline has no rounding instruction): `x as i64` truncates, `x - i` is then exact, and
/// rounding half away from zero adds one from a fraction of one half up. Through `i64`, not
/// `u64`: in that range both give the same numbers, and x86_64 converts between `f64` and
/// `i64` in one instruction each way where `u64` takes a branchy sequence.
#[inline]
fn round_to_ns(x: f64) -> u64 {
    const EXACT: f64 = 4_503_599_627_370_496.0; // 2^52: every f64 below it has a fraction to read
    if (0.0..EXACT).contains(&x) {
        let i = x as i64;
        (i + i64::from(x - i as f64 >= 0.5)) as u64
    } else {
        x.round().clamp(0.0, u64::MAX as f64) as u64
    }
}

/// Draws for consecutive entity ids (tickets, background requests) made `N` at a time: the
/// draws of ids `base .. base + len`. Each id draws from a stream of its own, so drawing ahead
/// changes no number; drawing together lets the streams' derivations and libm calls overlap in
/// the CPU. Up to `N - 1` draws past the last id asked for go unused.
pub(crate) struct DrawnAhead<T, const N: usize> {
    base: u64,
    len: usize,
    values: [T; N],
}

impl<T: Copy + Default, const N: usize> Default for DrawnAhead<T, N> {
    fn default() -> Self {
        DrawnAhead {
            base: 0,
            len: 0,
            values: [T::default(); N],
        }
    }
}

impl<T: Copy, const N: usize> DrawnAhead<T, N> {
    /// The draw of `id`; when it was not drawn ahead, `draw` makes those of `id .. id + N`
    /// (given the `N` ids, returning their draws in that order).
    pub(crate) fn get(&mut self, id: u64, draw: impl FnOnce([u64; N]) -> [T; N]) -> T {
        if id.wrapping_sub(self.base) >= self.len as u64 {
            self.values = draw(std::array::from_fn(|i| id.wrapping_add(i as u64)));
            self.base = id;
            self.len = N;
        }
        self.values[(id - self.base) as usize]
    }
}

/// Cents from a p50/p99 lognormal, rounded and clamped to `[min_cents, max_cents]`.
#[cfg(test)]
pub(crate) fn amount(rng: &mut StreamRng, d: &AmountDist) -> u64 {
    amount_from(rng, d, &Lognormal::of_amount(d))
}

/// [`amount_from`] from each of `rngs`, the lognormals drawn stage by stage
/// ([`Lognormal::draw_each`]): the same amounts.
pub(crate) fn amounts_from<const N: usize>(
    rngs: &mut [StreamRng; N],
    d: &AmountDist,
    lognormal: &Lognormal,
) -> [u64; N] {
    lognormal.draw_each(rngs).map(|c| clamped_cents(c, d))
}

/// [`amount`] with `d`'s lognormal (`Lognormal::of_amount(d)`) computed once, for a draw per
/// ticket: the same numbers without two `log` calls per draw.
#[cfg(test)]
pub(crate) fn amount_from(rng: &mut StreamRng, d: &AmountDist, lognormal: &Lognormal) -> u64 {
    clamped_cents(lognormal.draw(rng), d)
}

/// A drawn amount rounded to cents and clamped to `[min_cents, max_cents]`.
fn clamped_cents(c: f64, d: &AmountDist) -> u64 {
    (c.round() as u64).clamp(d.min_cents, d.max_cents.max(d.min_cents))
}

/// An exponential inter-arrival time for `rate_per_s` (> 0), in ns, by inversion
/// (`−ln U / rate`). Always draws one number.
pub(crate) fn interarrival(rng: &mut StreamRng, rate_per_s: f64) -> SimTime {
    let secs = -libm::log(open_unit(rng)) / rate_per_s;
    SimTime::from_nanos((secs * 1e9).min(u64::MAX as f64).max(0.0) as u64)
}

/// `true` with probability `p`. Always draws one number, so the stream's position does not
/// depend on `p` (keeps common random numbers aligned across policies).
pub(crate) fn chance(rng: &mut StreamRng, p: f64) -> bool {
    rng.random::<f64>() < p
}

/// Uniform in `[lo, hi)` (or `lo` when the range is empty). Always draws one number.
pub(crate) fn uniform(rng: &mut StreamRng, lo: f64, hi: f64) -> f64 {
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

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn constant_is_exactly_its_value() {
        let d = LatencyDist::constant(Duration::from_nanos(412_345_678));
        let mut rng = Streams::new(1).stream("t", &[]);
        for _ in 0..100 {
            assert_eq!(latency(&mut rng, &d).as_nanos(), 412_345_678);
        }
    }

    #[test]
    fn exponential_has_its_mean() {
        let d = LatencyDist::exponential(ms(400));
        let mut rng = Streams::new(1).stream("t", &[]);
        let n = 20_000;
        let total: f64 = (0..n)
            .map(|_| latency(&mut rng, &d).as_nanos() as f64)
            .sum();
        let mean_ms = total / n as f64 / 1e6;
        assert!((392.0..408.0).contains(&mean_ms), "mean {mean_ms} ms");
    }

    #[test]
    fn empirical_picks_only_its_samples_evenly() {
        let samples = vec![ms(100), ms(250), ms(900), ms(9_700)];
        let d = LatencyDist::empirical(samples.clone());
        let mut rng = Streams::new(1).stream("t", &[]);
        let mut counts = [0u32; 4];
        for _ in 0..20_000 {
            let x = latency(&mut rng, &d).as_nanos();
            let i = samples
                .iter()
                .position(|s| s.as_nanos() as u64 == x)
                .unwrap_or_else(|| panic!("{x} ns is not a sample"));
            counts[i] += 1;
        }
        for c in counts {
            assert!((4_700..5_300).contains(&c), "counts {counts:?}");
        }
    }

    #[test]
    fn script_hits_keyed_requests_and_falls_back_otherwise() {
        let by_request = [
            (
                RequestKey::service(7, 0, 0),
                Duration::from_nanos(9_700_000_001),
            ),
            (RequestKey::service(7, 1, 0), ms(1_300)),
            (RequestKey::human(7, 0), ms(640)),
        ]
        .into_iter()
        .collect();
        let d = LatencyDist::script(by_request, LatencyDist::constant(ms(5)));
        let mut rng = Streams::new(1).stream("t", &[]);
        let at = |rng: &mut StreamRng, key| request_latency(rng, &d, &key).as_nanos();
        assert_eq!(at(&mut rng, RequestKey::service(7, 0, 0)), 9_700_000_001);
        assert_eq!(at(&mut rng, RequestKey::service(7, 1, 0)), 1_300_000_000);
        assert_eq!(at(&mut rng, RequestKey::human(7, 0)), 640_000_000);
        // Not listed: another try, another attempt, another ticket, a human's second attempt.
        for key in [
            RequestKey::service(7, 0, 1),
            RequestKey::service(7, 2, 0),
            RequestKey::service(8, 0, 0),
            RequestKey::human(7, 1),
        ] {
            assert_eq!(at(&mut rng, key), 5_000_000, "{key}");
        }
        // Without a request key (not a Stripe request), `otherwise` alone.
        assert_eq!(latency(&mut rng, &d), SimTime::from_millis(5));
    }

    /// Every form takes exactly two numbers, so the next draw from the stream is the same
    /// whichever form the latency has (common random numbers across a change of form).
    #[test]
    fn every_form_draws_two_numbers() {
        let forms = [
            LatencyDist::new(ms(380), ms(1600)),
            LatencyDist::constant(ms(400)),
            LatencyDist::exponential(ms(400)),
            LatencyDist::empirical(vec![ms(1), ms(2), ms(3)]),
            LatencyDist::script(
                [(RequestKey::service(1, 0, 0), ms(9))]
                    .into_iter()
                    .collect(),
                LatencyDist::exponential(ms(400)),
            ),
        ];
        let next: Vec<u64> = forms
            .iter()
            .map(|d| {
                let mut rng = Streams::new(3).stream("t", &[]);
                request_latency(&mut rng, d, &RequestKey::service(1, 0, 0));
                rng.random()
            })
            .collect();
        let mut rng = Streams::new(3).stream("t", &[]);
        let _: (f64, f64) = (rng.random(), rng.random());
        let expected: u64 = rng.random();
        assert!(next.iter().all(|&n| n == expected), "{next:?}");
    }

    /// An amount drawn with its lognormal computed once is the amount drawn alone, clamps
    /// included.
    #[test]
    fn amount_from_a_cached_lognormal_is_the_same_amount() {
        use crate::scenario::AmountDist;
        for d in [
            AmountDist::default(),
            AmountDist {
                p50_cents: 500,
                p99_cents: 90_000,
                min_cents: 300,
                max_cents: 2_000,
            },
        ] {
            let ln = Lognormal::of_amount(&d);
            let mut a = Streams::new(9).stream("t", &[]);
            let mut b = Streams::new(9).stream("t", &[]);
            let drawn: Vec<u64> = (0..300).map(|_| amount_from(&mut a, &d, &ln)).collect();
            let alone: Vec<u64> = (0..300).map(|_| amount(&mut b, &d)).collect();
            assert_eq!(drawn, alone, "{d:?}");
            let s = Streams::new(9);
            for round in 0..30u64 {
                let ids: [u64; 3] = std::array::from_fn(|i| round * 3 + i as u64);
                let mut each = ids.map(|id| s.stream("t", &[id]));
                let together = amounts_from(&mut each, &d, &ln);
                for (i, id) in ids.into_iter().enumerate() {
                    let mut alone = s.stream("t", &[id]);
                    assert_eq!(together[i], amount(&mut alone, &d), "{d:?} stream {id}");
                    assert_eq!(each[i].random::<u64>(), alone.random::<u64>(), "{d:?}");
                }
            }
            assert!(drawn
                .iter()
                .all(|c| (d.min_cents..=d.max_cents).contains(c)));
            assert!(
                drawn.windows(2).any(|p| p[0] != p[1]),
                "{d:?}: amounts vary"
            );
        }
    }

    /// `draw_each` draws from each stream what `draw` draws from it alone, for every form
    /// (the lognormal, a zero-spread lognormal, the others through `draw`), and leaves every
    /// stream where `draw` leaves it.
    #[test]
    fn draw_each_equals_drawing_from_each_stream_alone() {
        let forms = [
            LatencyDist::new(ms(380), ms(1600)),
            LatencyDist::new(ms(7), ms(7)),
            LatencyDist::new(Duration::from_nanos(3), Duration::from_secs(3_000)),
            LatencyDist::constant(ms(400)),
            LatencyDist::exponential(ms(400)),
            LatencyDist::empirical(vec![ms(1), ms(2), ms(3)]),
            LatencyDist::script(Default::default(), LatencyDist::new(ms(300), ms(9_000))),
        ];
        let s = Streams::new(11);
        for d in &forms {
            let cached = Latency::new(d);
            for round in 0..40u64 {
                let ids: [u64; 5] = std::array::from_fn(|i| round * 5 + i as u64);
                let mut each = ids.map(|id| s.stream("t", &[id]));
                let mut alone = ids.map(|id| s.stream("t", &[id]));
                let drawn = cached.draw_each(&mut each);
                for (i, rng) in alone.iter_mut().enumerate() {
                    assert_eq!(drawn[i], cached.draw(rng), "{d:?} stream {}", ids[i]);
                    assert_eq!(each[i].random::<u64>(), rng.random::<u64>(), "{d:?}");
                }
            }
        }
    }

    /// A `Latency` draws what the distribution it was made from draws, for every form,
    /// through `draw` and `draw_for`, over many draws of one stream.
    #[test]
    fn latency_with_cached_parameters_draws_the_same() {
        let forms = [
            LatencyDist::new(ms(380), ms(1600)),
            LatencyDist::new(ms(7), ms(7)),
            LatencyDist::constant(ms(400)),
            LatencyDist::exponential(ms(400)),
            LatencyDist::empirical(vec![ms(1), ms(2), ms(3)]),
            LatencyDist::script(
                [(RequestKey::service(1, 0, 0), ms(9))]
                    .into_iter()
                    .collect(),
                LatencyDist::new(ms(300), ms(9_000)),
            ),
        ];
        for d in &forms {
            let cached = Latency::new(d);
            let mut a = Streams::new(5).stream("t", &[]);
            let mut b = Streams::new(5).stream("t", &[]);
            for i in 0..500 {
                let key = RequestKey::service(1, 0, i % 3);
                assert_eq!(cached.draw(&mut a), latency(&mut b, d), "{d:?} #{i}");
                assert_eq!(
                    cached.draw_for(&mut a, &key),
                    request_latency(&mut b, d, &key),
                    "{d:?} #{i}"
                );
            }
        }
    }

    /// Pinned bits: the draws are computed with `libm`, so these hold on every platform; a
    /// change here moves every run's numbers (re-pin `tests/pinned/` and say so in CHANGELOG).
    #[test]
    fn round_to_ns_is_round_then_clamp() {
        let reference = |x: f64| x.round().clamp(0.0, u64::MAX as f64) as u64;
        let mut cases = vec![
            0.0,
            -0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            -0.5,
            -3.7,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            4_503_599_627_370_495.5,
            4_503_599_627_370_496.0,
            9_007_199_254_740_993.0,
            1e19,
            1.8446744073709552e19,
            1e300,
            f64::MIN_POSITIVE,
            380e6,
        ];
        let mut rng = Streams::new(3).stream("round", &[]);
        for _ in 0..100_000 {
            let u: f64 = rng.random();
            cases.push(u * 1e12);
            cases.push((u - 0.5) * 8.0);
            cases.push(f64::from_bits(rng.random::<u64>()));
        }
        for x in cases {
            assert_eq!(round_to_ns(x), reference(x), "{x:e} ({:#x})", x.to_bits());
        }
    }

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
