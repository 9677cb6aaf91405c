//! Bounded inputs (issue 27, item 5): every file the user gives is read with a size cap, and
//! JSON nested past serde_json's limit is named as that limit, with the file, the place, the
//! limit and the flag. `refundsim run /dev/zero` used to grow to gigabytes.

use crate::common::{refundsim, INCIDENT};

/// `refundsim ARGS`: the exit code and stderr.
fn refundsim_err(args: &[&str]) -> (i32, String) {
    let o = refundsim().args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const NESTING: &str = "nested deeper than the nesting limit of 128 levels (arrays and objects \
                       inside each other)";

/// The incident scenario padded with spaces to exactly `len` bytes.
fn padded_scenario(dir: &std::path::Path, name: &str, len: usize) -> String {
    let mut text = std::fs::read_to_string(INCIDENT).unwrap();
    assert!(text.len() <= len);
    text.push_str(&" ".repeat(len - text.len()));
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// 200,000 arrays inside each other.
fn deep(dir: &std::path::Path, name: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, "[".repeat(200_000) + &"]".repeat(200_000)).unwrap();
    p.display().to_string()
}

#[cfg(unix)]
#[test]
fn run_dev_zero_is_refused_at_the_default_limit() {
    let (code, err) = refundsim_err(&["run", "/dev/zero"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        "error: /dev/zero: more than the 16 MiB (16777216-byte) limit of a scenario; raise it \
         with --max-input-mb MB"
    );
    let (code, err) = refundsim_err(&["run", INCIDENT, "--policy", "/dev/zero"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/dev/zero: more than the 16 MiB (16777216-byte) limit of a policy"),
        "{err}"
    );
}

#[test]
fn a_scenario_one_byte_over_the_limit_is_refused_and_one_at_it_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let at = padded_scenario(dir.path(), "at.json", 1 << 20);
    let over = padded_scenario(dir.path(), "over.json", (1 << 20) + 1);
    let (code, err) = refundsim_err(&["show", &at, "--max-input-mb", "1"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = refundsim_err(&["show", &over, "--max-input-mb", "1"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {over}: more than the 1 MiB (1048576-byte) limit of a scenario; raise it \
             with --max-input-mb MB"
        )
    );
    // The flag raises it.
    let (code, err) = refundsim_err(&["show", &over, "--max-input-mb", "2"]);
    assert_eq!(code, 0, "{err}");
    // A policy alike.
    let mut policy = String::from("{\"executor\": {\"timeout\": \"15s\"}}");
    policy.push_str(&" ".repeat((1 << 20) + 1 - policy.len()));
    let p = dir.path().join("policy.json");
    std::fs::write(&p, &policy).unwrap();
    let p = p.display().to_string();
    let (code, err) = refundsim_err(&["show", INCIDENT, "--policy", &p, "--max-input-mb", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{p}: more than the 1 MiB (1048576-byte) limit of a policy; raise it with \
             --max-input-mb MB"
        )),
        "{err}"
    );
    policy.pop();
    std::fs::write(dir.path().join("policy.json"), &policy).unwrap();
    let (code, err) = refundsim_err(&["show", INCIDENT, "--policy", &p, "--max-input-mb", "1"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_recording_or_a_tool_definition_over_the_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // An OTLP document is read whole: 256 MiB by default, the flag's limit when given.
    let trace =
        std::fs::read_to_string("tests/fixtures/import/standard/ticket-T-7.otlp.json").unwrap();
    let write_padded = |name: &str, len: usize| {
        let mut t = trace.clone();
        t.push_str(&" ".repeat(len - t.len()));
        let p = dir.path().join(name);
        std::fs::write(&p, t).unwrap();
        p.display().to_string()
    };
    let at = write_padded("at.json", 1 << 20);
    let over = write_padded("over.json", (1 << 20) + 1);
    let out = dir.path().join("out.json");
    let out = out.to_str().unwrap();
    let (code, err) = refundsim_err(&["import", &at, "--max-input-mb", "1", "--out", out]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = refundsim_err(&["import", &over, "--max-input-mb", "1", "--out", out]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {over}: more than the 1048576-byte limit of a file read whole (an OTLP/JSON \
             document, a JSON array); export JSON lines, split the recording, or raise the \
             limit with --max-input-mb MB"
        )
    );
    let (code, err) = refundsim_err(&["import", &over, "--out", out]);
    assert_eq!(code, 0, "the default for recordings is 256 MiB: {err}");
    // A tool definition has the scenarios' limit.
    let mut def = std::fs::read_to_string("scenarios/issue_refund.tool.json").unwrap();
    def.push_str(&" ".repeat((1 << 20) + 1 - def.len()));
    let d = dir.path().join("tool.json");
    std::fs::write(&d, def).unwrap();
    let d = d.display().to_string();
    let (code, err) = refundsim_err(&[
        "import",
        &at,
        "--tool-definition",
        &d,
        "--max-input-mb",
        "1",
        "--out",
        out,
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "error: {d}: more than the 1 MiB (1048576-byte) limit of a tool definition; raise it \
             with --max-input-mb MB"
        )
    );
}

#[test]
fn nesting_past_the_limit_is_named_with_the_file_the_place_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let d = deep(dir.path(), "deep.json");
    let expected = "expected JSON nested at most 128 levels (a fixed limit)";
    let (code, err) = refundsim_err(&["run", &d]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error: {d}:1:128: {NESTING}: {expected}")
    );
    let (code, err) = refundsim_err(&["run", INCIDENT, "--policy", &d]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error: {d}:1:128: invalid policy: {NESTING}: {expected}")
    );
    let (code, err) = refundsim_err(&["lint", &d]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error: {d}:1:128: {NESTING}: {expected}")
    );
    // An import trace (JSON lines, detected) and a tool definition: the line, and the column.
    let out = dir.path().join("out.json");
    let out = out.to_str().unwrap();
    let (code, err) = refundsim_err(&["import", &d, "--out", out]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error: {d}:1: not JSON: {NESTING} at column 128: {expected}")
    );
    let obj = dir.path().join("deep-object.json");
    std::fs::write(
        &obj,
        "{\"tools\": [\n".to_string()
            + &"{\"a\":".repeat(200_000)
            + "1"
            + &"}".repeat(200_000)
            + "]}",
    )
    .unwrap();
    let obj = obj.display().to_string();
    let (code, err) = refundsim_err(&[
        "import",
        "tests/fixtures/import/ticket-48213.jsonl",
        "--tool-definition",
        &obj,
        "--out",
        out,
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!("error: {obj}:2: ")) && err.contains(NESTING),
        "{err}"
    );
    // An OTLP document over several lines: the line it happened on.
    let otlp = dir.path().join("deep.otlp.json");
    std::fs::write(
        &otlp,
        "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n".to_string()
            + &"[".repeat(200_000)
            + &"]".repeat(200_000)
            + "]}]}]}\n",
    )
    .unwrap();
    let otlp = otlp.display().to_string();
    let (code, err) = refundsim_err(&["import", &otlp, "--out", out]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!("error: {otlp}:2: ")) && err.contains(NESTING),
        "{err}"
    );
}
