//! The main job on the real incident: the numbers of `fixtures/incident-facts.md`.

use crate::common;
use common::*;

#[test]
fn incident_reproduces_the_write_up_numbers() {
    let r = run_json(&[INCIDENT]);
    assert_eq!(r["scenario"], "carrier-outage");
    assert_eq!(r["schema_version"], 2, "the report's format version");
    assert_eq!(r["seed"], 157, "the scenario's default seed");
    let dups = r["duplicate_refund_tickets"].as_u64().unwrap();
    assert!(
        (33..=49).contains(&dups),
        "41 ± 8 duplicate-refund tickets, got {dups}"
    );
    let over = r["over_refund_cents"].as_u64().unwrap();
    assert!(
        (450_000..=750_000).contains(&over),
        "$6,000 ± $1,500 over-refund, got {over} cents"
    );
    // Every duplicated ticket opened inside the 53-minute burst window.
    let phases = r["duplicates_by_phase"].as_object().unwrap();
    assert_eq!(phases.keys().collect::<Vec<_>>(), vec!["burst"]);
    assert_eq!(phases["burst"].as_u64().unwrap(), dups);
    // Every request a clean answer: no 5xx, no 409, no lost responses.
    assert_eq!(r["stripe_500"], 0);
    assert_eq!(r["stripe_409"], 0);
    assert_eq!(r["stripe_no_response"], 0);
    assert_eq!(r["conservation_violations"], 0);
    // At least one story has the incident's shape.
    assert!(!r["incident_shaped_tickets"].as_array().unwrap().is_empty());
    // Exactly the required top-level fields exist.
    for f in [
        "scenario",
        "seed",
        "tickets",
        "tool_calls",
        "executor_timeouts",
        "retries",
        "escalations",
        "refunds_created",
        "duplicate_refund_tickets",
        "extra_refunds",
        "over_refund_cents",
        "lost_refunds",
        "false_failures",
    ] {
        assert!(r.get(f).is_some(), "missing field {f}");
    }
    assert_eq!(r["expectations_met"], true);
}

#[test]
fn fixed_policy_removes_duplicates_lost_refunds_and_false_failures() {
    let r = run_json(&[INCIDENT, "--policy", "policies/fixed.json"]);
    assert_eq!(r["seed"], 157);
    assert_eq!(r["duplicate_refund_tickets"], 0);
    assert_eq!(r["lost_refunds"], 0);
    assert_eq!(r["false_failures"], 0);
    assert_eq!(r["over_refund_cents"], 0);
    assert_eq!(r["expectations_met"], true);
    let incident = run_json(&[INCIDENT]);
    assert_eq!(
        r["tickets"], incident["tickets"],
        "same seed, same tickets (common random numbers)"
    );
}

#[test]
fn incident_summary_and_story_snapshots() {
    let out = refundsim().args(["run", INCIDENT]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let summary = String::from_utf8(out.stdout).unwrap();
    insta::assert_snapshot!("incident_summary", summary);
    let r = run_json(&[INCIDENT]);
    let t = r["incident_shaped_tickets"][0]
        .as_u64()
        .unwrap()
        .to_string();
    let out = refundsim()
        .args(["run", INCIDENT, "--ticket", &t])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let story = text.split_once("\nticket ").map(|(_, s)| s).unwrap();
    insta::assert_snapshot!("incident_story", story);
}

/// Issue 32: `--story-only` prints the ticket's story alone (the same lines `--ticket` prints
/// after the summary), and exits as `run` does: 1 when an `expect` bound failed, said on
/// stderr since the summary is not printed.
#[test]
fn story_only_prints_the_story_alone_and_keeps_runs_exit_code() {
    let out = refundsim()
        .args(["run", INCIDENT, "--ticket", "49410"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let full = String::from_utf8(out.stdout).unwrap();
    let story = full.split_once("\nticket 49410:\n").unwrap().1;
    let out = refundsim()
        .args(["run", INCIDENT, "--ticket", "49410", "--story-only"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty());
    let only = String::from_utf8(out.stdout).unwrap();
    assert_eq!(only, story);
    assert!(
        only.starts_with("16:38:15.723  ticket opened (burst)"),
        "{only}"
    );
    assert_eq!(only.lines().count(), 14, "{only}");

    // A policy that wants no duplicate: `run` exits 1, and so does `--story-only`.
    let dir = tempfile::tempdir().unwrap();
    let strict = dir.path().join("strict.json");
    std::fs::write(&strict, r#"{"expect":{"duplicate_refund_tickets":{"min":null,"violating_seeds_max":null,"mean_min":null,"max":0}}}"#).unwrap();
    let strict = strict.to_str().unwrap();
    for story_only in [false, true] {
        let mut cmd = refundsim();
        cmd.args(["run", INCIDENT, "--policy", strict, "--ticket", "49410"]);
        if story_only {
            cmd.arg("--story-only");
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(1), "--story-only {story_only}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(
            err.contains("note: an expect bound or the replay check failed (exit 1)"),
            story_only,
            "{err}"
        );
    }

    // Usage: it needs --ticket, and --json has the story in its `story` field already.
    for args in [
        &["--story-only"][..],
        &["--story-only", "--ticket", "1", "--json"],
    ] {
        let out = refundsim()
            .args(["run", INCIDENT])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty());
    }
}

/// Issue 32: call numbers count the service's requests and refund ids Stripe's refunds, so
/// they drift apart (call #1910 makes `re_00001911`); each refund's line names the call that
/// made it, and a refund another call made is named with its maker where it shows up again.
#[test]
fn stories_name_the_call_that_made_each_refund() {
    let out = refundsim()
        .args(["run", INCIDENT, "--ticket", "49410", "--story-only"])
        .output()
        .unwrap();
    let story = String::from_utf8(out.stdout).unwrap();
    for want in [
        "16:38:23.932  stripe: refund re_00001911 created by call #1910, $58.34 succeeded (for the FIRST call)\n",
        "16:38:23.932  stripe: POST /v1/refunds for call #1910 → 200 created re_00001911\n",
        "16:38:27.308  stripe: refund re_00001923 created by call #1923, $58.34 succeeded (for the SECOND call)\n",
    ] {
        assert!(story.contains(want), "{want}\n{story}");
    }
    // Every refund created names its call, and that call's 200 carries the same refund id.
    for line in story.lines().filter(|l| l.contains(" created by call #")) {
        let id = line
            .split("refund ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        let call = line
            .split("by call #")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        assert!(
            story.contains(&format!(
                "POST /v1/refunds for call #{call} → 200 created {id}\n"
            )),
            "{line}\n{story}"
        );
    }
    // With a key, the retry's 200 replays the first call's refund: named with its maker.
    let out = refundsim()
        .args([
            "run",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
            "--ticket",
            "49417",
            "--story-only",
        ])
        .output()
        .unwrap();
    let story = String::from_utf8(out.stdout).unwrap();
    assert!(
        story.contains(
            "16:38:27.351  stripe: POST /v1/refunds for call #1925 → 200 replayed re_00001918 (made by call #1918)\n"
        ),
        "{story}"
    );
}
