//! Counterfactuals of a recording answer the same whatever format it came in, and never invert
//! (issue 26, item 4): a policy's key replaces the recorded keys (and says so), a pool
//! counterfactual keeps the recorded traffic that filled the pool.

use crate::common::{command_json, refundsim, INCIDENT};

/// Ticket 48213's story in the incident's log, OTLP and JSON lines (the last two with the
/// refund export).
const RECORDINGS: [&[&str]; 3] = [
    &["tests/fixtures/incident/incident-trace-ticket-48213.log"],
    &[
        "tests/fixtures/import/ticket-48213.otlp.json",
        "tests/fixtures/import/ticket-48213.refunds.csv",
    ],
    &[
        "tests/fixtures/import/ticket-48213.jsonl",
        "tests/fixtures/import/ticket-48213.refunds.csv",
    ],
];

/// (refunds, tool calls) of the counterfactual of `files` under `extra` arguments.
fn counterfactual(files: &[&str], extra: &[&str]) -> (u64, u64) {
    let mut args: Vec<&str> = files.to_vec();
    args.extend(["--base", INCIDENT]);
    args.extend(extra);
    let (code, v) = command_json("replay", &args);
    assert_eq!(code, 0, "{files:?} {extra:?}: {v:#}");
    let t = &v["comparison"]["tickets"][0];
    (
        t["replayed_refunds"].as_u64().unwrap(),
        t["replayed_tool_calls"].as_u64().unwrap(),
    )
}

#[test]
fn every_single_fix_gives_the_same_answer_in_every_format() {
    for policy in [
        "policies/key-only.json",
        "policies/probe-only.json",
        "policies/idempotent-retries-only.json",
        "policies/timeout-15s-only.json",
        "policies/pool-resize-only.json",
        "policies/fixed.json",
    ] {
        let answers: Vec<(u64, u64)> = RECORDINGS
            .iter()
            .map(|files| counterfactual(files, &["--policy", policy]))
            .collect();
        assert!(
            answers.windows(2).all(|w| w[0] == w[1]),
            "{policy}: log, OTLP, JSON lines gave {answers:?}"
        );
        // Each fix alone refunds the ticket once.
        assert_eq!(answers[0].0, 1, "{policy}: {answers:?}");
    }
}

#[test]
fn a_policys_key_replaces_a_key_recorded_as_absent_and_says_so() {
    // The JSON lines record `"idempotency_key": null` (no key sent).
    let out = refundsim()
        .args([
            "replay",
            "tests/fixtures/import/ticket-48213.jsonl",
            "--base",
            INCIDENT,
            "--policy",
            "policies/key-only.json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "Idempotency-Key: the policy's refunds_service.idempotency_key = per_ticket replaces \
             the recording's (imported under none; of 2 recorded requests, 0 recorded a key, 2 \
             recorded none, 0 did not say)"
        ),
        "{text}"
    );
    // An exact replay replaces nothing.
    let (_, v) = command_json(
        "replay",
        &[
            "tests/fixtures/import/ticket-48213.jsonl",
            "--base",
            INCIDENT,
        ],
    );
    assert_eq!(v["comparison"]["replaced"], serde_json::json!([]));
}

#[test]
fn a_bigger_pool_never_adds_a_refund_and_a_smaller_one_never_removes_one() {
    let t7 = ["tests/fixtures/import/standard/ticket-T-7.otlp.json"];
    let mut previous = u64::MAX;
    for pool in 3..=12 {
        let set = format!("refunds_service.pool_size={pool}");
        let (refunds, _) = counterfactual(&t7, &["--set", &set]);
        assert!(
            refunds <= previous,
            "pool {pool}: {refunds} refunds after {previous}"
        );
        previous = refunds;
    }
    // The recorded pool (3) keeps the duplicate; a much bigger one removes it.
    assert_eq!(
        counterfactual(&t7, &["--set", "refunds_service.pool_size=3"]).0,
        2
    );
    assert_eq!(
        counterfactual(&t7, &["--set", "refunds_service.pool_size=12"]).0,
        1
    );
}

#[test]
fn a_pool_too_small_for_the_recorded_load_is_refused_with_the_numbers() {
    let out = refundsim()
        .args([
            "replay",
            "tests/fixtures/import/standard/ticket-T-7.otlp.json",
            "--base",
            INCIDENT,
            "--set",
            "refunds_service.pool_size=2",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refunds_service.pool_size: expected more than")
            && err.contains("which 2 connections cannot carry"),
        "{err}"
    );
}
