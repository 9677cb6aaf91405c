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
        .map(|r| {
            (
                r.id.as_str(),
                r.ticket.as_str(),
                r.amount_cents,
                r.status.as_str(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("re_1P9xDeF", "48213", 4200, "succeeded"),
            ("re_1P8wAbC", "48213", 4200, "succeeded")
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

/// `refundsim import FILE --out DIR/o.json`: the exit code and stderr.
fn import_err(dir: &Path, file: &Path, extra: &[&str]) -> (i32, String) {
    let out = crate::common::refundsim()
        .arg("import")
        .arg(file)
        .args(extra)
        .arg("--out")
        .arg(dir.join("o.json"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Errors the built scenario would have raised (a span over 30 days, an executor timeout of 0)
/// name the input file and the record's line, not "the imported scenario:LINE" of generated
/// JSON (issue 13).
#[test]
fn import_errors_name_the_input_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(fixture("ticket-48213.jsonl")).unwrap();
    let long = dir.path().join("long.jsonl");
    std::fs::write(
        &long,
        format!(
            "{good}{}\n",
            r#"{"type":"tool_call","ticket":48214,"tool":"issue_refund","call_id":"c2","at":"2024-07-14T16:42:11.210Z","amount_cents":4200,"result":{"at":"2024-07-14T16:42:12.211Z","ok":true,"refund_id":"re_x"}}"#
        ),
    )
    .unwrap();
    let (code, err) = import_err(dir.path(), &long, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {}:6: this record is 2months 2h 53m 51s after the first one ({}:2, \
             2024-05-14T16:41:09Z): a replay spans at most 30 days",
            long.display(),
            long.display()
        )),
        "{err}"
    );

    let zero = dir.path().join("t0.jsonl");
    std::fs::write(
        &zero,
        good.replace("\"timeout_ms\":8000", "\"timeout_ms\":0"),
    )
    .unwrap();
    let (code, err) = import_err(dir.path(), &zero, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {}:1: timeout_ms: expected a whole number of milliseconds from 1 to 86400000",
            zero.display()
        )),
        "{err}"
    );

    // An OTLP span (the second in the file, a tool call's) that starts at the epoch.
    let otlp = std::fs::read_to_string(fixture("ticket-48213.otlp.json")).unwrap();
    let (at, _) = otlp.match_indices("\"startTimeUnixNano\"").nth(1).unwrap();
    let value_start = at + "\"startTimeUnixNano\"".len();
    let value_start = value_start + otlp[value_start..].find('"').unwrap() + 1;
    let value_end = value_start + otlp[value_start..].find('"').unwrap();
    let mut epoch = otlp.clone();
    epoch.replace_range(value_start..value_end, "0");
    let p = dir.path().join("epoch.otlp.json");
    std::fs::write(&p, epoch).unwrap();
    let (code, err) = import_err(dir.path(), &p, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!("error: {}:", p.display()))
            && err.contains("after the first one")
            && err.contains("1970-01-01T00:00:00Z"),
        "{err}"
    );
}

/// More tool calls than an import reads is refused at the first one over, naming the file,
/// the line and the count, before the whole file is held in memory (issue 13).
#[test]
fn a_recording_over_the_record_budget_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.jsonl");
    let n = refundsim::import::MAX_RECORDS + 1;
    let mut text = String::from("{\"type\":\"executor\",\"timeout_ms\":8000}\n");
    for i in 0..n {
        let (s, ms) = (i / 1000, i % 1000);
        text.push_str(&format!(
            "{{\"type\":\"tool_call\",\"ticket\":{},\"tool\":\"issue_refund\",\"at\":\"2024-05-14T16:{:02}:{:02}.{ms:03}Z\",\"amount_cents\":4200}}\n",
            100_000 + i,
            s / 60,
            s % 60
        ));
    }
    std::fs::write(&path, text).unwrap();
    let (code, err) = import_err(dir.path(), &path, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!(
            "error: {}:{}: tool call {n}: more than the {} tool calls an import reads",
            path.display(),
            n + 1,
            refundsim::import::MAX_RECORDS
        )),
        "{err}"
    );
}

/// Small import messages: a directory is a directory, an empty export has no header, a
/// repeated column is refused, one field is "1 field" (issue 13 item 8).
#[test]
fn small_import_messages_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = import_err(dir.path(), dir.path(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "{}: is a directory, expected a file",
            dir.path().display()
        )),
        "{err}"
    );

    let empty = dir.path().join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    let (code, err) = import_err(dir.path(), &empty, &["--format", "refunds-csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(":1: no header: expected a first line of column names"),
        "{err}"
    );

    let twice = dir.path().join("twice.csv");
    std::fs::write(&twice, "id,id\nre_1,re_2\n").unwrap();
    let (code, err) = import_err(dir.path(), &twice, &["--format", "refunds-csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(":1: column 2 `id` repeats column 1: expected each column name once"),
        "{err}"
    );

    let csv = std::fs::read_to_string(fixture("ticket-48213.refunds.csv")).unwrap();
    let short = dir.path().join("short.csv");
    std::fs::write(
        &short,
        format!("{}x\n", csv.lines().next().unwrap().to_string() + "\n"),
    )
    .unwrap();
    let (code, err) = import_err(dir.path(), &short, &["--format", "refunds-csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(":2: 1 field where the header has"), "{err}");

    let otlp = std::fs::read_to_string(fixture("ticket-48213.otlp.json")).unwrap();
    let bytes = dir.path().join("bytes.otlp.json");
    std::fs::write(
        &bytes,
        otlp.replacen(
            r#"{"stringValue":"toolu_01A"}"#,
            r#"{"bytesValue":"dG9vbHVfMDFB"}"#,
            1,
        ),
    )
    .unwrap();
    let (code, err) = import_err(dir.path(), &bytes, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("expected a stringValue, got a bytesValue or an empty value")
            && !err.contains("null"),
        "{err}"
    );
}

#[test]
fn the_agent_formats_are_detected_and_read_alike_whole_or_streamed() {
    use refundsim::import::{read_files, read_text};
    let spec = |n: &str| fixture(&format!("spec/{n}"));
    let opts = ImportOptions::default();
    for (name, format) in [
        ("langsmith-runs.json", Format::Langsmith),
        ("langsmith-runs.jsonl", Format::Langsmith),
        ("langfuse-observations.jsonl", Format::Langfuse),
        ("openai-agents-trace.json", Format::OpenaiAgents),
    ] {
        let path = spec(name);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(Format::detect(&text), Some(format), "{name}");
        // read_files streams JSON lines and reads a document whole: the same records.
        let whole = read_text(&path.display().to_string(), &text, format, &opts).unwrap();
        let files = read_files(std::slice::from_ref(&path), None, &opts).unwrap();
        assert_eq!(files, whole, "{name}");
        assert_eq!(whole.warnings, vec![], "{name}");
        assert_eq!(whole.tool_calls.len(), 8, "{name}");
        assert!(whole.provider_requests.is_empty(), "{name}");
    }
    // The same runs as an array and one per line.
    let json = read_file(&spec("langsmith-runs.json"), None, &opts).unwrap();
    let jsonl = read_file(&spec("langsmith-runs.jsonl"), None, &opts).unwrap();
    assert_eq!(without_sources(json), without_sources(jsonl));
}
