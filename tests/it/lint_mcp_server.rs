//! `refundsim lint --mcp-server`: a live MCP server's tools linted against a policy.
//!
//! Exact findings come from the project's own fixture server (tests/fixtures/mcp/tools_server.py,
//! Python's standard library only: five tools over two `tools/list` pages). A real third-party
//! server, `@modelcontextprotocol/server-everything` from npm, is run when
//! `REFUNDSIM_MCP_EVERYTHING` holds the command that starts it (`.ci/run` installs it and sets
//! it). Without python3 or that variable, the tests print why they skip and pass, unless
//! `REFUNDSIM_REQUIRE_MCP=1` (as in `.ci/run`), when they fail instead.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{refundsim, refused};

const FIXTURE: &str = "tests/fixtures/mcp/tools_server.py";

fn required() -> bool {
    std::env::var("REFUNDSIM_REQUIRE_MCP").as_deref() == Ok("1")
}

/// `python3 FIXTURE ARGS` when python3 runs; otherwise skips (or fails under
/// `REFUNDSIM_REQUIRE_MCP=1`).
fn fixture(args: &str) -> Option<String> {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !required(),
            "REFUNDSIM_REQUIRE_MCP=1 but python3 does not run; the fixture MCP server needs it"
        );
        println!("skipping: python3 not found (the fixture MCP server is a Python script)");
        return None;
    }
    Some(format!("python3 {FIXTURE} {args}").trim_end().to_string())
}

/// `refundsim lint --mcp-server SERVER ARGS --json`: exit code and report.
fn lint_json(server: &str, args: &[&str]) -> (i32, Value) {
    let out = refundsim()
        .args(["lint", "--mcp-server", server])
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code().unwrap_or(-1);
    assert!((0..=1).contains(&code), "exit {code}: {err}");
    (
        code,
        serde_json::from_slice(&out.stdout).expect("a JSON report"),
    )
}

/// Each finding as `(id, path, severity)`.
fn findings(r: &Value) -> Vec<(String, String, String)> {
    r["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn owned(v: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    v.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

#[test]
fn the_fixture_servers_tools_under_the_incidents_rule() {
    let Some(server) = fixture("") else { return };
    let (code, r) = lint_json(&server, &[]);
    assert_eq!(code, 1, "{r}");
    assert_eq!(r["server"]["name"], "refundsim-fixture");
    assert_eq!(r["server"]["version"], "1.0.0");
    assert_eq!(r["server"]["pages"], 2, "both pages read");
    assert_eq!(r["policy"]["source"], "the incident's rule (the defaults)");
    assert_eq!(
        r["policy"]["words"],
        "the model may retry any tool once after a failure; no idempotency key"
    );
    let names: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "lookup_order",
            "issue_refund",
            "cancel_subscription",
            "set_shipping_address",
            "add_note"
        ]
    );
    assert_eq!(r["tools"][1]["annotations"], Value::Null, "no annotations");
    assert_eq!(
        r["tools"][0]["annotations"],
        serde_json::json!({"readOnlyHint": true, "openWorldHint": false})
    );
    // lookup_order (read-only) and set_shipping_address (idempotent) are not flagged;
    // add_note (additive, not idempotent) only for the retry.
    assert_eq!(
        findings(&r),
        owned(&[
            ("tool-annotations-missing", "tools.1.annotations", "warning"),
            (
                "retry-non-idempotent",
                "tools.1.annotations.idempotentHint",
                "error"
            ),
            (
                "idempotency-key-missing",
                "tools.1.annotations.destructiveHint",
                "error"
            ),
            (
                "retry-non-idempotent",
                "tools.2.annotations.idempotentHint",
                "error"
            ),
            (
                "idempotency-key-missing",
                "tools.2.annotations.destructiveHint",
                "error"
            ),
            (
                "retry-non-idempotent",
                "tools.4.annotations.idempotentHint",
                "error"
            ),
        ])
    );
    let f = &r["findings"].as_array().unwrap();
    for (i, tool) in [
        (0, "issue_refund"),
        (1, "issue_refund"),
        (2, "issue_refund"),
        (3, "cancel_subscription"),
        (4, "cancel_subscription"),
        (5, "add_note"),
    ] {
        assert_eq!(f[i]["file"], "MCP server refundsim-fixture", "{}", f[i]);
        let m = f[i]["message"].as_str().unwrap();
        assert!(m.contains(&format!("`{tool}`")), "{m}");
    }
    assert_eq!(
        f[1]["fix"],
        serde_json::json!(["agent.retry.applies_to=idempotent_tools"])
    );
    assert_eq!(
        f[2]["fix"],
        serde_json::json!(["refunds_service.idempotency_key=per_ticket"])
    );
}

#[test]
fn the_text_names_the_server_the_policy_and_every_tool() {
    let Some(server) = fixture("") else { return };
    let out = refundsim()
        .args(["lint", "--mcp-server", &server])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "MCP server: refundsim-fixture 1.0.0 (protocol ",
        "policy: the incident's rule (the defaults) — the model may retry any tool once after a failure; no idempotency key",
        "tools: 5 in 2 pages of tools/list",
        "  issue_refund          no annotations",
        "  lookup_order          readOnlyHint: true, openWorldHint: false",
        "MCP server refundsim-fixture: error[retry-non-idempotent] tools.4.annotations.idempotentHint: the agent may retry `add_note`",
        "  apply: --set agent.retry.applies_to=idempotent_tools",
        "lint FAILED: 5 error(s), 1 warning(s) in MCP server refundsim-fixture (5 tools, against the incident's rule (the defaults))",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
}

/// The findings' fixes, applied with `--set`, clear them; what is left is the missing
/// annotations, a warning (exit 0).
#[test]
fn the_fixes_clear_the_errors() {
    let Some(server) = fixture("") else { return };
    let (code, r) = lint_json(
        &server,
        &[
            "--set",
            "agent.retry.applies_to=idempotent_tools",
            "--set",
            "refunds_service.idempotency_key=per_ticket",
        ],
    );
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        findings(&r),
        owned(&[("tool-annotations-missing", "tools.1.annotations", "warning")])
    );
    assert_eq!(
        r["policy"]["words"],
        "the model may retry a readOnlyHint or idempotentHint tool once after a failure, no other; an idempotency key per logical call (per ticket), kept across retries"
    );
}

/// A scenario (with a policy) instead of the incident's rule: the shipped fix.
#[test]
fn a_scenario_and_policy_are_the_rule() {
    let Some(server) = fixture("") else { return };
    let (code, r) = lint_json(
        &server,
        &[
            "scenarios/carrier-outage.json",
            "--policy",
            "policies/fixed.json",
        ],
    );
    assert_eq!(code, 0, "{r}");
    assert_eq!(
        r["policy"]["source"],
        "scenario scenarios/carrier-outage.json after policy policies/fixed.json"
    );
    assert!(findings(&r)
        .iter()
        .all(|(id, _, _)| id == "tool-annotations-missing"));
    // The request key of the tool server (MCP SEP-3182) is a key too.
    let (code, r) = lint_json(
        &server,
        &[
            "--set",
            "agent.retry.max_retries=0",
            "--set",
            "executor.request_idempotency={}",
        ],
    );
    assert_eq!(code, 0, "{r}");
    let words = r["policy"]["words"].as_str().unwrap();
    assert!(
        words.starts_with("the model does not retry a tool; no idempotency key; the tool server takes a request idempotency key"),
        "{words}"
    );
}

#[test]
fn a_server_that_is_not_one_is_refused_naming_the_command() {
    let cases: &[(&str, &str)] = &[
        (
            "no-such-mcp-server-x1",
            "error: MCP server `no-such-mcp-server-x1`: cannot start `no-such-mcp-server-x1`: command not found",
        ),
        ("false", "error: MCP server `false`: "),
        ("echo hi", "error: MCP server `echo hi`: "),
        (
            "sh -c 'echo not json; echo about to hang >&2; sleep 100'",
            "no answer to initialize within 1s (--mcp-timeout); expected an MCP server speaking JSON-RPC on its stdin and stdout; its stderr's last line: \"about to hang\"",
        ),
        ("sleep 100", "error: MCP server `sleep 100`: no answer to initialize within 1s"),
        ("", "error: --mcp-server: empty command"),
        ("'unbalanced", "unbalanced quotes"),
    ];
    for (server, message) in cases {
        let start = Instant::now();
        let err = refused(
            &["lint", "--mcp-server", server, "--mcp-timeout", "1s"],
            message,
        );
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{server}: took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn a_cursor_loop_or_a_server_gone_after_initialize_is_refused() {
    let Some(looping) = fixture("loop") else {
        return;
    };
    refused(
        &["lint", "--mcp-server", &looping],
        "tools/list page 2 gave nextCursor \"again\", which an earlier page gave too",
    );
    let gone = fixture("exit-after-init").unwrap();
    refused(
        &["lint", "--mcp-server", &gone],
        &format!("error: MCP server `{gone}`: tools/list (page 1) failed: "),
    );
}

#[test]
fn bad_arguments_are_refused_before_the_server_starts() {
    // A tool list is not a policy to lint against; the server is never started.
    refused(
        &[
            "lint",
            "--mcp-server",
            "no-such-mcp-server-x2",
            "tests/fixtures/lint/mcp-tools-list.fail.json",
        ],
        "this is a tool list; with --mcp-server, expected a scenario or a policy",
    );
    refused(
        &[
            "lint",
            "--mcp-server",
            "no-such-mcp-server-x2",
            "scenarios/carrier-outage.json",
            "policies/fixed.json",
        ],
        "--mcp-server takes at most one scenario",
    );
    refused(
        &["lint", "--mcp-server", "x", "--mcp-timeout", "0s"],
        "--mcp-timeout 0s: expected a positive duration",
    );
}

/// The reference server of the MCP project, from npm: every tool listed, read-only ones never
/// flagged, the non-idempotent writers flagged for the incident's retry.
#[test]
fn the_everything_server_from_npm() {
    let Ok(server) = std::env::var("REFUNDSIM_MCP_EVERYTHING") else {
        assert!(
            !required(),
            "REFUNDSIM_REQUIRE_MCP=1 but REFUNDSIM_MCP_EVERYTHING is not set (the command that \
             starts @modelcontextprotocol/server-everything over stdio; .ci/run sets it)"
        );
        println!(
            "skipping: REFUNDSIM_MCP_EVERYTHING not set (e.g. \"npx -y \
             @modelcontextprotocol/server-everything\")"
        );
        return;
    };
    let (code, r) = lint_json(&server, &[]);
    assert_eq!(r["server"]["name"], "mcp-servers/everything", "{r}");
    let tools = r["tools"].as_array().unwrap();
    assert!(tools.len() >= 10, "{} tools", tools.len());
    let hint = |t: &Value, k: &str| t["annotations"].get(k).and_then(Value::as_bool);
    let named = |n: &str| tools.iter().find(|t| t["name"] == n);
    let echo = named("echo").expect("an echo tool");
    assert_eq!(hint(echo, "readOnlyHint"), Some(true));
    let f = findings(&r);
    let flagged = |i: usize| {
        f.iter()
            .any(|(_, p, _)| p.starts_with(&format!("tools.{i}.")) || p == &format!("tools.{i}"))
    };
    for (i, t) in tools.iter().enumerate() {
        if hint(t, "readOnlyHint") == Some(true) || hint(t, "idempotentHint") == Some(true) {
            assert!(!flagged(i), "{} is flagged: {f:?}", t["name"]);
        }
        if hint(t, "readOnlyHint") == Some(false) && hint(t, "idempotentHint") == Some(false) {
            assert!(
                f.contains(&(
                    "retry-non-idempotent".into(),
                    format!("tools.{i}.annotations.idempotentHint"),
                    "error".into()
                )),
                "{} not flagged: {f:?}",
                t["name"]
            );
        }
    }
    let writer = named("toggle-simulated-logging").expect("a toggle-simulated-logging tool");
    assert_eq!(hint(writer, "idempotentHint"), Some(false));
    assert_eq!(code, 1);
    // Under the fixed retry rule, nothing the server lists is retried.
    let (code, r) = lint_json(
        &server,
        &["--set", "agent.retry.applies_to=idempotent_tools"],
    );
    assert!(
        findings(&r)
            .iter()
            .all(|(id, _, _)| id != "retry-non-idempotent"),
        "{r}"
    );
    assert!(code == 0 || code == 1);
}
