//! Holes that remain even with the full fix, each a minimal scenario in `scenarios/findings/`,
//! and the mitigation that closes it (DESIGN §3; docs/findings.md).

use std::path::Path;

use refundsim::history::{EventKind, Keep, Outcome};
use refundsim::invariants::Metrics;
use refundsim::run::{run_keeping, RunOutput};
use refundsim::scenario::load;

fn run_finding(name: &str, sets: &[&str]) -> RunOutput {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/findings")
        .join(format!("{name}.json"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let sc = load(&path, &[], &sets).unwrap_or_else(|e| panic!("{e}"));
    run_keeping(&sc, sc.seed, &Default::default(), Keep::All)
}

fn metrics(name: &str, sets: &[&str]) -> Metrics {
    run_finding(name, sets).report.metrics
}

#[test]
fn retry_after_key_retention_expired_double_refunds_and_local_dedup_closes_it() {
    let m = metrics("key-retention-expired", &[]);
    assert_eq!((m.duplicate_refund_tickets, m.over_refund_cents), (1, 4200));
    assert_eq!(m.stripe_replays, 0, "the 25 h old key was not replayed");
    let fixed = metrics(
        "key-retention-expired",
        &["refunds_service.local_dedup=true"],
    );
    assert_eq!(
        (fixed.duplicate_refund_tickets, fixed.refunds_created),
        (0, 1)
    );
    // Within retention the same path is safe: the key replays the first refund.
    let within = metrics(
        "key-retention-expired",
        &["stripe.idempotency_key_retention=48h"],
    );
    assert_eq!(within.duplicate_refund_tickets, 0);
    assert_eq!(within.stripe_replays, 1);
}

#[test]
fn human_manual_refund_after_escalation_double_refunds_and_checking_first_closes_it() {
    let m = metrics("human-manual-refund", &[]);
    assert_eq!(
        (m.duplicate_refund_tickets, m.manual_refunds, m.escalations),
        (1, 1, 1)
    );
    let fixed = metrics("human-manual-refund", &["humans.check_probability=1"]);
    assert_eq!(
        (fixed.duplicate_refund_tickets, fixed.manual_refunds),
        (0, 0)
    );
}

fn attempt_outcomes(out: &RunOutput) -> Vec<(u32, Outcome)> {
    out.history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { outcome, .. } => Some((e.attempt.unwrap(), *outcome)),
            _ => None,
        })
        .collect()
}

#[test]
fn drifted_amount_under_the_same_key_is_shown_as_failure_and_lookup_closes_it() {
    let out = run_finding("drifted-amount-same-key", &[]);
    let m = &out.report.metrics;
    assert_eq!((m.stripe_400, m.escalations, m.refunds_created), (1, 1, 1));
    assert_eq!(
        attempt_outcomes(&out),
        vec![(0, Outcome::Fail), (1, Outcome::Fail)]
    );
    let fixed = run_finding(
        "drifted-amount-same-key",
        &["refunds_service.on_key_conflict=lookup"],
    );
    assert_eq!(fixed.report.metrics.escalations, 0);
    assert_eq!(
        attempt_outcomes(&fixed),
        vec![(0, Outcome::Fail), (1, Outcome::Ok)],
        "the retry is told the refund exists"
    );
}

#[test]
fn conflict_409_retried_under_a_new_key_double_refunds_and_lookup_closes_it() {
    let m = metrics("409-retried-under-new-key", &[]);
    assert_eq!(m.duplicate_refund_tickets, 1);
    // Each of the executor's 3 tries: an SDK timeout, then two SDK retries hit the in-flight key.
    assert_eq!(m.stripe_409, 6);
    let fixed = metrics(
        "409-retried-under-new-key",
        &["refunds_service.on_key_conflict=lookup"],
    );
    assert_eq!(
        (fixed.duplicate_refund_tickets, fixed.false_failures),
        (0, 0)
    );
    // Without the new-nonce bug the executor's retry reuses the key and is replayed.
    let same_key = metrics(
        "409-retried-under-new-key",
        &["refunds_service.new_nonce_after_error=false"],
    );
    assert_eq!(same_key.duplicate_refund_tickets, 0);
}

#[test]
fn zombie_queued_behind_a_saturated_pool_fools_a_checking_human_and_service_status_closes_it() {
    let m = metrics("zombie-behind-saturated-pool", &[]);
    assert_eq!(m.duplicate_refund_tickets, 1);
    assert_eq!(m.escalations, 2);
    let fixed = metrics(
        "zombie-behind-saturated-pool",
        &["humans.check_service_status=true"],
    );
    assert_eq!(
        (
            fixed.duplicate_refund_tickets,
            fixed.manual_refunds,
            fixed.lost_refunds
        ),
        (0, 0, 0)
    );
}

/// The naive status source (completed refunds only) answers `none` while the first request is
/// still at Stripe; the model's retry refunds again. A source that knows pending requests, or a
/// per-ticket key, closes it.
#[test]
fn naive_status_probe_lies_while_the_request_is_in_flight_and_a_ledger_source_closes_it() {
    let m = metrics("naive-status-probe", &[]);
    assert_eq!(
        (m.duplicate_refund_tickets, m.untruthful_probes, m.retries),
        (1, 2, 1)
    );
    let inv = |m: &Metrics, name: &str| {
        m.invariants
            .iter()
            .find(|i| i.name == name)
            .map(|i| i.holds)
            .unwrap()
    };
    assert!(!inv(&m, "truthful_probes") && !inv(&m, "unknown_not_shown_as_failure"));
    let ledger = metrics(
        "naive-status-probe",
        &["refunds_service.status_source=ledger"],
    );
    assert_eq!(
        (ledger.duplicate_refund_tickets, ledger.untruthful_probes),
        (0, 0)
    );
    let keyed = metrics(
        "naive-status-probe",
        &["refunds_service.idempotency_key=per_ticket"],
    );
    assert_eq!(keyed.duplicate_refund_tickets, 0);
    assert!(
        keyed.untruthful_probes > 0,
        "the key protects the money, not the probe's answer"
    );
}

/// The SDK times out before Stripe commits; recorded as failed, the ledger reads `none` and the
/// probe lies. Recorded as unknown, the probe answers `unknown` and the model is told not to
/// retry.
#[test]
fn probe_races_an_sdk_timeout_and_recording_it_as_unknown_closes_it() {
    let m = metrics("probe-races-sdk-timeout", &[]);
    assert_eq!(
        (
            m.duplicate_refund_tickets,
            m.untruthful_probes,
            m.stripe_no_response
        ),
        (1, 2, 2)
    );
    let out = run_finding(
        "probe-races-sdk-timeout",
        &["refunds_service.sdk_timeout_recorded_as=unknown"],
    );
    let fixed = &out.report.metrics;
    assert_eq!(
        (
            fixed.duplicate_refund_tickets,
            fixed.untruthful_probes,
            fixed.retries
        ),
        (0, 0, 0)
    );
    assert_eq!(
        attempt_outcomes(&out),
        vec![(0, Outcome::Info)],
        "told 'outcome unknown; do not retry'"
    );
}
