//! Streaming history: metrics computed online with tickets evicted as they close equal the
//! metrics computed offline from the whole history; memory (open tickets, held state) stays
//! flat in the horizon; a story from a filtered re-run equals the story from the whole history.

use crate::common;
use common::*;

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use refundsim::history::{Event, EventKind, Keep, Observer};
use refundsim::invariants::{evaluate_under, EvalRules};
use refundsim::model::{simulate, simulate_observed};
use refundsim::report::{incident_shaped, story};
use refundsim::run::{run, run_keeping, story_of};
use refundsim::scenario::{load, load_str};
use refundsim::sim::Sim;

fn every_scenario() -> Vec<(PathBuf, Vec<PathBuf>)> {
    let mut out = vec![
        (PathBuf::from(INCIDENT), vec![]),
        (
            PathBuf::from(INCIDENT),
            vec![PathBuf::from("policies/fixed.json")],
        ),
    ];
    for dir in ["scenarios/findings", "scenarios/recipes"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        out.extend(files.into_iter().map(|f| (f, vec![])));
    }
    out
}

#[test]
fn online_metrics_with_eviction_equal_offline_metrics_of_the_whole_history() {
    let mut compared = 0;
    let mut with_duplicates = 0;
    for (path, policies) in every_scenario() {
        let sc = load(&path, &policies, &[]).unwrap();
        for seed in [sc.seed, 1, 2] {
            let online = run(&sc, seed, &Default::default());
            let sim = simulate(&sc, seed);
            let offline = evaluate_under(&sim.history, &sim.gauges, EvalRules::of(&sc));
            assert_eq!(
                online.report.metrics,
                offline,
                "{} seed {seed}: online and offline metrics differ",
                path.display()
            );
            assert_eq!(
                online.report.incident_shaped_tickets,
                incident_shaped(&sim.history),
                "{} seed {seed}",
                path.display()
            );
            assert!(online.history.events.is_empty(), "run keeps no event");
            compared += 1;
            with_duplicates += usize::from(offline.duplicate_refund_tickets > 0);
        }
    }
    assert!(
        compared >= 40 && with_duplicates >= 10,
        "{compared} runs, {with_duplicates} with duplicates"
    );
}

/// Counts tickets opened and closed, and the most open at once.
#[derive(Default)]
struct OpenTickets {
    open: std::collections::BTreeSet<u64>,
    closed: std::collections::BTreeSet<u64>,
    max_open: usize,
    late_events: u64,
    opened: u64,
}

impl Observer for OpenTickets {
    fn event(&mut self, e: Event) {
        if let EventKind::TicketOpened { .. } = e.kind {
            self.open.insert(e.ticket.unwrap());
            self.opened += 1;
            self.max_open = self.max_open.max(self.open.len());
        }
        if e.ticket.is_some_and(|t| self.closed.contains(&t)) {
            self.late_events += 1;
        }
    }
    fn ticket_closed(&mut self, id: u64) {
        assert!(
            self.open.remove(&id),
            "ticket {id} closed twice or never opened"
        );
        self.closed.insert(id);
    }
}

#[test]
fn tickets_close_as_they_finish_so_open_state_is_flat_in_the_horizon() {
    // 12 hours at 0.5 tickets/s with the incident's policy, humans and hourly reconciliation.
    let sc = load(
        Path::new(INCIDENT),
        &[],
        &[
            r#"horizon="12h""#.into(),
            r#"arrivals.schedule=[{"duration":"12h","rate_per_s":0.5}]"#.into(),
            "humans.enabled=true".into(),
        ],
    )
    .unwrap();
    let obs = Rc::new(RefCell::new(OpenTickets::default()));
    simulate_observed(Sim::new(), &sc, 3, obs.clone());
    let o = obs.borrow();
    assert!(o.opened > 20_000, "{} tickets", o.opened);
    assert_eq!(o.late_events, 0, "an event named a closed ticket");
    assert!(o.open.is_empty(), "{} tickets never closed", o.open.len());
    assert!(
        o.max_open < 200,
        "{} tickets open at once: tickets are not closing",
        o.max_open
    );
}

#[test]
fn the_story_from_a_filtered_rerun_is_the_story_from_the_whole_history() {
    let sc = load(Path::new(INCIDENT), &[], &[]).unwrap();
    let whole = run_keeping(&sc, sc.seed, &Default::default(), Keep::All);
    let t = whole.report.incident_shaped_tickets[0];
    let expected = story(&whole.history, t, None);
    assert!(expected.len() > 8);
    assert_eq!(story_of(&sc, sc.seed, t, None), expected);
    let one = run_keeping(&sc, sc.seed, &Default::default(), Keep::Ticket(t));
    assert!(one.history.events.iter().all(|e| e.ticket == Some(t)));
    assert_eq!(one.report.metrics, whole.report.metrics);
}

#[test]
fn streamed_trace_equals_the_trace_of_the_whole_history() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.jsonl");
    let out = refundsim()
        .args(["run", INCIDENT, "--trace"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let sc = load(Path::new(INCIDENT), &[], &[]).unwrap();
    let whole = run_keeping(&sc, sc.seed, &Default::default(), Keep::All);
    let origin = sc
        .clock_origin
        .as_deref()
        .and_then(|s| humantime::parse_rfc3339(s).ok());
    let mut expected = Vec::new();
    refundsim::history::write_trace(&mut expected, &whole.history.events, origin).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), expected);
}

#[test]
fn report_lists_are_capped_with_the_full_count_beside_them() {
    // Every ticket duplicates: no key, a timeout far below Stripe's latency, retries allowed.
    let sc = load_str(
        r#"{"name":"many","horizon":"3h","arrivals":{"schedule":[{"duration":"3h","rate_per_s":0.5}]},
            "executor":{"timeout":"10ms"},"stripe":{"latency":{"p50":"200ms","p99":"300ms"}}}"#,
        "many.json",
    )
    .unwrap();
    let out = run(&sc, 1, &Default::default());
    let m = &out.report.metrics;
    assert!(
        m.duplicate_refund_tickets > 1000,
        "{}",
        m.duplicate_refund_tickets
    );
    assert_eq!(
        m.duplicated_ticket_ids.len(),
        refundsim::invariants::MAX_LISTED_IDS
    );
    assert!(m.duplicated_ticket_ids.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(m.duplicated_ticket_ids[0], 1, "the smallest ids are kept");
}

#[test]
fn zombie_work_keeps_its_ticket_open_until_it_ends() {
    // Work that outlives its caller: an SDK timeout below Stripe's latency (Stripe commits after
    // the service gave up), an aborted call, a timed-out proxy try, a human. No event may name a
    // ticket after it closed, and online metrics must equal offline ones.
    let base = r#"{"name":"zombies","horizon":"20m","arrivals":{"schedule":[{"duration":"20m","rate_per_s":0.5}]},
        "stripe":{"latency":{"p50":"600ms","p99":"3s"}}"#;
    let variants = [
        r#""humans":{"enabled":false},"executor":{"timeout":"400ms"},"refunds_service":{"stripe_client":{"timeout":"300ms","max_network_retries":2}}}"#,
        r#""humans":{"enabled":false},"executor":{"timeout":"400ms","cancellation":"abort_in_flight"},"refunds_service":{"stripe_client":{"timeout":"5s"}}}"#,
        r#""humans":{"enabled":false},"executor":{"timeout":"400ms"},"schema_version":2,"layers":{"sidecar":{"kind":"proxy","max_retries":2,"per_try_timeout":"200ms"}},"stack":["model_retry","executor","sidecar","refunds_service","sdk"]}"#,
        r#""humans":{"enabled":false},"executor":{"timeout":"400ms"},"schema_version":2,"layers":{"egress":{"kind":"proxy","max_retries":2,"per_try_timeout":"300ms","retry_on":["timeout","reset"]}},"stack":["model_retry","executor","refunds_service","sdk","egress"]}"#,
        r#""executor":{"timeout":"400ms"},"humans":{"enabled":true,"pickup_delay":{"p50":"30s","p99":"2m"}},"refunds_service":{"stripe_client":{"timeout":"300ms"}}}"#,
    ];
    for (i, v) in variants.iter().enumerate() {
        let text = format!("{base},{v}");
        let sc = match load_str(&text, "zombies.json") {
            Ok(sc) => sc,
            Err(e) => panic!("variant {i}: {e}"),
        };
        for seed in 1..=3 {
            let obs = Rc::new(RefCell::new(OpenTickets::default()));
            simulate_observed(Sim::new(), &sc, seed, obs.clone());
            let o = obs.borrow();
            assert!(o.opened > 400, "variant {i}: {} tickets", o.opened);
            assert_eq!(
                o.late_events, 0,
                "variant {i} seed {seed}: an event named a closed ticket"
            );
            let sim = simulate(&sc, seed);
            assert_eq!(
                run(&sc, seed, &Default::default()).report.metrics,
                evaluate_under(&sim.history, &sim.gauges, EvalRules::of(&sc)),
                "variant {i} seed {seed}"
            );
        }
    }
}

#[test]
fn reconciliation_alerts_every_duplicate_once_at_the_first_run_after_it() {
    // Independent of the job's code: from the whole history, a ticket's alert is due at the
    // first run (every interval, up to the horizon) at or after its second money-moving refund.
    let sc = load(
        Path::new(INCIDENT),
        &[PathBuf::from("policies/reconciliation.json")],
        &["humans.enabled=true".into()],
    )
    .unwrap();
    let interval = sc.reconciliation.interval.as_nanos() as u64;
    let horizon = sc.horizon.as_nanos() as u64;
    let mut checked = 0;
    for seed in [sc.seed, 2, 5] {
        let out = run_keeping(&sc, seed, &Default::default(), Keep::All);
        let mut refunds: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
        let mut alerts = std::collections::BTreeMap::new();
        for e in &out.history.events {
            match &e.kind {
                EventKind::RefundCreated {
                    moves_money: true, ..
                } => refunds
                    .entry(e.ticket.unwrap())
                    .or_default()
                    .push(e.t_ns.as_nanos()),
                EventKind::ReconciliationAlert { tickets, .. } => {
                    for t in tickets {
                        assert!(
                            alerts.insert(*t, e.t_ns.as_nanos()).is_none(),
                            "{t} alerted twice"
                        );
                    }
                }
                _ => {}
            }
        }
        let expected: std::collections::BTreeMap<u64, u64> = refunds
            .iter()
            .filter(|(_, ts)| ts.len() > 1)
            .map(|(t, ts)| (*t, ts[1].div_ceil(interval).max(1) * interval))
            .filter(|(_, at)| *at <= horizon)
            .collect();
        assert!(
            expected.len() > 10,
            "seed {seed}: {} duplicates alerted",
            expected.len()
        );
        assert_eq!(alerts, expected, "seed {seed}");
        checked += expected.len();
    }
    assert!(checked > 50);
}
