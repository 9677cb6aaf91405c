//! Each invariant of DESIGN §3, checked at the end of every run: shown holding and shown broken
//! on small worlds whose answer is known.

use std::path::{Path, PathBuf};

use refundsim::invariants::Metrics;
use refundsim::run::run;
use refundsim::scenario::{load, load_str};

/// Three recorded tickets; Stripe takes a constant 500 ms; humans check the dashboard first.
/// `patch` is an RFC 7396 merge patch (an object) applied over that world.
fn small(patch: &str) -> Metrics {
    let mut world = serde_json::json!({
        "name": "small", "horizon": "1h",
        "arrivals": {"tickets": [
            {"id": 1, "opened_at": "0s", "amount_cents": 1000, "charge_amount_cents": 5000},
            {"id": 2, "opened_at": "0s", "amount_cents": 2000, "charge_amount_cents": 5000},
            {"id": 3, "opened_at": "1s", "amount_cents": 3000, "charge_amount_cents": 9000}]},
        "stripe": {"latency": {"p50": "500ms", "p99": "500ms"}},
        "humans": {"pickup_delay": {"p50": "10m", "p99": "10m"}, "check_probability": 1.0}
    });
    let patch: serde_json::Value =
        serde_json::from_str(&format!("{{{}}}", patch.trim_start_matches(','))).unwrap();
    json_patch::merge(&mut world, &patch);
    let sc = load_str(&world.to_string(), "small").unwrap_or_else(|e| panic!("{e}"));
    run(&sc, 1, &Default::default()).report.metrics
}

fn holds(m: &Metrics, name: &str) -> bool {
    m.invariants.iter().find(|i| i.name == name).unwrap().holds
}

#[test]
fn a_quiet_world_keeps_every_invariant() {
    let m = small("");
    assert_eq!((m.tickets, m.refunds_created, m.tool_calls), (3, 3, 3));
    assert!(m.invariants.iter().all(|i| i.holds), "{:?}", m.invariants);
}

#[test]
fn timeout_below_latency_without_key_breaks_safety_and_truthfulness() {
    // Every call takes 500 ms + 20 ms overhead > 400 ms timeout: both calls succeed.
    let m = small(r#","executor":{"timeout":"400ms"}"#);
    assert_eq!(m.duplicate_refund_tickets, 3);
    assert_eq!(m.extra_refunds, 3);
    assert_eq!(m.over_refund_cents, 6000);
    assert_eq!(
        m.false_failures, 6,
        "both calls of each ticket were told `fail` and both refunded"
    );
    assert!(!holds(&m, "at_most_one_refund_per_ticket") && !holds(&m, "no_over_refund"));
    assert!(!holds(&m, "truthful_tool_results"));
    assert!(holds(&m, "conservation"));
}

#[test]
fn per_ticket_key_and_probe_keep_safety_under_the_same_timeouts() {
    let m = small(
        r#","executor":{"timeout":"400ms","on_timeout":"probe_status","probe_interval":"100ms"},
           "refunds_service":{"idempotency_key":"per_ticket"},
           "agent":{"retry":{"applies_to":"idempotent_tools"}}"#,
    );
    assert_eq!(m.duplicate_refund_tickets, 0);
    assert_eq!(m.false_failures, 0);
    assert_eq!(m.executor_timeouts, 3);
    assert!(m.invariants.iter().all(|i| i.holds), "{:?}", m.invariants);
}

#[test]
fn amount_drift_on_retry_over_refunds() {
    let m = small(
        r#","executor":{"timeout":"400ms"},
           "agent":{"retry":{"amount_drift_probability":1.0,"amount_drift_cents":500}},
           "refunds_service":{"idempotency_key":"per_ticket"}"#,
    );
    // Same key, different amount: Stripe answers 400 idempotency_error; no second refund.
    assert_eq!(m.stripe_400, 3);
    assert_eq!(m.duplicate_refund_tickets, 0);
    let m = small(
        r#","executor":{"timeout":"400ms"},
           "agent":{"retry":{"amount_drift_probability":1.0,"amount_drift_cents":500}}"#,
    );
    assert_eq!(m.over_refund_cents, 1000 + 2000 + 3000 + 3 * 500);
}

#[test]
fn failed_refunds_with_nobody_to_escalate_to_are_lost() {
    let m = small(
        r#","stripe":{"latency":{"p50":"500ms","p99":"500ms"},"faults":{"refund_failed":1.0}},"humans":{"enabled":false}"#,
    );
    assert_eq!(m.refunds_created, 0);
    assert_eq!(m.lost_refunds, 3);
    assert!(!holds(&m, "no_lost_refund"));
}

#[test]
fn sdk_network_retries_reuse_one_key_so_a_lost_response_is_replayed() {
    let lost = r#","stripe":{"latency":{"p50":"500ms","p99":"500ms"},"faults":{"response_lost_after_commit":1.0}}"#;
    let with_sdk = small(&format!(
        r#"{lost},"refunds_service":{{"stripe_client":{{"max_network_retries":2}}}}"#
    ));
    assert_eq!(with_sdk.duplicate_refund_tickets, 0);
    assert_eq!(
        with_sdk.stripe_replays, 3,
        "the SDK's retry got the saved 200"
    );
    let without = small(lost);
    // No SDK retry: the service reports failure, the model retries once (any tool), and that
    // retry's response is lost too: two refunds per ticket, then an escalation.
    assert_eq!(without.duplicate_refund_tickets, 3);
    assert_eq!(without.escalations, 3);
}

#[test]
fn conservation_holds_on_every_shipped_scenario_and_policy() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut policies: Vec<Option<PathBuf>> = vec![None];
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("policies"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    policies.extend(files.into_iter().map(Some));
    for p in policies {
        let ps: Vec<PathBuf> = p.iter().cloned().collect();
        let sc = load(&dir.join("scenarios/carrier-outage.json"), &ps, &[]).unwrap();
        let m = run(&sc, 3, &Default::default()).report.metrics;
        assert_eq!(m.conservation_violations, 0, "{p:?}");
        assert_eq!(
            m.tickets,
            m.latency.tool_call.count as u64 - (m.tool_calls - m.tickets),
            "{p:?}: one response per request"
        );
    }
    // The layered recipes, bare and under their fixes: every request still gets one answer.
    for entry in std::fs::read_dir(dir.join("scenarios/recipes")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let fix = dir.join(format!("policies/recipes/{name}.fix.json"));
        for ps in [vec![], vec![fix]] {
            let sc = load(&path, &ps, &[]).unwrap();
            let m = run(&sc, 3, &Default::default()).report.metrics;
            assert_eq!(m.conservation_violations, 0, "{name} {ps:?}");
        }
    }
}

#[test]
fn reconciliation_alerts_once_per_duplicated_ticket_at_its_interval() {
    let m = small(
        r#","executor":{"timeout":"400ms"},"reconciliation":{"enabled":true,"interval":"10m"}"#,
    );
    assert_eq!(m.duplicate_refund_tickets, 3);
    assert_eq!(
        m.reconciliation_alerts, 3,
        "each ticket flagged once, though the job runs 6 times"
    );
    assert_eq!(m.first_alert_ns, Some(600_000_000_000));
    let lag = m.max_time_to_alert_ns.unwrap();
    assert!(
        lag > 590_000_000_000 && lag < 600_000_000_000,
        "duplicates ~2 s in, alert at 10 min: {lag}"
    );
    let off = small(r#","executor":{"timeout":"400ms"}"#);
    assert_eq!((off.reconciliation_alerts, off.first_alert_ns), (0, None));
}
