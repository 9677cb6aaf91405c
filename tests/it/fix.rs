//! `refundsim fix` (issue 31 item 3): the answer is verified by the gate itself (`check` and
//! `explore` on the written patch), on the incident it finds that a key alone leaves the
//! humans' duplicates, on recipes it changes no more fields than the recipe's own fix, and bad
//! input is refused with exit 2 and no file.

use std::path::Path;

use serde_json::Value;

use crate::common::{refundsim, refused};

/// Leaf fields a merge patch sets (`$comment`, `description`, `expect`, `exploration` aside).
fn fields(patch: &Value) -> usize {
    fn leaves(v: &Value) -> usize {
        match v {
            Value::Object(m) if !m.is_empty() => m.values().map(leaves).sum(),
            _ => 1,
        }
    }
    patch
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| {
            !["$comment", "description", "expect", "exploration"].contains(&k.as_str())
        })
        .map(|(_, v)| leaves(v))
        .sum()
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Runs `fix ARGS --out OUT --json`, asserting exit 0, and returns the report.
fn fix(args: &[&str], out: &Path) -> Value {
    let o = refundsim()
        .arg("fix")
        .args(args)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The gate on the written patch: `check` (seeds and its exploration) and `explore`.
fn gate_accepts(scenario: &str, patch: &Path, seeds: &str) {
    let check = refundsim()
        .args(["check", scenario, "--seeds", seeds, "--policy"])
        .arg(patch)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(0), "check: {text}");
    assert!(text.contains("explore ("), "the gate explored: {text}");
    let dir = tempfile::tempdir().unwrap();
    let explore = refundsim()
        .args(["explore", scenario, "--cases", "256", "--policy"])
        .arg(patch)
        .arg("--out")
        .arg(dir.path().join("min.json"))
        .output()
        .unwrap();
    assert_eq!(
        explore.status.code(),
        Some(0),
        "explore: {}",
        String::from_utf8_lossy(&explore.stdout)
    );
}

#[test]
fn on_the_incident_a_key_alone_leaves_the_humans_duplicates_and_the_answer_closes_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fix.json");
    // Seeds 1..10 (the gate's 30 take longer here; CI runs the defaults in release).
    let r = fix(
        &[
            "scenarios/carrier-outage.json",
            "--seeds",
            "1..10",
            "--alternatives",
            "0",
        ],
        &out,
    );
    let answer = &r["fix"];
    let patch = read(&out);
    assert_eq!(&patch, &answer["patch"]);
    let fixed = read(Path::new("policies/fixed.json"));
    assert!(
        fields(&patch) < fields(&fixed),
        "{} fields, policies/fixed.json changes {}",
        fields(&patch),
        fields(&fixed)
    );
    assert_eq!(
        patch["refunds_service"]["idempotency_key"], "per_ticket",
        "{patch}"
    );
    // The path went through the key alone, which still duplicates on seeds 3, 4, 5, 9, 10
    // (1 to 17 per seed), because the ticket is escalated and a human refunds again.
    let path: Vec<u64> = answer["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let key_only = path
        .iter()
        .map(|&i| &r["tried"][i as usize])
        .find(|t| {
            t["changes"] == serde_json::json!(["refunds_service.idempotency_key=\"per_ticket\""])
        })
        .expect("the key alone is a step of the answer's path");
    let summary = key_only["summary"].as_str().unwrap();
    assert!(
        summary.contains("duplicate_refund_tickets on 5/10 seeds")
            && summary.contains("seeds 3, 4, 5, 9, 10"),
        "{summary}"
    );
    assert!(
        summary.contains("a human refunded from the dashboard"),
        "{summary}"
    );
    let story = key_only["story"].as_array().unwrap();
    assert!(
        story.iter().any(|l| l
            .as_str()
            .unwrap()
            .contains("manual refund from the dashboard")),
        "{story:?}"
    );
    assert_eq!(answer["evidence"]["passed"], true);
    gate_accepts("scenarios/carrier-outage.json", &out, "1..10");
}

#[test]
fn on_recipes_the_answer_passes_the_gate_and_changes_no_more_than_the_recipes_fix() {
    // A few recipes of different layers here; `.ci/run` runs every recipe.
    for name in [
        "egress-proxy-connect-failure",
        "framework-retry-middleware",
        "provider-business-id-dedup",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("fix.json");
        let scenario = format!("scenarios/recipes/{name}.json");
        let r = fix(&[&scenario, "--alternatives", "0"], &out);
        assert!(r["fix"].is_object(), "{name}: {r}");
        let own = read(Path::new(&format!("policies/recipes/{name}.fix.json")));
        let patch = read(&out);
        assert!(
            fields(&patch) <= fields(&own).max(1),
            "{name}: {patch} against {own}"
        );
        gate_accepts(&scenario, &out, "1..30");
    }
}

#[test]
fn the_same_inputs_give_the_same_report_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let run = |n: &str| {
        refundsim()
            .args([
                "fix",
                "scenarios/recipes/hedged-requests.json",
                "--json",
                "--out",
            ])
            .arg(dir.path().join(n))
            .output()
            .unwrap()
            .stdout
    };
    let (a, b) = (run("a.json"), run("b.json"));
    assert!(!a.is_empty());
    assert_eq!(a, b);
    assert_eq!(
        std::fs::read(dir.path().join("a.json")).unwrap(),
        std::fs::read(dir.path().join("b.json")).unwrap()
    );
}

#[test]
fn a_scenario_that_already_holds_has_nothing_to_fix_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fix.json");
    let o = refundsim()
        .args([
            "fix",
            "scenarios/recipes/hedged-requests.json",
            "--policy",
            "policies/recipes/hedged-requests.fix.json",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("nothing to fix"), "{text}");
    assert!(!out.exists());
}

#[test]
fn cost_weights_reorder_the_answers() {
    // Without weights the cheapest answer for the hedge recipe is one field; a heavy weight on
    // that field makes another answer cheaper.
    let dir = tempfile::tempdir().unwrap();
    let plain = fix(
        &[
            "scenarios/recipes/hedged-requests.json",
            "--alternatives",
            "1",
        ],
        &dir.path().join("a.json"),
    );
    let first = plain["fix"]["changes"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    let weighted = fix(
        &[
            "scenarios/recipes/hedged-requests.json",
            "--alternatives",
            "1",
            "--cost",
            &format!("{first}=5"),
        ],
        &dir.path().join("b.json"),
    );
    let paths: Vec<&str> = weighted["fix"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(
        !paths.contains(&first.as_str()),
        "{first} still in {paths:?}"
    );
    assert!(weighted["fix"]["cost"].as_f64().unwrap() < 6.0);
}

#[test]
fn bad_input_is_refused_with_exit_2_and_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fix.json");
    let o = out.to_str().unwrap();
    let sc = "scenarios/recipes/hedged-requests.json";
    refused(
        &["fix", sc, "--out", o, "--cost", "nonsense"],
        "--cost nonsense: expected FIELD=WEIGHT",
    );
    refused(&["fix", sc, "--out", o, "--cost", "pool=1"], "not a metric");
    refused(
        &[
            "fix",
            sc,
            "--out",
            o,
            "--cost",
            "refunds_service.pool_size=-1",
        ],
        "a number ≥ 0",
    );
    refused(&["fix", "no/such.json", "--out", o], "no/such.json");
    refused(
        &["fix", sc, "--out", o, "--set", "executor.timeout=soon"],
        "executor.timeout",
    );
    refused(&["fix", sc, "--out", sc], "--out");
    refused(&["fix", sc], "--out");
    assert!(!out.exists());
}
