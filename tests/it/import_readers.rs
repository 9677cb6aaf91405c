//! The readers of `refundsim import` on the ticket-48213 fixtures (tests/fixtures/import/),
//! through `read_file` with the format detected: the OTLP trace and the JSON lines tell the same
//! story, and the refund export holds both refunds.

use std::path::Path;

use refundsim::import::{read_file, Format, ImportOptions, Recording, Source};

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/import")
        .join(name)
}

fn read(name: &str) -> Recording {
    let path = fixture(name);
    let text = std::fs::read_to_string(&path).unwrap();
    let rec =
        read_file(&path, None, &ImportOptions::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(rec.warnings, vec![], "{name}");
    assert!(Format::detect(&text).is_some(), "{name}");
    rec
}

/// `rec` without where each record came from, to compare two formats' readings.
fn without_sources(mut rec: Recording) -> Recording {
    for c in &mut rec.tool_calls {
        c.source = Source::default();
    }
    for r in &mut rec.provider_requests {
        r.source = Source::default();
    }
    rec
}

#[test]
fn formats_are_detected() {
    let detect = |n: &str| Format::detect(&std::fs::read_to_string(fixture(n)).unwrap());
    assert_eq!(detect("ticket-48213.otlp.json"), Some(Format::Otlp));
    assert_eq!(detect("ticket-48213.jsonl"), Some(Format::Jsonl));
    assert_eq!(detect("ticket-48213.refunds.csv"), Some(Format::RefundsCsv));
    // a spreadsheet's export: byte order mark, quoted header names
    let dashboard = "\u{feff}\"id\",\"Amount\",\"Created (UTC)\"\nre_1,42.00,2024-05-14 16:41:18\n";
    assert_eq!(Format::detect(dashboard), Some(Format::RefundsCsv));
}

#[test]
fn the_otlp_trace_and_the_json_lines_tell_the_same_story() {
    let otlp = read("ticket-48213.otlp.json");
    let jsonl = read("ticket-48213.jsonl");
    assert_eq!(jsonl.executor_timeout_ns, Some(8_000_000_000));
    assert_eq!(
        otlp.executor_timeout_ns, None,
        "a trace does not state the timeout"
    );
    assert_eq!(
        without_sources(Recording {
            executor_timeout_ns: Some(8_000_000_000),
            ..otlp.clone()
        }),
        without_sources(jsonl)
    );
    // The story: a timed-out call whose refund arrived 2.739 s after the executor gave up,
    // and a retry that refunded again.
    let [first, retry] = &otlp.tool_calls[..] else {
        panic!("{:?}", otlp.tool_calls)
    };
    let gave_up = first.result.as_ref().unwrap();
    assert!(gave_up.timed_out && !gave_up.ok);
    let late = first.service_response.as_ref().unwrap();
    assert_eq!(late.at.at - gave_up.at.at, 2_739_000_000);
    assert_eq!(late.refund_id.as_deref(), Some("re_1P8wAbC"));
    assert_eq!(
        retry.result.as_ref().unwrap().refund_id.as_deref(),
        Some("re_1P9xDeF")
    );
    assert_eq!(retry.at.at - first.at.at, 8_034_000_000);
    let attempts: Vec<_> = otlp
        .provider_requests
        .iter()
        .map(|r| (r.attempt, r.latency_ns, r.idempotency_key.clone()))
        .collect();
    assert_eq!(
        attempts,
        [
            (Some(1), Some(428_000_000), Some(None)),
            (Some(0), Some(449_000_000), Some(None))
        ]
    );
}

#[test]
fn the_refund_export_holds_both_refunds_of_ticket_48213() {
    let rec = read("ticket-48213.refunds.csv");
    let got: Vec<_> = rec
        .refunds
        .iter()
        .map(|r| (r.id.as_str(), r.ticket, r.amount_cents, r.status.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("re_1P9xDeF", 48213, 4200, "succeeded"),
            ("re_1P8wAbC", 48213, 4200, "succeeded")
        ]
    );
    // Created 2024-05-14T16:41:18Z, to the second: the middle of it, ± 0.5 s.
    assert_eq!(rec.refunds[0].created.at, 1_715_704_878_500_000_000);
    assert_eq!(rec.refunds[0].created.tolerance_ns, 500_000_000);
}

#[test]
fn a_bad_file_is_refused_naming_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    let good = std::fs::read_to_string(fixture("ticket-48213.jsonl")).unwrap();
    std::fs::write(
        &path,
        good.replacen("\"2024-05-14T16:41:17.244Z\"", "\"17.244\"", 1),
    )
    .unwrap();
    let e = read_file(&path, None, &ImportOptions::default()).unwrap_err();
    assert_eq!(e.at.line, 3);
    assert!(
        e.to_string().starts_with(&format!(
            "{}:3: at: expected an RFC 3339 time",
            path.display()
        )),
        "{e}"
    );
}
