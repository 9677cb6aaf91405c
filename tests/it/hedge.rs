//! `kind: hedge` (issue 29 item 1): a next try sent while the first is still running, at
//! exactly the hedging delay (Polly v8's `Delay`, 2 s by default), both reaching Stripe; without
//! a key both refund, with one the loser gets 409 `idempotency_key_in_use`. A failure
//! `retry_on` names sends the next try at once; a budget refuses hedges as it refuses retries;
//! validation keeps gRPC's cap and refuses a hedge's meaningless fields.

use serde_json::{json, Value};

use crate::common::refundsim;

const RECIPE: &str = "scenarios/recipes/hedged-requests.json";
const FIX: &str = "policies/recipes/hedged-requests.fix.json";

/// The trace of `scenario` (a path, or a JSON value written to a file) run with `args`.
fn trace(scenario: &Value, args: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = match scenario {
        Value::String(p) => std::path::PathBuf::from(p),
        v => {
            let sc = dir.path().join("s.json");
            std::fs::write(&sc, v.to_string()).unwrap();
            sc
        }
    };
    let path = path.to_string_lossy().into_owned();
    let mut all = vec![path.as_str()];
    all.extend_from_slice(args);
    crate::common::run_trace(&all)
}

fn of<'a>(events: &'a [Value], ticket: u64, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["ticket"] == ticket && e["kind"] == kind)
        .collect()
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["kind"] == kind).count()
}

/// The recipe's ticket 1: the hedged request leaves exactly 2 s (the hedging delay) after the
/// first, while the first is still at Stripe (it answers at 3.044 s); both are refunded.
#[test]
fn a_hedge_sends_its_second_try_at_the_delay_while_the_first_runs() {
    let t = trace(&json!(RECIPE), &[]);
    let sent = of(&t, 1, "service_request");
    assert_eq!(sent.len(), 2, "{sent:?}");
    let (first, second) = (
        sent[0]["t_ns"].as_u64().unwrap(),
        sent[1]["t_ns"].as_u64().unwrap(),
    );
    assert_eq!(
        second - first,
        2_000_000_000,
        "at exactly the hedging delay"
    );
    assert_eq!(sent[1]["via"], json!({"hedge": 1}), "marked like a retry");
    let hedge = of(&t, 1, "layer_hedge");
    assert_eq!(hedge.len(), 1);
    assert_eq!(
        (
            &hedge[0]["t_ns"],
            &hedge[0]["reason"],
            &hedge[0]["after_ns"],
            &hedge[0]["running"]
        ),
        (
            &json!(second),
            &json!("delay"),
            &json!(2_000_000_000u64),
            &json!(1)
        )
    );
    let answered = of(&t, 1, "stripe_response");
    assert_eq!(answered.len(), 2);
    assert!(
        answered[0]["t_ns"].as_u64().unwrap() > second,
        "the first was still running"
    );
    let refunds = of(&t, 1, "refund_created");
    assert_eq!(refunds.len(), 2, "no key: the loser is a second refund");
    assert_eq!(count(&t, "refund_created"), 6);
    assert_eq!(count(&t, "layer_hedge"), 3);
    // The tool result is the first answer's; the loser answers after its caller moved on.
    let result = of(&t, 1, "tool_result");
    assert_eq!(result[0]["refund_id"], "re_00000001");
    assert_eq!(of(&t, 1, "service_response")[1]["late"], true);
}

/// With the fix's per-ticket key the hedged request reaches Stripe while the first is still
/// executing under the same key: 409 `idempotency_key_in_use`, a failure the hedge's default
/// `retry_on` names, so it waits for the first, which refunds once.
#[test]
fn with_a_key_the_loser_gets_409_and_the_first_refunds_once() {
    let t = trace(&json!(RECIPE), &["--policy", FIX]);
    let answered = of(&t, 1, "stripe_response");
    assert_eq!(answered.len(), 2);
    assert_eq!(
        (&answered[0]["status"], &answered[0]["outcome"]),
        (&json!(409), &json!("idempotency_key_in_use"))
    );
    assert_eq!(answered[0]["t_ns"], 2_074_746_746u64);
    assert_eq!(answered[1]["status"], 200);
    assert_eq!(of(&t, 1, "tool_result")[0]["outcome"], "ok");
    assert_eq!(count(&t, "refund_created"), 3);
    assert_eq!(count(&t, "layer_hedge"), 3);
}

/// The story names the hedge, its delay and the try it leaves running.
#[test]
fn the_story_tells_the_hedge() {
    let out = refundsim()
        .args(["run", RECIPE, "--ticket", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for line in [
        "00:00:02.024  hedge: no answer after 2.000s, hedging (try 2), the earlier try still running",
        "00:00:05.044  stripe: refund re_00000002 created by call #2, $42.00 succeeded (for the FIRST call, hedge try 2)",
    ] {
        assert!(text.contains(line), "{line:?} not in\n{text}");
    }
}

/// A hedge after `sdk` (an egress hedge), every answer lost after Stripe commits (a `reset`,
/// which the default `retry_on` names): each failure sends the next try at once, every try is a
/// refund, and the first try's failure is reported (Polly v8).
fn egress(max_retries: u32, budget: Option<Value>) -> Value {
    let mut hedge = json!({"kind": "hedge", "max_retries": max_retries, "hedging_delay": "5s"});
    if let Some(b) = budget {
        hedge["budget"] = b;
    }
    json!({
        "schema_version": 2,
        "name": "egress-hedge",
        "horizon": "10m",
        "arrivals": {"tickets": (0..3).map(|i| json!({"id": i + 1, "opened_at": format!("{i}m"),
            "amount_cents": 4200, "charge_amount_cents": 100000})).collect::<Vec<_>>()},
        "agent": {"retry": {"max_retries": 0}},
        "layers": {"egress_hedge": hedge},
        "stack": ["model_retry", "executor", "refunds_service", "sdk", "egress_hedge"],
        "executor": {"timeout": "30s"},
        "refunds_service": {"stripe_client": {"max_network_retries": 0}},
        "stripe": {"latency": {"p50": "400ms", "p99": "400ms"},
                   "faults": {"response_lost_after_commit": 1.0}},
        "humans": {"enabled": false}
    })
}

#[test]
fn a_failure_retry_on_names_sends_the_next_try_at_once() {
    let t = trace(&egress(2, None), &[]);
    let hedges = of(&t, 1, "layer_hedge");
    assert_eq!(hedges.len(), 2, "{hedges:?}");
    for h in &hedges {
        assert_eq!(
            (&h["reason"], &h["after_ns"], &h["running"]),
            (&json!("reset"), &json!(400_000_000u64), &json!(0))
        );
    }
    let sent = of(&t, 1, "stripe_request");
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[2]["via"], json!({"egress_hedge": 2}));
    assert_eq!(of(&t, 1, "refund_created").len(), 3);
    assert_eq!(count(&t, "refund_created"), 9);
}

/// A budget refuses hedged tries as it refuses retries: with none allowed in flight, every
/// hedge is refused (`layer_budget_exhausted`) and each ticket is sent once.
#[test]
fn a_budget_refuses_hedges() {
    let budget = json!({"budget_percent": 0, "min_retry_concurrency": 0});
    let t = trace(&egress(2, Some(budget)), &[]);
    assert_eq!(count(&t, "layer_hedge"), 0);
    assert_eq!(count(&t, "layer_budget_exhausted"), 3);
    assert_eq!(count(&t, "stripe_request"), 3);
    assert_eq!(count(&t, "refund_created"), 3);
}

/// The Perfetto file carries the hedge as a point on the ticket's track.
#[test]
fn perfetto_shows_the_hedge() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let out = refundsim()
        .args(["run", RECIPE, "--perfetto"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "the recipe's expect holds: {out:?}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let points: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "hedge hedge 1 (delay)")
        .collect();
    assert_eq!(points.len(), 3, "one per ticket");
    assert_eq!(points[0]["args"]["after_ns"], 2_000_000_000u64);
}

/// Validation: gRPC's cap of 5 tries, and no backoff, per-try timeout or `hedging_delay` where
/// they mean nothing.
#[test]
fn validation_keeps_grpcs_cap_and_a_hedges_own_fields() {
    for (set, words) in [
        (
            "layers.hedge.max_retries=5",
            "gRPC caps hedgingPolicy.maxAttempts",
        ),
        (
            "layers.hedge.per_try_timeout=1s",
            "a hedge never gives up on a try",
        ),
        ("layers.hedge.backoff.base=1s", "a hedge does not back off"),
        (
            "layers.hedge.hedging_delay=400days",
            "layers.hedge.hedging_delay",
        ),
    ] {
        let out = refundsim()
            .args(["run", RECIPE, "--set", set])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(words), "{set}: {words:?} not in {err}");
    }
    let out = refundsim()
        .args([
            "run",
            "scenarios/recipes/proxy-retries-post.json",
            "--set",
            "layers.sidecar.hedging_delay=1s",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("`hedging_delay` is the wait of a `hedge` layer"),
        "{err}"
    );
    let ok = refundsim()
        .args([
            "run",
            RECIPE,
            "--set",
            "layers.hedge.max_retries=4",
            "--set",
            "layers.hedge.hedging_delay=0s",
        ])
        .output()
        .unwrap();
    // gRPC's largest hedge with no delay (Polly's parallel mode): five requests at once.
    assert_eq!(ok.status.code(), Some(1), "{ok:?}");
    let text = String::from_utf8(ok.stdout).unwrap();
    assert!(
        text.contains("refunds created                            15\n"),
        "{text}"
    );
}

/// Around tool execution (between `model_retry` and `executor`) the hedge sends a second whole
/// executor call; the loser's refund lands there too.
#[test]
fn a_hedge_around_the_tool_duplicates_too() {
    let stack = r#"stack=["model_retry","hedge","executor","refunds_service","sdk"]"#;
    let t = trace(&json!(RECIPE), &["--set", stack]);
    assert_eq!(count(&t, "layer_hedge"), 3);
    assert_eq!(count(&t, "refund_created"), 6);
    assert_eq!(count(&t, "tool_result"), 3, "one answer per tool call");
}

/// Envoy's `additional_request_chance`: with the delay out of reach (1 h), only the chance
/// hedges. Always (1.0) every ticket gets a second try at once and a second refund; never, none;
/// 0.6 hedges the tickets whose own draw falls under it (2 of 3 here, from a stream of their
/// own). Validation keeps it on a hedge and in [0, 1].
#[test]
fn additional_request_chance_sends_a_second_try_at_once() {
    let f = "scenarios/recipes/hedged-requests.json";
    let with = |p: &str| {
        crate::common::run_json(&[
            f,
            "--set",
            "layers.hedge.hedging_delay=1h",
            "--set",
            &format!("layers.hedge.additional_request_chance={p}"),
        ])
    };
    for (p, tickets) in [("1", 3), ("0", 0), ("0.6", 2)] {
        let r = with(p);
        assert_eq!(
            (&r["duplicate_refund_tickets"], &r["extra_refunds"]),
            (&tickets.into(), &tickets.into()),
            "chance {p}"
        );
    }
    for (set, message) in [
        (
            "layers.hedge.additional_request_chance=1.5",
            "additional_request_chance",
        ),
        (
            r#"layers.hedge={"kind":"retry","additional_request_chance":0.5}"#,
            "expected none on a retry layer",
        ),
    ] {
        crate::common::refused(&["run", f, "--set", set], message);
    }
}
