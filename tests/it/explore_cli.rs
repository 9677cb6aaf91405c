//! `refundsim explore` as a user calls it: exit codes, a minimal scenario that `run` replays to
//! the same violation, and the same minimal scenario for the same seed.

use crate::common;
use common::*;
use predicates::prelude::*;

#[test]
fn explore_finds_shrinks_and_writes_a_replayable_minimal_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("min.json");
    let again = dir.path().join("again.json");
    let found = refundsim()
        .args([
            "explore",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
            "--seed",
            "3",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        found.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&found.stderr)
    );
    let text = String::from_utf8(found.stdout).unwrap();
    assert!(
        text.starts_with("violation: at_most_one_refund_per_ticket violated"),
        "{text}"
    );
    assert!(text.contains("replay: refundsim run"), "{text}");
    refundsim()
        .args([
            "explore",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
            "--seed",
            "3",
            "--out",
        ])
        .arg(&again)
        .assert()
        .code(1);
    let minimal = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        minimal,
        std::fs::read_to_string(&again).unwrap(),
        "same seed, same minimal scenario"
    );
    let v: serde_json::Value = serde_json::from_str(&minimal).unwrap();
    assert!(v["tie_break"].is_object(), "the interleaving is pinned");
    assert!(v["arrivals"]["tickets"].as_array().unwrap().len() <= 30);
    // `run` replays the violation: the safety expectations fail, exit 1.
    let r = run_json(&[out.to_str().unwrap()]);
    assert!(r["duplicate_refund_tickets"].as_u64().unwrap() >= 1);
    assert_eq!(r["expectations_met"], false);
}

#[test]
fn explore_reports_none_found_with_exit_0() {
    refundsim()
        .args([
            "explore",
            "scenarios/findings/tiny-world.json",
            "--policy",
            "policies/fixed.json",
        ])
        .args([
            "--set",
            "humans.check_probability=1",
            "--set",
            "humans.check_service_status=true",
        ])
        .args(["--cases", "64"])
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("no violation in 64 cases"));
}

#[test]
fn exhaustive_counts_schedules_and_rejects_big_worlds() {
    // Each request's lost response (30 % in the file) is a decision; without it, timing alone.
    for (faults, count) in [
        ("stripe.faults.response_lost_after_commit=0.3", 64),
        ("stripe.faults.response_lost_after_commit=0", 16),
    ] {
        refundsim()
            .args([
                "explore",
                "scenarios/findings/tiny-world.json",
                "--exhaustive",
                "--policy",
                "policies/fixed.json",
            ])
            .args([
                "--set",
                "humans.check_probability=1",
                "--set",
                "humans.check_service_status=true",
                "--set",
                faults,
            ])
            .assert()
            .code(0)
            .stdout(
                predicate::str::contains(format!("schedules checked: {count} (all)"))
                    .and(predicate::str::contains("no violation")),
            );
    }
    refundsim()
        .args([
            "explore",
            "scenarios/findings/tiny-world.json",
            "--exhaustive",
        ])
        .assert()
        .code(1)
        .stdout(predicate::str::contains(
            "violation: at_most_one_refund_per_ticket",
        ));
    refundsim()
        .args(["explore", INCIDENT, "--exhaustive"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--exhaustive needs a tiny world"));
    refundsim().args(["explore", "nope.json"]).assert().code(2);
    refundsim()
        .args(["explore", INCIDENT, "--epsilon", "soon"])
        .assert()
        .code(2);
}

#[test]
fn outputs_never_overwrite_inputs_and_bad_out_fails_before_searching() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("sc.json");
    std::fs::copy(INCIDENT, &sc).unwrap();
    let before = std::fs::read(&sc).unwrap();
    refundsim()
        .args(["explore"])
        .arg(&sc)
        .args(["--policy", "policies/key-only.json", "--out"])
        .arg(&sc)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("would overwrite the input"));
    refundsim()
        .args(["check"])
        .arg(&sc)
        .arg("--junit")
        .arg(&sc)
        .assert()
        .code(2);
    assert_eq!(
        std::fs::read(&sc).unwrap(),
        before,
        "the input is untouched"
    );
    refundsim()
        .args([
            "explore",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
            "--out",
        ])
        .arg(dir.path().join("missing/x.json"))
        .assert()
        .code(2)
        .stdout(predicate::str::is_empty())
        .stderr(predicate::str::contains("does not exist"));
    refundsim()
        .args(["explore", INCIDENT, "--cases", "0"])
        .assert()
        .code(2);
    refundsim()
        .args(["explore", INCIDENT, "--epsilon", "2m"])
        .assert()
        .code(2);
}

/// `explore` is what its flags say: proptest's `PROPTEST_*` environment variables (a CI job
/// may set them for the test suite) change neither the cases run nor the shrunk result.
#[test]
fn explore_ignores_proptest_environment_variables() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, env: &[(&str, &str)]| {
        let out = dir.path().join(name);
        let mut cmd = refundsim();
        cmd.args([
            "explore",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
            "--seed",
            "3",
            "--out",
        ])
        .arg(&out);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        (
            o.status.code(),
            o.stdout,
            std::fs::read(&out).unwrap_or_default(),
            o.stderr,
        )
    };
    let plain = run("a.json", &[]);
    let env = run(
        "b.json",
        &[
            ("PROPTEST_CASES", "1"),
            ("PROPTEST_MAX_SHRINK_ITERS", "1"),
            ("PROPTEST_MAX_SHRINK_TIME", "1"),
            ("PROPTEST_MAX_GLOBAL_REJECTS", "0"),
            ("PROPTEST_VERBOSE", "2"),
            ("PROPTEST_RNG_ALGORITHM", "xs"),
        ],
    );
    assert_eq!(
        plain.0,
        Some(1),
        "the search finds the key-only counterexample"
    );
    assert_eq!(plain.0, env.0);
    assert_eq!(
        String::from_utf8_lossy(&plain.1).replace("a.json", "X"),
        String::from_utf8_lossy(&env.1).replace("b.json", "X")
    );
    assert_eq!(plain.2, env.2, "the same minimal scenario");
    assert_eq!(
        String::from_utf8_lossy(&plain.3),
        String::from_utf8_lossy(&env.3),
        "PROPTEST_VERBOSE must not add output"
    );
}

/// A search that stops before it has seen everything says "inconclusive", never a bare
/// "no violation" (issue 13): exhaustive mode cut short by --max-schedules.
#[test]
fn a_search_cut_short_says_inconclusive() {
    let out = refundsim()
        .args([
            "explore",
            "scenarios/findings/tiny-world.json",
            "--policy",
            "policies/fixed.json",
            "--set",
            "humans.check_probability=1",
            "--set",
            "humans.check_service_status=true",
            "--exhaustive",
            "--max-schedules",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        "schedules checked: 2\ninconclusive: no violation in the first 2 schedules (stopped at --max-schedules), but not every schedule was visited\n"
    );
}
