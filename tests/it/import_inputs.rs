//! `refundsim import` and `replay` on bad input, as a newcomer wrote it (issue 26's leftovers):
//! each error names the file, the line and the field, says what was expected, and writes no
//! output file.

use crate::common::{refundsim, INCIDENT};

const T7: &str = "tests/fixtures/import/standard/ticket-T-7.otlp.json";

/// `refundsim import ARGS --out DIR/out.json`: the exit code and stderr; the output file must
/// not exist unless the import succeeded.
fn import(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = dir.join("out.json");
    let o = refundsim()
        .arg("import")
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let code = o.status.code().unwrap_or(-1);
    assert_eq!(out.exists(), code == 0, "output file and exit {code}");
    (code, String::from_utf8_lossy(&o.stderr).into_owned())
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_tool_definition_needs_a_definitions_shape() {
    let dir = tempfile::tempdir().unwrap();
    let def = write(
        dir.path(),
        "def.json",
        "{\n  \"name\": \"issue_refund\"\n}\n",
    );
    let (code, err) = import(
        dir.path(),
        &[T7, "--base", INCIDENT, "--tool-definition", &def],
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {def}:1: `issue_refund` has no `inputSchema`, `input_schema` or \
             `parameters` (nothing says what it takes): expected a tool definition: an MCP tool \
             (`name`, `inputSchema`), an Anthropic tool (`name`, `input_schema`), an OpenAI \
             function (`name`, `parameters`, or `{{\"type\": \"function\", \"function\": {{…}}}}`) \
             or the incident's block (`name`, `parameters`)"
        )
    );
    // In a list, the item's line and path.
    let list = write(
        dir.path(),
        "list.json",
        "{\"tools\": [\n  {\"name\": \"lookup\", \"inputSchema\": {\"type\": \"object\"}},\n  {\"name\": \"issue_refund\", \"description\": \"x\"}\n]}\n",
    );
    let (code, err) = import(
        dir.path(),
        &[T7, "--base", INCIDENT, "--tool-definition", &list],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {list}:3: tools[1]: `issue_refund` has no `inputSchema`"
        )),
        "{err}"
    );
    // The incident's own block and an MCP tools/list result are definitions.
    let mcp = write(
        dir.path(),
        "mcp.json",
        r#"{"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "issue_refund", "inputSchema": {"type": "object", "properties": {"ticket_id": {"type": "string"}, "amount_cents": {"type": "integer"}}}}]}}"#,
    );
    for def in ["scenarios/issue_refund.tool.json", mcp.as_str()] {
        let (code, err) = import(
            dir.path(),
            &[T7, "--base", INCIDENT, "--tool-definition", def],
        );
        assert_eq!(code, 0, "{def}: {err}");
        std::fs::remove_file(dir.path().join("out.json")).unwrap();
    }
}

#[test]
fn a_definition_of_another_tool_is_refused_naming_both_tools() {
    let dir = tempfile::tempdir().unwrap();
    let def = write(
        dir.path(),
        "v2.json",
        r#"{"name": "refund_v2", "input_schema": {"type": "object", "properties": {"ticket_id": {"type": "string"}}}}"#,
    );
    let (code, err) = import(
        dir.path(),
        &[T7, "--base", INCIDENT, "--tool-definition", &def],
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {def}:1: the tool definition is of `refund_v2`, but the tool imported is \
             `issue_refund` (from the base scenario's agent.tool): expected a definition of \
             `issue_refund`; import `refund_v2`'s calls with --tool refund_v2, or give \
             `issue_refund`'s definition"
        )
    );
    // Named with --tool, the definition applies (and the trace has no call of that tool).
    let (code, err) = import(
        dir.path(),
        &[
            T7,
            "--base",
            INCIDENT,
            "--tool-definition",
            &def,
            "--tool",
            "refund_v2",
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no `refund_v2` tool call in the input"),
        "{err}"
    );
    // --tool names the source of the name.
    let (code, err) = import(
        dir.path(),
        &[T7, "--tool", "issue_refund", "--tool-definition", &def],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("but the tool imported is `issue_refund` (from --tool)"),
        "{err}"
    );
}
