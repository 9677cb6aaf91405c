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
