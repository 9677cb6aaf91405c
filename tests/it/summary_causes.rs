//! Issue 27, item 6: a summary that says why. `run` prints a cause line for each violated
//! invariant built from the run's own counts; an `expect` that asserts the incident reads
//! "reproduced", not "ok", in text, JSON and HTML; the HTML header names the policy applied.

use crate::common;
use common::*;

#[test]
fn the_incident_says_why_and_reads_reproduced_in_text_and_json() {
    let v = run_json(&[INCIDENT]);
    let causes = v["causes"].as_array().unwrap();
    let names: Vec<&str> = causes
        .iter()
        .map(|c| c["invariant"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "at_most_one_refund_per_ticket",
            "no_over_refund",
            "truthful_tool_results"
        ]
    );
    assert_eq!(
        causes[0]["text"],
        "43 tickets refunded more than once: 44 calls outlived the 8s executor timeout (pool \
         wait p99 7.9 s, pool of 3 saturated: up to 62 requests queued), each reported to the \
         model as failed; 43 retries followed; and no idempotency key let Stripe tell a retry \
         from a new refund"
    );
    assert_eq!(v["expectations"][0]["verdict"], "reproduced");
    let out = refundsim().args(["run", INCIDENT]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  expect duplicate_refund_tickets            43 reproduced (≥ 1)"),
        "{text}"
    );
    assert!(
        text.contains("  why no_over_refund                         $5,917.11 refunded beyond"),
        "{text}"
    );
}

#[test]
fn a_safe_run_has_no_cause_and_its_bounds_read_ok() {
    let v = run_json(&[INCIDENT, "--policy", "policies/keys-and-probe.json"]);
    assert!(v.get("causes").is_none(), "{}", v["causes"]);
    assert!(v["expectations"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["verdict"] == "ok"));
}

#[test]
fn a_per_ticket_key_and_a_human_refund_are_named_as_the_gap() {
    // explore's one-ticket counterexample of key-only: a committed 500, escalated, and a human
    // who refunds from the dashboard without checking.
    let dir = tempfile::tempdir().unwrap();
    let min = dir.path().join("min.json");
    let out = refundsim()
        .args([
            "explore",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
            "--out",
            min.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = run_json(&[min.to_str().unwrap()]);
    let text = v["causes"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("1 ticket refunded more than once: Stripe answered 2 requests with a 5xx"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "1 retry followed; humans issued 1 manual refund from the dashboard; and the per-ticket idempotency \
             key did not cover the humans' dashboard refunds"
        ),
        "{text}"
    );
}

#[test]
fn the_html_header_says_reproduced_names_the_policy_and_lists_the_causes() {
    let dir = tempfile::tempdir().unwrap();
    let page = |args: &[&str], name: &str| {
        let out = dir.path().join(name);
        let done = refundsim()
            .args(["report"])
            .args(args)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(done.status.code().is_some());
        std::fs::read_to_string(&out).unwrap()
    };
    let html = page(&[INCIDENT], "incident.html");
    assert!(
        html.contains("class=\"bad\" data-value=\"true\">incident reproduced (duplicate_refund_tickets)</span>"),
        "the header"
    );
    assert!(html.contains("<span id=\"shows-policy\">none (the scenario as written)</span>"));
    assert!(
        !html.contains("<p id=\"policy\">"),
        "said once, on the header's first line"
    );
    assert!(html.contains("<li data-invariant=\"at_most_one_refund_per_ticket\"><strong>at_most_one_refund_per_ticket</strong>: 43 tickets refunded more than once"));
    let html = page(
        &[INCIDENT, "--policy", "policies/keys-and-probe.json"],
        "fixed.html",
    );
    assert!(html.contains("<p id=\"policy\">policy: <code>policies/keys-and-probe.json</code> — The headline claim&#x27;s scope"));
    assert!(html.contains(">every expect bound holds</span>"));
    assert!(!html.contains("id=\"causes\""));
}
