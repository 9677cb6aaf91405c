//! `refundsim import` and `replay` on bad input, as a newcomer wrote it (issue 26's leftovers):
//! each error names the file, the line and the field, says what was expected, and writes no
//! output file.

use crate::common::{refundsim, INCIDENT};

const T7: &str = "tests/fixtures/import/standard/ticket-T-7.otlp.json";

/// `refundsim import ARGS --out DIR/out.json`: the exit code and stderr; the output file must
/// not exist unless the import succeeded.
fn import(dir: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = dir.join("out.json");
    let _ = std::fs::remove_file(&out);
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

/// A call without an amount argument: the span's own line and path, the arguments it had, and
/// the flag. The T-7 trace's first tool span starts on line 20.
#[test]
fn a_call_without_an_amount_names_its_line_its_arguments_and_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let trace = std::fs::read_to_string(T7)
        .unwrap()
        .replace("amount_cents", "refund_value");
    let t = write(dir.path(), "t.json", &trace);
    let (code, err) = import(dir.path(), &[&t, "--base", INCIDENT]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {t}:20: ticket T-7: no amount recorded: \
             resourceSpans[0].scopeSpans[0].spans[0]: tool span of `issue_refund`: its \
             arguments are `refund_value` and `ticket_id`; expected an amount argument \
             `amount_cents`, `amount` or `amountCents` (from the tool definition and the common \
             names), or a refund of the ticket in a refund export: name it with --amount-field \
             NAME, or give the tool's definition with --tool-definition FILE"
        )
    );
    let (code, err) = import(
        dir.path(),
        &[&t, "--base", INCIDENT, "--amount-field", "refund_value"],
    );
    assert_eq!(code, 0, "{err}");
    // A log: the call's own line (the ticket's first call is on line 2).
    let log = write(
        dir.path(),
        "t.log",
        "16:41:09.000  GET /healthz 200\n16:41:09.210  tool_call issue_refund(ticket=48213, value=4200)\n",
    );
    let (code, err) = import(dir.path(), &[&log, "--base", INCIDENT]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {log}:2: ticket 48213: no amount recorded: tool_call issue_refund: its \
             arguments are `ticket` and `value`; expected an amount argument"
        )),
        "{err}"
    );
}

const T7_LIST: &str = "tests/fixtures/import/standard/ticket-T-7.stripe-list.json";

/// The T-7 list with its second refund's amount (line 26) written as `amount`.
fn t7_list_with(dir: &std::path::Path, amount: &str) -> String {
    let text = std::fs::read_to_string(T7_LIST).unwrap();
    let at = text.match_indices("\"amount\": 4200").nth(1).unwrap().0;
    let edited = format!(
        "{}\"amount\": {amount}{}",
        &text[..at],
        &text[at + "\"amount\": 4200".len()..]
    );
    write(dir, "list.json", &edited)
}

/// A bad refund in Stripe's list is named at its own line and path, not the document's first
/// line, and a number is shown as the file writes it.
#[test]
fn a_bad_refund_in_a_stripe_list_names_its_line_path_and_value_as_written() {
    let dir = tempfile::tempdir().unwrap();
    for (amount, shown) in [
        ("1e30", "1e30"),
        ("99999999999999999999", "99999999999999999999"),
        ("42.5", "42.5"),
        ("\"42.00\"", "\"42.00\""),
    ] {
        let list = t7_list_with(dir.path(), amount);
        let (code, err) = import(dir.path(), &[T7, &list, "--base", INCIDENT]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(
            err.trim_end(),
            format!(
                "error: {list}:26: data[1].amount: expected integer cents (a whole number in the \
                 currency's smallest unit, like 4200, or its decimal digits as a string, \
                 \"4200\"), got {shown}"
            )
        );
    }
}

/// One rule for amounts in every JSON format: a string of decimal digits is an amount in the
/// tool's arguments, in Stripe's list and in JSON lines; anything else is refused with the same
/// words, its number as written.
#[test]
fn a_string_of_digits_is_an_amount_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let list = t7_list_with(dir.path(), "\"4200\"");
    let trace = std::fs::read_to_string(T7).unwrap().replace(
        "\\\"amount_cents\\\": 4200",
        "\\\"amount_cents\\\": \\\"4200\\\"",
    );
    assert!(trace.contains("\\\"amount_cents\\\": \\\"4200\\\""));
    let t = write(dir.path(), "t.json", &trace);
    let out = refundsim()
        .args(["replay", &t, &list, "--base", INCIDENT, "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let t7 = &v["comparison"]["tickets"][0];
    assert_eq!(
        (
            t7["recorded_refunds"].as_u64(),
            t7["recorded_refunds_from"].as_str()
        ),
        (Some(2), Some("refund export")),
        "{t7:#}"
    );
    // Refused alike, as written.
    let expected = "expected integer cents (a whole number in the currency's smallest unit, \
                    like 4200, or its decimal digits as a string, \"4200\"), got";
    let bad_trace = std::fs::read_to_string(T7).unwrap().replace(
        "\\\"amount_cents\\\": 4200",
        "\\\"amount_cents\\\": 99999999999999999999",
    );
    let t = write(dir.path(), "bad.json", &bad_trace);
    let (code, err) = import(dir.path(), &[&t, "--base", INCIDENT]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.trim_end().ends_with(&format!(
            "(gen_ai.tool.call.arguments): \"amount_cents\": {expected} 99999999999999999999"
        )),
        "{err}"
    );
    let jsonl = std::fs::read_to_string("tests/fixtures/import/ticket-48213.jsonl")
        .unwrap()
        .replacen("\"amount_cents\":4200", "\"amount_cents\":\"4200\"", 1);
    let ok = write(dir.path(), "ok.jsonl", &jsonl);
    let (code, err) = import(dir.path(), &[&ok]);
    assert_eq!(code, 0, "{err}");
    let bad = write(
        dir.path(),
        "bad.jsonl",
        &jsonl.replacen("\"amount_cents\":\"4200\"", "\"amount_cents\":1e30", 1),
    );
    let (code, err) = import(dir.path(), &[&bad]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error: {bad}:2: amount_cents: {expected} 1e30")
    );
}

/// Warnings are capped per kind, and a kind masks values (counts, times, lines), not the
/// digits of identifiers: seven files each skipping another tool (`lookup_v1` … `lookup_v7`)
/// give seven warnings, while a thousand junk lines give five and a count.
#[test]
fn warnings_about_different_tools_are_not_merged_and_repeats_are_capped() {
    let dir = tempfile::tempdir().unwrap();
    let call = "{\"type\":\"tool_call\",\"ticket\":1,\"at\":\"2024-05-14T16:41:09.210Z\",\"amount_cents\":4200}\n";
    let mut files = Vec::new();
    for v in 1..=7 {
        let text = format!(
            "{}{{\"type\":\"tool_call\",\"ticket\":{v},\"tool\":\"lookup_v{v}\",\"at\":\"2024-05-14T16:41:0{v}.000Z\"}}\n",
            if v == 1 { call } else { "" }
        );
        files.push(write(dir.path(), &format!("a{v}.jsonl"), &text));
    }
    let mut junk = String::from("16:41:09.210  tool_call issue_refund(ticket=2, amount=4200)\n");
    for i in 0..1000 {
        junk.push_str(&format!(
            "16:41:{:02}.{:03}  GET /healthz 200 ok {i}\n",
            10 + i / 1000,
            i % 1000
        ));
    }
    files.push(write(dir.path(), "junk.log", &junk));
    let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
    args.extend(["--date", "2024-05-14"]);
    let (code, err) = import(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    for v in 1..=7 {
        assert!(
            err.contains(&format!("(this one of `lookup_v{v}`) skipped")),
            "lookup_v{v}:\n{err}"
        );
    }
    let junk_lines = err
        .lines()
        .filter(|l| l.contains("not a tool_call"))
        .count();
    assert_eq!(junk_lines, 6, "{err}");
    assert!(
        err.contains("… and 995 more like this: not a tool_call"),
        "{err}"
    );
}

/// A ticket whose calls ask for different amounts gets one warning (not one per call), at the
/// first call that differs; tickets whose calls agree get none.
#[test]
fn different_amounts_for_one_ticket_are_warned_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = write(
        dir.path(),
        "a.log",
        "16:41:09.210  tool_call issue_refund(ticket=48213, amount=4200)\n\
         16:41:17.211  tool_executor: timeout after 8000ms, injecting error result\n\
         16:41:17.244  tool_call issue_refund(ticket=48213, amount=4300)\n\
         16:41:18.501  tool_result: { status: \"refunded\", refund_id: \"re_1\" }\n\
         16:42:00.000  tool_call issue_refund(ticket=48214, amount=1000)\n\
         16:42:08.001  tool_executor: timeout after 8000ms, injecting error result\n\
         16:42:08.100  tool_call issue_refund(ticket=48214, amount=1000)\n\
         16:42:09.000  tool_result: { status: \"refunded\", refund_id: \"re_2\" }\n\
         16:43:00.000  tool_call issue_refund(ticket=48215, amount=10)\n\
         16:43:08.001  tool_executor: timeout after 8000ms, injecting error result\n\
         16:43:08.100  tool_call issue_refund(ticket=48215, amount=20)\n\
         16:43:16.101  tool_executor: timeout after 8000ms, injecting error result\n\
         16:43:16.200  tool_call issue_refund(ticket=48215, amount=30)\n",
    );
    let (code, err) = import(
        dir.path(),
        &[&log, "--base", INCIDENT, "--date", "2024-05-14"],
    );
    assert_eq!(code, 0, "{err}");
    let warned: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("different amounts"))
        .collect();
    assert_eq!(
        warned,
        [
            format!(
                "warning: {log}:3: ticket 48213: its tool calls ask for different amounts, 4200 \
                 cents (attempt 0) and 4300 cents (attempt 1); the replay refunds the first, \
                 4200 cents, on every attempt"
            ),
            format!(
                "warning: {log}:11: ticket 48215: its tool calls ask for different amounts, 10 \
                 cents (attempt 0), 20 cents (attempt 1) and 30 cents (attempt 2); the replay \
                 refunds the first, 10 cents, on every attempt"
            ),
        ],
        "{err}"
    );
}

const LOG: &str = "tests/fixtures/incident/incident-trace-ticket-48213.log";

/// Counts of one are singular in replay's output: "1 connection", "1 ticket", "1 recorded
/// request".
#[test]
fn counts_of_one_are_singular() {
    let out = refundsim()
        .args(["replay", LOG, "--base", INCIDENT])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("replay matches the recording: 0 of 1 ticket with other refunds, 0 recorded facts differ"),
        "{text}"
    );
    let out = refundsim()
        .args([
            "replay",
            LOG,
            "--base",
            INCIDENT,
            "--set",
            "refunds_service.pool_size=1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Erlangs, which 1 connection cannot carry"),
        "{err}"
    );
    // One call and its one provider request, whose key the key policy replaces.
    let dir = tempfile::tempdir().unwrap();
    let jsonl: String = std::fs::read_to_string("tests/fixtures/import/ticket-48213.jsonl")
        .unwrap()
        .lines()
        .filter(|l| !l.contains("toolu_01B") && !l.contains("\"attempt\":1"))
        .map(|l| format!("{l}\n"))
        .collect();
    let one = write(dir.path(), "one.jsonl", &jsonl);
    let out = refundsim()
        .args([
            "replay",
            &one,
            "--base",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("(imported under none; of 1 recorded request, 0 recorded a key, 1 recorded none, 0 did not say)"),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An empty file, or one of whitespace only, is said to be empty, not of an unknown format.
#[test]
fn an_empty_file_is_said_to_be_empty() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("e.json", ""),
        ("w.log", "  \n\n\t\n"),
        ("bom.csv", "\u{feff}\n"),
    ] {
        let f = write(dir.path(), name, text);
        let (code, err) = import(dir.path(), &[&f]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(
            err.trim_end(),
            format!(
                "error: {f}: the file is empty (or only whitespace): expected a recording to \
                 import — OTLP/JSON, LangSmith runs, Langfuse observations, an OpenAI Agents SDK \
                 trace export, a Stripe list of refunds, JSON lines, a refund export CSV or a \
                 tool-call log"
            )
        );
        let out = refundsim().args(["replay", &f]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("the file is empty"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
