//! The status probe as a real call (`executor.probe`): its latency per probe, its own timeout,
//! how long the executor keeps probing, and what the model is shown at the end. On
//! `scenarios/findings/probe-races-sdk-timeout.json` (one ticket; the executor times out at
//! 2.024 s, and the SDK's timeout is recorded as an unknown outcome, so every probe answers
//! `unknown` unless it finds the refund).

use std::path::Path;

use refundsim::history::{EventKind, Keep, Outcome, TicketStatus};
use refundsim::run::{run_keeping, RunOutput};
use refundsim::scenario::load;

fn race(sets: &[&str]) -> RunOutput {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/findings/probe-races-sdk-timeout.json");
    let mut all = vec![
        "refunds_service.sdk_timeout_recorded_as=unknown".to_string(),
        "agent.retry.max_retries=0".to_string(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    let sc = load(&path, &[], &all).unwrap_or_else(|e| panic!("{e}"));
    run_keeping(&sc, sc.seed, &Default::default(), Keep::All)
}

/// (time in ms, answer, error) of every probe.
fn probes(out: &RunOutput) -> Vec<(f64, TicketStatus, Option<String>)> {
    out.history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Probe { status, error } => Some((
                e.t_ns.as_nanos() as f64 / 1e6,
                status.clone(),
                error.clone(),
            )),
            _ => None,
        })
        .collect()
}

/// When the executor's timeout fired, ms.
fn timed_out_at(out: &RunOutput) -> f64 {
    out.history
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::ExecutorTimeout { .. }))
        .map(|e| e.t_ns.as_nanos() as f64 / 1e6)
        .expect("the executor timed out")
}

/// (time in ms, outcome, text) of the tool results.
fn results(out: &RunOutput) -> Vec<(f64, Outcome, String)> {
    out.history
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult { outcome, shown, .. } => {
                Some((e.t_ns.as_nanos() as f64 / 1e6, *outcome, shown.clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn each_probe_draws_its_own_latency_and_probing_lasts_probe_max_wait() {
    let out = race(&[]);
    let p = probes(&out);
    // A probe every second (plus its latency) from 2.024 s until 30 s have passed, then one more.
    assert_eq!(p.len(), 30, "{p:?}");
    assert!(p
        .iter()
        .all(|(_, s, e)| *s == TicketStatus::Unknown && e.is_none()));
    // Each probe's latency is its own draw: the gaps between probes are not all equal.
    let gaps: Vec<i64> = p
        .windows(2)
        .map(|w| (w[1].0 - w[0].0).round() as i64)
        .collect();
    assert!(gaps.iter().any(|g| *g != gaps[0]), "{gaps:?}");
    assert!(gaps.iter().all(|g| (1000..1300).contains(g)), "{gaps:?}");
    // The last probe is the first at or after 30 s of probing; then the model is told.
    let r = results(&out);
    assert_eq!(r.len(), 1);
    let (at, outcome, shown) = &r[0];
    assert_eq!(*outcome, Outcome::Info);
    assert!(
        shown.contains("status: \"unknown\"") && shown.contains("do not retry"),
        "{shown}"
    );
    assert!(*at >= 2024.0 + 30_000.0 && *at < 2024.0 + 31_500.0, "{at}");
}

#[test]
fn a_pending_ticket_is_shown_as_pending_when_probing_ends() {
    // Stripe's 5 s call still in flight at the end of a 1 s probe wait: `pending`.
    let out = race(&[
        "refunds_service.stripe_client.timeout=30s",
        "executor.probe_max_wait=1s",
    ]);
    assert!(probes(&out)
        .iter()
        .all(|(_, s, _)| *s == TicketStatus::Pending));
    let (_, outcome, shown) = &results(&out)[0];
    assert_eq!(*outcome, Outcome::Info);
    assert!(shown.contains("status: \"pending\""), "{shown}");
}

#[test]
fn a_probe_slower_than_its_timeout_is_unknown_at_the_timeout_and_one_as_slow_answers() {
    let at_limit = |latency: &str| {
        race(&[
            &format!(r#"executor.probe.latency={{"kind":"constant","value":"{latency}"}}"#),
            "executor.probe.timeout=2s",
            "executor.probe_max_wait=0s",
            "refunds_service.stripe_client.timeout=30s",
        ])
    };
    // Slower than the timeout: given up on exactly 2 s after the executor's timeout, `unknown`
    // with the reason.
    let out = at_limit("3s");
    let slow = probes(&out);
    assert_eq!(slow.len(), 1);
    assert_eq!((slow[0].0 - timed_out_at(&out)).round(), 2000.0);
    assert_eq!(slow[0].1, TicketStatus::Unknown);
    assert_eq!(slow[0].2.as_deref(), Some("timeout after 2000ms"));
    // Exactly as slow as the timeout: the answer arrives in time.
    let out = at_limit("2s");
    let exact = probes(&out);
    assert_eq!(exact.len(), 1);
    assert_eq!((exact[0].0 - timed_out_at(&out)).round(), 2000.0);
    assert_eq!(
        (exact[0].1.clone(), exact[0].2.clone()),
        (TicketStatus::Pending, None)
    );
}

#[test]
fn a_failing_probe_is_unknown_with_the_services_answer() {
    let out = race(&[
        "executor.probe.error_probability=1",
        "executor.probe_max_wait=0s",
        "refunds_service.stripe_client.timeout=30s",
    ]);
    let p = probes(&out);
    assert_eq!(p.len(), 1);
    assert_eq!(
        (p[0].1.clone(), p[0].2.as_deref()),
        (TicketStatus::Unknown, Some("get_status answered 503"))
    );
}
