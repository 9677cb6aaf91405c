//! The generated worlds of the import round trips (`prop_round_trip`, `prop_format_equivalence`):
//! 1–5 tickets opened within 20 s, one or several tool calls each, pools of 1–4 connections,
//! 1 s / 2 s / 8 s timeouts reported as errors or followed by a status probe, no key or a
//! per-ticket key (Stripe then answers retries as replays), latencies that straddle the timeout
//! (late responses), and responses lost or failed after the refund is made. Humans are off in
//! [`world`] and on in [`world_with_humans`].

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{json, Value};

/// One generated world: its tickets (opened at ms, cents), the policy and Stripe's behaviour,
/// the seed, and what the OTLP export captures (`--otlp-capture`).
#[derive(Clone, Debug)]
pub struct World {
    pub tickets: Vec<(u64, u64)>,
    pub pool: u32,
    pub timeout_s: u64,
    pub probe: bool,
    pub key: bool,
    pub latencies_ms: Vec<u64>,
    pub lost: f64,
    pub error_500: f64,
    pub seed: u64,
    pub capture: &'static str,
    /// 0: no humans; 1: humans who refund without checking; 2: humans who check first.
    pub humans: u8,
}

pub fn world() -> impl Strategy<Value = World> {
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
                humans: 0,
            },
        )
}

/// [`world`] with the humans who take escalated tickets off, blind (they refund from the
/// dashboard without checking) or checking first: their dashboard attempts leave no span, but
/// the provider's list holds the refunds they made, which the import records as refunds made
/// outside the agent.
pub fn world_with_humans() -> impl Strategy<Value = World> {
    (world(), prop::sample::select(vec![0u8, 1, 2])).prop_map(|(mut w, humans)| {
        w.humans = humans;
        w
    })
}

pub fn scenario(w: &World) -> Value {
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
pub fn refunds_in(trace: &std::path::Path) -> BTreeMap<u64, u64> {
    let mut n = BTreeMap::new();
    for line in std::fs::read_to_string(trace).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["kind"] == "refund_created" && e["moves_money"] != false {
            *n.entry(e["ticket"].as_u64().unwrap()).or_default() += 1;
        }
    }
    n
}

/// The files a run of a world writes in `dir`: its scenario (`world.json`), its OTLP export
/// (`o.json`, with the world's `capture`), the provider's list (`l.json`) and its trace
/// (`t.jsonl`).
pub struct Exported {
    pub scenario: std::path::PathBuf,
    pub otlp: std::path::PathBuf,
    pub list: std::path::PathBuf,
    pub trace: std::path::PathBuf,
}

/// Writes `w`'s scenario in `dir`, runs it with `--otlp`, `--stripe-list` and `--trace`, and
/// fails the case when the run neither passes nor fails its expectations (exit 0 or 1).
pub fn run_and_export(w: &World, dir: &std::path::Path) -> Result<Exported, TestCaseError> {
    let e = Exported {
        scenario: dir.join("world.json"),
        otlp: dir.join("o.json"),
        list: dir.join("l.json"),
        trace: dir.join("t.jsonl"),
    };
    std::fs::write(&e.scenario, scenario(w).to_string()).unwrap();
    let out = crate::common::refundsim()
        .arg("run")
        .arg(&e.scenario)
        .arg("--otlp")
        .arg(&e.otlp)
        .args(["--otlp-capture", w.capture])
        .arg("--stripe-list")
        .arg(&e.list)
        .arg("--trace")
        .arg(&e.trace)
        .output()
        .unwrap();
    prop_assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(e)
}
