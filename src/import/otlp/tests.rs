use serde_json::{json, Value};

use super::*;
use crate::import::Source;

/// 2024-05-14T16:40:00Z, ns since the Unix epoch.
const BASE: i64 = 1_715_704_800_000_000_000;

/// 2024-05-14T16:MM:SS.mmm as ns, from `(MM, SS, mmm)`.
fn t(m: i64, s: i64, ms: i64) -> Instant {
    Instant::exact(BASE + ((m - 40) * 60 + s) * 1_000_000_000 + ms * 1_000_000)
}

fn src(line: u64) -> Source {
    Source {
        file: "t.json".into(),
        line,
    }
}

fn opts() -> ImportOptions {
    ImportOptions::default()
}

/// A span of trace `aa` (ids and times as given, times in ms after BASE).
fn span(id: &str, parent: &str, kind: i64, start_ms: i64, end_ms: i64, attrs: Value) -> Value {
    let ns = |ms: i64| (BASE + ms * 1_000_000).to_string();
    json!({"traceId": "aa", "spanId": id, "parentSpanId": parent, "kind": kind,
           "startTimeUnixNano": ns(start_ms), "endTimeUnixNano": ns(end_ms),
           "attributes": attrs})
}

fn s(v: &str) -> Value {
    json!({"stringValue": v})
}

fn attrs(kvs: &[(&str, Value)]) -> Value {
    Value::Array(
        kvs.iter()
            .map(|(k, v)| json!({"key": k, "value": v}))
            .collect(),
    )
}

fn tool_attrs(args: &str, extra: &[(&str, Value)]) -> Value {
    let mut kvs = vec![
        ("gen_ai.operation.name", s("execute_tool")),
        ("gen_ai.tool.name", s("issue_refund")),
        ("gen_ai.tool.call.arguments", s(args)),
    ];
    kvs.extend(extra.iter().cloned());
    attrs(&kvs)
}

fn provider_attrs(extra: &[(&str, Value)]) -> Value {
    let mut kvs = vec![
        ("http.request.method", s("POST")),
        ("url.full", s("https://api.stripe.com/v1/refunds")),
        ("http.response.status_code", json!({"intValue": "200"})),
    ];
    kvs.extend(extra.iter().cloned());
    attrs(&kvs)
}

/// One JSON line per span, each its own document: line N holds `spans[N-1]`.
fn lines(spans: &[Value]) -> String {
    spans
        .iter()
        .map(|sp| json!({"resourceSpans": [{"scopeSpans": [{"spans": [sp]}]}]}).to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn read_lines(spans: &[Value]) -> Result<Recording, ImportError> {
    read("t.json", &lines(spans), &opts())
}

const ARGS: &str = r#"{"ticket":48213,"amount":4200}"#;

#[test]
fn the_incident_fixture_reads_as_ticket_48213s_story() {
    let text = include_str!("../../../tests/fixtures/import/ticket-48213.otlp.json");
    let rec = read("t.json", text, &opts()).unwrap();
    assert_eq!(rec.warnings, vec![]);
    assert_eq!(
        rec.tool_calls,
        vec![
            ToolCallRec {
                ticket: 48213.into(),
                tool: "issue_refund".into(),
                call_id: Some("toolu_01A".into()),
                at: t(41, 9, 210),
                amount_cents: Some(4200),
                amount_missing: None,
                result: Some(ToolResultRec {
                    at: t(41, 17, 211),
                    ok: false,
                    timed_out: true,
                    refund_id: None,
                }),
                decision_at: Some(t(41, 17, 240)),
                service_response: Some(ServiceResponseRec {
                    at: t(41, 19, 950),
                    ok: true,
                    refund_id: Some("re_1P8wAbC".into()),
                }),
                source: src(5),
            },
            ToolCallRec {
                ticket: 48213.into(),
                tool: "issue_refund".into(),
                call_id: Some("toolu_01B".into()),
                at: t(41, 17, 244),
                amount_cents: Some(4200),
                amount_missing: None,
                result: Some(ToolResultRec {
                    at: t(41, 18, 501),
                    ok: true,
                    timed_out: false,
                    refund_id: Some("re_1P9xDeF".into()),
                }),
                decision_at: None,
                service_response: Some(ServiceResponseRec {
                    at: t(41, 18, 497),
                    ok: true,
                    refund_id: Some("re_1P9xDeF".into()),
                }),
                source: src(8),
            },
        ]
    );
    // The retry's request reached the provider first: the first call's waited ~10 s for a
    // pooled connection.
    assert_eq!(
        rec.provider_requests,
        vec![
            ProviderRequestRec {
                ticket: 48213.into(),
                attempt: Some(1),
                try_no: Some(0),
                service_received: Some(t(41, 17, 248)),
                sent: t(41, 18, 61),
                latency_ns: Some(428_000_000),
                status: Some(200),
                idempotency_key: Some(None),
                refund_id: Some("re_1P9xDeF".into()),
                source: src(16),
            },
            ProviderRequestRec {
                ticket: 48213.into(),
                attempt: Some(0),
                try_no: Some(0),
                service_received: Some(t(41, 9, 214)),
                sent: t(41, 19, 472),
                latency_ns: Some(449_000_000),
                status: Some(200),
                idempotency_key: Some(None),
                refund_id: Some("re_1P8wAbC".into()),
                source: src(14),
            },
        ]
    );
    assert_eq!(rec.executor_timeout_ns, None);
}

#[test]
fn spans_link_in_any_order_and_across_files() {
    let tool = span("t1", "", 1, 0, 8000, tool_attrs(ARGS, &[]));
    let server = span("s1", "t1", 2, 5, 10_000, attrs(&[]));
    let client = span("c1", "s1", 3, 9000, 9400, provider_attrs(&[]));
    let reversed = read_lines(&[client.clone(), server.clone(), tool.clone()]).unwrap();
    assert_eq!(reversed.provider_requests[0].attempt, Some(0));
    assert_eq!(reversed.provider_requests[0].source, src(1));
    assert_eq!(reversed.tool_calls[0].source, src(3));
    let late = reversed.tool_calls[0].service_response.as_ref().unwrap();
    assert!(late.at.at > reversed.tool_calls[0].result.as_ref().unwrap().at.at);
    let agent = lines(&[tool]);
    let service = lines(&[server, client]);
    let both = read_files(&[("agent.json", &agent), ("svc.json", &service)], &opts()).unwrap();
    assert_eq!(both.provider_requests[0].attempt, Some(0));
    assert_eq!(
        both.provider_requests[0].service_received,
        Some(Instant::exact(BASE + 5_000_000))
    );
    // Read apart, the service's file cannot say which ticket the request is for.
    let alone = read("svc.json", &service, &opts()).unwrap();
    assert_eq!(alone.provider_requests, vec![]);
    assert_eq!(alone.warnings.len(), 1);
    assert!(
        alone.warnings[0].message.contains("skipped"),
        "{:?}",
        alone.warnings
    );
}

#[test]
fn idempotency_key_absent_is_recorded_only_when_headers_were_captured() {
    let key = |extra: &[(&str, Value)]| {
        let client = span("c1", "", 3, 0, 400, provider_attrs(extra));
        let doc = lines(std::slice::from_ref(&client));
        let with_ticket = doc.replace(
            "\"attributes\":[",
            "\"attributes\":[{\"key\":\"refund.ticket_id\",\"value\":{\"intValue\":\"7\"}},",
        );
        let rec = read("t.json", &with_ticket, &opts()).unwrap();
        assert_eq!(rec.provider_requests[0].ticket, 7);
        rec.provider_requests[0].idempotency_key.clone()
    };
    let array = json!({"arrayValue": {"values": [{"stringValue": "refund_48213_n1"}]}});
    assert_eq!(
        key(&[("http.request.header.idempotency-key", array)]),
        Some(Some("refund_48213_n1".into()))
    );
    assert_eq!(
        key(&[("http.request.header.Idempotency_Key", s("k2"))]),
        Some(Some("k2".into()))
    );
    assert_eq!(
        key(&[("http.request.header.content-type", s("x"))]),
        Some(None)
    );
    assert_eq!(key(&[]), None);
}

#[test]
fn tries_come_from_resend_count_or_the_order_below_the_server_span() {
    let tool = span("t1", "", 1, 0, 3000, tool_attrs(ARGS, &[]));
    let server = span("s1", "t1", 2, 1, 2900, attrs(&[]));
    let first = span("c1", "s1", 3, 100, 600, provider_attrs(&[]));
    let second = span("c2", "s1", 3, 700, 900, provider_attrs(&[]));
    let rec = read_lines(&[tool.clone(), server.clone(), second, first.clone()]).unwrap();
    let tries: Vec<_> = rec.provider_requests.iter().map(|r| r.try_no).collect();
    assert_eq!(tries, [Some(0), Some(1)]);
    let resent = span(
        "c2",
        "s1",
        3,
        700,
        900,
        provider_attrs(&[("http.request.resend_count", json!({"intValue": "3"}))]),
    );
    let rec = read_lines(&[tool, server, first, resent]).unwrap();
    let tries: Vec<_> = rec.provider_requests.iter().map(|r| r.try_no).collect();
    assert_eq!(tries, [Some(0), Some(3)]);
}

#[test]
fn a_service_response_without_refund_id_takes_its_last_provider_requests() {
    let tool = span("t1", "", 1, 0, 3000, tool_attrs(ARGS, &[]));
    let server = span("s1", "t1", 2, 1, 2900, attrs(&[]));
    let with_id = |id: &str, ref_id: &str, start: i64| {
        span(
            id,
            "s1",
            3,
            start,
            start + 100,
            provider_attrs(&[("refund.id", s(ref_id))]),
        )
    };
    let later = with_id("c2", "re_2", 700);
    let earlier = with_id("c1", "re_1", 100);
    let rec = read_lines(&[later, tool, earlier, server]).unwrap();
    let answer = rec.tool_calls[0].service_response.clone().unwrap();
    assert_eq!(answer.refund_id.as_deref(), Some("re_2"));
    assert_eq!(answer.at, Instant::exact(BASE + 2_900_000_000));
}

#[test]
fn a_connection_lost_has_no_status_keeps_its_wait_and_other_requests_are_not_provider_ones() {
    let tool = span("t1", "", 1, 0, 3000, tool_attrs(ARGS, &[]));
    let lost = span(
        "c1",
        "t1",
        3,
        10,
        2000,
        attrs(&[
            ("http.method", s("post")),
            ("http.url", s("https://api.stripe.com/v1/refunds")),
            ("error.type", s("connection_reset")),
        ]),
    );
    let update = span(
        "c2",
        "t1",
        3,
        10,
        20,
        attrs(&[
            ("http.request.method", s("POST")),
            (
                "url.full",
                s("https://api.stripe.com/v1/refunds/re_1?expand=x"),
            ),
        ]),
    );
    let get = span(
        "c3",
        "t1",
        3,
        10,
        20,
        attrs(&[
            ("http.request.method", s("GET")),
            ("url.path", s("/v1/refunds")),
        ]),
    );
    let rec = read_lines(&[tool, lost, update, get]).unwrap();
    assert_eq!(rec.provider_requests.len(), 1);
    let r = &rec.provider_requests[0];
    // No status: the connection was lost; the span's duration is how long the client waited.
    assert_eq!(
        (r.status, r.latency_ns, r.try_no),
        (None, Some(1_990_000_000), None)
    );
    assert_eq!(r.service_received, None);
}

#[test]
fn tool_results_refund_ids_and_the_ticket_fallback() {
    let result = |v: Value| {
        let tool = span(
            "t1",
            "",
            1,
            0,
            100,
            tool_attrs(ARGS, &[("gen_ai.tool.call.result", v)]),
        );
        read_lines(&[tool]).unwrap().tool_calls[0]
            .result
            .clone()
            .unwrap()
            .refund_id
    };
    assert_eq!(
        result(s(r#"{ status: "refunded", refund_id: "re_1P9x..." }"#)),
        Some("re_1P9x...".into())
    );
    assert_eq!(result(s(r#"{"id":"re_9"}"#)), Some("re_9".into()));
    assert_eq!(result(s("are_you sure")), None);
    let no_args = span(
        "t1",
        "",
        1,
        0,
        100,
        attrs(&[
            ("gen_ai.operation.name", s("execute_tool")),
            ("gen_ai.tool.name", s("issue_refund")),
            ("refund.ticket_id", s("48213")),
        ]),
    );
    let rec = read_lines(&[no_args]).unwrap();
    assert_eq!(
        (
            rec.tool_calls[0].ticket.as_str(),
            rec.tool_calls[0].amount_cents
        ),
        ("48213", None)
    );
    let kv = json!({"kvlistValue": {"values": [
        {"key": "ticket", "value": {"intValue": "5"}},
        {"key": "amount", "value": {"intValue": "99"}}]}});
    let structured = span(
        "t1",
        "",
        1,
        0,
        100,
        attrs(&[
            ("gen_ai.operation.name", s("execute_tool")),
            ("gen_ai.tool.name", s("issue_refund")),
            ("gen_ai.tool.call.arguments", kv),
        ]),
    );
    let rec = read_lines(&[structured]).unwrap();
    assert_eq!(
        (
            rec.tool_calls[0].ticket.as_str(),
            rec.tool_calls[0].amount_cents
        ),
        ("5", Some(99))
    );
}

#[test]
fn configured_names_pick_the_tool_and_its_arguments() {
    let tool = span(
        "t1",
        "",
        1,
        0,
        100,
        attrs(&[
            ("gen_ai.operation.name", s("execute_tool")),
            ("gen_ai.tool.name", s("refund_order")),
            (
                "gen_ai.tool.call.arguments",
                s(r#"{"case":"12","cents":"300"}"#),
            ),
        ]),
    );
    let doc = lines(&[tool]);
    let rec = read("t.json", &doc, &opts()).unwrap();
    assert_eq!(rec.tool_calls, vec![]);
    assert_eq!(rec.warnings.len(), 1);
    assert!(
        rec.warnings[0]
            .message
            .contains("the tools seen are `refund_order`"),
        "{:?}",
        rec.warnings
    );
    let custom = ImportOptions {
        tool: "refund_order".into(),
        arguments: crate::import::ArgumentNames::resolve(&[], Some("case"), Some("cents")),
        ..ImportOptions::default()
    };
    let rec = read("t.json", &doc, &custom).unwrap();
    assert_eq!(
        (
            rec.tool_calls[0].ticket.as_str(),
            rec.tool_calls[0].amount_cents
        ),
        ("12", Some(300))
    );
}

#[test]
fn repeated_spans_are_ignored_with_a_warning() {
    let tool = span("t1", "", 1, 0, 100, tool_attrs(ARGS, &[]));
    let rec = read_lines(&[tool.clone(), tool]).unwrap();
    assert_eq!(rec.tool_calls.len(), 1);
    assert_eq!(rec.warnings.len(), 1);
    assert_eq!(rec.warnings[0].source, src(2));
    assert!(rec.warnings[0]
        .message
        .contains("repeats the one at t.json:1"));
}

fn err(spans: &[Value]) -> String {
    read_lines(spans).unwrap_err().to_string()
}

#[test]
fn bad_tool_arguments_name_the_attribute() {
    let p = "resourceSpans[0].scopeSpans[0].spans[0]";
    let ok = span("t0", "", 1, 0, 1, tool_attrs(ARGS, &[]));
    assert_eq!(
        err(&[
            ok.clone(),
            span("t1", "", 1, 0, 100, tool_attrs("ticket=1", &[]))
        ]),
        format!(
            "t.json:2: {p}.attributes[2] (gen_ai.tool.call.arguments): expected a JSON object \
             of the tool's arguments, got \"ticket=1\""
        )
    );
    assert_eq!(
        err(&[span(
            "t1",
            "",
            1,
            0,
            100,
            tool_attrs(r#"{"ticket":-4}"#, &[])
        )]),
        format!(
            "t.json:1: {p}.attributes[2] (gen_ai.tool.call.arguments): \"ticket\": expected a \
             ticket id (a non-negative integer, or a string like \"T-100000\" of at most 200 \
             characters), got -4"
        )
    );
    assert_eq!(
        err(&[span(
            "t1",
            "",
            1,
            0,
            100,
            tool_attrs(r#"{"ticket":1,"amount":42.5}"#, &[])
        )]),
        format!(
            "t.json:1: {p}.attributes[2] (gen_ai.tool.call.arguments): \"amount\": expected \
             integer cents (a whole number in the currency's smallest unit, like 4200, or its \
             decimal digits as a string, \"4200\"), got 42.5"
        )
    );
    // A huge number as the arguments write it, not as a float.
    for (written, tail) in [
        ("1e30", "1e30"),
        ("99999999999999999999", "99999999999999999999"),
    ] {
        let msg = err(&[span(
            "t1",
            "",
            1,
            0,
            100,
            tool_attrs(&format!(r#"{{"ticket":1,"amount":{written}}}"#), &[]),
        )]);
        assert!(msg.ends_with(&format!("got {tail}")), "{msg}");
    }
    assert_eq!(
        err(&[span(
            "t1",
            "",
            1,
            0,
            100,
            tool_attrs(r#"{"amount":1}"#, &[])
        )]),
        format!(
            "t.json:1: {p}: tool span of `issue_refund` has no ticket: its arguments are \
             `amount`; expected a ticket argument `ticket`, `ticket_id` or `ticketId` (from the \
             tool definition and the common names) or a `refund.ticket_id` attribute: name it \
             with --ticket-field NAME, or give the tool's definition with --tool-definition FILE"
        )
    );
}

#[test]
fn bad_http_attributes_and_loops_are_errors() {
    let p = "resourceSpans[0].scopeSpans[0].spans[0]";
    let tool = span("t1", "", 1, 0, 3000, tool_attrs(ARGS, &[]));
    let bad_status = span(
        "c1",
        "t1",
        3,
        0,
        1,
        provider_attrs(&[]).as_array().unwrap()[..2]
            .iter()
            .cloned()
            .chain([json!({"key": "http.response.status_code", "value": {"intValue": "42"}})])
            .collect(),
    );
    assert_eq!(
        err(&[bad_status, tool.clone()]),
        format!(
            "t.json:1: {p}.attributes[2] (http.response.status_code): expected an HTTP status \
             code (100..=599), got 42"
        )
    );
    let bad_key = span(
        "c1",
        "t1",
        3,
        0,
        1,
        provider_attrs(&[(
            "http.request.header.idempotency-key",
            json!({"boolValue": true}),
        )]),
    );
    assert_eq!(
        err(&[bad_key, tool.clone()]),
        format!(
            "t.json:1: {p}.attributes[3] (http.request.header.idempotency-key): expected an \
             array of strings, got true"
        )
    );
    let a = span("a", "b", 1, 0, 1, attrs(&[]));
    let b = span("b", "a", 1, 0, 1, attrs(&[]));
    assert_eq!(
        err(&[a, b]),
        format!("t.json:1: {p}.parentSpanId: the chain of parents of span a loops back to it")
    );
}
