//! The MCP client layer (`kind: "mcp_client"`, issue 29 item 3): a broken response stream is
//! re-issued with a new request id and the tool runs again; a duplicated `tools/call` runs
//! twice; the tool server's request idempotency key (`executor.request_idempotency`, MCP
//! SEP-3182) answers the second request from the first.

use serde_json::Value;

use crate::common::{refundsim, run_json};

const REISSUE: &str = "scenarios/recipes/mcp-reissue-on-broken-stream.json";
const DUPLICATE: &str = "scenarios/recipes/mcp-duplicated-call.json";

/// The trace of `scenario` run with `sets`, as JSON events.
fn trace(scenario: &str, sets: &[&str]) -> Vec<Value> {
    let mut args = vec![scenario];
    for s in sets {
        args.extend(["--set", s]);
    }
    crate::common::run_trace(&args)
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// Refunds created per ticket.
fn refunds_per_ticket(events: &[Value]) -> Vec<(u64, usize)> {
    let mut n = std::collections::BTreeMap::new();
    for e in of_kind(events, "refund_created") {
        *n.entry(e["ticket"].as_u64().unwrap()).or_default() += 1;
    }
    n.into_iter().collect()
}

fn with_sets(scenario: &str, sets: &[&str]) -> Value {
    let mut args = vec![scenario];
    for s in sets {
        args.extend(["--set", s]);
    }
    run_json(&args)
}

#[test]
fn a_broken_stream_is_reissued_with_a_new_request_id_and_the_tool_runs_again() {
    let events = trace(REISSUE, &[]);
    assert_eq!(refunds_per_ticket(&events), [(1, 2), (2, 2), (3, 2)]);
    let broken = of_kind(&events, "mcp_stream_broken");
    let reissued = of_kind(&events, "mcp_reissued");
    assert_eq!((broken.len(), reissued.len()), (3, 3));
    // Ids are one sequence per run: each ticket's first request, then its re-issue.
    for (i, (b, r)) in broken.iter().zip(&reissued).enumerate() {
        let first = 2 * i as u64 + 1;
        assert_eq!(b["request_id"], first, "{b}");
        assert_eq!(b["layer"], "mcp");
        assert_eq!(r["request_id"], first + 1, "{r}");
        assert_eq!(r["previous_id"], first, "{r}");
        assert_eq!(r["reason"], "stream_broken");
        assert_eq!(b["t_ns"], r["t_ns"], "re-issued at once");
    }
    // The model saw one success per ticket: the re-issue's.
    let results = of_kind(&events, "tool_result");
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|r| r["outcome"] == "ok"), "{results:?}");

    // Without the re-issue the lost response is a failure, and the tool ran once.
    let off = with_sets(REISSUE, &["layers.mcp.reissue_on_stream_break=false"]);
    assert_eq!(off["refunds_created"], 3);
    assert_eq!(off["duplicate_refund_tickets"], 0);
    assert_eq!(
        off["false_failures"], 3,
        "a refund made, a failure shown: {off}"
    );
}

#[test]
fn the_tool_servers_request_key_replays_the_first_result_to_the_reissue() {
    let events = trace(REISSUE, &["executor.request_idempotency={}"]);
    assert_eq!(refunds_per_ticket(&events), [(1, 1), (2, 1), (3, 1)]);
    let answered = of_kind(&events, "mcp_key_answered");
    assert_eq!(answered.len(), 3);
    for (i, a) in answered.iter().enumerate() {
        assert_eq!(a["outcome"], "replayed");
        assert_eq!(a["request_id"], 2 * i as u64 + 2);
        assert_eq!(a["first_id"], 2 * i as u64 + 1);
    }
    // The replayed result is the first run's refund.
    let created: Vec<&str> = of_kind(&events, "refund_created")
        .iter()
        .map(|e| e["refund_id"].as_str().unwrap())
        .collect();
    let shown: Vec<&str> = of_kind(&events, "tool_result")
        .iter()
        .map(|e| e["refund_id"].as_str().unwrap())
        .collect();
    assert_eq!(created, shown);
}

#[test]
fn a_duplicated_call_refunds_twice_without_a_key_and_once_with_the_servers_key() {
    let events = trace(DUPLICATE, &[]);
    assert_eq!(refunds_per_ticket(&events), [(1, 2), (2, 2), (3, 2)]);
    let copies = of_kind(&events, "mcp_duplicate_sent");
    assert_eq!(copies.len(), 3);
    for c in &copies {
        assert_eq!(c["gap_ns"], 5_000_000u64);
        assert_eq!(
            c["request_id"].as_u64().unwrap(),
            c["original_id"].as_u64().unwrap() + 1
        );
    }
    assert!(of_kind(&events, "mcp_stream_broken").is_empty());
    assert_eq!(of_kind(&events, "tool_result").len(), 3, "one answer each");

    let keyed = trace(DUPLICATE, &["executor.request_idempotency={}"]);
    assert_eq!(refunds_per_ticket(&keyed), [(1, 1), (2, 1), (3, 1)]);
    let answered = of_kind(&keyed, "mcp_key_answered");
    assert_eq!(answered.len(), 3);
    assert!(answered.iter().all(|a| a["outcome"] == "in_progress"));

    // A copy sent after the first finished (a gap longer than the call) gets its result.
    let late = trace(
        DUPLICATE,
        &[
            "executor.request_idempotency={}",
            r#"layers.mcp.duplicate_send_gap="2s""#,
        ],
    );
    assert_eq!(refunds_per_ticket(&late), [(1, 1), (2, 1), (3, 1)]);
    assert!(of_kind(&late, "mcp_key_answered")
        .iter()
        .all(|a| a["outcome"] == "replayed"));
    // A result kept shorter than the gap is gone: the copy runs the tool again.
    let expired = with_sets(
        DUPLICATE,
        &[
            r#"executor.request_idempotency={"retention":"1s"}"#,
            r#"layers.mcp.duplicate_send_gap="2s""#,
        ],
    );
    assert_eq!(expired["refunds_created"], 6, "{expired}");
}

/// A request timeout: with `notifications/cancelled` the server cancels the tool run (the
/// executor stops waiting, its request answers late); without, the run goes on and its
/// request answers in time; `retry_on: ["timeout"]` re-sends with a new id and the tool runs
/// again.
#[test]
fn a_request_timeout_cancels_the_tool_run_or_not_and_may_resend() {
    let slow = [
        r#"stripe.latency={"p50":"3s","p99":"3s"}"#,
        r#"layers.mcp.request_timeout="1s""#,
        "layers.mcp.stream_break_requests=[]",
    ];
    let late = |events: &[Value]| {
        of_kind(events, "service_response")
            .iter()
            .filter(|e| e["late"] == true)
            .count()
    };
    let cancelled = trace(REISSUE, &slow);
    let timeouts = of_kind(&cancelled, "mcp_request_timeout");
    assert_eq!(timeouts.len(), 3);
    assert!(timeouts
        .iter()
        .all(|t| t["cancelled"] == true && t["after_ns"] == 1_000_000_000u64));
    assert_eq!(
        late(&cancelled),
        3,
        "the cancelled run's request answers late"
    );
    assert_eq!(refunds_per_ticket(&cancelled), [(1, 1), (2, 1), (3, 1)]);

    let kept = trace(
        REISSUE,
        &[&slow[..], &["layers.mcp.send_cancelled=false"]].concat(),
    );
    assert!(of_kind(&kept, "mcp_request_timeout")
        .iter()
        .all(|t| t["cancelled"] == false));
    assert_eq!(late(&kept), 0, "the tool run waited for its request");

    let resent = trace(
        REISSUE,
        &[&slow[..], &[r#"layers.mcp.retry_on=["timeout"]"#]].concat(),
    );
    let reissued = of_kind(&resent, "mcp_reissued");
    assert_eq!(reissued.len(), 3);
    assert!(reissued.iter().all(|r| r["reason"] == "timeout"));
    assert_eq!(refunds_per_ticket(&resent), [(1, 2), (2, 2), (3, 2)]);
}

#[test]
fn the_story_tells_the_reissue_and_the_duplicate() {
    let story = |args: &[&str]| {
        let out = refundsim().args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let text = story(&["run", REISSUE, "--ticket", "1"]);
    let order = [
        "00:00:00.444  stripe: refund re_00000001 created by call #1, $42.00 succeeded (for the FIRST call)",
        "00:00:00.444  mcp: response stream of tools/call id 1 BROKEN after the tool ran; response lost",
        "00:00:00.444  mcp: tools/call RE-ISSUED as id 2 (was id 1), as the spec requires after a broken stream",
        "00:00:00.864  stripe: refund re_00000002 created by call #2, $42.00 succeeded (for the FIRST call, mcp try 2)",
        "00:00:00.864  tool_result: { status: \"refunded\", refund_id: \"re_00000002\" }",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|l| text.find(l).unwrap_or_else(|| panic!("{l}\n{text}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");

    let text = story(&["run", DUPLICATE, "--ticket", "1"]);
    assert!(
        text.contains(
            "00:00:00.029  mcp: tools/call sent TWICE: id 2 5 ms after id 1, both reach the server"
        ),
        "{text}"
    );
    let fixed = story(&[
        "run",
        DUPLICATE,
        "--policy",
        "policies/recipes/mcp-duplicated-call.fix.json",
        "--ticket",
        "1",
    ]);
    assert!(
        fixed.contains("00:00:00.029  tool server: tools/call id 2 rejected, idempotency_key_in_progress (id 1 still running)"),
        "{fixed}"
    );
}

#[test]
fn misplaced_or_foreign_mcp_settings_are_refused_with_their_path() {
    let refused = |scenario: &str, sets: &[&str], path: &str, words: &str| {
        let mut cmd = refundsim();
        cmd.args(["run", scenario]);
        for s in sets {
            cmd.args(["--set", s]);
        }
        let out = cmd.output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{sets:?}: {err}");
        assert!(err.contains(path) && err.contains(words), "{sets:?}: {err}");
    };
    refused(
        "scenarios/recipes/framework-retry-middleware.json",
        &["layers.framework_retry.duplicate_send_probability=0.5"],
        "layers.framework_retry.duplicate_send_probability",
        "setting of an `mcp_client` layer",
    );
    refused(
        REISSUE,
        &[r#"stack=["model_retry","executor","mcp","refunds_service","sdk"]"#],
        "stack.2",
        "expected it between model_retry and executor",
    );
    refused(
        REISSUE,
        &["layers.mcp.stream_break_requests=[3]"],
        "layers.mcp.stream_break_requests.0",
        "from 1 (the first",
    );
    refused(
        REISSUE,
        &["layers.mcp.stream_break_probability=1.5"],
        "layers.mcp.stream_break_probability",
        "1.5",
    );
    refused(
        REISSUE,
        &[r#"layers.mcp.retry_on=["5xx"]"#],
        "layers.mcp.retry_on",
        "expected no 5xx",
    );
    refused(
        REISSUE,
        &[r#"executor.request_idempotency={"retention":"0s"}"#],
        "executor.request_idempotency.retention",
        "",
    );
}

/// A probability draws per request from its own stream: the same seed breaks the same
/// streams, and a probability of 0 draws nothing (the scripted recipe's numbers).
#[test]
fn a_stream_break_probability_draws_deterministically() {
    let sets = [
        "layers.mcp.stream_break_requests=[]",
        "layers.mcp.stream_break_probability=0.5",
    ];
    let a = trace(REISSUE, &sets);
    let b = trace(REISSUE, &sets);
    assert_eq!(a, b);
    let broken = of_kind(&a, "mcp_stream_broken").len();
    let refunds: usize = refunds_per_ticket(&a).iter().map(|(_, n)| n).sum();
    assert_eq!(refunds, 3 + broken.min(3), "one extra run per re-issue");
}

/// The client's events are Perfetto points of category `mcp`, with the JSON-RPC ids in args.
#[test]
fn perfetto_shows_the_break_the_reissue_and_the_servers_answer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.perfetto.json");
    let out = refundsim()
        .args(["run", REISSUE, "--set", "executor.request_idempotency={}"])
        .arg("--perfetto")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let point = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let broken = point("mcp stream broken (id 1)");
    assert_eq!(
        (&broken["cat"], &broken["args"]["request_id"]),
        (&"mcp".into(), &1.into())
    );
    let reissued = point("mcp re-issued as id 2 (stream_broken)");
    assert_eq!(reissued["args"]["previous_id"], 1);
    let replayed = point("tool server idempotency key: replayed (id 2)");
    assert_eq!(replayed["args"]["first_id"], 1);
}
