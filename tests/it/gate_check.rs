//! `refundsim check`: exit codes, the table, violations with stories and replay commands,
//! JUnit XML parsed back, determinism across thread counts, bad input.

use crate::common;
use common::*;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Testsuites {
    #[serde(rename = "@tests")]
    tests: u32,
    #[serde(rename = "@failures")]
    failures: u32,
    #[serde(rename = "testsuite", default)]
    suites: Vec<Testsuite>,
}

#[derive(Debug, Deserialize)]
struct Testsuite {
    #[serde(rename = "@name")]
    name: String,
    #[serde(rename = "@tests")]
    tests: u32,
    #[serde(rename = "testcase", default)]
    cases: Vec<Testcase>,
}

#[derive(Debug, Deserialize)]
struct Testcase {
    #[serde(rename = "@classname")]
    classname: String,
    #[serde(rename = "@name")]
    name: String,
    failure: Option<Failure>,
}

#[derive(Debug, Deserialize)]
struct Failure {
    #[serde(rename = "@message")]
    message: String,
    #[serde(rename = "$text", default)]
    text: String,
}

/// A policy whose `expect` wants no duplicate on the incident: fails on seed 157 (43 of them).
const STRICT: &str = r#"{"expect":{"duplicate_refund_tickets":{"min":null,"violating_seeds_max":null,"mean_min":null,"max":0}}}"#;

fn temp_policy(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn shipped_scenarios_pass_bare_and_under_the_fixed_policy_with_junit() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let out = refundsim()
        .args([
            "check",
            "scenarios/",
            "--policy",
            "policies/fixed.json",
            "--seeds",
            "157",
            "--junit",
        ])
        .arg(&junit)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("carrier-outage (scenarios/carrier-outage.json) × no policy — seed 157 — ok"),
        "{text}"
    );
    assert!(text.contains("  duplicate_refund_tickets   ≥ 1 on ≥ 75% of seeds                    43            0/1  reproduced\n"), "{text}");
    assert!(
        text.ends_with("check ok: 2 scenario × policy cases, 2 passed, 0 failed\n"),
        "{text}"
    );

    let xml: Testsuites =
        quick_xml::de::from_str(&std::fs::read_to_string(&junit).unwrap()).unwrap();
    assert_eq!((xml.tests, xml.failures, xml.suites.len()), (2, 0, 1));
    let suite = &xml.suites[0];
    assert_eq!(
        (suite.name.as_str(), suite.tests),
        ("scenarios/carrier-outage.json", 2)
    );
    let names: Vec<&str> = suite.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "scenarios/carrier-outage.json × no policy",
            "scenarios/carrier-outage.json × policies/fixed.json"
        ]
    );
    assert!(suite
        .cases
        .iter()
        .all(|c| c.failure.is_none() && c.classname == "refundsim.check.carrier-outage"));
}

#[test]
fn a_failed_bound_exits_1_with_seed_rule_story_and_replay_in_text_and_junit() {
    let dir = tempfile::tempdir().unwrap();
    let policy = temp_policy(&dir, "strict.json", STRICT);
    let junit = dir.path().join("out.xml");
    let out = refundsim()
        .args([
            "check", INCIDENT, "--policy", &policy, "--seeds", "157", "--junit",
        ])
        .arg(&junit)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let replay =
        format!("refundsim run scenarios/carrier-outage.json --seed 157 --policy {policy}");
    assert!(
        text.contains("  FAILED duplicate_refund_tickets ≤ 0 per seed failed on 1 of 1 seed; worst seed 157: 43\n"),
        "{text}"
    );
    assert!(text.contains(&format!("    replay: {replay}\n")), "{text}");
    assert!(
        text.contains("    first offending ticket 49410 (replay with --ticket 49410):\n"),
        "{text}"
    );
    assert!(
        text.contains("check FAILED: 2 scenario × policy cases, 1 passed, 1 failed"),
        "{text}"
    );

    let xml: Testsuites =
        quick_xml::de::from_str(&std::fs::read_to_string(&junit).unwrap()).unwrap();
    assert_eq!((xml.tests, xml.failures), (2, 1));
    let cases = &xml.suites[0].cases;
    assert!(cases[0].failure.is_none());
    let f = cases[1].failure.as_ref().expect("the strict policy fails");
    assert_eq!(
        f.message,
        format!("duplicate_refund_tickets ≤ 0 per seed failed on 1 of 1 seed; worst seed 157: 43; replay: {replay}")
    );
    assert!(f.text.contains(&format!("replay: {replay}")), "{}", f.text);
    assert!(
        f.text.contains("first offending ticket 49410:"),
        "{}",
        f.text
    );
}

#[test]
fn aggregate_bounds_and_tolerated_fractions_over_seeds() {
    let dir = tempfile::tempdir().unwrap();
    // The incident over seeds 1..5: duplicates on every seed; their mean is far above 1.
    let policy = temp_policy(
        &dir,
        "mean.json",
        r#"{"expect":{"duplicate_refund_tickets":{"min":null,"violating_seeds_max":null,"mean_min":null,"mean_max":1}}}"#,
    );
    let out = refundsim()
        .args([
            "check", INCIDENT, "--policy", &policy, "--seeds", "1..5", "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let case = &v["cases"][1];
    assert_eq!(case["seeds"], serde_json::json!([1, 2, 3, 4, 5]));
    let mean = &case["checks"][0];
    assert_eq!(
        (mean["rule"].as_str(), mean["ok"].as_bool()),
        (Some("mean_max"), Some(false))
    );
    let runs: Vec<f64> = (1..=5)
        .map(|s| {
            run_json(&[INCIDENT, "--seed", &s.to_string()])["duplicate_refund_tickets"]
                .as_f64()
                .unwrap()
        })
        .collect();
    assert_eq!(
        mean["value"].as_f64().unwrap(),
        runs.iter().sum::<f64>() / 5.0
    );
    // The violation shows the worst seed.
    let worst = runs.iter().cloned().fold(f64::MIN, f64::max);
    assert_eq!(case["violations"][0]["value"].as_f64().unwrap(), worst);
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let run = |threads: &str| {
        refundsim()
            .env("RAYON_NUM_THREADS", threads)
            .args([
                "check",
                INCIDENT,
                "--policy",
                "policies/key-only.json",
                "--seeds",
                "1..6",
                "--json",
            ])
            .output()
            .unwrap()
            .stdout
    };
    let one = run("1");
    assert!(!one.is_empty());
    assert_eq!(one, run("3"));
}

#[test]
fn bad_input_exits_2_with_one_line_and_writes_no_junit() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("j.xml");
    let bad_policy = temp_policy(
        &dir,
        "bad.json",
        r#"{"expect":{"lost_refunds":{"max":0,"violating_seeds_max":2}}}"#,
    );
    let cases: Vec<(Vec<String>, String)> = vec![
        (vec!["/nonexistent/s.json".into()], "/nonexistent/s.json: no such file or directory".into()),
        (vec![INCIDENT.into(), "--seeds".into(), "9..3".into()], "--seeds 9..3: expected A ≤ B, got 9 > 3".into()),
        (
            vec![INCIDENT.into(), "--policy".into(), bad_policy.clone()],
            "expect.lost_refunds.violating_seeds_max: invalid value: expected a fraction of seeds in [0, 1], got 2".into(),
        ),
        (vec!["tests/fixtures".into()], "tests/fixtures: no scenario in this directory".into()),
    ];
    for (args, want) in cases {
        let out = refundsim()
            .arg("check")
            .args(&args)
            .arg("--junit")
            .arg(&junit)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&want), "{args:?}: {err}");
        assert!(!junit.exists());
    }
    // A JUnit path in a missing directory, or a directory: exit 2 before anything runs (no
    // report on stdout), nothing written.
    let here = dir.path().to_str().unwrap().to_string();
    for (path, want) in [
        (
            "/nonexistent/dir/j.xml".to_string(),
            "error: --junit /nonexistent/dir/j.xml: directory /nonexistent/dir does not exist\n"
                .to_string(),
        ),
        (
            here.clone(),
            format!("error: --junit {here}: is a directory; expected a file path\n"),
        ),
    ] {
        let out = refundsim()
            .args(["check", INCIDENT, "--junit", &path])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty(), "refused before the check runs");
        assert_eq!(String::from_utf8(out.stderr).unwrap(), want);
    }
}

/// A fix that only raises the executor's timeout to 9 s: still 8 duplicate tickets on seed 157.
const TIMEOUT_9S: &str = r#"{"executor":{"timeout":"9s"}}"#;

/// `check --json` on the scenario's own seed (157 for the incident) and without the gate's
/// exploration unless `args` name them: these tests pin one seed's values; the default seed set and the exploration have tests of
/// their own (`gate_defaults.rs`).
fn check_json(args: &[&str]) -> (i32, serde_json::Value) {
    let mut args = args.to_vec();
    if !args.contains(&"--seeds") {
        args.extend(["--seeds", "157"]);
    }
    if !args.contains(&"--explore-cases") {
        args.extend(["--explore-cases", "0"]);
    }
    command_json("check", &args)
}

/// Each check of a case as (metric, rule, ok).
fn rules(case: &serde_json::Value) -> Vec<(String, String, bool)> {
    case["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["metric"].as_str().unwrap().to_string(),
                k["rule"].as_str().unwrap().to_string(),
                k["ok"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_correct_fix_passes_on_the_safety_invariants_without_restating_expect() {
    // fixed.json's expect names only false_failures; the incident's "≥ 1 duplicate" is not
    // carried over, the safety invariants are the gate.
    // Seeds 2..4: the incident as written has duplicates on each (seed 1 has none).
    let (code, v) = check_json(&[
        "scenarios/",
        "--policy",
        "policies/fixed.json",
        "--seeds",
        "2..4",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["cases"][0]["expect_source"], "scenario");
    assert_eq!(v["cases"][1]["expect_source"], "policies");
    let max0 = |m: &str| (m.to_string(), "max".to_string(), true);
    assert_eq!(
        rules(&v["cases"][1]),
        vec![
            max0("conservation_violations"),
            max0("duplicate_refund_tickets"),
            max0("false_failures"),
            max0("lost_refunds"),
            max0("over_refund_cents"),
        ]
    );
}

#[test]
fn a_broken_fix_without_expect_fails_on_the_safety_invariants() {
    let dir = tempfile::tempdir().unwrap();
    let policy = temp_policy(&dir, "timeout-9s.json", TIMEOUT_9S);
    let (code, v) = check_json(&[INCIDENT, "--policy", &policy]);
    assert_eq!(code, 1);
    let case = &v["cases"][1];
    assert_eq!(case["expect_source"], "safety_invariants");
    let failed: Vec<(String, String, bool)> = rules(case).into_iter().filter(|r| !r.2).collect();
    assert_eq!(
        failed,
        vec![
            ("duplicate_refund_tickets".into(), "max".into(), false),
            ("over_refund_cents".into(), "max".into(), false),
        ]
    );
    assert_eq!(case["violations"][0]["value"], 8.0);
    // The incident as written still passes on its own expect.
    assert_eq!(v["cases"][0]["passed"], true);
}

#[test]
fn set_changes_the_scenario_like_a_policy_and_is_in_the_replay_command() {
    let out = refundsim()
        .args([
            "check",
            INCIDENT,
            "--set",
            "executor.timeout=9s",
            "--seeds",
            "157",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.starts_with("carrier-outage (scenarios/carrier-outage.json) × no policy --set executor.timeout=9s — seed 157 — FAILED\n  expect: the safety invariants"), "{text}");
    assert!(text.contains("    replay: refundsim run scenarios/carrier-outage.json --seed 157 --set executor.timeout=9s\n"), "{text}");
    // A per-ticket key alone removes the duplicates on seed 157: exit 0, with the key set on
    // the bare case and on the policy's.
    let (code, v) = check_json(&[
        INCIDENT,
        "--policy",
        "policies/timeout-15s-only.json",
        "--set",
        "refunds_service.idempotency_key=per_ticket",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["cases"][0]["sets"][0],
        "refunds_service.idempotency_key=per_ticket"
    );
    assert_eq!(v["cases"][0]["expect_source"], "safety_invariants");
    assert_eq!(v["cases"][1]["expect_source"], "policies");
    // A --set that only bounds the scenario's own expect keeps the scenario as written.
    let (code, v) = check_json(&[
        INCIDENT,
        "--set",
        "expect.duplicate_refund_tickets.mean_min=50",
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["cases"][0]["expect_source"], "scenario");
}

#[test]
fn a_bad_set_exits_2_and_names_the_set() {
    // (arg, how the one-line message starts and ends); the `--set` that set the failing field is
    // named first, and diff also names the policy applied before it.
    let cases = [
        (
            "refunds_service.pool_size=0",
            vec![
                "error: scenarios/carrier-outage.json: refunds_service.pool_size: invalid value: expected an integer ≥ 1, got 0 (after applying --set refunds_service.pool_size=0",
                ")\n",
            ],
        ),
        (
            "executor.timeout",
            vec!["error: --set executor.timeout: expected PATH=VALUE, e.g. executor.timeout=15s or refunds_service.pool_size=20\n"],
        ),
    ];
    for (set, want) in cases {
        for cmd in [
            vec!["check", INCIDENT, "--set", set, "--seeds", "157"],
            vec![
                "diff",
                INCIDENT,
                "--baseline",
                "policies/key-only.json",
                "--candidate",
                "policies/fixed.json",
                "--set",
                set,
            ],
        ] {
            let out = refundsim().args(&cmd).output().unwrap();
            let err = String::from_utf8(out.stderr).unwrap();
            assert_eq!(out.status.code(), Some(2), "{cmd:?}");
            assert!(out.stdout.is_empty(), "{cmd:?}");
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.starts_with(want[0]), "{cmd:?}: {err}");
            assert!(err.ends_with(want[want.len() - 1]), "{cmd:?}: {err}");
        }
    }
}

#[test]
fn latency_percentiles_are_expect_bounds() {
    let dir = tempfile::tempdir().unwrap();
    // Seed 157's p99 tool call is 8.3 s (docs/ci.md).
    let tight = temp_policy(
        &dir,
        "p99.json",
        r#"{"executor":{"timeout":"15s"},"expect":{"latency_tool_call_p99_ms":{"max":5000}}}"#,
    );
    let (code, v) = check_json(&[INCIDENT, "--policy", &tight]);
    assert_eq!(code, 1);
    let k = v["cases"][1]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["metric"] == "latency_tool_call_p99_ms")
        .unwrap()
        .clone();
    assert_eq!(k["ok"], false);
    let p99 = run_json(&[INCIDENT, "--policy", &tight])["latency"]["tool_call"]["p99_ms"]
        .as_f64()
        .unwrap();
    assert_eq!(k["value"].as_f64().unwrap(), p99);
    assert!(p99 > 5000.0, "{p99}");
    let loose = temp_policy(
        &dir,
        "p99-loose.json",
        &format!(
            r#"{{"executor":{{"timeout":"15s"}},"expect":{{"latency_tool_call_p99_ms":{{"max":{}}}}}}}"#,
            p99.ceil()
        ),
    );
    let (code, _) = check_json(&[INCIDENT, "--policy", &loose]);
    assert_eq!(code, 0);
}

/// Issue 32: a CI page says on how many of the seeds run a rule failed, the worst seed and its
/// value, in the same words in the text, the JUnit `message` and the summary line; an
/// aggregate rule says its mean instead of a count. The incident under a policy that wants no
/// duplicate and a mean of at most 1, on seeds 1..10: duplicates on 8 of them, most (137) on
/// seed 10; mean 57.2.
#[test]
fn ci_messages_say_k_of_n_seeds_and_the_worst_seed_with_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let policy = temp_policy(
        &dir,
        "strict-mean.json",
        r#"{"expect":{"duplicate_refund_tickets":{"min":null,"violating_seeds_max":null,"mean_min":null,"max":0,"mean_max":1}}}"#,
    );
    let junit = dir.path().join("out.xml");
    let out = refundsim()
        .args([
            "check",
            INCIDENT,
            "--policy",
            &policy,
            "--seeds",
            "1..10",
            "--explore-cases",
            "0",
            "--junit",
        ])
        .arg(&junit)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let per_seed =
        "duplicate_refund_tickets ≤ 0 per seed failed on 8 of 10 seeds; worst seed 10: 137";
    let mean =
        "duplicate_refund_tickets mean ≤ 1 failed: mean 57.2 over 10 seeds; worst seed 10: 137";
    assert!(text.contains(&format!("\n  FAILED {per_seed}\n")), "{text}");
    assert!(text.contains(&format!("\n  FAILED {mean}\n")), "{text}");
    assert!(
        text.ends_with(&format!(
            "check FAILED: 2 scenario × policy cases, 1 passed, 1 failed; first: \
             scenarios/carrier-outage.json × {policy}: {per_seed}\n"
        )),
        "{text}"
    );
    // The table's failing-seeds column agrees with the headline's count.
    assert!(
        text.lines()
            .any(|l| l.starts_with("  duplicate_refund_tickets") && l.ends_with(" 8/10  FAILED")),
        "{text}"
    );

    let xml: Testsuites =
        quick_xml::de::from_str(&std::fs::read_to_string(&junit).unwrap()).unwrap();
    let f = xml.suites[0].cases[1]
        .failure
        .as_ref()
        .expect("the policy fails");
    let replay = format!("refundsim run scenarios/carrier-outage.json --seed 10 --policy {policy}");
    assert_eq!(f.message, format!("{per_seed}; replay: {replay}"));
    assert!(f.message.contains(" of 10 seeds") && f.message.contains("worst seed 10: 137"));
    assert!(
        f.text.contains(&format!("{mean}\nreplay: {replay}\n")),
        "{}",
        f.text
    );
}
