//! The exporter on a hand-made history: the incident's ticket 48213 in miniature (a first call
//! stuck in the pool, the executor's 8 s timeout, the model's retry, the retry's refund, the
//! zombie's late refund).

use serde_json::Value;

use super::{semconv, OtlpCapture, OtlpOptions, OtlpStream};
use crate::history::{Caller, Decision, Event, EventKind, Outcome, ProviderOutcome, RefundStatus};
use crate::scenario::OnTimeout;
use crate::sim::SimTime;

fn ev(ms: u64, attempt: Option<u32>, call: Option<u64>, kind: EventKind) -> Event {
    Event {
        t_ns: SimTime::from_millis(ms),
        ticket: Some(48213),
        attempt,
        call,
        kind,
    }
}

fn service_call(ms: u64, attempt: u32, call: u64) -> Event {
    ev(
        ms,
        Some(attempt),
        Some(call),
        EventKind::ServiceRequest {
            exec_try: 0,
            via: Default::default(),
        },
    )
}

/// Stripe's request at `sent`, its 200 and refund at `done`, the service's answer right after.
fn refunded(sent: u64, done: u64, attempt: u32, call: u64, late: bool) -> Vec<Event> {
    let (a, c) = (Some(attempt), Some(call));
    let id = format!("re_{call}");
    vec![
        ev(
            sent,
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
        ev(
            done,
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
            done,
            a,
            c,
            EventKind::StripeResponse {
                status: 200,
                outcome: ProviderOutcome::Created,
                refund_id: Some(id.clone()),
                latency_ns: (done - sent) * 1_000_000,
                via: Default::default(),
            },
        ),
        ev(
            done,
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

fn tool_call(ms: u64, attempt: u32) -> Event {
    ev(
        ms,
        Some(attempt),
        None,
        EventKind::ToolCall {
            tool: "issue_refund".into(),
            amount_cents: 4200,
        },
    )
}

/// The incident's ticket: call at 0, timeout at 8 s, decision at 8.030 s, retry at 8.034 s
/// refunded at 9.3 s, the first call's zombie refunded at 10.7 s.
fn incident_ticket() -> Vec<Event> {
    let mut evs = vec![tool_call(0, 0), service_call(0, 0, 1)];
    evs.push(ev(
        8000,
        Some(0),
        Some(1),
        EventKind::ExecutorTimeout {
            after_ns: 8_000_000_000,
            action: OnTimeout::ReportError,
        },
    ));
    evs.push(ev(
        8000,
        Some(0),
        None,
        EventKind::ToolResult {
            outcome: Outcome::Fail,
            shown: "{ error: \"timeout after 8000ms\" }".into(),
            refund_id: None,
        },
    ));
    evs.push(ev(
        8030,
        Some(0),
        None,
        EventKind::ModelDecision {
            decision: Decision::Retry,
            text: "Retrying once per policy.".into(),
        },
    ));
    evs.push(tool_call(8034, 1));
    evs.push(service_call(8034, 1, 2));
    evs.extend(refunded(8900, 9280, 1, 2, false));
    evs.push(ev(
        9300,
        Some(1),
        None,
        EventKind::ToolResult {
            outcome: Outcome::Ok,
            shown: "{ status: \"refunded\", refund_id: \"re_2\" }".into(),
            refund_id: Some("re_2".into()),
        },
    ));
    evs.extend(refunded(10_300, 10_700, 0, 1, true));
    evs
}

fn export(events: &[Event], options: &OtlpOptions) -> Vec<u8> {
    let sc = crate::scenario::load_str(
        r#"{"name":"otlp-unit","clock_origin":"2024-05-14T16:41:09Z","horizon":"10m","arrivals":{"schedule":[{"duration":"10m","rate_per_s":0.05}]}}"#,
        "inline",
    )
    .unwrap();
    let mut s = OtlpStream::new(Vec::new(), &sc, 1, options).unwrap();
    for e in events {
        s.event(e);
    }
    s.ticket_closed(48213);
    s.finish().unwrap()
}

/// Every span with its resource's `service.name`.
fn spans(doc: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for rs in doc["resourceSpans"].as_array().unwrap() {
        let service = rs["resource"]["attributes"][0]["value"]["stringValue"]
            .as_str()
            .unwrap()
            .to_string();
        for ss in rs["scopeSpans"].as_array().unwrap() {
            for sp in ss["spans"].as_array().unwrap() {
                out.push((service.clone(), sp.clone()));
            }
        }
    }
    out
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("one JSON document")
}

const ORIGIN_NS: u64 = 1_715_704_869_000_000_000;

fn ns(ms: u64) -> String {
    (ORIGIN_NS + ms * 1_000_000).to_string()
}

#[test]
fn the_incidents_ticket_is_two_tool_spans_a_decision_and_a_late_server_span() {
    let doc = parse(&export(&incident_ticket(), &OtlpOptions::default()));
    let all = spans(&doc);
    let names: Vec<(&str, &str)> = all
        .iter()
        .map(|(s, sp)| (s.as_str(), sp["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("support-agent", "execute_tool issue_refund"),
            ("support-agent", "chat"),
            ("support-agent", "execute_tool issue_refund"),
            ("refunds-service", "POST"),
            ("refunds-service", "POST /refunds"),
            ("refunds-service", "POST"),
            ("refunds-service", "POST /refunds"),
        ]
    );
    let trace = all[0].1["traceId"].as_str().unwrap();
    assert!(all.iter().all(|(_, sp)| sp["traceId"] == trace));
    assert_eq!(trace.len(), 32);

    // The first call: 8 s, a timeout, its arguments as the shipped tool names them.
    let first = &all[0].1;
    assert_eq!(first["kind"], 1);
    assert_eq!(
        (&first["startTimeUnixNano"], &first["endTimeUnixNano"]),
        (&Value::from(ns(0)), &Value::from(ns(8000)))
    );
    assert_eq!(attr(first, "error.type").unwrap()["stringValue"], "timeout");
    assert_eq!(first["status"]["code"], 2);
    assert_eq!(first["status"]["message"], "timeout after 8000ms");
    assert_eq!(
        attr(first, "gen_ai.tool.call.arguments").unwrap()["stringValue"],
        r#"{"ticket_id":"48213","amount_cents":4200}"#
    );
    // Results and headers are not captured by default.
    assert!(attr(&all[2].1, "gen_ai.tool.call.result").is_none());
    assert!(attr(&all[2].1, "error.type").is_none() && all[2].1.get("status").is_none());

    // The decision: from the result to the retry decision.
    let chat = &all[1].1;
    assert_eq!(
        (&chat["startTimeUnixNano"], &chat["endTimeUnixNano"]),
        (&Value::from(ns(8000)), &Value::from(ns(8030)))
    );

    // The first call's SERVER span is the tool span's child and ends after it: the zombie.
    let zombie = &all[6].1;
    assert_eq!(zombie["parentSpanId"], first["spanId"]);
    assert_eq!(zombie["kind"], 2);
    assert_eq!(zombie["endTimeUnixNano"], ns(10_700));
    assert_eq!(
        attr(zombie, "http.response.status_code").unwrap()["intValue"],
        "200"
    );
    // Its Stripe request is its child.
    let stripe = &all[5].1;
    assert_eq!(stripe["parentSpanId"], zombie["spanId"]);
    assert_eq!(stripe["kind"], 3);
    assert_eq!(
        attr(stripe, "url.full").unwrap()["stringValue"],
        "https://api.stripe.com/v1/refunds"
    );
    // The retry's SERVER span is the retry's child.
    assert_eq!(all[4].1["parentSpanId"], all[2].1["spanId"]);
}

#[test]
fn only_semantic_convention_attributes_are_written() {
    let doc = parse(&export(
        &incident_ticket(),
        &OtlpOptions::capturing(OtlpCapture::ALL),
    ));
    for (_, sp) in spans(&doc) {
        for a in sp["attributes"].as_array().unwrap() {
            let key = a["key"].as_str().unwrap();
            assert!(semconv::ALL.contains(&key), "{key} in {sp}");
        }
    }
}

#[test]
fn each_opt_in_attribute_follows_its_switch() {
    let evs = incident_ticket();
    let all = |capture| {
        let doc = parse(&export(&evs, &OtlpOptions::capturing(capture)));
        spans(&doc)
    };
    let count = |spans: &[(String, Value)], key: &str| {
        spans
            .iter()
            .filter(|(_, sp)| attr(sp, key).is_some())
            .count()
    };
    let none = all(OtlpCapture::NONE);
    let every = all(OtlpCapture::ALL);
    for key in [
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "http.request.header.content-type",
    ] {
        assert_eq!(count(&none, key), 0, "{key}");
        assert!(count(&every, key) > 0, "{key}");
    }
    // The result is the JSON of what the model read, on the call that returned one.
    let ok = every
        .iter()
        .find(|(_, sp)| attr(sp, "gen_ai.tool.call.result").is_some())
        .unwrap();
    assert_eq!(
        attr(&ok.1, "gen_ai.tool.call.result").unwrap()["stringValue"],
        r#"{"status":"refunded","refund_id":"re_2"}"#
    );
    // No key was sent: the header is absent while content-type says headers were captured.
    assert_eq!(count(&every, "http.request.header.idempotency-key"), 0);
}

#[test]
fn the_bytes_are_a_function_of_the_events() {
    let a = export(&incident_ticket(), &OtlpOptions::default());
    let b = export(&incident_ticket(), &OtlpOptions::default());
    assert_eq!(a, b);
}

#[test]
fn a_span_that_never_ends_is_not_written() {
    // A call whose result never came (the run stopped): nothing of it is exported.
    let evs = vec![tool_call(0, 0), service_call(0, 0, 1)];
    let doc = parse(&export(&evs, &OtlpOptions::default()));
    assert!(spans(&doc).is_empty());
}

#[test]
fn a_stripe_error_fails_the_client_span_and_the_services_5xx_its_server_span() {
    let (a, c) = (Some(0), Some(1));
    let mut evs = vec![tool_call(0, 0), service_call(0, 0, 1)];
    evs.push(ev(
        10,
        a,
        c,
        EventKind::StripeRequest {
            idempotency_key: Some("refund_48213_1".into()),
            business_id: None,
            amount_cents: 4200,
            sdk_try: 1,
            via: Default::default(),
        },
    ));
    evs.push(ev(
        20,
        a,
        c,
        EventKind::StripeResponse {
            status: 0,
            outcome: ProviderOutcome::SdkTimeout,
            refund_id: None,
            latency_ns: 10_000_000,
            via: Default::default(),
        },
    ));
    evs.push(ev(
        21,
        a,
        c,
        EventKind::ServiceResponse {
            ok: false,
            refund_id: None,
            error: Some("stripe sdk_timeout (HTTP 0)".into()),
            late: false,
            latency_ns: 21_000_000,
        },
    ));
    let doc = parse(&export(&evs, &OtlpOptions::capturing(OtlpCapture::ALL)));
    let all = spans(&doc);
    let client = &all.iter().find(|(_, s)| s["kind"] == 3).unwrap().1;
    assert_eq!(
        attr(client, "error.type").unwrap()["stringValue"],
        "timeout"
    );
    assert!(attr(client, "http.response.status_code").is_none());
    assert_eq!(
        attr(client, "http.request.resend_count").unwrap()["intValue"],
        "1"
    );
    assert_eq!(
        attr(client, "http.request.header.idempotency-key").unwrap(),
        &serde_json::json!({"arrayValue": {"values": [{"stringValue": "refund_48213_1"}]}})
    );
    let server = &all.iter().find(|(_, s)| s["kind"] == 2).unwrap().1;
    assert_eq!(
        attr(server, "http.response.status_code").unwrap()["intValue"],
        "502"
    );
    assert_eq!(server["status"]["code"], 2);
}

#[test]
fn an_unknown_outcome_after_the_executors_timeout_is_a_timeout_error() {
    // on_timeout probe_status: the timeout fires, the probe finds the request still pending,
    // the model is told "outcome unknown; do not retry" (info), and escalates.
    let mut evs = vec![tool_call(0, 0), service_call(0, 0, 1)];
    evs.push(ev(
        15_000,
        Some(0),
        Some(1),
        EventKind::ExecutorTimeout {
            after_ns: 15_000_000_000,
            action: OnTimeout::ProbeStatus,
        },
    ));
    evs.push(ev(
        75_000,
        Some(0),
        None,
        EventKind::ToolResult {
            outcome: Outcome::Info,
            shown: "{ status: \"pending\", note: \"outcome unknown; do not retry\" }".into(),
            refund_id: None,
        },
    ));
    let doc = parse(&export(&evs, &OtlpOptions::capturing(OtlpCapture::ALL)));
    let tool = &spans(&doc)[0].1;
    assert_eq!(attr(tool, "error.type").unwrap()["stringValue"], "timeout");
    assert_eq!(tool["status"]["message"], "outcome unknown; do not retry");
    // A call that did not succeed records no result.
    assert!(attr(tool, "gen_ai.tool.call.result").is_none());
}
