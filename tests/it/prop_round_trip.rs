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

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Value};

use crate::common::prop::runner;
use crate::common::refundsim;

#[derive(Clone, Debug)]
struct World {
    tickets: Vec<(u64, u64)>,
    pool: u32,
    timeout_s: u64,
    probe: bool,
    key: bool,
    latencies_ms: Vec<u64>,
    lost: f64,
    error_500: f64,
    seed: u64,
    capture: &'static str,
    /// 0: no humans; 1: humans who refund without checking; 2: humans who check first.
    humans: u8,
}

fn world() -> impl Strategy<Value = World> {
    (
        prop::collection::vec((0u64..20_000, 1u64..50_000), 1..=5),
        1u32..=4,
        prop::sample::select(vec![1u64, 2, 8]),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(
            prop::sample::select(vec![300u64, 900, 1_500, 2_500, 9_000]),
            1..=4,
        ),
        prop::sample::select(vec![0.0, 0.3]),
        prop::sample::select(vec![0.0, 0.2]),
        0u64..1_000,
        prop::sample::select(vec![
            "arguments",
            "arguments,results",
            "arguments,headers",
            "arguments,results,headers",
        ]),
        prop::sample::select(vec![0u8, 1, 2]),
    )
        .prop_map(
            |(
                tickets,
                pool,
                timeout_s,
                probe,
                key,
                latencies_ms,
                lost,
                error_500,
                seed,
                capture,
                humans,
            )| World {
                tickets,
                pool,
                timeout_s,
                probe,
                key,
                latencies_ms,
                lost,
                error_500,
                seed,
                capture,
                humans,
            },
        )
}

fn scenario(w: &World) -> Value {
    let tickets: Vec<Value> = w
        .tickets
        .iter()
        .enumerate()
        .map(|(i, (at_ms, cents))| {
            json!({"id": 1000 + i as u64, "opened_at": format!("{at_ms}ms"),
                   "amount_cents": cents, "charge_amount_cents": cents * 3})
        })
        .collect();
    json!({
        "name": "round-trip-world",
        "seed": w.seed,
        "horizon": "5m",
        "clock_origin": "2025-03-07T10:00:00Z",
        "arrivals": {"tickets": tickets},
        "executor": {
            "timeout": format!("{}s", w.timeout_s),
            "on_timeout": if w.probe { "probe_status" } else { "report_error" },
        },
        "refunds_service": {
            "pool_size": w.pool,
            "idempotency_key": if w.key { "per_ticket" } else { "none" },
        },
        "stripe": {
            "latency_choices": w.latencies_ms.iter().map(|m| format!("{m}ms")).collect::<Vec<_>>(),
            "faults": {"response_lost_after_commit": w.lost, "error_500_after_commit": w.error_500},
        },
        "humans": match w.humans {
            0 => json!({"enabled": false}),
            h => json!({"enabled": true, "pickup_delay": {"p50": "20s", "p99": "90s"},
                        "check_probability": if h == 1 { 0.0 } else { 1.0 }}),
        },
    })
}

/// Refunds per ticket in a run's trace.
fn refunds_in(trace: &std::path::Path) -> BTreeMap<u64, u64> {
    let mut n = BTreeMap::new();
    for line in std::fs::read_to_string(trace).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["kind"] == "refund_created" && e["moves_money"] != false {
            *n.entry(e["ticket"].as_u64().unwrap()).or_default() += 1;
        }
    }
    n
}

fn round_trip(w: &World) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("world.json");
    std::fs::write(&sc, scenario(w).to_string()).unwrap();
    let (otlp, list, trace) = (
        dir.path().join("o.json"),
        dir.path().join("l.json"),
        dir.path().join("t.jsonl"),
    );
    let out = refundsim()
        .arg("run")
        .arg(&sc)
        .arg("--otlp")
        .arg(&otlp)
        .args(["--otlp-capture", w.capture])
        .arg("--stripe-list")
        .arg(&list)
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    prop_assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
