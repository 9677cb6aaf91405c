//! The exporter on a hand-made history: the incident's shape in miniature (a call stuck in the
//! pool, the executor's timeout, the model's retry, the zombie's late response).

use std::collections::BTreeMap;

use super::PerfettoStream;
use crate::history::{Caller, Decision, Event, EventKind, Outcome, ProviderOutcome, RefundStatus};
use crate::scenario::OnTimeout;
use crate::sim::SimTime;

fn ev(ms: u64, attempt: Option<u32>, call: Option<u64>, kind: EventKind) -> Event {
    Event {
        t_ns: SimTime::from_millis(ms),
        ticket: Some(7),
        attempt,
        call,
        kind,
    }
}

fn stripe_done(ms: u64, attempt: u32, call: u64, late: bool) -> Vec<Event> {
    let (a, c) = (Some(attempt), Some(call));
    let id = format!("re_{call}");
    vec![
        ev(
            ms,
            a,
            c,
            EventKind::RefundCreated {
                refund_id: id.clone(),
                amount_cents: 4200,
                status: RefundStatus::Succeeded,
                moves_money: true,
                by: Caller::Service,
            },
        ),
        ev(
            ms,
            a,
            c,
            EventKind::StripeResponse {
                status: 200,
                outcome: ProviderOutcome::Created,
                refund_id: Some(id.clone()),
                latency_ns: 1,
                via: Default::default(),
            },
        ),
        ev(ms, a, c, EventKind::PoolRelease),
        ev(
            ms,
            a,
            c,
            EventKind::ServiceResponse {
                ok: true,
                refund_id: Some(id),
                error: None,
                late,
                latency_ns: 1,
            },
        ),
    ]
}

fn request(ms: u64, attempt: u32, call: u64) -> Vec<Event> {
    let (a, c) = (Some(attempt), Some(call));
    vec![
        ev(
            ms,
            a,
            None,
            EventKind::ToolCall {
                tool: "issue_refund".into(),
                amount_cents: 4200,
            },
        ),
        ev(
            ms,
            a,
            c,
            EventKind::ServiceRequest {
                exec_try: 0,
                via: BTreeMap::new(),
            },
        ),
        ev(ms + 1, a, c, EventKind::PoolWait { queue_depth: 3 }),
    ]
}

fn acquire(ms: u64, attempt: u32, call: u64) -> Vec<Event> {
    let (a, c) = (Some(attempt), Some(call));
    vec![
        ev(ms, a, c, EventKind::PoolAcquire { waited_ns: 1 }),
        ev(
            ms,
            a,
            c,
            EventKind::StripeRequest {
                idempotency_key: None,
                business_id: None,
                amount_cents: 4200,
                sdk_try: 0,
                via: Default::default(),
            },
        ),
    ]
}

fn result(ms: u64, attempt: u32, outcome: Outcome) -> Event {
    ev(
        ms,
        Some(attempt),
        None,
        EventKind::ToolResult {
            outcome,
            shown: String::new(),
            refund_id: None,
        },
    )
}

/// The miniature incident: call 1 waits 5 s for a connection, the executor gives up at 8 s,
/// the model retries (call 2), call 1 answers late.
fn zombie_history() -> Vec<Event> {
    let mut h = vec![ev(
        0,
        None,
        None,
        EventKind::TicketOpened {
            amount_cents: 4200,
            charge_amount_cents: 9000,
            phase: "burst".into(),
        },
    )];
    h.extend(request(1, 0, 1));
    h.extend(acquire(5_000, 0, 1));
    h.push(ev(
        8_001,
        Some(0),
        Some(1),
        EventKind::ExecutorTimeout {
            after_ns: 8_000_000_000,
            action: OnTimeout::ReportError,
        },
    ));
    h.push(result(8_001, 0, Outcome::Fail));
    h.push(ev(
        8_020,
        Some(0),
        None,
        EventKind::ModelDecision {
            decision: Decision::Retry,
            text: "retrying".into(),
        },
    ));
    h.extend(request(8_025, 1, 2));
    h.extend(stripe_done(8_100, 0, 1, true));
    h.extend(acquire(8_100, 1, 2));
    h.extend(stripe_done(8_500, 1, 2, false));
    h.push(result(8_500, 1, Outcome::Ok));
    h
}

fn export(events: &[Event]) -> String {
    let mut s = PerfettoStream::new(Vec::new(), "mini", 1);
    for e in events {
        s.event(e);
    }
    s.ticket_closed(7);
    String::from_utf8(s.finish().unwrap()).unwrap()
}

/// Flow ids to the names of the slices their start and end bind to.
type Flows = BTreeMap<u64, (String, String)>;

/// Replays the events as a viewer does (sorted by time, file order on ties, a stack per
/// track): every end closes a begin, every flow binds to an open slice. Returns each flow's
/// (start slice, end slice) names by id, and the thread names by tid.
fn replay(doc: &serde_json::Value) -> (Flows, BTreeMap<u64, String>) {
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let ns = |e: &serde_json::Value| (e["ts"].as_f64().unwrap_or(0.0) * 1000.0).round() as u64;
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| ns(&events[i]));
    let mut stacks: BTreeMap<(u64, u64), Vec<String>> = BTreeMap::new();
    let mut names = BTreeMap::new();
    let mut flows = Flows::new();
    for i in order {
        let e = &events[i];
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap_or(0));
        let stack = stacks.entry(key).or_default();
        let top = |stack: &Vec<String>| stack.last().cloned().expect("a flow binds to a slice");
        match e["ph"].as_str().unwrap() {
            "M" if e["name"] == "thread_name" => {
                names.insert(key.1, e["args"]["name"].as_str().unwrap().to_string());
            }
            "B" => stack.push(e["name"].as_str().unwrap().to_string()),
            "E" => {
                stack.pop().expect("an end closes a begin");
            }
            "s" => {
                let id = e["id"].as_u64().unwrap();
                assert!(flows.insert(id, (top(stack), String::new())).is_none());
            }
            "f" => {
                assert_eq!(e["bp"], "e");
                let id = e["id"].as_u64().unwrap();
                let end = top(stack);
                flows.get_mut(&id).expect("f after its s").1 = end;
            }
            _ => {}
        }
    }
    assert!(stacks.values().all(Vec::is_empty), "every slice ends");
    (flows, names)
}

#[test]
fn the_miniature_incident_has_its_tracks_slices_and_arrows() {
    let text = export(&zombie_history());
    let doc: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ms");
    assert_eq!(doc["otherData"]["scenario"], "mini");
    let (flows, names) = replay(&doc);
    let tracks: Vec<&str> = names.values().map(String::as_str).collect();
    assert_eq!(tracks, ["connection 1", "ticket 7", "ticket 7 (2)"]);
    assert_eq!(
        flows.values().cloned().collect::<Vec<_>>(),
        [
            (
                "executor timeout 8000 ms".to_string(),
                "request 2 → ok".to_string()
            ),
            (
                "executor timeout 8000 ms".to_string(),
                "late response".to_string()
            ),
        ]
    );
    // The timeout spans the 8 s the executor waited, to the nanosecond.
    assert!(
        text.contains(r#""ts":1000.000,"name":"executor timeout 8000 ms""#),
        "{text}"
    );
    assert!(text.contains(r#""ph":"E","pid":2,"tid":11,"ts":8001000.000}"#));
    // Call 2 reuses the connection call 1 gave back at the same instant.
    assert_eq!(text.matches("→ connection 1").count(), 2);
    assert!(text.contains(r#""name":"request 1 → ok (late)""#));
    assert!(text.ends_with("\n],\"displayTimeUnit\":\"ms\"}\n"));
}

#[test]
fn a_ticket_with_no_overlap_has_one_track_and_its_request_nests() {
    let mut h = request(1, 0, 1);
    h.extend(acquire(2, 0, 1));
    h.extend(stripe_done(300, 0, 1, false));
    h.push(result(300, 0, Outcome::Ok));
    let doc: serde_json::Value = serde_json::from_str(&export(&h)).unwrap();
    let (flows, names) = replay(&doc);
    assert!(flows.is_empty());
    assert_eq!(
        names.values().map(String::as_str).collect::<Vec<_>>(),
        ["connection 1", "ticket 7"]
    );
}

#[test]
fn a_run_cut_short_still_closes_every_slice_and_the_document() {
    // No result, no release, no ticket_closed: finish ends what is open at the last event.
    let mut h = request(1, 0, 1);
    h.extend(acquire(2, 0, 1));
    let mut s = PerfettoStream::new(Vec::new(), "cut", 1);
    for e in &h {
        s.event(e);
    }
    let text = String::from_utf8(s.finish().unwrap()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    replay(&doc);
    assert!(text.contains(r#""unfinished":true"#));
}

#[test]
fn the_same_events_give_the_same_bytes() {
    assert_eq!(export(&zombie_history()), export(&zombie_history()));
}

#[test]
fn a_write_error_is_kept_for_finish() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut s = PerfettoStream::new(Full, "x", 1);
    for e in &zombie_history() {
        s.event(e);
    }
    let err = s.finish().err().expect("an error");
    assert!(err.to_string().contains("disk full"));
}

#[test]
fn a_reconciliation_alert_goes_on_its_own_track() {
    let mut h = zombie_history();
    h.push(Event {
        t_ns: SimTime::from_secs(3600),
        ticket: None,
        attempt: None,
        call: None,
        kind: EventKind::ReconciliationAlert {
            tickets: vec![7, 9],
            duplicate_at_ns: vec![1, 2],
        },
    });
    let text = export(&h);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let (_, names) = replay(&doc);
    assert!(names.values().any(|n| n == "alerts"));
    assert!(text.contains(
        r#""ts":3600000000.000,"name":"alert: 2 duplicated tickets","cat":"reconciliation","s":"t","args":{"tickets":"7 9"}}"#
    ));
}

/// The exporter's open tickets count in the run budget while running, and leave it on close.
#[test]
fn open_tickets_are_counted_until_they_close() {
    let mut p = PerfettoStream::new(Vec::new(), "t", 1);
    assert_eq!(p.held_bytes(), 0);
    p.event(&ev(0, Some(1), Some(1), EventKind::PoolRelease));
    assert_eq!(p.held_bytes(), super::PERFETTO_BYTES_PER_OPEN_TICKET);
    p.ticket_closed(7);
    assert_eq!(p.held_bytes(), 0);
}
