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
