//! The incident's model outcomes on seeds 1–100, pinned per seed, bare and under the fixed
//! policy. A change to the model or the engine that moves any count or sum on any seed fails
//! here, with the seeds and fields that moved; a change that means to move them re-pins with
//! `REFUNDSIM_BLESS=1 cargo test --test it pinned_outcomes` and says why in `CHANGELOG.md`.
//!
//! Pinned: the report's counts and money (tickets, tool calls, timeouts, retries, escalations,
//! refunds, duplicates, over-refund, lost refunds, false failures, manual refunds). Engine
//! counters and latency percentiles are not pinned: a faster engine may change them.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use refundsim::run::run;
use refundsim::scenario::load;

const FIELDS: &str = "seed,tickets,tool_calls,executor_timeouts,retries,escalations,\
refunds_created,duplicate_refund_tickets,extra_refunds,over_refund_cents,lost_refunds,\
false_failures,manual_refunds";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One CSV row per seed 1–100 of the incident under `policies`.
fn table(policies: &[&str]) -> String {
    let policies: Vec<PathBuf> = policies.iter().map(|p| root().join(p)).collect();
    let s = load(
        &root().join("scenarios/carrier-outage.json"),
        &policies,
        &[],
    )
    .unwrap();
    let rows: Vec<String> = (1..=100u64)
        .into_par_iter()
        .map(|seed| {
            let m = run(&s, seed, &Default::default()).report.metrics;
            format!(
                "{seed},{},{},{},{},{},{},{},{},{},{},{},{}",
                m.tickets,
                m.tool_calls,
                m.executor_timeouts,
                m.retries,
                m.escalations,
                m.refunds_created,
                m.duplicate_refund_tickets,
                m.extra_refunds,
                m.over_refund_cents,
                m.lost_refunds,
                m.false_failures,
                m.manual_refunds
            )
        })
        .collect();
    format!("{FIELDS}\n{}\n", rows.join("\n"))
}

fn check_pinned(file: &str, policies: &[&str]) {
    let path = root().join("tests/pinned").join(file);
    let got = table(policies);
    if std::env::var_os("REFUNDSIM_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    let moved: Vec<String> = want
        .lines()
        .zip(got.lines())
        .filter(|(w, g)| w != g)
        .map(|(w, g)| format!("  pinned {w}\n  now    {g}"))
        .collect();
    assert!(
        moved.is_empty() && want.lines().count() == got.lines().count(),
        "{file}: outcomes moved on {} seed(s) (columns {FIELDS}):\n{}",
        moved.len(),
        moved.join("\n")
    );
}

#[test]
fn incident_outcomes_on_seeds_1_to_100_are_pinned() {
    check_pinned("carrier-outage.csv", &[]);
}

#[test]
fn fixed_policy_outcomes_on_seeds_1_to_100_are_pinned() {
    check_pinned("carrier-outage.fixed.csv", &["policies/fixed.json"]);
}
