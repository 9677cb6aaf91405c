//! `run --otlp FILE` and `run --stripe-list FILE`: the run as OTLP/JSON with the semantic
//! conventions' attributes only, and as Stripe's `GET /v1/refunds` list; then the round trip
//! that keeps the importer honest: simulate → export → `import` / `replay` with the same
//! scenario as base → the exact replay matches, and each ticket's recorded refunds are the
//! run's.
//!
//! `tests/fixtures/otlp/two-tickets.json` is the incident's ticket 48213 (a 9.7 s first call
//! given up at 8 s, a retry, two refunds) beside a ticket refunded once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{refundsim, INCIDENT};
use refundsim::report::otlp::semconv;

const TWO: &str = "tests/fixtures/otlp/two-tickets.json";

/// `refundsim run SCENARIO --otlp … --stripe-list … --trace …` with `extra` flags, in `dir`:
/// the exit code and the three files.
struct Exported {
    code: i32,
    otlp: PathBuf,
    list: PathBuf,
    trace: PathBuf,
}

fn export(dir: &Path, scenario: &str, extra: &[&str]) -> Exported {
    let files = Exported {
        code: 0,
        otlp: dir.join("run.otlp.json"),
        list: dir.join("refunds.json"),
        trace: dir.join("run.jsonl"),
    };
    let out = refundsim()
        .args(["run", scenario, "--otlp"])
        .arg(&files.otlp)
        .arg("--stripe-list")
        .arg(&files.list)
        .arg("--trace")
        .arg(&files.trace)
        .args(extra)
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Exported { code, ..files }
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).expect("one JSON document")
}

/// Every span of an OTLP document, with its resource's `service.name`.
fn spans(doc: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for rs in doc["resourceSpans"].as_array().expect("resourceSpans") {
        let service = rs["resource"]["attributes"][0]["value"]["stringValue"]
            .as_str()
            .unwrap()
            .to_string();
        for ss in rs["scopeSpans"].as_array().unwrap() {
            for sp in ss["spans"].as_array().unwrap() {
                out.push((service.clone(), sp.clone()));
            }
        }
    }
    out
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

/// Refunds per ticket in a run's `--trace`, by whoever made them.
fn run_refunds(trace: &Path) -> BTreeMap<String, u64> {
    let mut n = BTreeMap::new();
    for line in std::fs::read_to_string(trace).unwrap().lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        if e["kind"] == "refund_created" {
            *n.entry(e["ticket"].to_string()).or_default() += 1;
        }
    }
    n
}

#[test]
fn the_two_tickets_export_is_these_spans() {
    let dir = tempfile::tempdir().unwrap();
    let run = export(
        dir.path(),
        TWO,
        &["--otlp-capture", "arguments,results,headers"],
    );
    assert_eq!(run.code, 0);
    let text = std::fs::read_to_string(&run.otlp).unwrap();
    insta::assert_snapshot!("two_tickets_otlp_all_captured", text);
    let list = std::fs::read_to_string(&run.list).unwrap();
    insta::assert_snapshot!("two_tickets_stripe_list", list);
}

#[test]
fn the_incidents_ticket_is_a_timeout_a_decision_a_retry_and_a_late_answer() {
    let dir = tempfile::tempdir().unwrap();
    let run = export(dir.path(), TWO, &[]);
    let all = spans(&read_json(&run.otlp));
    let trace_48213 = {
        let first = all
            .iter()
            .find(|(_, s)| {
                attr(s, "gen_ai.tool.call.arguments")
                    .is_some_and(|a| a["stringValue"].as_str().unwrap().contains("48213"))
            })
            .unwrap();
        first.1["traceId"].clone()
    };
    let ticket: Vec<&(String, Value)> = all
        .iter()
        .filter(|(_, s)| s["traceId"] == trace_48213)
        .collect();
    let shape: Vec<(&str, &str, u64)> = ticket
        .iter()
        .map(|(svc, s)| {
            (
                svc.as_str(),
                s["name"].as_str().unwrap(),
                s["kind"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("support-agent", "execute_tool issue_refund", 1),
            ("support-agent", "chat", 1),
            ("support-agent", "execute_tool issue_refund", 1),
            ("refunds-service", "POST", 3),
            ("refunds-service", "POST /refunds", 2),
            ("refunds-service", "POST", 3),
            ("refunds-service", "POST /refunds", 2),
        ]
    );
    let (first, chat, retry) = (&ticket[0].1, &ticket[1].1, &ticket[2].1);
    let zombie = &ticket[6].1;
    // Times: clock_origin 16:41:08 + virtual time, in ns since the epoch, as decimal strings.
    let at = |ms: u64| (1_715_704_868_000u64 + ms).to_string() + "000000";
    assert_eq!(first["startTimeUnixNano"], at(1034));
    assert_eq!(first["endTimeUnixNano"], at(9034));
    assert_eq!(attr(first, "error.type").unwrap()["stringValue"], "timeout");
    assert_eq!(
        (&first["status"]["code"], &first["status"]["message"]),
        (&Value::from(2), &Value::from("timeout after 8000ms"))
    );
    assert_eq!(
        attr(first, "gen_ai.tool.call.arguments").unwrap()["stringValue"],
        r#"{"ticket_id":"48213","amount_cents":4200}"#
    );
    assert_eq!(
        (&chat["startTimeUnixNano"], &chat["endTimeUnixNano"]),
        (&Value::from(at(9034)), &Value::from(at(9064)))
    );
    assert_eq!(
        attr(chat, "gen_ai.operation.name").unwrap()["stringValue"],
        "chat"
    );
    assert_eq!(retry["startTimeUnixNano"], at(9068));
    assert!(retry.get("status").is_none());
    // The zombie: the first call's SERVER span, its child, answering 200 after it ended.
    assert_eq!(zombie["parentSpanId"], first["spanId"]);
    assert_eq!(zombie["startTimeUnixNano"], at(1034));
    assert_eq!(zombie["endTimeUnixNano"], at(10754));
    assert_eq!(
        attr(zombie, "http.response.status_code").unwrap(),
        &serde_json::json!({"intValue": "200"})
    );
    let stripe = &ticket[5].1;
    assert_eq!(stripe["parentSpanId"], zombie["spanId"]);
    assert_eq!(
        (&stripe["startTimeUnixNano"], &stripe["endTimeUnixNano"]),
        (&Value::from(at(1054)), &Value::from(at(10754)))
    );
    // Defaults: no result, no headers.
    for (_, s) in &all {
        for key in [
            "gen_ai.tool.call.result",
            "http.request.header.content-type",
        ] {
            assert!(attr(s, key).is_none(), "{key} in {s}");
        }
    }
}

#[test]
fn every_attribute_is_a_semantic_convention_and_every_field_is_otlp_json() {
    let dir = tempfile::tempdir().unwrap();
    let run = export(
        dir.path(),
        INCIDENT,
        &["--otlp-capture", "arguments,results,headers"],
    );
    let doc = read_json(&run.otlp);
    let resources: Vec<&Value> = doc["resourceSpans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rs| &rs["resource"]["attributes"])
        .collect();
    assert_eq!(
        resources,
        [
            &serde_json::json!([{"key": "service.name", "value": {"stringValue": "support-agent"}}]),
            &serde_json::json!([{"key": "service.name", "value": {"stringValue": "refunds-service"}}]),
        ]
    );
    let hex = |v: &Value, n: usize| {
        v.as_str().is_some_and(|s| {
            s.len() == n
                && s.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
    };
    let decimal = |v: &Value| {
        v.as_str()
            .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
    };
    let all = spans(&doc);
    // 3,256 tool calls, 44 decisions after a timeout (43 retries, one escalation), and per
    // call a SERVER span and a CLIENT span.
    assert_eq!(all.len(), 3256 + 44 + 3256 + 3256);
    let mut keys = std::collections::BTreeSet::new();
    for (_, s) in &all {
        assert!(hex(&s["traceId"], 32) && hex(&s["spanId"], 16), "{s}");
        assert!(s.get("parentSpanId").is_none_or(|p| hex(p, 16)), "{s}");
        assert!(decimal(&s["startTimeUnixNano"]) && decimal(&s["endTimeUnixNano"]));
        assert!([1, 2, 3].contains(&s["kind"].as_u64().unwrap()), "{s}");
        assert!(s.get("status").is_none_or(|st| st["code"] == 2), "{s}");
        for a in s["attributes"].as_array().unwrap() {
            let key = a["key"].as_str().unwrap();
            keys.insert(key.to_string());
            let v = &a["value"];
            assert!(v.get("intValue").is_none_or(decimal), "{key}: {v}");
        }
    }
    for key in &keys {
        assert!(
            semconv::ALL.contains(&key.as_str()),
            "`{key}` is not a semantic-convention attribute"
        );
    }
    assert!(!keys.iter().any(|k| k.starts_with("refund")), "{keys:?}");
}

#[test]
fn the_same_run_writes_the_same_bytes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (x, y) = (export(a.path(), TWO, &[]), export(b.path(), TWO, &[]));
    assert_eq!(
        std::fs::read(&x.otlp).unwrap(),
        std::fs::read(&y.otlp).unwrap()
    );
    assert_eq!(
        std::fs::read(&x.list).unwrap(),
        std::fs::read(&y.list).unwrap()
    );
}

#[test]
fn the_stripe_list_holds_every_refund_newest_first_with_its_ticket() {
    let dir = tempfile::tempdir().unwrap();
    let run = export(dir.path(), INCIDENT, &[]);
    let list = read_json(&run.list);
    assert_eq!(
        (&list["object"], &list["has_more"], &list["url"]),
        (
            &Value::from("list"),
            &Value::from(false),
            &Value::from("/v1/refunds")
        )
    );
    let data = list["data"].as_array().unwrap();
    let mut per_ticket: BTreeMap<String, u64> = BTreeMap::new();
    for r in data {
        let t = r["metadata"]["ticket_id"].as_str().unwrap();
        *per_ticket.entry(format!("\"{t}\"")).or_default() += 1;
        assert_eq!(r["object"], "refund");
        assert_eq!(r["currency"], "usd");
        assert_eq!(r["charge"], format!("ch_{t}"));
        assert!(r["id"].as_str().unwrap().starts_with("re_"));
    }
    let created: Vec<u64> = data
        .iter()
        .map(|r| r["created"].as_u64().unwrap())
        .collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first");
    // The run's refunds, ticket by ticket (the trace writes ticket ids as numbers).
    let run: BTreeMap<String, u64> = run_refunds(&run.trace)
        .into_iter()
        .map(|(t, n)| (format!("\"{t}\""), n))
        .collect();
    assert_eq!(per_ticket, run);
    assert_eq!(data.len(), 3256);
}

/// The round trip: export `scenario` with `capture`, then `replay` it with `scenario` as base.
/// Returns the replay's exit code, its comparison, and the tickets whose recorded refunds are
/// not the run's (ticket, run's refunds, recorded refunds).
fn round_trip(scenario: &str, capture: &str) -> (i32, Value, Vec<(String, u64, u64)>) {
    let dir = tempfile::tempdir().unwrap();
    let run = export(dir.path(), scenario, &["--otlp-capture", capture]);
    // The trace and the provider's own list, as a postmortem has them: refunds made outside
    // the agent (a dashboard refund) or behind a lost connection are only in the list.
    let out = refundsim()
        .arg("replay")
        .arg(&run.otlp)
        .arg(&run.list)
        .args(["--base", scenario, "--json"])
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let comparison = v["comparison"].clone();
    let ran = run_refunds(&run.trace);
    let mut recorded: BTreeMap<String, u64> = BTreeMap::new();
    for t in comparison["tickets"].as_array().unwrap() {
        let id = t["ticket_label"]
            .as_str()
            .map_or_else(|| t["ticket"].to_string(), str::to_string);
        recorded.insert(id, t["recorded_refunds"].as_u64().unwrap());
    }
    let mut differ = Vec::new();
    for t in ran.keys().chain(recorded.keys()) {
        let (a, b) = (
            ran.get(t).copied().unwrap_or(0),
            recorded.get(t).copied().unwrap_or(0),
        );
        if a != b && !differ.iter().any(|(d, _, _)| d == t) {
            differ.push((t.clone(), a, b));
        }
    }
    (code, comparison, differ)
}

/// The facts of a comparison that differ: (ticket, attempt, what, recorded, replayed).
fn differing(c: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for t in c["tickets"].as_array().unwrap() {
        for r in t["rows"].as_array().unwrap() {
            if r["ok"] != true {
                out.push(format!("{} {r}", t["ticket"]));
            }
        }
    }
    out
}

fn assert_round_trips(scenario: &str, capture: &str) -> Value {
    let (code, c, counts) = round_trip(scenario, capture);
    assert_eq!(
        counts,
        [],
        "tickets whose recorded refunds are not the run's"
    );
    assert_eq!(differing(&c), Vec::<String>::new());
    assert_eq!((code, &c["matches"]), (0, &Value::from(true)), "{c:#}");
    c
}

#[test]
fn the_two_tickets_round_trip_through_import_and_replay() {
    let c = assert_round_trips(TWO, "arguments");
    let t = &c["tickets"][0];
    assert_eq!(
        (
            t["ticket"].as_u64(),
            t["recorded_refunds"].as_u64(),
            t["recorded_refunds_from"].as_str(),
            t["recorded_tool_calls"].as_u64()
        ),
        (Some(48213), Some(2), Some("refund export"), Some(2))
    );
    assert_round_trips(TWO, "arguments,results,headers");
}

#[test]
fn the_exported_file_imports_to_a_scenario_that_runs_as_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let run = export(dir.path(), TWO, &[]);
    let scenario = dir.path().join("imported.json");
    let out = refundsim()
        .arg("import")
        .arg(&run.otlp)
        .args(["--base", TWO, "--out"])
        .arg(&scenario)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = crate::common::run_json(&[scenario.to_str().unwrap()]);
    assert_eq!(v["recording"]["matches"], true, "{v:#}");
    assert_eq!(v["duplicate_refund_tickets"], 1);
    assert_eq!(v["refunds_created"], 3);
}

#[test]
fn the_incident_round_trips_ticket_by_ticket() {
    // 3,213 tickets, 43 refunded twice, 3,256 refunds: every recorded instant within 1 ms.
    let c = assert_round_trips(INCIDENT, "arguments");
    assert_eq!(c["tickets"].as_array().unwrap().len(), 3213);
    assert_eq!(c["recorded_refunds"], 3256);
}

/// With on_timeout probe_status the result comes after the probe: the think time runs from
/// the recorded result, not from the executor's timeout.
#[test]
fn a_probe_before_the_result_round_trips() {
    assert_round_trips("scenarios/findings/naive-status-probe.json", "arguments");
}

/// A lost connection keeps its span's duration; the humans' dashboard attempts leave no span,
/// and the provider's list holds only those that made a refund: the import records those as the
/// escalated ticket's refunds made outside the agent, and the exact replay makes them at their
/// recorded instants instead of simulating humans (whose refund the real charge refused on
/// ticket 1, and whom the charge the import assumes would admit).
#[test]
fn lost_connections_round_trip() {
    let c = assert_round_trips("scenarios/findings/tiny-world.json", "arguments");
    let refunds: Vec<(u64, u64)> = c["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["ticket"].as_u64().unwrap(),
                t["recorded_refunds"].as_u64().unwrap(),
            )
        })
        .collect();
    // Ticket 2's third refund is the human's, from the dashboard at 10:03.
    assert_eq!(refunds, [(1, 2), (2, 3)]);
}

/// The service's own 409 for a pending row (a SERVER span with no provider request below it,
/// 20 ms after receiving the call) replays at its recorded instant, and the humans' dashboard
/// refunds (in the provider's list only) are recorded refunds of the escalated tickets.
#[test]
fn a_refusal_without_a_provider_request_round_trips() {
    let c = assert_round_trips(
        "scenarios/recipes/unique-constraint-conflict.json",
        "arguments",
    );
    assert_eq!(c["recorded_refunds"], 6);
}

/// The humans' refunds a recording holds follow the escalation in a counterfactual: a policy
/// under which each ticket still escalates (a key per ticket: the retry is still told 409)
/// keeps the human's recorded refund as it happened; one under which the agent no longer gives
/// up (`fixed.json`: the first call answers within its 15 s timeout) makes none. Without the
/// provider's list the humans are drawn from the base, and the import says so.
#[test]
fn a_recorded_humans_refund_follows_the_escalation_in_a_counterfactual() {
    const SC: &str = "scenarios/recipes/unique-constraint-conflict.json";
    let dir = tempfile::tempdir().unwrap();
    let run = export(dir.path(), SC, &[]);
    let imported = dir.path().join("imported.json");
    let out = refundsim()
        .arg("import")
        .arg(&run.otlp)
        .arg(&run.list)
        .args(["--base", SC, "--out"])
        .arg(&imported)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let sc = read_json(&imported);
    assert_eq!(sc["replay"]["outside_refunds_recorded"], true);
    for t in ["1", "2", "3"] {
        let outside = sc["replay"]["tickets"][t]["outside_refunds"]
            .as_array()
            .unwrap();
        assert_eq!(outside.len(), 1, "ticket {t}: {outside:?}");
        assert!(outside[0]["id"].as_str().unwrap().starts_with("re_"));
    }
    let replayed = |files: &[&Path], policy: Option<&str>| {
        let mut cmd = refundsim();
        cmd.arg("replay").args(files).args(["--base", SC, "--json"]);
        if let Some(p) = policy {
            cmd.args(["--policy", p]);
        }
        let out = cmd.output().unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        let per_ticket: Vec<u64> = v["comparison"]["tickets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["replayed_refunds"].as_u64().unwrap())
            .collect();
        (per_ticket, v["drawn_from_base"].clone())
    };
    let both: [&Path; 2] = [&run.otlp, &run.list];
    let (exact, drawn) = replayed(&both, None);
    assert_eq!(exact, [2, 2, 2]);
    assert!(
        !drawn.to_string().contains("\"humans\""),
        "recorded, not drawn: {drawn}"
    );
    assert_eq!(replayed(&both, Some("policies/key-only.json")).0, [2, 2, 2]);
    assert_eq!(replayed(&both, Some("policies/fixed.json")).0, [1, 1, 1]);
    let (_, drawn) = replayed(&[&run.otlp], None);
    let humans = drawn
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["fact"] == "humans")
        .unwrap_or_else(|| panic!("humans drawn from the base: {drawn}"));
    assert!(
        humans["from_base"]
            .as_str()
            .unwrap()
            .starts_with("3 recorded tickets escalated: without the provider's list"),
        "{humans}"
    );
}

#[test]
fn outputs_are_refused_where_they_would_clash_and_left_absent_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.json");
    let fail = |args: &[&std::ffi::OsStr]| {
        let out = refundsim().arg("run").arg(TWO).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    let err = fail(&[&os("--otlp"), &os("-")]);
    assert!(err.contains("--otlp -: expected a file path"), "{err}");
    let err = fail(&[
        &os("--perfetto"),
        f.as_os_str(),
        &os("--otlp"),
        f.as_os_str(),
    ]);
    assert!(err.contains("is also the --perfetto file"), "{err}");
    let err = fail(&[
        &os("--otlp"),
        f.as_os_str(),
        &os("--stripe-list"),
        f.as_os_str(),
    ]);
    assert!(
        err.contains("--stripe-list") && err.contains("is also the --otlp file"),
        "{err}"
    );
    let err = fail(&[&os("--otlp-capture"), &os("results")]);
    assert!(err.contains("--otlp <FILE>"), "{err}");
    let err = fail(&[
        &os("--otlp"),
        f.as_os_str(),
        &os("--otlp-capture"),
        &os("body"),
    ]);
    assert!(err.contains("unknown capture `body`"), "{err}");
    // An unknown --ticket fails after the run: neither file is left behind.
    let list = dir.path().join("list.json");
    let err = fail(&[
        &os("--otlp"),
        f.as_os_str(),
        &os("--stripe-list"),
        list.as_os_str(),
        &os("--ticket"),
        &os("7"),
    ]);
    assert!(err.contains("--ticket 7"), "{err}");
    assert!(!f.exists() && !list.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// An egress proxy's tries overlap (a 300 ms `per_try_timeout` against Stripe's constant 1 s),
/// so one call has three requests to Stripe in flight. Each CLIENT span must end at its own
/// answer: every one lasts exactly Stripe's 1 s, and they start 300 ms and a backoff apart.
/// Paired latest-first, as before, the first request's span ended at the third's answer
/// (1.61 s) and the third's at the first's (0.39 s).
#[test]
fn overlapping_egress_tries_each_end_at_their_own_answer() {
    let dir = tempfile::tempdir().unwrap();
    let run = export(
        dir.path(),
        "tests/fixtures/layers/egress-per-try-timeout.json",
        &["--seed", "1"],
    );
    assert_eq!(run.code, 0);
    let doc = read_json(&run.otlp);
    let ns = |v: &Value| v.as_str().unwrap().parse::<u64>().unwrap();
    let mut clients: Vec<(u64, u64)> = spans(&doc)
        .into_iter()
        .filter(|(_, sp)| sp["kind"] == 3 && attr(sp, "http.response.status_code").is_some())
        .map(|(_, sp)| (ns(&sp["startTimeUnixNano"]), ns(&sp["endTimeUnixNano"])))
        .collect();
    clients.sort();
    assert_eq!(clients.len(), 3, "{clients:?}");
    for (start, end) in &clients {
        assert_eq!(end - start, 1_000_000_000, "{clients:?}");
    }
    assert!(clients[1].0 - clients[0].0 >= 300_000_000, "{clients:?}");
}

/// A try that could not connect (`stripe.faults.connect_failure`) is exported as a client span
/// with no status and its outcome, and the exact replay makes the same refunds: the connect
/// failures are retried by the egress proxy, the resets after commit too.
#[test]
fn connect_failures_round_trip() {
    let scenario = "scenarios/recipes/egress-proxy-connect-failure.json";
    let dir = tempfile::tempdir().unwrap();
    let run = export(dir.path(), scenario, &["--otlp-capture", "arguments"]);
    let text = std::fs::read_to_string(&run.otlp).unwrap();
    assert!(
        text.matches("connect_failed").count() >= 1,
        "no connect failure exported"
    );
    let c = assert_round_trips(scenario, "arguments");
    assert_eq!(c["recorded_refunds"], 11);
}
