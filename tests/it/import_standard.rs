//! Traces as teams' own instrumentation writes them, not written for refundsim: only the
//! OpenTelemetry semantic conventions' attributes, the argument names of the tool definition the
//! project ships (`ticket_id`, a string, and `amount_cents`), no `refund.id`.
//!
//! `tests/fixtures/import/standard/ticket-T-7.otlp.json` is `shared/failing/otlp-standard-
//! attributes.json`, found by a user: one ticket `"T-7"` whose first call timed out at 8 s while
//! its refund was still made, and whose retry refunded again.

use crate::common::{command_json, refundsim, INCIDENT};

const T7: &str = "tests/fixtures/import/standard/ticket-T-7.otlp.json";

#[test]
fn a_standard_trace_with_the_shipped_tools_arguments_imports_without_flags() {
    let out = refundsim()
        .args(["import", T7, "--base", INCIDENT, "--out"])
        .arg(std::env::temp_dir().join(format!("t7-{}.json", std::process::id())))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn its_replay_shows_the_duplicate_counted_from_the_providers_spans() {
    let (code, v) = command_json("replay", &[T7, "--base", INCIDENT]);
    assert_eq!(code, 0, "{v:#}");
    let c = &v["comparison"];
    assert_eq!(c["matches"], true, "{c:#}");
    let t = &c["tickets"][0];
    // The ticket keeps its text; its number is the text's trailing digits.
    assert_eq!(
        (t["ticket"].as_u64(), t["ticket_label"].as_str()),
        (Some(7), Some("T-7"))
    );
    assert_eq!(
        (
            t["recorded_refunds"].as_u64(),
            t["recorded_refunds_from"].as_str(),
            t["replayed_refunds"].as_u64()
        ),
        (Some(2), Some("provider requests"), Some(2))
    );
}

#[test]
fn the_imported_scenario_runs_with_one_duplicate_refund_ticket() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t7.json");
    let st = refundsim()
        .args(["import", T7, "--base", INCIDENT, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        st.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let v = crate::common::run_json(&[out.to_str().unwrap()]);
    let m = &v;
    // Two refunds of $42.00 against a charge the recording proves held both.
    assert_eq!(m["duplicate_refund_tickets"], 1, "{m:#}");
    assert_eq!(m["refunds_created"], 2, "{m:#}");
    assert_eq!(v["recording"]["matches"], true);
}

#[test]
fn the_key_counterfactual_refunds_once() {
    let (code, v) = command_json(
        "replay",
        &[T7, "--base", INCIDENT, "--policy", "policies/key-only.json"],
    );
    assert_eq!(code, 0, "{v:#}");
    let t = &v["comparison"]["tickets"][0];
    assert_eq!(
        (
            t["recorded_refunds"].as_u64(),
            t["replayed_refunds"].as_u64()
        ),
        (Some(2), Some(1))
    );
}

#[test]
fn the_story_and_the_comparison_print_the_recorded_ticket_id() {
    let out = refundsim()
        .args(["replay", T7, "--base", INCIDENT])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ticket T-7: refunds recorded 2 (provider requests), replayed 2"),
        "{text}"
    );
}

#[test]
fn a_tool_whose_arguments_match_nothing_names_what_it_saw_and_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let trace = std::fs::read_to_string(T7)
        .unwrap()
        .replace("ticket_id", "case_ref");
    let path = dir.path().join("t.json");
    std::fs::write(&path, trace).unwrap();
    let out = refundsim()
        .args(["import"])
        .arg(&path)
        .args(["--base", INCIDENT, "--out"])
        .arg(dir.path().join("out.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("its arguments are `amount_cents` and `case_ref`")
            && err.contains("--ticket-field NAME"),
        "{err}"
    );
    assert!(!dir.path().join("out.json").exists());
    // The flag, or a tool definition naming it, reads it.
    let ok = refundsim()
        .args(["import"])
        .arg(&path)
        .args(["--base", INCIDENT, "--ticket-field", "case_ref", "--out"])
        .arg(dir.path().join("out.json"))
        .output()
        .unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let def = dir.path().join("tools.json");
    std::fs::write(
        &def,
        r#"{"tools": [{"name": "issue_refund", "inputSchema": {"type": "object",
            "properties": {"case_ref": {"type": "string"}, "amount_cents": {"type": "integer"}}}}]}"#,
    )
    .unwrap();
    let ok = refundsim()
        .args(["import"])
        .arg(&path)
        .args(["--base", INCIDENT, "--tool-definition"])
        .arg(&def)
        .arg("--out")
        .arg(dir.path().join("out2.json"))
        .output()
        .unwrap();
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// The T-7 trace with `edit` applied to its spans (a flat list over every resource and scope).
fn t7_with(
    edit: impl FnOnce(&mut Vec<serde_json::Value>),
) -> (tempfile::TempDir, std::path::PathBuf) {
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(T7).unwrap()).unwrap();
    let mut spans: Vec<serde_json::Value> = Vec::new();
    for rs in doc["resourceSpans"].as_array_mut().unwrap() {
        for ss in rs["scopeSpans"].as_array_mut().unwrap() {
            spans.append(ss["spans"].as_array_mut().unwrap());
        }
    }
    edit(&mut spans);
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = serde_json::Value::Array(spans);
    doc["resourceSpans"][1]["scopeSpans"][0]["spans"] = serde_json::json!([]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t7.otlp.json");
    std::fs::write(&path, doc.to_string()).unwrap();
    (dir, path)
}

fn attr(key: &str, value: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"key": key, "value": value})
}

/// A model span (`chat`) whose end is 14 ms before the retry (not the fitted call overhead):
/// the decision and the call both replay at their recorded instants.
#[test]
fn the_models_decision_replays_at_its_recorded_instant() {
    let (_dir, path) = t7_with(|spans| {
        spans.push(serde_json::json!({
            "traceId": "0000000000000000000000000000a007",
            "spanId": "00000000000000d1",
            "name": "chat gpt-4o",
            "kind": 3,
            "startTimeUnixNano": "1741356008001000000",
            "endTimeUnixNano": "1741356008020000000",
            "attributes": [attr("gen_ai.operation.name", serde_json::json!({"stringValue": "chat"}))],
            "status": {}
        }));
    });
    let (code, v) = command_json("replay", &[path.to_str().unwrap(), "--base", INCIDENT]);
    assert_eq!(code, 0, "{v:#}");
    let rows = v["comparison"]["tickets"][0]["rows"].as_array().unwrap();
    let decision = rows.iter().find(|r| r["what"] == "model_decision").unwrap();
    assert_eq!(
        decision["recorded_ns"], decision["replayed_ns"],
        "{decision:#}"
    );
    let call = rows
        .iter()
        .find(|r| r["what"] == "tool_call" && r["attempt"] == 1)
        .unwrap();
    assert_eq!(call["recorded_ns"], call["replayed_ns"], "{call:#}");
}

/// Headers captured, both requests carrying one `Idempotency-Key`: the retry's 200 is Stripe's
/// replay of the saved answer (one refund), answered in its recorded 380 ms, not a fixed 30 ms.
#[test]
fn an_idempotent_replay_keeps_its_recorded_latency_and_is_not_a_second_refund() {
    let (_dir, path) = t7_with(|spans| {
        for s in spans.iter_mut().filter(|s| s["kind"] == 3) {
            s["attributes"].as_array_mut().unwrap().push(attr(
                "http.request.header.idempotency-key",
                serde_json::json!({"arrayValue": {"values": [{"stringValue": "refund_T-7"}]}}),
            ));
        }
    });
    let (code, v) = command_json("replay", &[path.to_str().unwrap(), "--base", INCIDENT]);
    assert_eq!(code, 0, "{v:#}");
    let t = &v["comparison"]["tickets"][0];
    assert_eq!(
        (
            t["recorded_refunds"].as_u64(),
            t["replayed_refunds"].as_u64()
        ),
        (Some(1), Some(1)),
        "{t:#}"
    );
    // The retry's service response at its recorded instant (14:00:09.296), which needs the
    // replayed answer's recorded latency.
    let rows = t["rows"].as_array().unwrap();
    let resp = rows
        .iter()
        .find(|r| r["what"] == "service_response" && r["attempt"] == 1)
        .unwrap();
    assert_eq!(resp["ok"], true, "{resp:#}");
}

const T7_LIST: &str = "tests/fixtures/import/standard/ticket-T-7.stripe-list.json";

/// The provider's own list (`GET /v1/refunds`, written from Stripe's API reference) beside the
/// trace: the count comes from it, and a dashboard refund for something else is skipped.
#[test]
fn the_stripe_list_is_the_ground_truth_beside_the_trace() {
    let out = refundsim()
        .args(["replay", T7, T7_LIST, "--base", INCIDENT, "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t = &v["comparison"]["tickets"][0];
    assert_eq!(
        (
            t["recorded_refunds"].as_u64(),
            t["recorded_refunds_from"].as_str(),
            t["replayed_refunds"].as_u64()
        ),
        (Some(2), Some("refund export"), Some(2)),
        "{t:#}"
    );
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("1 refund without a ticket"), "{warnings}");
}

/// A log of junk lines: a screen of warnings, not one per line.
#[test]
fn repeated_warnings_are_capped_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("junk.log");
    let mut text = String::from("16:41:09.210  tool_call issue_refund(ticket=1, amount=4200)\n");
    for i in 0..20_000 {
        let ms = 10_000 + i;
        text.push_str(&format!(
            "16:{:02}:{:02}.{:03}  GET /healthz 200 ok {i}\n",
            41 + ms / 60_000,
            (ms / 1000) % 60,
            ms % 1000
        ));
    }
    for i in 0..3_000 {
        text.push_str(&format!("just some noise {i}\n"));
    }
    std::fs::write(&log, text).unwrap();
    let out = refundsim()
        .arg("import")
        .arg(&log)
        .args(["--base", INCIDENT, "--out"])
        .arg(dir.path().join("s.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert!(lines.len() <= 14, "{} warning lines:\n{err}", lines.len());
    assert!(
        err.contains("… and 19,995 more like this: not a tool_call"),
        "{err}"
    );
    assert!(
        err.contains("… and 2,995 more like this: no HH:MM:SS.mmm time"),
        "{err}"
    );
}
