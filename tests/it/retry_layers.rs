//! One retry mechanism (issue 28): a setting written on any layer means the same thing wherever
//! the layer sits. The run-level retry above the model goes through the same loop as the
//! framework, proxy and egress layers, so its `budget` and `cancellation` act as theirs do
//! (before, both were accepted and ignored there).

use serde_json::{json, Value};

use crate::common::refundsim;

const RUN_LEVEL: &str = "scenarios/recipes/run-level-retry-replays-tools.json";

/// Counts of each event kind (and of each Stripe response outcome) in the trace of `scenario`
/// run with `sets`.
fn kinds(scenario: &Value, sets: &[&str]) -> std::collections::BTreeMap<String, u64> {
    let mut n = std::collections::BTreeMap::new();
    for e in trace(scenario, sets) {
        let kind = e["kind"].as_str().unwrap().to_string();
        if kind == "stripe_response" {
            *n.entry(format!(
                "stripe_response:{}",
                e["outcome"].as_str().unwrap()
            ))
            .or_default() += 1;
        }
        *n.entry(kind).or_default() += 1;
    }
    n
}

/// The trace of `scenario`, written to a file, run with `sets`.
fn trace(scenario: &Value, sets: &[&str]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("s.json");
    std::fs::write(&sc, scenario.to_string()).unwrap();
    let sc = sc.to_string_lossy().into_owned();
    let mut args = vec![sc.as_str()];
    for s in sets {
        args.extend(["--set", s]);
    }
    crate::common::run_trace(&args)
}

fn count(n: &std::collections::BTreeMap<String, u64>, k: &str) -> u64 {
    n.get(k).copied().unwrap_or(0)
}

/// Four tickets 300 ms apart whose turns all fail after the tool (the recipe's LLM error): a
/// budget of 0 % with one retry in flight at a time refuses the retries that overlap, as it
/// does on a framework `retry` layer.
#[test]
fn a_budget_on_a_run_level_retry_refuses_overlapping_retries() {
    let mut sc: Value = serde_json::from_str(&std::fs::read_to_string(RUN_LEVEL).unwrap()).unwrap();
    sc["arrivals"]["tickets"] = json!((0..4)
        .map(
            |i| json!({"id": i + 1, "opened_at": format!("{}ms", 300 * i),
                        "amount_cents": 4200, "charge_amount_cents": 100000})
        )
        .collect::<Vec<_>>());
    let free = kinds(&sc, &[]);
    assert_eq!(count(&free, "layer_retry"), 4, "{free:?}");
    assert_eq!(count(&free, "layer_budget_exhausted"), 0, "{free:?}");
    let budget = r#"layers.agent_run.budget={"budget_percent":0,"min_retry_concurrency":1}"#;
    let tight = kinds(&sc, &[budget]);
    assert_eq!(count(&tight, "layer_retry"), 2, "{tight:?}");
    assert_eq!(count(&tight, "layer_budget_exhausted"), 2, "{tight:?}");
}

/// A run-level retry whose per-try timeout drops a turn with its tool call in flight at Stripe:
/// `cancellation: abort_in_flight` closes that connection (Stripe still commits), as on any
/// other layer; `none` leaves it running (a zombie).
#[test]
fn cancellation_on_a_run_level_retry_aborts_the_dropped_turns_call() {
    let sc = json!({
        "schema_version": 2,
        "name": "run-retry-cancel",
        "horizon": "10m",
        "arrivals": {"tickets": (0..3).map(|i| json!({"id": i + 1, "opened_at": format!("{i}m"),
            "amount_cents": 4200, "charge_amount_cents": 100000})).collect::<Vec<_>>()},
        "agent": {"retry": {"max_retries": 0}},
        "layers": {"agent_run": {"kind": "run_retry", "max_retries": 2, "retry_on": ["timeout"],
                                 "per_try_timeout": "5s"}},
        "stack": ["agent_run", "model_retry", "executor", "refunds_service", "sdk"],
        "executor": {"timeout": "30s"},
        "stripe": {"latency": {"p50": "10s", "p99": "10s"}},
        "humans": {"enabled": false}
    });
    let zombie = kinds(&sc, &[]);
    assert_eq!(count(&zombie, "layer_timeout"), 9, "{zombie:?}");
    assert_eq!(
        count(&zombie, "stripe_response:aborted_by_caller"),
        0,
        "{zombie:?}"
    );
    assert_eq!(count(&zombie, "stripe_response:created"), 9, "{zombie:?}");
    let aborted = kinds(&sc, &["layers.agent_run.cancellation=abort_in_flight"]);
    assert_eq!(
        count(&aborted, "stripe_response:aborted_by_caller"),
        9,
        "{aborted:?}"
    );
    // Aborting never undoes a provider commit.
    assert_eq!(count(&aborted, "refund_created"), 9, "{aborted:?}");
}

const CRASH: &str = "scenarios/recipes/crash-after-provider-ok.json";

/// The crash recipe with every call crashing after Stripe's 200, the model not retrying, and a
/// sidecar between the executor and the service that retries once on `retry_on`.
fn crash_behind_sidecar(retry_on: &[&str]) -> Value {
    let mut sc: Value = serde_json::from_str(&std::fs::read_to_string(CRASH).unwrap()).unwrap();
    sc["refunds_service"]["crash_after_provider_ok"] = json!(1.0);
    sc["agent"]["retry"]["max_retries"] = json!(0);
    sc["layers"] = json!({"sidecar": {"kind": "proxy", "max_retries": 1, "retry_on": retry_on}});
    sc["stack"] = json!([
        "model_retry",
        "executor",
        "sidecar",
        "refunds_service",
        "sdk"
    ]);
    sc.as_object_mut().unwrap().remove("expect");
    sc
}

/// A crash after the provider's 200 drops the caller's connection: it is told as a reset and a
/// layer retries it as one (`retry_on: ["reset"]`), not as a 502 (`gateway-error`). Before, the
/// service answered 502, so `reset` never retried it and `gateway-error` did.
#[test]
fn a_crash_after_the_providers_200_is_retried_as_a_reset() {
    let reset = kinds(&crash_behind_sidecar(&["reset"]), &[]);
    assert_eq!(count(&reset, "service_crash"), 12, "{reset:?}");
    assert_eq!(count(&reset, "layer_retry"), 6, "{reset:?}");
    let gateway = kinds(&crash_behind_sidecar(&["gateway-error", "5xx"]), &[]);
    assert_eq!(count(&gateway, "service_crash"), 6, "{gateway:?}");
    assert_eq!(count(&gateway, "layer_retry"), 0, "{gateway:?}");
}

/// The story of ticket 1 of `scenario` (`run --ticket 1`).
fn story(scenario: &Value) -> String {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("s.json");
    std::fs::write(&sc, scenario.to_string()).unwrap();
    let out = refundsim()
        .arg("run")
        .arg(&sc)
        .args(["--ticket", "1"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// When a proxy's per-try timeout drops a call, the call's late answer says the proxy gave up,
/// not the executor (whose 15 s timeout never fired); when the executor's timeout drops it,
/// the executor is named.
#[test]
fn a_late_answer_names_the_layer_that_gave_up() {
    let mut sc: Value = serde_json::from_str(
        &std::fs::read_to_string("scenarios/recipes/proxy-retries-post.json").unwrap(),
    )
    .unwrap();
    sc["layers"] = json!({"sidecar": {"kind": "proxy", "max_retries": 1, "retry_on": ["timeout"],
                                      "per_try_timeout": "200ms"}});
    sc["stripe"]["faults"] = json!({});
    sc.as_object_mut().unwrap().remove("expect");
    let s = story(&sc);
    assert_eq!(
        s.matches("[async, arrives after sidecar gave up]").count(),
        2,
        "{s}"
    );
    assert!(!s.contains("executor gave up"), "{s}");
    sc["layers"]["sidecar"]["per_try_timeout"] = json!("20s");
    sc["executor"]["timeout"] = json!("200ms");
    let s = story(&sc);
    assert_eq!(
        s.matches("[async, arrives after executor gave up]").count(),
        1,
        "{s}"
    );
}

/// `proxy-retries-post`'s world (every response lost after Stripe commits; three tickets) with
/// the retries of the SDK's network layer (`sdk`) or of an egress proxy placed after it.
fn lost_responses(egress: bool) -> Value {
    let mut sc: Value = serde_json::from_str(
        &std::fs::read_to_string("scenarios/recipes/proxy-retries-post.json").unwrap(),
    )
    .unwrap();
    sc.as_object_mut().unwrap().remove("expect");
    if egress {
        sc["stack"] = json!([
            "model_retry",
            "executor",
            "refunds_service",
            "sdk",
            "sidecar"
        ]);
    } else {
        sc.as_object_mut().unwrap().remove("layers");
        sc["stack"] = json!(["model_retry", "executor", "refunds_service", "sdk"]);
        sc["refunds_service"] = json!({"stripe_client": {"max_network_retries": 2, "key": "none"}});
    }
    sc
}

/// Each try of a proxy after `sdk` is a request to Stripe and is traced as one, as the SDK's
/// own network retries are: the same world through either makes 9 requests with 9 lost
/// responses, and the story labels the proxy's tries. Before, the proxy's world traced only the
/// SDK's 3 requests, so `stripe_no_response` read 3 where the SDK's read 9.
#[test]
fn an_egress_proxys_tries_are_traced_like_the_sdks() {
    for egress in [false, true] {
        let n = kinds(&lost_responses(egress), &[]);
        assert_eq!(count(&n, "refund_created"), 9, "egress {egress}: {n:?}");
        assert_eq!(count(&n, "stripe_request"), 9, "egress {egress}: {n:?}");
        assert_eq!(
            count(&n, "stripe_response:connection_lost"),
            9,
            "egress {egress}: {n:?}"
        );
    }
    let s = story(&lost_responses(true));
    assert!(
        s.contains(
            "stripe: POST /v1/refunds for call #1 (sidecar try 3) → no response, connection_lost"
        ),
        "{s}"
    );
}

/// An egress proxy that gives up on its last try answers the SDK with its own 504: the model is
/// told the proxy's words, and the run counts no Stripe 5xx (Stripe answered 200 every time,
/// late). Before, the proxy's 504 was traced and counted as Stripe's `api_error`.
#[test]
fn an_egress_proxys_own_504_is_not_a_stripe_500() {
    let mut sc = lost_responses(true);
    sc["layers"] = json!({"sidecar": {"kind": "proxy", "max_retries": 1, "retry_on": ["timeout"],
                                      "per_try_timeout": "200ms"}});
    sc["stripe"]["faults"] = json!({});
    let n = kinds(&sc, &[]);
    assert_eq!(count(&n, "stripe_response:created"), 6, "{n:?}");
    assert_eq!(count(&n, "stripe_response:api_error"), 0, "{n:?}");
    let s = story(&sc);
    assert!(
        s.contains(r#"tool_result: { error: "sidecar: upstream request timeout after 0.200s (HTTP 504)" } [fail]"#),
        "{s}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(&path, sc.to_string()).unwrap();
    let out = refundsim()
        .arg("run")
        .arg(&path)
        .arg("--json")
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stripe_500"], 0, "{report}");
}

/// `cancellation` means what it means on every layer that has work to cancel; a proxy after
/// `sdk` has none (its dropped try is already at the provider), so the setting is refused there
/// with the field named, rather than accepted and ignored (`lint` loads the same way).
#[test]
fn cancellation_on_an_egress_proxy_is_refused() {
    for command in ["run", "lint"] {
        let out = refundsim()
            .args([command, "tests/fixtures/layers/egress-proxy.json"])
            .args(["--set", r#"layers.egress.cancellation="abort_in_flight""#])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("layers.egress.cancellation: a proxy after `sdk` drops a try that is already at the provider"),
            "{command}: {err}"
        );
    }
    let ok = refundsim()
        .args(["run", "tests/fixtures/layers/egress-proxy.json"])
        .args(["--set", r#"layers.egress.cancellation="none""#])
        .output()
        .unwrap();
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    assert!(String::from_utf8_lossy(&ok.stdout)
        .contains("refunds created                            3"));
}

/// A `deadline` over all of a layer's tries (Temporal's `ScheduleToCloseTimeout`) is not its
/// per-try timeout: on the recipe (5 s per try, 30 s in all, backoff 1, 2, 4, 8 s) the fourth
/// try times out at 27 s and the next retry would start after 30 s, so it is not made; a
/// deadline of 8 s cuts the second try in flight after 2 s (its work keeps running and
/// commits). Without the deadline the layer's 100 retries would all be made.
#[test]
fn a_deadline_over_all_tries_stops_retries_and_cuts_the_try_in_flight() {
    let recipe = "scenarios/recipes/deadline-across-tries.json";
    let sc: Value = serde_json::from_str(&std::fs::read_to_string(recipe).unwrap()).unwrap();
    let whole = kinds(&sc, &[]);
    assert_eq!(count(&whole, "layer_timeout"), 12, "{whole:?}");
    assert_eq!(count(&whole, "layer_retry"), 9, "{whole:?}");
    assert_eq!(count(&whole, "layer_deadline_exceeded"), 3, "{whole:?}");
    assert_eq!(count(&whole, "refund_created"), 12, "{whole:?}");

    let cut = kinds(&sc, &["layers.activity_retry.deadline=8s"]);
    assert_eq!(count(&cut, "layer_timeout"), 3, "only first tries: {cut:?}");
    assert_eq!(count(&cut, "layer_retry"), 3, "{cut:?}");
    assert_eq!(count(&cut, "layer_deadline_exceeded"), 3, "{cut:?}");
    assert_eq!(
        count(&cut, "refund_created"),
        6,
        "a cut try still commits: {cut:?}"
    );

    let out = refundsim()
        .args(["run", recipe, "--ticket", "1", "--set"])
        .arg("layers.activity_retry.deadline=8s")
        .output()
        .unwrap();
    let story = String::from_utf8_lossy(&out.stdout);
    assert!(
        story.contains(
            "activity_retry: deadline of 8000ms over all tries passed during try 2; gave it up"
        ),
        "{story}"
    );
    assert!(
        story.contains(r#"tool_result: { error: "timeout after 2000ms (activity_retry)" } [fail]"#),
        "{story}"
    );
}

/// A run-level retry's `checkpoint` (AWS Lambda durable functions' step semantics): a turn
/// dropped by its 5 s `per_try_timeout` while its call is at Stripe (10 s) leaves a step that
/// started and never completed. Without checkpoints and `at_least_once_per_retry`, each of the
/// three turns runs it again (9 refunds over 3 tickets); `at_most_once_per_retry` answers the
/// replayed step `StepInterruptedError` (an unknown outcome) instead: one refund per ticket. A
/// step whose result came back is replayed from its checkpoint under either semantics
/// (`run-level-retry-replays-tools`: no second refund).
#[test]
fn a_checkpointed_run_level_retry_replays_completed_steps_and_interrupts_started_ones() {
    let sc = json!({
        "schema_version": 2,
        "name": "run-retry-checkpoint",
        "horizon": "10m",
        "arrivals": {"tickets": (0..3).map(|i| json!({"id": i + 1, "opened_at": format!("{i}m"),
            "amount_cents": 4200, "charge_amount_cents": 100000})).collect::<Vec<_>>()},
        "agent": {"retry": {"max_retries": 0}},
        "layers": {"agent_run": {"kind": "run_retry", "max_retries": 2, "retry_on": ["timeout"],
                                 "per_try_timeout": "5s"}},
        "stack": ["agent_run", "model_retry", "executor", "refunds_service", "sdk"],
        "executor": {"timeout": "30s"},
        "stripe": {"latency": {"p50": "10s", "p99": "10s"}},
        "humans": {"enabled": false}
    });
    let none = kinds(&sc, &[]);
    assert_eq!(count(&none, "refund_created"), 9, "{none:?}");
    let least = kinds(
        &sc,
        &["layers.agent_run.checkpoint=at_least_once_per_retry"],
    );
    assert_eq!(count(&least, "refund_created"), 9, "{least:?}");
    assert_eq!(count(&least, "step_interrupted"), 0, "{least:?}");
    let most = kinds(&sc, &["layers.agent_run.checkpoint=at_most_once_per_retry"]);
    assert_eq!(count(&most, "refund_created"), 3, "{most:?}");
    assert_eq!(count(&most, "step_interrupted"), 3, "{most:?}");
    assert_eq!(count(&most, "service_request"), 3, "{most:?}");

    let replays = kinds(
        &serde_json::from_str(&std::fs::read_to_string(RUN_LEVEL).unwrap()).unwrap(),
        &["layers.agent_run.checkpoint=at_least_once_per_retry"],
    );
    assert_eq!(count(&replays, "step_replayed"), 3, "{replays:?}");
    assert_eq!(count(&replays, "refund_created"), 3, "{replays:?}");

    let out = refundsim()
        .args(["run", "--ticket", "1", "--set"])
        .arg("layers.agent_run.checkpoint=sometimes")
        .arg(RUN_LEVEL)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// `timeout_retries`: re-runs of a timed-out try that the layer never counts against
/// `max_retries` and makes whatever its `retry_on` says (a durable runtime re-running a step
/// whose invocation timed out). On the deadline recipe with no counted retries and `retry_on`
/// without `timeout`, two uncounted re-runs make three tries per ticket (three refunds each,
/// no key); without them, one.
#[test]
fn timeout_retries_rerun_timed_out_tries_outside_the_retry_budget() {
    let recipe = "scenarios/recipes/deadline-across-tries.json";
    let sc: Value = serde_json::from_str(&std::fs::read_to_string(recipe).unwrap()).unwrap();
    let base = [
        "layers.activity_retry.max_retries=0",
        r#"layers.activity_retry.retry_on=["5xx"]"#,
    ];
    let none = kinds(&sc, &base);
    assert_eq!(count(&none, "refund_created"), 3, "{none:?}");
    assert_eq!(count(&none, "layer_retry"), 0, "{none:?}");
    let rerun = kinds(
        &sc,
        &[base[0], base[1], "layers.activity_retry.timeout_retries=2"],
    );
    assert_eq!(count(&rerun, "layer_retry"), 6, "{rerun:?}");
    assert_eq!(count(&rerun, "refund_created"), 9, "{rerun:?}");
    assert_eq!(count(&rerun, "layer_deadline_exceeded"), 0, "{rerun:?}");
}

/// `retry_on: ["retriable-status-codes"]` with `retriable_status_codes: [503]` retries by exact
/// status (Envoy's rule): the pool's 503s, which never reached Stripe, are retried; the 502s
/// of lost responses, whose refunds exist, are not. With `5xx` the 502s are retried too and a
/// ticket is refunded twice. Codes without the `retry_on` entry, or the entry without codes,
/// are refused.
#[test]
fn retriable_status_codes_retry_by_exact_status() {
    let fixture = "tests/fixtures/layers/retriable-status-codes.json";
    let sc: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let reasons = |sets: &[&str]| {
        let mut n = std::collections::BTreeMap::<String, u64>::new();
        for e in trace(&sc, sets) {
            match e["kind"].as_str().unwrap() {
                "layer_retry" => {
                    *n.entry(e["reason"].as_str().unwrap().to_string())
                        .or_default() += 1
                }
                "refund_created" => *n.entry("refunds".into()).or_default() += 1,
                _ => {}
            }
        }
        n
    };
    let any5xx = reasons(&[]);
    assert_eq!(any5xx.get("gateway-error"), Some(&3), "{any5xx:?}");
    assert_eq!(any5xx.get("refunds"), Some(&4), "{any5xx:?}");
    let exact = reasons(&[
        r#"layers.sidecar.retry_on=["retriable-status-codes"]"#,
        "layers.sidecar.retriable_status_codes=[503]",
    ]);
    assert_eq!(exact.get("retriable-status-codes"), Some(&3), "{exact:?}");
    assert_eq!(exact.get("gateway-error"), None, "{exact:?}");
    assert_eq!(exact.get("refunds"), Some(&3), "one per ticket: {exact:?}");

    for (set, path) in [
        (
            "layers.sidecar.retriable_status_codes=[503]",
            "layers.sidecar.retry_on",
        ),
        (
            r#"layers.sidecar.retry_on=["retriable-status-codes"]"#,
            "layers.sidecar.retriable_status_codes",
        ),
    ] {
        let out = refundsim()
            .args(["run", fixture, "--set", set])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{set}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("{path}:")), "{set}: {err}");
    }
}

/// Settings that would be accepted and do nothing are refused, naming the field: a `deadline`
/// or `timeout_retries` on a kind with a loop of its own (hedge, MCP client, circuit breaker),
/// `retriable_status_codes` on a layer above the executor (it reads a tool result, not a
/// status) or empty, `applies_to` on a hedge (the message names the kind).
#[test]
fn settings_that_would_do_nothing_are_refused() {
    for (file, set, path, says) in [
        (
            "scenarios/recipes/hedged-requests.json",
            "layers.hedge.deadline=1s",
            "layers.hedge.deadline",
            "on a hedge layer",
        ),
        (
            "scenarios/recipes/mcp-duplicated-call.json",
            "layers.mcp.timeout_retries=1",
            "layers.mcp.timeout_retries",
            "on a mcp_client layer",
        ),
        (
            "scenarios/recipes/hedged-requests.json",
            "layers.hedge.applies_to=idempotent_tools",
            "layers.hedge.applies_to",
            "expected none on a hedge layer",
        ),
        (
            "tests/fixtures/layers/retriable-status-codes.json",
            "layers.sidecar.retriable_status_codes=[]",
            "layers.sidecar.retriable_status_codes",
            "at least one HTTP status",
        ),
    ] {
        let out = refundsim()
            .args(["run", file, "--set", set])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{set}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{path}:")) && err.contains(says),
            "{set}: {err}"
        );
    }
    let out = refundsim()
        .args([
            "run",
            "scenarios/recipes/framework-retry-middleware.json",
            "--set",
        ])
        .arg(r#"layers.framework_retry.retry_on=["retriable-status-codes"]"#)
        .args([
            "--set",
            "layers.framework_retry.retriable_status_codes=[503]",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sits above the executor"));
}

/// gRPC's retry throttling (gRFC A6) on a proxy that retries POSTs: with 4 tokens, the first two
/// failed tries bring the count to the threshold (2 = 4 / 2) and the layer stops retrying for
/// the rest of the run, so only the first ticket is refunded twice; without it, all three are.
#[test]
fn grpc_retry_throttling_stops_retries_once_half_the_tokens_are_spent() {
    let f = "scenarios/recipes/proxy-retries-post.json";
    let bare = crate::common::run_json(&[f]);
    assert_eq!(
        (&bare["duplicate_refund_tickets"], &bare["extra_refunds"]),
        (&3.into(), &6.into())
    );
    let throttled = crate::common::run_json(&[
        f,
        "--set",
        r#"layers.sidecar.retry_throttling={"max_tokens":4,"token_ratio":0.1}"#,
    ]);
    assert_eq!(
        (
            &throttled["duplicate_refund_tickets"],
            &throttled["extra_refunds"]
        ),
        (&1.into(), &1.into())
    );
    // Every try here fails (the answers are lost), so no token comes back: with 12 tokens two
    // tickets spend 3 each (12 → 6, the threshold) and the third is tried once.
    let twelve = crate::common::run_json(&[
        f,
        "--set",
        r#"layers.sidecar.retry_throttling={"max_tokens":12,"token_ratio":1000}"#,
    ]);
    assert_eq!(
        (
            &twelve["duplicate_refund_tickets"],
            &twelve["extra_refunds"]
        ),
        (&2.into(), &4.into())
    );
    for (set, message) in [
        (
            r#"layers.sidecar.retry_throttling={"max_tokens":0,"token_ratio":0.1}"#,
            "expected 1 to 1000",
        ),
        (
            r#"layers.sidecar.retry_throttling={"max_tokens":10,"token_ratio":0}"#,
            "expected a number above 0",
        ),
    ] {
        crate::common::refused(&["run", f, "--set", set], message);
    }
}
