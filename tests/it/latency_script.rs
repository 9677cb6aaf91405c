//! A `script` for `stripe.latency` replays a recording's latencies per request, keyed by
//! (ticket, model attempt, SDK try) — not by arrival order — and leaves every other request's
//! draw where it was.

use crate::common;

use std::collections::BTreeMap;

use common::refundsim;
use serde_json::{json, Value};

/// Four recorded tickets:
/// - 1: the first call takes 9.7 s (> the 8 s executor timeout), the model's retry 1.3 s;
/// - 2: one call of 123.456789 ms;
/// - 3: the SDK's first try takes 30 s (> its 20 s timeout), its network retry 250 ms (sent
///   without a key, so Stripe executes it rather than answer 409 while the first still runs;
///   the executor gave up at 8 s, and the model's retry draws from `otherwise`);
/// - 4: the call and the model's retry take 9 s each, so the ticket is escalated and a human
///   refunds from the dashboard in 2.5 s.
fn world(latency: Value) -> Value {
    json!({
        "name": "scripted", "horizon": "1h",
        "arrivals": {"tickets": [
            {"id": 1, "opened_at": "0s", "amount_cents": 1000, "charge_amount_cents": 5000},
            {"id": 2, "opened_at": "0s", "amount_cents": 2000, "charge_amount_cents": 5000},
            {"id": 3, "opened_at": "1s", "amount_cents": 3000, "charge_amount_cents": 9000},
            {"id": 4, "opened_at": "2s", "amount_cents": 4000, "charge_amount_cents": 9000}]},
        "agent": {"retry": {"max_retries": 1, "compliance": 1.0}},
        "refunds_service": {"pool_size": 8,
            "stripe_client": {"timeout": "20s", "max_network_retries": 1, "key": "none"}},
        "humans": {"pickup_delay": {"kind": "constant", "value": "1m"}, "check_probability": 0.0},
        "stripe": {"latency": latency},
        "expect": {}
    })
}

fn script(otherwise: Value) -> Value {
    json!({
        "kind": "script",
        "by_request": {
            "1/0/0": "9700ms", "1/1/0": "1300ms",
            "2/0/0": "123456789ns",
            "3/0/0": "30s", "3/0/1": "250ms",
            "4/0/0": "9s", "4/1/0": "9s", "4/human/0": "2500ms"
        },
        "otherwise": otherwise
    })
}

/// `(ticket, attempt or "human", sdk_try)` → the `latency_ns` of each Stripe response, in order.
fn latencies(world: &Value, name: &str) -> BTreeMap<String, Vec<u64>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("{name}.json"));
    let trace = dir.path().join(format!("{name}.jsonl"));
    std::fs::write(&path, world.to_string()).unwrap();
    let out = refundsim()
        .arg("run")
        .arg(&path)
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    // A request and its response share the ticket and call (none for a dashboard refund); the
    // SDK's tries of one call are sequential.
    let mut open: BTreeMap<(u64, Option<u64>), String> = BTreeMap::new();
    let mut got: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in text.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let ticket = e["ticket"].as_u64().unwrap_or(0);
        let call = e["call"].as_u64();
        match e["kind"].as_str().unwrap() {
            "stripe_request" => {
                let attempt = e["attempt"]
                    .as_u64()
                    .map_or("human".to_string(), |a| a.to_string());
                let key = format!("{ticket}/{attempt}/{}", e["sdk_try"]);
                open.insert((ticket, call), key);
            }
            "stripe_response" => {
                let key = open
                    .remove(&(ticket, call))
                    .expect("a response has a request");
                got.entry(key)
                    .or_default()
                    .push(e["latency_ns"].as_u64().unwrap());
            }
            _ => {}
        }
    }
    got
}

#[test]
fn a_script_replays_exact_per_request_latencies() {
    let got = latencies(
        &world(script(json!({"kind": "constant", "value": "777ms"}))),
        "script",
    );
    let want: BTreeMap<String, Vec<u64>> = [
        ("1/0/0", vec![9_700_000_000]),
        ("1/1/0", vec![1_300_000_000]),
        ("2/0/0", vec![123_456_789]),
        // The SDK gives up on its first try at its 20 s timeout, then retries.
        ("3/0/0", vec![20_000_000_000]),
        ("3/0/1", vec![250_000_000]),
        ("3/1/0", vec![777_000_000]),
        ("4/0/0", vec![9_000_000_000]),
        ("4/1/0", vec![9_000_000_000]),
        ("4/human/0", vec![2_500_000_000]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn requests_not_listed_draw_from_otherwise_and_keep_their_draws() {
    let lognormal = json!({"p50": "380ms", "p99": "1600ms"});
    let plain = latencies(&world(lognormal.clone()), "plain");
    let scripted = latencies(
        &world(json!({
            "kind": "script",
            "by_request": {"1/0/0": "9700ms"},
            "otherwise": lognormal
        })),
        "one-entry",
    );
    assert_eq!(scripted["1/0/0"], vec![9_700_000_000]);
    assert_ne!(plain["1/0/0"], scripted["1/0/0"]);
    // Ticket 1's scripted first call times out and is retried; every other request's latency
    // is the one it drew without the script (draws are keyed by request, not arrival order).
    for (key, ns) in &plain {
        if key != "1/0/0" {
            assert_eq!(scripted.get(key), Some(ns), "{key}");
        }
    }
    assert!(scripted.contains_key("1/1/0"), "{scripted:?}");
}
