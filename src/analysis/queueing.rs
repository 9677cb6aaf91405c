//! The queueing oracle: what queueing theory predicts for the refunds service's connection pool,
//! shown beside the simulated values (`refundsim run`'s summary, `refundsim lint`).
//!
//! The pool is a c-server FIFO queue (c = `refunds_service.pool_size`) fed by ticket requests
//! (service time: the Stripe call, `stripe.latency`) and background requests
//! (`background_load.hold`). With λ the arrival rate, E[S] the mean service time, a = λ·E[S]
//! the offered load (Erlangs) and ρ = a / c the utilisation:
//!
//! - **Erlang C** (M/M/c: Poisson arrivals, exponential service; Kleinrock, *Queueing Systems*
//!   Vol. 1, 1975, §3.5; Gross, Shortle, Thompson & Harris, *Fundamentals of Queueing Theory*,
//!   4th ed., 2008, §2.3): the probability of waiting C(c, a), computed from the Erlang B
//!   recursion B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)) and C = B / (1 − ρ(1 − B)), which
//!   never forms aᶜ or c! and so neither overflows nor cancels for large c; then
//!   Wq = C · E[S] / (c − a) and P(W > t) = C · e^{−(c − a)·t / E[S]}.
//! - **Allen–Cunneen** (G/G/c; Allen, *Probability, Statistics, and Queueing Theory*, 2nd ed.,
//!   1990): Wq ≈ Wq(M/M/c) · (c_a² + c_s²) / 2 with c_a, c_s the coefficients of variation
//!   of the interarrival and service times. For P(W > t) it keeps P(W > 0) = C and takes the
//!   wait of those who wait as exponential with the Allen–Cunneen mean (exact for M/M/c):
//!   P(W > t) ≈ C · e^{−C·t / Wq}.
//!
//! Both need ρ < 1; at ρ ≥ 1 there is no steady state (the queue grows while the load lasts)
//! and no estimate is given.
//!
//! Inputs from a scenario ([`pool_oracle`]): λ = ticket rate + `background_load.rate_per_s`
//! (first tool calls only: retries, probes of other layers and re-runs add load the formulas do
//! not see); E[S] and c_s² of the mixture of the two service-time distributions, weighted by
//! their rates; c_a = 1 (both streams are Poisson). The ticket rate is the mean over the horizon
//! and, when the schedule varies, also its busiest phase (as the `timeout-below-burst-p99` lint
//! rule reads it): steady-state formulas at the mean load understate the waits of a burst.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

pub use crate::erlang::erlang_c;
use crate::model::dist::lognormal_params;
use crate::scenario::{LatencyDist, Scenario};

/// A queue's inputs: what the formulas are computed from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueInputs {
    /// λ, arrivals per second.
    pub arrival_rate_per_s: f64,
    /// E[S], mean service time (a connection's hold), seconds.
    pub mean_service_s: f64,
    /// c_a, coefficient of variation of the interarrival times (1 for Poisson arrivals).
    pub arrival_cv: f64,
    /// c_s, coefficient of variation of the service times (1 for exponential service).
    pub service_cv: f64,
    /// c, servers (pool connections).
    pub servers: u32,
}

impl QueueInputs {
    /// a = λ·E[S], Erlangs.
    pub fn offered_load(&self) -> f64 {
        self.arrival_rate_per_s * self.mean_service_s
    }

    /// ρ = a / c (infinite with no server).
    pub fn utilisation(&self) -> f64 {
        self.offered_load() / f64::from(self.servers)
    }

    /// Whether a steady state exists (ρ < 1).
    pub fn is_stable(&self) -> bool {
        self.utilisation() < 1.0
    }
}

/// A steady-state waiting-time estimate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaitEstimate {
    /// P(W > 0): the probability that an arrival waits (Erlang C).
    pub p_wait: f64,
    /// Wq, the mean wait for a connection, seconds.
    pub mean_wait_s: f64,
    /// P(W > t) for the oracle's `t`.
    pub p_wait_over_t: f64,
}

/// Erlang C's estimate for `q` (read as M/M/c: its CVs are ignored) and threshold `t_s`
/// seconds; `None` when ρ ≥ 1.
pub fn mmc(q: &QueueInputs, t_s: f64) -> Option<WaitEstimate> {
    if !q.is_stable() {
        return None;
    }
    let a = q.offered_load();
    let p_wait = erlang_c(q.servers, a);
    if p_wait == 0.0 || q.mean_service_s <= 0.0 {
        return Some(WaitEstimate {
            p_wait: 0.0,
            mean_wait_s: 0.0,
            p_wait_over_t: 0.0,
        });
    }
    let spare = f64::from(q.servers) - a;
    Some(WaitEstimate {
        p_wait,
        mean_wait_s: p_wait * q.mean_service_s / spare,
        p_wait_over_t: p_wait * (-spare * t_s / q.mean_service_s).exp(),
    })
}

/// The Allen–Cunneen approximation for `q` and threshold `t_s` seconds (see the module docs);
/// `None` when ρ ≥ 1.
pub(crate) fn allen_cunneen(q: &QueueInputs, t_s: f64) -> Option<WaitEstimate> {
    let m = mmc(q, t_s)?;
    let factor = (q.arrival_cv.powi(2) + q.service_cv.powi(2)) / 2.0;
    let mean_wait_s = m.mean_wait_s * factor;
    let p_wait_over_t = if mean_wait_s > 0.0 {
        m.p_wait * (-m.p_wait * t_s / mean_wait_s).exp()
    } else {
        0.0
    };
    Some(WaitEstimate {
        p_wait: m.p_wait,
        mean_wait_s,
        p_wait_over_t,
    })
}

/// The oracle for one load of a scenario's pool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolOracle {
    /// Which load: `mean` (the ticket rate averaged over the horizon) or `peak` (the busiest
    /// schedule phase, or the busiest 10 s of recorded tickets).
    pub load: &'static str,
    /// How long that load lasts, seconds (the horizon for `mean`).
    pub duration_s: f64,
    /// The inputs.
    pub inputs: QueueInputs,
    /// ρ = λ·E[S] / c.
    pub utilisation: f64,
    /// The `t` of P(W > t), ms (`Scenario::pool_wait_threshold`).
    pub threshold_ms: f64,
    /// Erlang C (M/M/c); absent when ρ ≥ 1.
    pub erlang_c: Option<WaitEstimate>,
    /// Allen–Cunneen (G/G/c); absent when ρ ≥ 1.
    pub allen_cunneen: Option<WaitEstimate>,
}

impl PoolOracle {
    fn of(load: &'static str, duration_s: f64, inputs: QueueInputs, t: Duration) -> Self {
        let t_s = t.as_secs_f64();
        PoolOracle {
            load,
            duration_s,
            utilisation: inputs.utilisation(),
            threshold_ms: t_s * 1e3,
            erlang_c: mmc(&inputs, t_s),
            allen_cunneen: allen_cunneen(&inputs, t_s),
            inputs,
        }
    }
}

/// Mean and variance of a latency distribution, seconds and seconds²: a lognormal's from its
/// p50 and p99 (as the model draws it: mean e^{μ+σ²/2}, variance mean²·(e^{σ²} − 1)); a
/// constant's value and 0; an exponential's mean and mean²; the samples' mean and (population)
/// variance; a script's `otherwise` (its scripted requests are a handful among many).
pub(crate) fn latency_moments(d: &LatencyDist) -> (f64, f64) {
    match d {
        LatencyDist::Lognormal { p50, p99 } => {
            let (mu, sigma) = lognormal_params(p50.as_secs_f64(), p99.as_secs_f64());
            let s2 = sigma * sigma;
            let mean = (mu + s2 / 2.0).exp();
            (mean, mean * mean * s2.exp_m1())
        }
        LatencyDist::Constant { value } => (value.as_secs_f64(), 0.0),
        LatencyDist::Exponential { mean } => (mean.as_secs_f64(), mean.as_secs_f64().powi(2)),
        LatencyDist::Empirical { samples } => {
            let n = samples.len().max(1) as f64;
            let mean = samples.iter().map(Duration::as_secs_f64).sum::<f64>() / n;
            let var = samples
                .iter()
                .map(|d| (d.as_secs_f64() - mean).powi(2))
                .sum::<f64>()
                / n;
            (mean, var)
        }
        LatencyDist::Script(s) => latency_moments(&s.otherwise),
    }
}

/// The ticket arrival rate averaged over the horizon, per second: the schedule's expected
/// arrivals inside the horizon (or the recorded tickets opened inside it) / horizon.
pub(crate) fn mean_ticket_rate(s: &Scenario) -> f64 {
    let horizon = s.horizon.as_secs_f64();
    if horizon <= 0.0 {
        return 0.0;
    }
    let a = &s.arrivals;
    if !a.tickets.is_empty() {
        let inside = a.tickets.iter().filter(|t| t.opened_at < s.horizon).count();
        return inside as f64 / horizon;
    }
    let mut start = 0.0;
    let mut expected = 0.0;
    for p in &a.schedule {
        let d = p.duration.as_secs_f64().min((horizon - start).max(0.0));
        expected += p.rate_per_s * d;
        start += p.duration.as_secs_f64();
    }
    expected / horizon
}

/// The busiest ticket rate, per second, and how long it lasts, seconds: the schedule phase
/// with the highest rate (the first of equals; its part inside the horizon), or for recorded
/// tickets the busiest 10 s window.
pub(crate) fn peak_ticket_rate(s: &Scenario) -> (f64, f64) {
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

/// The pool's queue inputs at ticket rate `ticket_rate` (see the module docs).
pub(crate) fn pool_inputs(s: &Scenario, ticket_rate: f64) -> QueueInputs {
    let bg_rate = s.background_load.rate_per_s;
    let lambda = ticket_rate + bg_rate;
    let (m_t, v_t) = latency_moments(&s.stripe.latency);
    let (m_b, v_b) = latency_moments(&s.background_load.hold);
    let (mean, cv) = if lambda > 0.0 {
        let (w_t, w_b) = (ticket_rate / lambda, bg_rate / lambda);
        let mean = w_t * m_t + w_b * m_b;
        let second = w_t * (v_t + m_t * m_t) + w_b * (v_b + m_b * m_b);
        let cv2 = if mean > 0.0 {
            (second / (mean * mean) - 1.0).max(0.0)
        } else {
            0.0
        };
        (mean, cv2.sqrt())
    } else {
        (0.0, 0.0)
    };
    QueueInputs {
        arrival_rate_per_s: lambda,
        mean_service_s: mean,
        arrival_cv: 1.0,
        service_cv: cv,
        servers: s.refunds_service.pool_size,
    }
}

/// The oracle for scenario `s`: at the mean load, and at the peak when the ticket rate varies
/// (the peak's rate differs from the mean by more than 0.1 %).
pub fn pool_oracle(s: &Scenario) -> Vec<PoolOracle> {
    let t = s.pool_wait_threshold();
    let mean = mean_ticket_rate(s);
    let mut out = vec![PoolOracle::of(
        "mean",
        s.horizon.as_secs_f64(),
        pool_inputs(s, mean),
        t,
    )];
    let (peak, peak_s) = peak_ticket_rate(s);
    if (peak - mean).abs() > 1e-3 * mean.max(f64::MIN_POSITIVE) {
        out.push(PoolOracle::of("peak", peak_s, pool_inputs(s, peak), t));
    }
    out
}

/// Text rows `(key, value)` of one oracle entry: its inputs, then each estimate or why there
/// is none. Shared by the run summary and `lint`.
pub(crate) fn oracle_rows(o: &PoolOracle) -> Vec<(String, String)> {
    let q = &o.inputs;
    let load = match o.load {
        "mean" => "queueing inputs, mean load".to_string(),
        other => format!("queueing inputs, {other} ({})", secs(o.duration_s)),
    };
    let mut rows = vec![(
        load,
        format!(
            "λ {:.3}/s · E[S] {} (c_s {:.2}, c_a {:.2}) · c {} · ρ {:.3}",
            q.arrival_rate_per_s,
            ms(q.mean_service_s * 1e3),
            q.service_cv,
            q.arrival_cv,
            q.servers,
            o.utilisation
        ),
    )];
    let t = humantime::format_duration(Duration::from_nanos((o.threshold_ms * 1e6) as u64));
    let est = |e: &WaitEstimate| {
        format!(
            "mean wait {} · P(wait > {t}) {}",
            ms(e.mean_wait_s * 1e3),
            percent(e.p_wait_over_t)
        )
    };
    match (&o.erlang_c, &o.allen_cunneen) {
        (Some(c), Some(ac)) => {
            rows.push(("  Erlang C (M/M/c)".into(), est(c)));
            rows.push(("  Allen–Cunneen (G/G/c)".into(), est(ac)));
        }
        _ => rows.push((
            "  unstable".into(),
            "ρ ≥ 1: no steady state (the queue grows while this load lasts); no estimate".into(),
        )),
    }
    rows
}

/// The simulated rows of a run: mean wait, P(wait > t) and utilisation.
pub(crate) fn simulated_rows(
    mean_wait_ms: f64,
    over_t: f64,
    utilisation: f64,
    t: Duration,
) -> Vec<(String, String)> {
    vec![
        (
            "pool wait, all requests (simulated)".into(),
            format!(
                "mean wait {} · P(wait > {}) {}",
                ms(mean_wait_ms),
                humantime::format_duration(t),
                percent(over_t)
            ),
        ),
        ("pool utilisation (simulated)".into(), percent(utilisation)),
    ]
}

/// Milliseconds with one decimal.
fn ms(v: f64) -> String {
    format!("{v:.1} ms")
}

/// Seconds, whole when they are.
fn secs(v: f64) -> String {
    let mut s = String::new();
    if v.fract() == 0.0 {
        let _ = write!(s, "{v:.0} s");
    } else {
        let _ = write!(s, "{v:.1} s");
    }
    s
}

/// A fraction as a percentage with two decimals.
fn percent(p: f64) -> String {
    format!("{:.2} %", p * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::erlang::erlang_b;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    /// Erlang B against the closed forms B(1, a) = a / (1 + a), B(2, a) = a² / (2 + 2a + a²),
    /// and the Erlang B table's 5 Erlangs on 10 circuits (1.84 % blocked), which is also checked
    /// against the defining sum B = (aᶜ/c!) / Σ_{k≤c} aᵏ/k!.
    #[test]
    fn erlang_b_matches_closed_forms_and_the_table() {
        assert!(close(erlang_b(1, 0.5), 0.5 / 1.5, 1e-12));
        assert!(close(erlang_b(2, 1.5), 2.25 / (2.0 + 3.0 + 2.25), 1e-12));
        assert!(
            (erlang_b(10, 5.0) - 0.018_38).abs() < 5e-5,
            "{}",
            erlang_b(10, 5.0)
        );
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..=10 {
            term *= 5.0 / f64::from(k);
            sum += term;
        }
        assert!(close(erlang_b(10, 5.0), term / sum, 1e-12));
        assert_eq!(erlang_b(4, 0.0), 0.0);
    }

    /// Erlang C against closed forms (Kleinrock 1975, §3.2 and §3.5): M/M/1 waits with
    /// probability ρ; M/M/2 with a²/(2 + a) (1/3 at a = 1); M/M/3 at a = 2 with 4/9.
    #[test]
    fn erlang_c_matches_closed_forms() {
        assert!(close(erlang_c(1, 0.5), 0.5, 1e-12));
        assert!(close(erlang_c(1, 0.9), 0.9, 1e-12));
        assert!(close(erlang_c(2, 1.0), 1.0 / 3.0, 1e-12));
        assert!(close(erlang_c(2, 1.5), 2.25 / 3.5, 1e-12));
        assert!(close(erlang_c(3, 2.0), 4.0 / 9.0, 1e-12));
        assert_eq!(erlang_c(3, 0.0), 0.0);
        assert_eq!(erlang_c(3, 3.0), 1.0);
        assert_eq!(erlang_c(3, 7.5), 1.0);
    }

    /// The recursion stays finite and exact where the textbook formula's aᶜ/c! overflows
    /// (c = 1000: 950¹⁰⁰⁰ is far beyond f64): checked against the same sum in log space.
    #[test]
    fn erlang_c_is_stable_for_large_pools() {
        let (c, a) = (1000u32, 950.0f64);
        // ln(a^k / k!) for k = 0..=c, then B = term_c / Σ terms (log-sum-exp).
        let mut ln_terms = Vec::with_capacity(c as usize + 1);
        let mut ln_fact = 0.0;
        for k in 0..=c {
            if k > 0 {
                ln_fact += f64::from(k).ln();
            }
            ln_terms.push(f64::from(k) * a.ln() - ln_fact);
        }
        let top = ln_terms.iter().cloned().fold(f64::MIN, f64::max);
        let sum: f64 = ln_terms.iter().map(|t| (t - top).exp()).sum();
        let b = (ln_terms[c as usize] - top).exp() / sum;
        let rho = a / f64::from(c);
        let expected = b / (1.0 - rho * (1.0 - b));
        let got = erlang_c(c, a);
        assert!(got.is_finite() && got > 0.0 && got < 1.0, "{got}");
        assert!(close(got, expected, 1e-9), "{got} vs {expected}");
    }

    /// M/M/1 (λ = 0.8, E[S] = 1 s): Wq = ρ/(μ − λ) = 4 s, P(W > t) = ρ e^{−(μ−λ)t}.
    /// M/M/3 at a = 2, E[S] = 1 s: Wq = C·E[S]/(c − a) = 4/9 s.
    #[test]
    fn mean_wait_and_tail_match_closed_forms() {
        let q = QueueInputs {
            arrival_rate_per_s: 0.8,
            mean_service_s: 1.0,
            arrival_cv: 1.0,
            service_cv: 1.0,
            servers: 1,
        };
        let e = mmc(&q, 2.0).unwrap();
        assert!(close(e.mean_wait_s, 4.0, 1e-12), "{e:?}");
        assert!(
            close(e.p_wait_over_t, 0.8 * (-0.4f64).exp(), 1e-12),
            "{e:?}"
        );
        // With c_a = c_s = 1 Allen–Cunneen is Erlang C.
        assert_eq!(allen_cunneen(&q, 2.0).unwrap(), e);
        let q3 = QueueInputs {
            arrival_rate_per_s: 2.0,
            servers: 3,
            ..q.clone()
        };
        assert!(close(mmc(&q3, 0.0).unwrap().mean_wait_s, 4.0 / 9.0, 1e-12));
        assert!(close(
            mmc(&q3, 0.0).unwrap().p_wait_over_t,
            4.0 / 9.0,
            1e-12
        ));
        // M/D/1 (c_s = 0): Pollaczek–Khinchine gives exactly half the M/M/1 wait.
        let md1 = QueueInputs {
            service_cv: 0.0,
            ..q.clone()
        };
        assert!(close(
            allen_cunneen(&md1, 0.0).unwrap().mean_wait_s,
            2.0,
            1e-12
        ));
        // ρ ≥ 1: no estimate.
        let over = QueueInputs {
            arrival_rate_per_s: 1.0,
            ..q
        };
        assert!(!over.is_stable());
        assert_eq!(mmc(&over, 1.0), None);
        assert_eq!(allen_cunneen(&over, 1.0), None);
    }

    #[test]
    fn moments_of_each_latency_form() {
        let ms = Duration::from_millis;
        let (m, v) = latency_moments(&LatencyDist::exponential(ms(400)));
        assert!(close(m, 0.4, 1e-12) && close(v, 0.16, 1e-12));
        let (m, v) = latency_moments(&LatencyDist::constant(ms(250)));
        assert!(close(m, 0.25, 1e-12) && v == 0.0);
        let (m, v) = latency_moments(&LatencyDist::empirical(vec![ms(100), ms(300)]));
        assert!(close(m, 0.2, 1e-12) && close(v, 0.01, 1e-9));
        // Lognormal p50 300 ms, p99 1.5 s: σ = ln 5 / 2.3263 = 0.6918, mean = 0.3·e^{σ²/2},
        // c_s² = e^{σ²} − 1 = 0.6136.
        let (m, v) = latency_moments(&LatencyDist::new(ms(300), ms(1500)));
        assert!(close(m, 0.381_0, 1e-3), "{m}");
        assert!(close(v / (m * m), 0.6136, 1e-3), "{}", v / (m * m));
    }

    #[test]
    fn the_incident_pool_is_stable_on_average_and_overloaded_at_the_peak() {
        let path = crate::repo_root().join("scenarios/carrier-outage.json");
        let s = crate::scenario::load(&path, &[], &[]).unwrap();
        let o = pool_oracle(&s);
        assert_eq!(o.len(), 2);
        assert_eq!((o[0].load, o[1].load), ("mean", "peak"));
        assert_eq!(o[0].threshold_ms, 8000.0);
        assert!(
            o[0].utilisation < 1.0 && o[0].erlang_c.is_some(),
            "{:?}",
            o[0]
        );
        assert!(
            o[1].utilisation >= 1.0 && o[1].erlang_c.is_none(),
            "{:?}",
            o[1]
        );
        assert_eq!(o[1].inputs.arrival_rate_per_s, 8.5);
        assert_eq!(o[1].duration_s, 20.0);
    }
}
