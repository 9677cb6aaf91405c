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
    assert!(text.contains("  duplicate_refund_tickets   ≥ 1 on ≥ 75% of seeds                    43            0/1  ok\n"), "{text}");
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
        .args(["check", INCIDENT, "--policy", &policy, "--junit"])
        .arg(&junit)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let replay =
        format!("refundsim run scenarios/carrier-outage.json --seed 157 --policy {policy}");
    assert!(
        text.contains("  FAILED duplicate_refund_tickets ≤ 0 per seed: seed 157 has 43\n"),
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
        format!("duplicate_refund_tickets ≤ 0 per seed failed on seed 157: {replay}")
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
    // A JUnit path in a missing directory: exit 2, nothing written.
    let out = refundsim()
        .args(["check", INCIDENT, "--junit", "/nonexistent/dir/j.xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "error: --junit /nonexistent/dir/j.xml: directory /nonexistent/dir does not exist\n"
    );
}
