//! `refundsim mcp` driven by a client this project did not write: the Python MCP SDK's stdio
//! client (`pip install mcp`), through tests/mcp/client.py. It initialises, lists the tools and
//! calls each one with valid and invalid input, all calls at once over one session; the
//! answers must be the CLI's: the structured content equal to the `--json` of the same
//! command, a tool error carrying the CLI's message.
//!
//! Skipped, with a message, where the `mcp` package is not importable, unless
//! `REFUNDSIM_REQUIRE_MCP=1` (as `.ci/run` sets, after installing it). The Python used is
//! `REFUNDSIM_MCP_PYTHON`, else `python3`.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{command_json, refundsim};

const INCIDENT: &str = "scenarios/carrier-outage.json";

/// A recipe that `fix` mends in one field, in well under a second.
const FIXABLE: &str = "scenarios/recipes/mcp-duplicated-call.json";

/// The Python with the `mcp` package, or `None` (after saying so) where it is absent.
fn python() -> Option<String> {
    let python = std::env::var("REFUNDSIM_MCP_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    assert!(
        std::env::var("REFUNDSIM_REQUIRE_MCP").as_deref() != Ok("1"),
        "REFUNDSIM_REQUIRE_MCP=1 but `{python} -c 'import mcp'` fails: install it with \
         `{python} -m pip install mcp` (or set REFUNDSIM_MCP_PYTHON)"
    );
    println!("skipping: the Python `mcp` package is not installed ({python} -c 'import mcp')");
    None
}

/// One session of the Python client against `refundsim mcp FLAGS` run in `cwd`: the server's
/// info, the listed tools, and the result of each call, in order.
fn session(python: &str, cwd: &std::path::Path, flags: &[&str], calls: &[(&str, Value)]) -> Value {
    let bin = assert_cmd::cargo::cargo_bin("refundsim");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py");
    let mut child = Command::new(python)
        .arg(script)
        .arg(bin)
        .arg(cwd)
        .args(flags)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python runs");
    let calls: Vec<Value> = calls.iter().map(|(n, a)| json!([n, a])).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&calls).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the client prints JSON")
}

/// The text of a call's first content block.
fn text(call: &Value) -> &str {
    call["content"][0]["text"].as_str().unwrap_or_default()
}

fn is_error(call: &Value) -> bool {
    call["isError"] == true
}

/// The CLI's message for `args` (exit 2), without `error: ` and the newline.
fn cli_error(args: &[&str]) -> String {
    let out = refundsim().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    err.trim_end()
        .strip_prefix("error: ")
        .unwrap_or(&err)
        .to_string()
}

#[test]
fn a_real_client_lists_the_tools_and_each_answers_as_the_cli() {
    let Some(python) = python() else {
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let incident: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(INCIDENT)).unwrap()).unwrap();
    let mcp_tools = json!({"tools": [{"name": "issue_refund",
        "inputSchema": {"type": "object", "properties": {"ticket_id": {"type": "string"}}}}]});
    let openai_tools = json!([{"type": "function", "function": {"name": "issue_refund",
        "parameters": {"type": "object", "properties": {"ticket_id": {"type": "string"}}}}}]);
    let calls = [
        ("simulate", json!({})),
        (
            "simulate",
            json!({"scenario": INCIDENT, "policies": ["policies/fixed.json"]}),
        ),
        (
            "simulate",
            json!({"scenario": INCIDENT, "set": {"refunds_service.pool_size": 0}}),
        ),
        (
            "simulate",
            json!({"scenario": incident, "set": {"refunds_service.pool_size": 0}}),
        ),
        ("simulate", json!({"seeds": "1..3"})),
        (
            "check_policy",
            json!({"policies": ["policies/fixed.json"], "seeds": "1..3", "explore_cases": 8}),
        ),
        ("check_policy", json!({"seeds": "1..500"})),
        (
            "check_policy",
            json!({"policies": [{"refunds_service": {"pool_size": "eight"}}], "seeds": "1..2"}),
        ),
        (
            "lint_tools",
            json!({"tools": mcp_tools, "timeout": "8s", "on_timeout": "report_error",
                   "model_retries": 1, "model_retries_apply_to": "any_tool",
                   "idempotency_key": "none"}),
        ),
        ("lint_tools", json!({"tools": openai_tools})),
        ("lint_tools", json!({"scenario": INCIDENT})),
        ("lint_tools", json!({"tools": {"nope": 1}})),
        ("lint_tools", json!({"timeout": 8})),
        ("suggest_fix", json!({"seeds": "1..500"})),
        ("suggest_fix", json!({"scenario": 5})),
        ("check_policy", json!({"set": {"gate.seeds": 500}})),
        (
            "suggest_fix",
            json!({"scenario": FIXABLE, "seeds": "1..3", "explore_cases": 16,
                   "max_candidates": 10, "alternatives": 0}),
        ),
        ("suggest_fix", json!({"max_candidates": 1000})),
    ];
    let out = session(&python, root, &[], &calls);
    let calls = out["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 18);
    assert_eq!(out["server"]["name"], "refundsim");

    // tools/list: the four tools, each read-only, idempotent and closed-world, with both
    // schemas; the inputs are the CLI's.
    let tools = out["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["lint_tools", "simulate", "check_policy", "suggest_fix"]
    );
    for t in tools {
        let a = &t["annotations"];
        assert_eq!(
            (
                &a["readOnlyHint"],
                &a["destructiveHint"],
                &a["idempotentHint"],
                &a["openWorldHint"]
            ),
            (&json!(true), &json!(false), &json!(true), &json!(false)),
            "{t}"
        );
        assert_eq!(t["outputSchema"]["type"], "object", "{t}");
        let props = &t["inputSchema"]["properties"];
        for p in ["scenario", "policies", "set"] {
            assert!(props.get(p).is_some(), "{} lacks {p}: {t}", t["name"]);
        }
    }

    // simulate on the incident: its duplicates, and the first one's story; the structured
    // content is `run --ticket T --json`.
    let s = &calls[0];
    assert!(!is_error(s), "{s}");
    let v = &s["structuredContent"];
    assert_eq!(v["duplicate_refund_tickets"], 43);
    let first = v["duplicated_ticket_ids"][0].as_u64().unwrap().to_string();
    assert!(!v["story"].as_array().unwrap().is_empty());
    assert_eq!(
        v,
        &command_json("run", &[INCIDENT, "--ticket", &first]).1,
        "simulate = run --json"
    );
    assert!(text(s).contains("43 duplicated"), "{}", text(s));
    assert!(text(s).contains(&format!("ticket {first}:")), "{}", text(s));
    // Under the fix: no duplicate, so no story; as `run --policy --json`.
    let f = &calls[1]["structuredContent"];
    assert_eq!(f["duplicate_refund_tickets"], 0);
    assert_eq!(
        f,
        &command_json("run", &[INCIDENT, "--policy", "policies/fixed.json"]).1
    );
    // A bad `set`: the CLI's message; an inline scenario is named scenario.json.
    let bad_set = [INCIDENT, "--set", "refunds_service.pool_size=0"];
    let expected = cli_error(&[&["run"][..], &bad_set].concat());
    assert!(is_error(&calls[2]));
    assert_eq!(text(&calls[2]), expected);
    assert!(is_error(&calls[3]));
    assert_eq!(
        text(&calls[3]),
        expected.replacen(INCIDENT, "scenario.json", 1)
    );
    assert!(is_error(&calls[4]));
    assert!(
        text(&calls[4]).starts_with("arguments.seeds: unknown field `seeds`, expected one of"),
        "{}",
        text(&calls[4])
    );

    // check_policy: `check --json` of the same inputs, replay commands included.
    let c = &calls[5];
    assert!(!is_error(c), "{c}");
    let (_, cli) = command_json(
        "check",
        &[
            INCIDENT,
            "--policy",
            "policies/fixed.json",
            "--seeds",
            "1..3",
            "--explore-cases",
            "8",
        ],
    );
    assert_eq!(c["structuredContent"], cli, "check_policy = check --json");
    assert_eq!(c["structuredContent"]["cases"].as_array().unwrap().len(), 2);
    assert!(text(c).contains("policies/fixed.json"), "{}", text(c));
    assert!(is_error(&calls[6]));
    assert!(
        text(&calls[6]).contains("at most 200 seeds"),
        "{}",
        text(&calls[6])
    );
    assert!(is_error(&calls[15]));
    assert!(
        text(&calls[15]).starts_with(
            "scenarios/carrier-outage.json: gate.seeds: 500 seeds, and this server runs at most 200"
        ),
        "{}",
        text(&calls[15])
    );
    assert!(is_error(&calls[7]));
    assert!(
        text(&calls[7]).contains("refunds_service.pool_size: invalid type")
            && text(&calls[7]).ends_with("(after applying policy policy-1.json)"),
        "{}",
        text(&calls[7])
    );

    // lint_tools: the incident's policy in plain fields over an unannotated MCP tool finds
    // the incident's faults, each with its field path and fix.
    let l = &calls[8];
    assert!(!is_error(l), "{l}");
    let findings = l["structuredContent"]["findings"].as_array().unwrap();
    let ids: Vec<&str> = findings.iter().map(|f| f["id"].as_str().unwrap()).collect();
    for id in [
        "retry-non-idempotent",
        "idempotency-key-missing",
        "timeout-reports-error",
        "tool-annotations-missing",
    ] {
        assert!(ids.contains(&id), "{id} not in {ids:?}");
    }
    for f in findings {
        assert!(f["path"].is_string() && f.get("fix").is_some(), "{f}");
    }
    // An OpenAI function tool is read too; the defaults are `refundsim new`'s safe ones.
    let o = &calls[9];
    assert!(!is_error(o), "{o}");
    let ids: Vec<&str> = o["structuredContent"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"tool-annotations-missing"), "{ids:?}");
    assert!(!ids.contains(&"idempotency-key-missing"), "{ids:?}");
    // A scenario path: `lint --json` of it.
    assert_eq!(
        calls[10]["structuredContent"],
        command_json("lint", &[INCIDENT]).1
    );
    assert!(is_error(&calls[11]));
    assert!(
        text(&calls[11]).starts_with("tools.json"),
        "{}",
        text(&calls[11])
    );
    assert!(is_error(&calls[12]));
    assert!(
        text(&calls[12]).starts_with("arguments.timeout: invalid type"),
        "{}",
        text(&calls[12])
    );

    // suggest_fix: `fix --json` of the same inputs; a tool error on a bad argument.
    let fix = &calls[16];
    assert!(!is_error(fix), "{fix}");
    let out = tempfile::tempdir().unwrap();
    let patch = out.path().join("fix.json");
    let (_, cli) = command_json(
        "fix",
        &[
            FIXABLE,
            "--seeds",
            "1..3",
            "--explore-cases",
            "16",
            "--max-candidates",
            "10",
            "--alternatives",
            "0",
            "--out",
            patch.to_str().unwrap(),
        ],
    );
    assert_eq!(fix["structuredContent"], cli, "suggest_fix = fix --json");
    assert_eq!(
        fix["structuredContent"]["fix"]["patch"]["executor"]["request_idempotency"],
        json!({})
    );
    assert!(
        text(fix).contains("executor.request_idempotency"),
        "{}",
        text(fix)
    );
    assert!(is_error(&calls[17]));
    assert!(
        text(&calls[17]).starts_with("arguments.max_candidates: expected from 1 to 200"),
        "{}",
        text(&calls[17])
    );
    assert!(is_error(&calls[14]));
    assert_eq!(
        text(&calls[14]),
        "arguments.scenario: expected a path (a string) or an object"
    );
    assert!(is_error(&calls[13]));
    assert!(
        text(&calls[13]).contains("at most 200 seeds"),
        "{}",
        text(&calls[13])
    );
}

/// From any working directory the incident is built in and a relative path is read from
/// there; a call past `--call-timeout` is a tool error while the others are answered.
#[test]
fn the_server_works_from_anywhere_and_bounds_each_call_in_time() {
    let Some(python) = python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let calls = [
        ("lint_tools", json!({})),
        ("simulate", json!({"scenario": INCIDENT})),
        (
            "check_policy",
            json!({"seeds": "1..200", "explore_cases": 0}),
        ),
    ];
    let out = session(&python, dir.path(), &["--call-timeout", "1s"], &calls);
    let calls = out["calls"].as_array().unwrap();
    // The built-in incident, linted as the file is.
    assert!(!is_error(&calls[0]), "{}", calls[0]);
    assert_eq!(
        calls[0]["structuredContent"],
        command_json("lint", &[INCIDENT]).1
    );
    // A relative path that is not there: the CLI's message, and where it was looked for.
    assert!(is_error(&calls[1]));
    let message = text(&calls[1]);
    assert!(
        message.starts_with("scenarios/carrier-outage.json: cannot read file")
            && message.contains("relative to the server's working directory"),
        "{message}"
    );
    // 200 seeds of the incident take more than a second.
    assert!(is_error(&calls[2]));
    assert!(
        text(&calls[2]).starts_with("the call took longer than 1s of wall-clock time"),
        "{}",
        text(&calls[2])
    );
}

/// `server.json` describes this crate for the MCP registry: a crates.io package of this
/// version, run as `refundsim mcp` over stdio, named where the README says (the registry's
/// ownership check).
#[test]
fn server_json_is_this_crate_run_as_refundsim_mcp() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("server.json")).unwrap()).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(s["version"], version);
    assert!(s["description"].as_str().unwrap().chars().count() <= 100);
    let p = &s["packages"][0];
    assert_eq!(
        (&p["registryType"], &p["identifier"], &p["version"]),
        (&json!("cargo"), &json!("refundsim"), &json!(version))
    );
    assert_eq!(p["transport"]["type"], "stdio");
    assert_eq!(
        p["packageArguments"],
        json!([{"type": "positional", "value": "mcp"}])
    );
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let name = s["name"].as_str().unwrap();
    assert!(
        readme.contains(&format!("mcp-name: {name}")),
        "README names {name}"
    );
}
