//! Shared helpers for the integration tests: running the CLI ([`refundsim`], [`run_json`]) and,
//! in [`prop`], the property tests' proptest runners.
#![allow(dead_code)]

pub mod prop;
pub mod worlds;

use assert_cmd::Command;

/// The `refundsim` binary, run from the crate root.
pub fn refundsim() -> Command {
    let mut c = Command::cargo_bin("refundsim").expect("binary built");
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Runs `refundsim COMMAND ARGS --json`: the exit code (0 or 1; anything else fails the test
/// with stderr) and the parsed report.
pub fn command_json(command: &str, args: &[&str]) -> (i32, serde_json::Value) {
    let out = refundsim()
        .arg(command)
        .args(args)
        .arg("--json")
        .output()
        .expect("runs");
    let code = out.status.code().unwrap_or(-1);
    assert!(
        (0..=1).contains(&code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_slice(&out.stdout).expect("valid JSON report");
    (code, report)
}

/// Runs `refundsim ARGS`, asserts it refused the input (exit 2) and that its error contains
/// `message`; returns the error.
pub fn refused(args: &[&str], message: &str) -> String {
    let out = refundsim().args(args).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(message),
        "{args:?}: expected {message:?} in: {err}"
    );
    err
}

/// Runs `refundsim run ARGS --json` and parses the report.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    command_json("run", args).1
}

/// Runs `refundsim run ARGS --trace FILE` (exit 0 or 1; anything else fails the test) and
/// returns the trace's events, one JSON value per line.
pub fn run_trace(args: &[&str]) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().expect("temp dir");
    let t = dir.path().join("t.jsonl");
    let out = refundsim()
        .arg("run")
        .args(args)
        .arg("--trace")
        .arg(&t)
        .output()
        .expect("runs");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    std::fs::read_to_string(&t)
        .expect("trace written")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON event per line"))
        .collect()
}

pub const INCIDENT: &str = "scenarios/carrier-outage.json";
