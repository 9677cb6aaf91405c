//! The round trip that keeps import honest (issue 26, item 6), over generated worlds: run a
//! world, export it as instrumentation would (`--otlp`, with every combination of the optional
//! arguments, results and request headers, and the provider's own list, `--stripe-list`),
//! import both, and require the exact replay to reproduce every recorded instant (1 ms) and
//! every ticket's refund count.
//!
//! The worlds: 1–5 tickets opened within 20 s, one or several tool calls each, pools of 1–4
//! connections, 1 s / 2 s / 8 s timeouts reported as errors or followed by a status probe, no
//! key or a per-ticket key (Stripe then answers retries as replays), latencies that straddle
//! the timeout (late responses), and responses lost or failed after the refund is made.
//! Humans who take escalated tickets are off, blind (refund from the dashboard without
//! checking) or checking first: their dashboard attempts leave no span, but the provider's list
//! holds the refunds they made, which the import records as the escalated ticket's refunds
//! made outside the agent and the exact replay makes at their recorded instants.
//!
//! `cargo test` runs 24 worlds; `PROPTEST_CASES=200 cargo test --release --test it
//! prop_round_trip` runs more.

use proptest::prelude::*;
use serde_json::Value;

use crate::common::prop::runner;
use crate::common::refundsim;
use crate::common::worlds::{
    refunds_in, run_and_export, world_with_humans as world, Exported, World,
};

fn round_trip(w: &World) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let Exported {
        scenario: sc,
        otlp,
        list,
        trace,
    } = run_and_export(w, dir.path())?;
    let out = refundsim()
        .arg("replay")
        .arg(&otlp)
        .arg(&list)
        .arg("--base")
        .arg(&sc)
        .arg("--json")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
    })?;
    let c = &v["comparison"];
    let differing: Vec<&Value> = c["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["rows"].as_array().unwrap())
        .filter(|r| r["ok"] == false)
        .collect();
    prop_assert!(differing.is_empty(), "facts differ: {differing:#?}");
    let ran = refunds_in(&trace);
    for t in c["tickets"].as_array().unwrap() {
        let id = t["ticket"].as_u64().unwrap();
        prop_assert_eq!(
            t["recorded_refunds"].as_u64(),
            Some(ran.get(&id).copied().unwrap_or(0)),
            "ticket {}: recorded vs run",
            id
        );
        prop_assert_eq!(
            &t["recorded_refunds"],
            &t["replayed_refunds"],
            "ticket {}",
            id
        );
    }
    prop_assert_eq!(out.status.code(), Some(0), "{:#}", c);
    Ok(())
}

#[test]
fn every_generated_world_round_trips_through_otlp_and_the_providers_list() {
    runner(24, 26).run(&world(), |w| round_trip(&w)).unwrap();
}
