//! The trace's bytes pinned by SHA-256 digest, so that a platform (macOS, another libm, another
//! CPU) that drew a different number anywhere in a run fails here, not silently. The GitHub
//! Actions workflow `.github/workflows/ci.yml` runs this module and `pinned_outcomes` on Linux
//! and macOS.
//!
//! The digests are in `tests/pinned/trace-digests.txt`, one line per run: `NAME SHA256`. A change
//! that moves the trace on purpose re-blesses with
//! `REFUNDSIM_BLESS=1 cargo test --test it trace_digest` and says why in `CHANGELOG.md`.

use crate::common::*;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::path::Path;

/// The runs whose traces are pinned: (name, scenario, further arguments of `run`).
const RUNS: &[(&str, &str, &[&str])] = &[
    ("incident-seed157", INCIDENT, &[]),
    ("incident-seed3", INCIDENT, &["--seed", "3"]),
    (
        "incident-fixed-seed157",
        INCIDENT,
        &["--policy", "policies/fixed.json"],
    ),
    (
        "recipe-provider-dedup-window",
        "scenarios/recipes/provider-dedup-window.json",
        &[],
    ),
];

fn digest_of(name: &str, scenario: &str, args: &[&str], dir: &Path) -> String {
    let trace = dir.join(format!("{name}.jsonl"));
    let out = refundsim()
        .args(["run", scenario])
        .args(args)
        .arg("--trace")
        .arg(&trace)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{name}: refundsim run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&trace).unwrap();
    assert!(
        bytes.len() > 10_000,
        "{name}: trace is only {} bytes",
        bytes.len()
    );
    let mut hex = String::new();
    for b in Sha256::digest(&bytes) {
        write!(hex, "{b:02x}").unwrap();
    }
    hex
}

#[test]
fn traces_are_byte_identical_to_the_pinned_digests() {
    let dir = tempfile::tempdir().unwrap();
    let got: String = RUNS
        .iter()
        .map(|(name, scenario, args)| {
            format!("{name} {}\n", digest_of(name, scenario, args, dir.path()))
        })
        .collect();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pinned/trace-digests.txt");
    if std::env::var_os("REFUNDSIM_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        want, got,
        "a trace moved: pinned digests (left) vs this machine (right)"
    );
}
