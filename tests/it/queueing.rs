//! The pool against queueing theory: `scenarios/queueing/mmc-pool.json` is a textbook M/M/2
//! queue (Poisson arrivals at 0.8/s, exponential holds of mean 1 s, two connections: ρ = 0.4),
//! and the simulated mean wait, P(wait > 250 ms) and utilisation land within 2 % of Erlang C.
//!
//! What the 2 % means: each seed's 48 h is ~138,000 requests, but waits are autocorrelated (a
//! busy spell delays many requests at once), so one seed's mean wait is only good to ~1.7 %
//! (one standard deviation between seeds; 1.1 % for P(wait > t), 0.3 % for utilisation). Ten
//! seeds (20 simulated days, ~1.4 M requests) bring the standard error of the mean over seeds
//! to ~0.5 % (0.3 %, 0.1 %). The test asserts that its own standard error is below 0.7 %, so
//! the 2 % bound is at least 3 standard errors wide: a correct model passes whatever the seeds,
//! and a bias of 3 % or more would not hide in the noise. The seeds are fixed, so the verdict
//! is deterministic (seeds 1–10: −0.9 %, −0.4 %, −0.1 %).

use std::path::Path;

use rayon::prelude::*;
use refundsim::report::queueing::{erlang_c, mmc, pool_oracle};
use refundsim::run::run;
use refundsim::scenario::load;

const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;

fn mean_and_standard_error(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

#[test]
fn an_mmc_pool_lands_within_two_percent_of_erlang_c() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/queueing/mmc-pool.json");
    let s = load(&path, &[], &[]).unwrap();

    // The oracle reads the scenario as M/M/2 at a = 0.8 Erlang: C(2, a) = a²/(2 + a) = 0.2286,
    // Wq = C·E[S]/(c − a) = 190.48 ms, P(W > t) = C·e^{−(c − a)t/E[S]} = 0.16933 at t = 250 ms.
    let oracle = pool_oracle(&s);
    assert_eq!(oracle.len(), 1, "one steady load");
    let q = &oracle[0].inputs;
    assert_eq!(
        (q.arrival_rate_per_s, q.mean_service_s, q.servers),
        (0.8, 1.0, 2)
    );
    assert!((q.service_cv - 1.0).abs() < 1e-12 && q.arrival_cv == 1.0);
    assert!((erlang_c(2, 0.8) - 0.64 / 2.8).abs() < 1e-12);
    let exact = mmc(q, 0.25).unwrap();
    assert!((exact.mean_wait_s - 0.228_571_428_6 / 1.2).abs() < 1e-9);
    assert!((exact.p_wait_over_t - 0.169_329_879).abs() < 1e-8);

    let runs: Vec<(f64, f64, f64)> = SEEDS
        .into_par_iter()
        .map(|seed| {
            let m = run(&s, seed, &Default::default()).report.metrics;
            (
                m.pool_wait_mean_ms,
                m.pool_wait_over_threshold_fraction,
                m.pool_utilisation,
            )
        })
        .collect();
    let col = |f: fn(&(f64, f64, f64)) -> f64| -> Vec<f64> { runs.iter().map(f).collect() };
    let checks = [
        ("mean wait (ms)", col(|r| r.0), exact.mean_wait_s * 1e3),
        ("P(wait > 250 ms)", col(|r| r.1), exact.p_wait_over_t),
        ("utilisation", col(|r| r.2), 0.4),
    ];
    for (name, xs, expected) in checks {
        let (mean, se) = mean_and_standard_error(&xs);
        let rel = (mean - expected).abs() / expected;
        assert!(
            se / expected < 0.007,
            "{name}: standard error {:.2} % is too wide for a 2 % test ({xs:?})",
            se / expected * 100.0
        );
        assert!(
            rel < 0.02,
            "{name}: simulated {mean:.5} vs Erlang C {expected:.5} ({:.2} % off; seeds {xs:?})",
            rel * 100.0
        );
    }
}
