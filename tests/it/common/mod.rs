//! Shared helpers for the integration tests: running the CLI ([`refundsim`], [`run_json`]) and,
//! in [`prop`], the property tests' proptest runners.
#![allow(dead_code)]

pub mod prop;

use assert_cmd::Command;

/// The `refundsim` binary, run from the crate root.
pub fn refundsim() -> Command {
    let mut c = Command::cargo_bin("refundsim").expect("binary built");
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// Runs `refundsim run ARGS --json` and parses the report.
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let out = refundsim()
        .arg("run")
        .args(args)
        .arg("--json")
        .output()
        .expect("runs");
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("valid JSON report")
}

pub const INCIDENT: &str = "scenarios/carrier-outage.json";
