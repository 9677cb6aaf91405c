//! `refundsim new`: a starting scenario from each public tool shape (fixtures in
//! tests/fixtures/new/, written from the MCP, Anthropic and OpenAI specifications; see its
//! README), lint- and check-clean; bad inputs write nothing; `$comment` in every object.

use std::path::Path;

use crate::common::refundsim;

const FIXTURES: &str = "tests/fixtures/new";

/// Runs `refundsim new FILE --out DIR/out.json ARGS`: the exit code, stderr and the file written.
fn new_in(dir: &Path, file: &str, args: &[&str]) -> (i32, String, Option<serde_json::Value>) {
    let out = dir.join("out.json");
    let o = refundsim()
        .arg("new")
        .arg(file)
        .arg("--out")
        .arg(&out)
        .args(args)
        .output()
        .unwrap();
    let written = std::fs::read_to_string(&out)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    (
        o.status.code().unwrap(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        written,
    )
}

fn tool_of(s: &serde_json::Value) -> &serde_json::Value {
    &s["tools"][0]
}

#[test]
fn each_public_shape_gives_the_tool_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    for (file, args, name, effect, schema_field) in [
        (
            "mcp-tools-list.json",
            &[][..],
            "create_payout",
            "payout",
            "input_schema",
        ),
        (
            "mcp-tools-bare.json",
            &[][..],
            "create_payout",
            "payout",
            "input_schema",
        ),
        (
            "anthropic-tool.json",
            &[][..],
            "charge_card",
            "charge",
            "input_schema",
        ),
        (
            "anthropic-tools.json",
            &["--tool", "issue_gift_card"][..],
            "issue_gift_card",
            "gift card",
            "input_schema",
        ),
        (
            "openai-chat.json",
            &[][..],
            "place_order",
            "order",
            "input_schema",
        ),
        (
            "openai-responses.json",
            &[][..],
            "transfer_funds",
            "transfer",
            "input_schema",
        ),
        (
            "../../../scenarios/issue_refund.tool.json",
            &[][..],
            "issue_refund",
            "refund",
            "parameters",
        ),
    ] {
        let path = format!("{FIXTURES}/{file}");
        let _ = std::fs::remove_file(dir.path().join("out.json"));
        let (code, err, s) = new_in(dir.path(), &path, args);
        assert_eq!(code, 0, "{file}: {err}");
        let s = s.unwrap();
        let t = tool_of(&s);
        assert_eq!(t["name"], name, "{file}");
        assert_eq!(t["effect"], effect, "{file}");
        assert!(t[schema_field].is_object(), "{file}: {t}");
        assert_eq!(s["agent"]["tool"], name);
        assert_eq!(s["schema_version"], 2);
        assert_eq!(s["humans"]["enabled"], false);
        assert_eq!(s["reconciliation"]["enabled"], false);
        assert_eq!(
            s["stack"],
            serde_json::json!(["model_retry", "executor", "service", "sdk"])
        );
        for section in [
            "arrivals",
            "agent",
            "executor",
            "service",
            "stripe",
            "provider",
            "humans",
            "reconciliation",
            "expect",
        ] {
            assert!(s[section]["$comment"].is_string(), "{file}: {section}");
        }
    }
}

#[test]
fn mcp_annotations_and_schema_order_are_kept_and_unplaced_fields_named() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err, _) = new_in(dir.path(), &format!("{FIXTURES}/mcp-tools-list.json"), &[]);
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(dir.path().join("out.json")).unwrap();
    let s: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(tool_of(&s)["annotations"]["destructiveHint"], true);
    // The input schema keeps its author's key order: type, properties, required.
    let t = text.find("\"type\": \"object\"").unwrap();
    assert!(t < text.find("\"required\"").unwrap());
    assert!(tool_of(&s)["$comment"].as_str().unwrap().contains("title"));
}

#[test]
fn the_starting_scenario_lints_without_errors_and_checks_ok() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err, _) = new_in(dir.path(), "scenarios/issue_refund.tool.json", &[]);
    assert_eq!(code, 0, "{err}");
    let out = dir.path().join("out.json");
    let lint = refundsim().arg("lint").arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&lint.stdout);
    assert_eq!(lint.status.code(), Some(0), "{text}");
    assert!(text.contains("0 error(s)"), "{text}");
    let check = refundsim().arg("check").arg(&out).output().unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

#[test]
fn same_input_same_bytes_and_stdout_without_out() {
    let a = refundsim()
        .args(["new", "tests/fixtures/new/openai-chat.json"])
        .output()
        .unwrap();
    let b = refundsim()
        .args(["new", "tests/fixtures/new/openai-chat.json"])
        .output()
        .unwrap();
    assert_eq!(a.status.code(), Some(0));
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn an_existing_file_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.json");
    std::fs::write(&out, "keep").unwrap();
    let (code, err, _) = {
        let o = refundsim()
            .args(["new", "scenarios/issue_refund.tool.json", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        (
            o.status.code().unwrap(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
            (),
        )
    };
    assert_eq!(code, 2);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
    let (code, err, s) = new_in(dir.path(), "scenarios/issue_refund.tool.json", &["--force"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(s.unwrap()["name"], "issue_refund");
}

#[test]
fn bad_inputs_exit_2_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for (text, args, wanted) in [
        ("{\"name\": ", &[][..], ":1:"),
        ("{\"tools\": []}", &[][..], "tools: no tools"),
        (
            "{\"tools\": [\n  {\"description\": \"x\", \"input_schema\": {}}\n]}",
            &[][..],
            ":2:3: tools.0.name: expected the tool's name",
        ),
        ("{\"hello\": 1}", &[][..], "unknown shape"),
        (
            "[{\"name\": \"a\", \"input_schema\": {}}, {\"name\": \"b\", \"input_schema\": {}}]",
            &[][..],
            "--tool NAME: a, b",
        ),
        (
            "{\"name\": \"a\", \"input_schema\": {}}",
            &["--tool", "zz"][..],
            "no tool named \"zz\"",
        ),
        (
            "{\"name\": \"a\", \"input_schema\": {}}",
            &["--effect", "Gift"][..],
            "--effect: invalid value",
        ),
    ] {
        let input = dir.path().join("in.json");
        std::fs::write(&input, text).unwrap();
        let (code, err, written) = new_in(dir.path(), input.to_str().unwrap(), args);
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(wanted), "{text}: {err}");
        assert!(written.is_none(), "{text}");
    }
}

#[test]
fn comments_are_accepted_in_sections_and_layers_and_must_be_strings() {
    let dir = tempfile::tempdir().unwrap();
    let ok = dir.path().join("ok.json");
    std::fs::write(
        &ok,
        r#"{"name": "c", "horizon": "1m",
  "arrivals": {"$comment": "a", "tickets": [{"id": 1, "opened_at": "0s", "amount_cents": 100, "charge_amount_cents": 200}]},
  "executor": {"$comment": "the executor", "timeout": "15s"},
  "layers": {"$comment": "added", "sidecar": {"$comment": "a proxy", "kind": "proxy"}},
  "stack": ["model_retry", "executor", "sidecar", "refunds_service", "sdk"]}"#,
    )
    .unwrap();
    let o = refundsim().arg("show").arg(&ok).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        "{\"name\": \"c\", \"horizon\": \"1m\",\n  \"arrivals\": {\"tickets\": [{\"id\": 1, \"opened_at\": \"0s\", \"amount_cents\": 100, \"charge_amount_cents\": 200}]},\n  \"executor\": {\"$comment\": 7}}",
    )
    .unwrap();
    let o = refundsim().arg("show").arg(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains(":3:28: executor.$comment: invalid type"),
        "{err}"
    );
}
