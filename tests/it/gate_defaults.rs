//! Issue 27: the gate a user can trust by default. `check` without flags runs 30 seeds and a
//! bounded explore of every case that claims safety; `diff` fails an unsafe candidate that
//! claims safety and says why on its last line; expectations compose without exit 2; the
//! display-only `clock_origin` never switches the verdict. The candidates are the issue's own:
//! a 12 s and a 15 s timeout, no key.

use crate::common;
use common::*;

fn policy(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn stdout(args: &[&str]) -> (i32, String) {
    let out = refundsim().args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn a_12s_timeout_without_a_key_fails_on_the_default_seeds_with_counts_in_text_and_junit() {
    let dir = tempfile::tempdir().unwrap();
    let cand = policy(&dir, "cand.json", r#"{"executor":{"timeout":"12s"}}"#);
    let junit = dir.path().join("j.xml");
    let (code, text) = stdout(&[
        "check",
        INCIDENT,
        "--policy",
        &cand,
        "--explore-cases",
        "0",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains(" — seeds 1..30 (30) — FAILED\n"), "{text}");
    let line =
        "FAILED duplicate_refund_tickets ≤ 0 per seed failed on 4 of 30 seeds; worst seed 10: 28";
    assert!(text.contains(line), "{text}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(
        xml.contains(&format!(
            "message=\"duplicate_refund_tickets ≤ 0 per seed failed on 4 of 30 seeds; worst seed 10: 28; replay: refundsim run scenarios/carrier-outage.json --seed 10 --policy {cand}\""
        )),
        "{xml}"
    );
}

#[test]
fn a_15s_timeout_without_a_key_passes_the_seeds_and_fails_the_exploration() {
    let dir = tempfile::tempdir().unwrap();
    let cand = policy(&dir, "cand.json", r#"{"executor":{"timeout":"15s"}}"#);
    let (code, v) = command_json("check", &[INCIDENT, "--policy", &cand]);
    assert_eq!(code, 1);
    let case = &v["cases"][1];
    assert!(case["violations"].as_array().unwrap().is_empty(), "{case}");
    let e = &case["explore"];
    assert_eq!(
        (&e["ok"], &e["cases"], &e["found"]["invariant"]),
        (
            &serde_json::json!(false),
            &serde_json::json!(1024),
            &serde_json::json!("at_most_one_refund_per_ticket")
        )
    );
    assert_eq!(
        e["replay"],
        format!(
            "refundsim explore scenarios/carrier-outage.json --policy {cand} --cases 1024 --seed 1"
        )
    );
    // The minimal scenario is in the report and replays the violation.
    let minimal = dir.path().join("minimal.json");
    std::fs::write(&minimal, e["found"]["minimal"].to_string()).unwrap();
    let (code, _) = stdout(&["run", minimal.to_str().unwrap()]);
    assert_eq!(
        code, 1,
        "the minimal scenario breaks its safety bounds when run"
    );
    // `--explore-cases 0` is the seeds alone: the candidate passes them, as the issue found.
    let (code, _) = command_json(
        "check",
        &[INCIDENT, "--policy", &cand, "--explore-cases", "0"],
    );
    assert_eq!(code, 0);
}

#[test]
fn the_policy_that_closes_every_hole_passes_the_default_gate() {
    let (code, v) = command_json(
        "check",
        &[INCIDENT, "--policy", "policies/keys-and-probe.json"],
    );
    assert_eq!(code, 0, "{v}");
    let e = &v["cases"][1]["explore"];
    assert_eq!(
        (&e["ok"], &e["found"]),
        (&serde_json::json!(true), &serde_json::Value::Null)
    );
}

#[test]
fn an_asserted_hole_must_still_be_found() {
    // fixed.json asserts the hole the exploration finds (a committed 500, escalated, refunded
    // again by a human): check passes. Asserting it on keys-and-probe, which has no such hole,
    // fails and says the hole is closed.
    let (code, v) = command_json("check", &[INCIDENT, "--policy", "policies/fixed.json"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["cases"][1]["explore"]["expects"],
        "at_most_one_refund_per_ticket"
    );
    let (code, text) = stdout(&[
        "check",
        INCIDENT,
        "--policy",
        "policies/keys-and-probe.json",
        "--set",
        r#"exploration.finds="at_most_one_refund_per_ticket""#,
    ]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(
            "found nothing: the hole the policy asserts is closed; drop exploration.finds"
        ),
        "{text}"
    );
}

#[test]
fn a_recipe_fix_is_judged_within_the_recipes_exploration_bounds() {
    // Within its bounds (no invented faults, no added layers) the framework-retry fix is safe;
    // with the default bounds the exploration invents a fault that loses a refund.
    let recipe = "scenarios/recipes/framework-retry-middleware.json";
    let fix = "policies/recipes/framework-retry-middleware.fix.json";
    let (code, _) = command_json("check", &[recipe, "--policy", fix]);
    assert_eq!(code, 0);
    let (code, v) = command_json(
        "check",
        &[
            recipe,
            "--policy",
            fix,
            "--set",
            "exploration.fault_probability_max=0.5",
            "--set",
            "exploration.add_layers=true",
        ],
    );
    assert_eq!(code, 1);
    // Widening the exploration does not change which `expect` applies.
    assert_eq!(v["cases"][1]["expect_source"], "safety_invariants");
    assert_eq!(v["cases"][1]["explore"]["ok"], false);
}

#[test]
fn diff_fails_an_unsafe_candidate_and_says_why_on_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let none = policy(&dir, "none.json", "{}");
    let cand = policy(&dir, "cand.json", r#"{"executor":{"timeout":"12s"}}"#);
    let args = [INCIDENT, "--baseline", &none, "--candidate", &cand];
    let (code, text) = stdout(&[&["diff"][..], &args[..]].concat());
    assert_eq!(code, 1, "{text}");
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("diff FAILED: scenarios/carrier-outage.json: candidate unsafe: duplicate_refund_tickets ≤ 0 failed on 4 of 30 seeds; worst seed 10: 28; explore (1024 cases, seed 1): at_most_one_refund_per_ticket violated"),
        "{last}"
    );
    // --allow-unsafe: the comparison alone (fewer duplicates than the incident) decides.
    let (code, text) = stdout(&[&["diff"][..], &args[..], &["--allow-unsafe"][..]].concat());
    assert_eq!(code, 0, "{text}");
    assert!(text.ends_with("\ndiff ok\n"), "{text}");
}

#[test]
fn removing_the_key_from_key_only_is_a_regression_not_bad_input() {
    // key-only with its key set back to the incident's `none`: the candidate is the incident as
    // written with key-only's bound. Its `mean_max` 5 replaces the incident's bound for that
    // metric instead of meeting `mean_min` 20 (exit 2 before); the diff reports the regression.
    let dir = tempfile::tempdir().unwrap();
    let x = policy(
        &dir,
        "x.json",
        r#"{"refunds_service":{"idempotency_key":"none"},"expect":{"duplicate_refund_tickets":{"mean_max":5},"over_refund_cents":null,"false_failures":{"min":1,"violating_seeds_max":0.25}}}"#,
    );
    let (code, text) = stdout(&[
        "diff",
        INCIDENT,
        "--baseline",
        "policies/key-only.json",
        "--candidate",
        &x,
    ]);
    assert_eq!(code, 1, "{text}");
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with(
            "diff FAILED: scenarios/carrier-outage.json: duplicate_refund_tickets mean difference"
        ),
        "{last}"
    );
}

#[test]
fn clock_origin_is_display_only_and_keeps_the_incidents_own_expect() {
    let (code, v) = command_json(
        "check",
        &[
            INCIDENT,
            "--set",
            r#"clock_origin="2024-05-14T10:00:00Z""#,
            "--seeds",
            "157",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["cases"][0]["expect_source"], "scenario");
    assert!(v["cases"][0].get("explore").is_none());
}

#[test]
fn a_candidate_cannot_change_the_gate_that_judges_it() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text, path) in [
        (
            "gate.json",
            "{\"executor\":{\"timeout\":\"15s\"},\n \"gate\":{\"explore_cases\":0}}",
            "gate.explore_cases",
        ),
        (
            "narrow.json",
            "{\"executor\":{\"timeout\":\"15s\"},\n \"exploration\":{\"max_tickets\":1}}",
            "exploration.max_tickets",
        ),
    ] {
        let p = policy(&dir, name, text);
        let out = refundsim()
            .args(["check", INCIDENT, "--policy", &p])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(&format!("{p}:2:")), "the line: {err}");
        assert!(
            err.contains(&format!(
                ": {path}: a policy is the candidate the gate judges and cannot change the gate"
            )),
            "{err}"
        );
    }
    // Turning the exploration off is the caller's choice, and the table says so.
    let cand = policy(&dir, "cand.json", r#"{"executor":{"timeout":"15s"}}"#);
    let (code, text) = stdout(&["check", INCIDENT, "--policy", &cand, "--explore-cases", "0"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("  explore: off (--explore-cases 0 or the scenario's gate.explore_cases 0): safety rests on the seeds alone\n"),
        "{text}"
    );
    let out = refundsim()
        .args(["check", INCIDENT, "--explore-cases", "100001"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn checks_last_line_names_the_first_failure() {
    let dir = tempfile::tempdir().unwrap();
    let cand = policy(&dir, "cand.json", r#"{"executor":{"timeout":"15s"}}"#);
    let (code, text) = stdout(&["check", INCIDENT, "--policy", &cand]);
    assert_eq!(code, 1);
    let last = text.lines().last().unwrap();
    assert_eq!(
        last,
        format!(
            "check FAILED: 2 scenario × policy cases, 1 passed, 1 failed; first: scenarios/carrier-outage.json × {cand}: explore (1024 cases, seed 1): at_most_one_refund_per_ticket violated (ticket 3) in a minimal world of 1 ticket"
        )
    );
}

#[test]
fn require_safe_explores_a_candidate_that_asserts_its_hole_and_seeds_follow_the_gate() {
    // fixed.json states its hole, so by default diff judges it by the comparison alone;
    // --require-safe explores it and fails it.
    let args = [
        "diff",
        INCIDENT,
        "--baseline",
        "policies/key-only.json",
        "--candidate",
        "policies/fixed.json",
    ];
    let (code, text) = stdout(&args);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("    not explored: its expect states what it leaves open (--require-safe explores it)\n"), "{text}");
    let (code, text) = stdout(&[&args[..], &["--require-safe"][..]].concat());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.lines().last().unwrap().contains(": candidate unsafe: explore (1024 cases, seed 1): at_most_one_refund_per_ticket violated"),
        "{text}"
    );
    // Without --seeds, diff runs the scenario's gate.seeds.
    let (_, v) = command_json(
        "diff",
        &[
            INCIDENT,
            "--baseline",
            "policies/key-only.json",
            "--candidate",
            "policies/fixed.json",
            "--set",
            "gate.seeds=5",
            "--explore-cases",
            "0",
        ],
    );
    assert_eq!(v["seeds"], "1..5");
}

#[test]
fn a_device_as_a_scenario_is_refused_by_the_size_cap_and_no_junit_survives_a_failed_stdout() {
    let out = refundsim()
        .args(["check", "/dev/zero", "--explore-cases", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("/dev/zero: more than the 16 MiB"), "{err}");
    if std::path::Path::new("/dev/full").exists() {
        let dir = tempfile::tempdir().unwrap();
        let junit = dir.path().join("j.xml");
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_refundsim"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["check", INCIDENT, "--seeds", "157", "--junit"])
            .arg(&junit)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(2));
        assert!(!junit.exists(), "a JUnit file left after exit 2");
    }
}

#[test]
fn a_policy_that_states_what_it_leaves_open_is_checked_over_its_seeds_and_not_explored() {
    // key-only allows duplicates on average (`mean_max` 5, no per-seed max) and drops the
    // over-refund bound: it claims no safety, so the gate checks its bounds over the seeds and
    // does not explore it (an exploration would find the humans' manual refunds it states).
    let (code, v) = command_json("check", &[INCIDENT, "--policy", "policies/key-only.json"]);
    assert_eq!(code, 0, "{v}");
    assert!(v["cases"][1].get("explore").is_none(), "{}", v["cases"][1]);
    assert!(v["cases"][1].get("explore_off").is_none());
    // A safety bound tolerated on some seeds is not a claim of safety either.
    let (_, v) = command_json(
        "check",
        &[
            INCIDENT,
            "--set",
            "executor.timeout=15s",
            "--set",
            "expect.lost_refunds.violating_seeds_max=0.1",
            "--seeds",
            "1..3",
        ],
    );
    assert!(v["cases"][0].get("explore").is_none(), "{}", v["cases"][0]);
}

#[test]
fn the_default_exploration_finds_the_humans_who_do_not_check_the_service() {
    // keys-and-probe with humans who check Stripe but not the service's status (the
    // zombie-behind-saturated-pool finding): 256 cases miss it, the default 1,024 find it.
    let args = [
        INCIDENT,
        "--policy",
        "policies/keys-and-probe.json",
        "--set",
        "humans.check_service_status=false",
    ];
    let (code, v) = command_json("check", &args);
    assert_eq!(code, 1, "{v}");
    let e = &v["cases"][1]["explore"];
    assert_eq!(
        e["found"]["invariant"], "at_most_one_refund_per_ticket",
        "{e}"
    );
    let (code, _) = command_json(
        "check",
        &[&args[..], &["--explore-cases", "256"][..]].concat(),
    );
    assert_eq!(code, 0, "256 cases miss it (why the default is 1,024)");
}
