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

use crate::common::{refundsim, run_json, INCIDENT};

const MMC: &str = "scenarios/queueing/mmc-pool.json";

const SEEDS: std::ops::RangeInclusive<u64> = 1..=10;

fn mean_and_standard_error(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

#[test]
fn an_mmc_pool_lands_within_two_percent_of_erlang_c() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(MMC);
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

#[test]
fn lint_and_the_summary_show_the_oracle_beside_the_simulated_values() {
    let out = refundsim()
        .args(["run", MMC, "--seed", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for row in [
        "  pool wait, all requests (simulated)        mean wait 193.1 ms · P(wait > 250ms) 17.16 %\n",
        "  pool utilisation (simulated)               39.96 %\n",
        "  queueing inputs, mean load                 λ 0.800/s · E[S] 1000.0 ms (c_s 1.00, c_a 1.00) · c 2 · ρ 0.400\n",
        "    Erlang C (M/M/c)                         mean wait 190.5 ms · P(wait > 250ms) 16.93 %\n",
    ] {
        assert!(text.contains(row), "{row}\n{text}");
    }
    // The incident: light on average, overloaded at the burst's peak.
    let out = refundsim().args(["lint", INCIDENT]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("scenarios/carrier-outage.json: pool queueing (no run; estimates only):\n"),
        "{text}"
    );
    assert!(text.contains(
        "  queueing inputs, peak (20 s)               λ 8.500/s · E[S] 436.8 ms (c_s 0.71, c_a 1.00) · c 3 · ρ 1.237\n    unstable                                 ρ ≥ 1: no steady state"
    ), "{text}");
    assert!(
        text.contains("ρ 0.384\n    Erlang C (M/M/c)                         mean wait 27.2 ms"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_slice(
        &refundsim()
            .args(["lint", "--json", MMC])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let ec = &v["queueing"][0]["loads"][0]["erlang_c"];
    assert!(
        (ec["mean_wait_s"].as_f64().unwrap() - 0.190_476).abs() < 1e-6,
        "{v}"
    );
}

#[test]
fn the_threshold_defaults_to_the_executor_timeout_and_must_be_positive() {
    let v = run_json(&[INCIDENT]);
    assert_eq!(v["pool_wait_threshold_ms"], 8000.0);
    assert_eq!(v["queueing"][0]["threshold_ms"], 8000.0);
    let v = run_json(&[INCIDENT, "--set", "executor.timeout=15s"]);
    assert_eq!(v["pool_wait_threshold_ms"], 15000.0);
    let v = run_json(&[INCIDENT, "--set", "refunds_service.pool_wait_threshold=2s"]);
    assert_eq!(v["pool_wait_threshold_ms"], 2000.0);
    // A bound on the new metrics is an ordinary `expect`.
    let v = run_json(&[
        INCIDENT,
        "--set",
        r#"expect={"pool_utilisation":{"max":0.5},"pool_wait_mean_ms":{"max":100}}"#,
    ]);
    assert_eq!(v["expectations_met"], false, "{}", v["expectations"]);
    let out = refundsim()
        .args([
            "run",
            INCIDENT,
            "--set",
            "refunds_service.pool_wait_threshold=0s",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("refunds_service.pool_wait_threshold"), "{err}");
}
