//! `refundsim import` / `replay` on the incident's own log (tests/fixtures/incident): the replay
//! matches the log to the millisecond, counterfactuals change what they should, bad input is
//! refused with the file and line, and nothing partial is written.

use crate::common::{command_json, refundsim, INCIDENT};

const LOG: &str = "tests/fixtures/incident/incident-trace-ticket-48213.log";

fn rows(v: &serde_json::Value) -> &Vec<serde_json::Value> {
    v["comparison"]["tickets"][0]["rows"].as_array().unwrap()
}

#[test]
fn the_incident_log_replays_to_the_millisecond() {
    let (code, v) = command_json("replay", &[LOG, "--base", INCIDENT]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["mode"], "exact");
    let c = &v["comparison"];
    assert_eq!(c["matches"], true);
    let t = &c["tickets"][0];
    assert_eq!(t["ticket"], 48213);
    assert_eq!(
        (
            t["recorded_refunds"].as_u64(),
            t["replayed_refunds"].as_u64()
        ),
        (Some(2), Some(2))
    );
    assert_eq!(t["replayed_tool_calls"], 2);
    // Every recorded instant, at its virtual time (clock origin 16:41:08): the call at 1.210 s,
    // the timeout 8 s later (the log's 17.211 is 1 ms after), the decision 29 ms after the
    // log's timeout line, the retry 4 ms after it, its result 1.257 s later, and the first
    // call's late response in the middle of 19.900–19.999.
    let got: Vec<(u64, &str, Option<u64>, Option<u64>)> = rows(&v)
        .iter()
        .map(|r| {
            (
                r["attempt"].as_u64().unwrap(),
                r["what"].as_str().unwrap(),
                r["recorded_ns"].as_u64(),
                r["replayed_ns"].as_u64(),
            )
        })
        .collect();
    let ms = |x: u64| Some(x * 1_000_000);
    assert_eq!(
        got,
        [
            (0, "tool_call", ms(1210), ms(1210)),
            (0, "tool_result", ms(9211), ms(9210)),
            (0, "result", None, None),
            (0, "model_decision", ms(9240), ms(9240)),
            (
                0,
                "service_response",
                Some(11_949_500_000),
                Some(11_949_500_000)
            ),
            (1, "tool_call", ms(9244), ms(9244)),
            (1, "tool_result", ms(10501), ms(10501)),
            (1, "result", None, None),
            (1, "service_response", ms(10501), ms(10501)),
        ]
    );
    assert_eq!(rows(&v)[2]["recorded_value"], "timeout");
    assert_eq!(rows(&v)[2]["replayed_value"], "timeout");
    assert_eq!(rows(&v)[4]["tolerance_ns"], 50_500_000);
}

#[test]
fn the_text_replay_says_it_matches_and_is_deterministic() {
    let run = || {
        refundsim()
            .args(["replay", LOG, "--base", INCIDENT])
            .output()
            .unwrap()
    };
    let (a, b) = (run(), run());
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(a.stdout, b.stdout);
    let text = String::from_utf8(a.stdout).unwrap();
    assert!(
        text.contains(
            "  attempt 0 tool_result      16:41:17.211  16:41:17.210     -1.000 ms  ok\n"
        ),
        "{text}"
    );
    assert!(text.contains("replay matches the recording: 0 of 1 ticket with other refunds, 0 recorded facts differ"), "{text}");
    let err = String::from_utf8(a.stderr).unwrap();
    assert!(err.starts_with("warning: tests/fixtures/incident/incident-trace-ticket-48213.log:5: truncated refund id"), "{err}");
    assert!(
        err.contains(
            "warning: tests/fixtures/incident/incident-trace-ticket-48213.log:6: redacted digits"
        ),
        "{err}"
    );
    assert!(!text.contains("warning:"), "{text}");
}

#[test]
fn a_replay_that_cannot_match_exits_1_and_says_what_differs() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("no-retry.json");
    std::fs::write(
        &base,
        r#"{"name":"no-retry","horizon":"1h","arrivals":{"schedule":[{"duration":"1h","rate_per_s":0.01}]},"agent":{"retry":{"max_retries":0}}}"#,
    )
    .unwrap();
    let (code, v) = command_json("replay", &[LOG, "--base", base.to_str().unwrap()]);
    assert_eq!(code, 1);
    let t = &v["comparison"]["tickets"][0];
    assert_eq!(
        (
            t["recorded_tool_calls"].as_u64(),
            t["replayed_tool_calls"].as_u64()
        ),
        (Some(2), Some(1))
    );
    assert_eq!(t["replayed_refunds"], 1);
    assert_eq!(v["comparison"]["matches"], false);
    let out = refundsim()
        .args(["replay", LOG, "--base", base.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("REPLAY DIFFERS from the recording: 1 of 1 ticket with other refunds"),
        "{text}"
    );
    assert!(
        text.contains(
            "attempt 1 tool_call        16:41:17.244             —             —  DIFFERS"
        ),
        "{text}"
    );
}

#[test]
fn counterfactuals_replay_the_same_traffic_under_the_fix() {
    // The whole fix: one refund, one tool call.
    let (code, v) = command_json(
        "replay",
        &[LOG, "--base", INCIDENT, "--policy", "policies/fixed.json"],
    );
    assert_eq!(code, 0);
    assert_eq!(v["mode"], "counterfactual");
    let t = &v["comparison"]["tickets"][0];
    assert_eq!(
        (
            t["recorded_refunds"].as_u64(),
            t["replayed_refunds"].as_u64()
        ),
        (Some(2), Some(1))
    );
    // A 15 s timeout alone: the first call's 10.7 s answer now arrives in time.
    let (_, v) = command_json(
        "replay",
        &[LOG, "--base", INCIDENT, "--set", "executor.timeout=15s"],
    );
    assert_eq!(v["comparison"]["tickets"][0]["replayed_refunds"], 1);
    assert_eq!(v["comparison"]["tickets"][0]["replayed_tool_calls"], 1);
    // A bigger pool re-simulates the pool (with the base's background load): no 10 s wait.
    let (_, v) = command_json(
        "replay",
        &[
            LOG,
            "--base",
            INCIDENT,
            "--set",
            "refunds_service.pool_size=12",
        ],
    );
    let t = &v["comparison"]["tickets"][0];
    assert_eq!(t["replayed_refunds"], 1);
    let first_result = rows(&v)[1]["replayed_ns"].as_u64().unwrap();
    assert!(
        first_result < 1_210_000_000 + 3_000_000_000,
        "{first_result}"
    );
    // A key alone does not help: the executor still gives up and the retry carries a new
    // request... with a per-ticket key Stripe replays the first refund.
    let (_, v) = command_json(
        "replay",
        &[
            LOG,
            "--base",
            INCIDENT,
            "--set",
            "refunds_service.idempotency_key=per_ticket",
        ],
    );
    assert_eq!(v["comparison"]["tickets"][0]["replayed_refunds"], 1);
    assert_eq!(v["comparison"]["tickets"][0]["replayed_tool_calls"], 2);
}

#[test]
fn import_writes_a_scenario_that_run_replays() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ticket.json");
    let o = out.to_str().unwrap();
    let imported = refundsim()
        .args(["import", LOG, "--base", INCIDENT, "--out", o])
        .output()
        .unwrap();
    assert_eq!(
        imported.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let text = String::from_utf8(imported.stdout).unwrap();
    assert!(
        text.starts_with(
            "imported 1 ticket, 2 tool calls, 2 provider requests, 0 exported refunds\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  p90        10359.5        3417.7\n"),
        "{text}"
    );
    let first = std::fs::read_to_string(&out).unwrap();
    let sc: serde_json::Value = serde_json::from_str(&first).unwrap();
    assert_eq!(sc["clock_origin"], "2024-05-14T16:41:08Z");
    assert_eq!(sc["executor"]["timeout"], "8s");
    assert_eq!(sc["arrivals"]["tickets"][0]["opened_at"], "1s 206ms");
    assert_eq!(
        sc["replay"]["requests"]["48213/0/0"]["reach_provider"],
        "10s 359ms 500us"
    );
    assert_eq!(sc["replay"]["requests"]["48213/1/0"]["latency"], "380ms");
    // Same input, same bytes.
    refundsim()
        .args(["import", LOG, "--base", INCIDENT, "--out", o])
        .assert()
        .success();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), first);
    let (code, v) = command_json("run", &[o]);
    assert_eq!(code, 0);
    assert_eq!(v["recording"]["matches"], true);
    assert_eq!(v["duplicate_refund_tickets"], 1);
    let (_, v) = command_json("run", &[o, "--policy", "policies/fixed.json"]);
    assert_eq!(v["recording"]["replayed_refunds"], 1);
}

#[test]
fn bad_recordings_are_refused_with_file_and_line_and_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.log");
    std::fs::write(
        &bad,
        "16:41:09.210  tool_call issue_refund(ticket=48213, amount=4200)\n16:41:1x.000  model: \"x\"\n",
    )
    .unwrap();
    let out = dir.path().join("out.json");
    let r = refundsim()
        .args([
            "import",
            bad.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8(r.stderr).unwrap();
    assert!(
        err.contains("bad.log:2: time: expected HH:MM:SS.mmm"),
        "{err}"
    );
    assert!(!out.exists());
    // Not a recording at all.
    let r = refundsim()
        .args(["import", "README.md", "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8(r.stderr)
        .unwrap()
        .contains("README.md:1: cannot tell the format"));
    // --out over an input.
    let r = refundsim()
        .args(["import", LOG, "--out", LOG])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(!out.exists());
    // A log without any refund tool call.
    std::fs::write(&bad, "16:41:09.210  model: \"hello\"\n").unwrap();
    let r = refundsim()
        .args(["replay", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    let err = String::from_utf8(r.stderr).unwrap();
    assert!(
        err.contains("model decision before any tool_call line"),
        "{err}"
    );
}

const OTLP: &str = "tests/fixtures/import/ticket-48213.otlp.json";
const JSONL: &str = "tests/fixtures/import/ticket-48213.jsonl";
const CSV: &str = "tests/fixtures/import/ticket-48213.refunds.csv";

#[test]
fn traces_and_json_lines_with_the_refund_export_replay_exactly() {
    for trace in [OTLP, JSONL] {
        let (code, v) = command_json("replay", &[trace, CSV, "--base", INCIDENT]);
        assert_eq!(code, 0, "{trace}: {v:#}");
        let t = &v["comparison"]["tickets"][0];
        assert_eq!(t["recorded_refunds_from"], "refund export", "{trace}");
        assert_eq!(
            (
                t["recorded_refunds"].as_u64(),
                t["replayed_refunds"].as_u64()
            ),
            (Some(2), Some(2))
        );
        // The service's own time after Stripe's answer and the way back to the executor are
        // replayed: the retry's answer at 18.497 and its result at 18.501.
        let rows = rows(&v);
        let at = |what: &str, attempt: u64| {
            rows.iter()
                .find(|r| r["what"] == what && r["attempt"] == attempt)
                .and_then(|r| r["replayed_ns"].as_u64())
        };
        assert_eq!(at("service_response", 1), Some(10_497_000_000), "{trace}");
        assert_eq!(at("tool_result", 1), Some(10_501_000_000), "{trace}");
        assert_eq!(at("service_response", 0), Some(11_950_000_000), "{trace}");
    }
}

#[test]
fn a_recorded_5xx_commits_only_where_the_refund_export_lists_a_refund() {
    // The first call's late answer becomes a 500: with the export listing its refund it
    // committed (Stripe's 500 after commit), without an export it did not.
    let text = std::fs::read_to_string(JSONL).unwrap();
    let changed: String = text
        .lines()
        .map(|l| {
            if l.contains(r#""attempt":0"#) {
                l.replace(r#""status":200"#, r#""status":500"#)
                    .replace(r#","refund_id":"re_1P8wAbC""#, "")
            } else if l.contains("toolu_01A") {
                l.replace(r#""ok":true,"refund_id":"re_1P8wAbC""#, r#""ok":false"#)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert_ne!(changed, text);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("five-hundred.jsonl");
    std::fs::write(&f, changed).unwrap();
    let f = f.to_str().unwrap();
    let (code, v) = command_json("replay", &[f, CSV, "--base", INCIDENT]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["comparison"]["tickets"][0]["replayed_refunds"], 2);
    let (code, v) = command_json("replay", &[f, "--base", INCIDENT]);
    assert_eq!(code, 0, "{v:#}");
    let t = &v["comparison"]["tickets"][0];
    assert_eq!(
        (
            t["recorded_refunds"].as_u64(),
            t["replayed_refunds"].as_u64()
        ),
        (Some(1), Some(1))
    );
}

#[test]
fn repeated_records_are_kept_once_and_impossible_times_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // The same log twice, its JSON lines, and the refund export with a row repeated: one of
    // each kept.
    let csv = std::fs::read_to_string(CSV).unwrap();
    let last = csv.lines().last().unwrap().to_string();
    let doubled = dir.path().join("doubled.csv");
    std::fs::write(&doubled, format!("{csv}{last}\n")).unwrap();
    let out = refundsim()
        .args([
            "replay",
            LOG,
            LOG,
            JSONL,
            doubled.to_str().unwrap(),
            "--base",
            INCIDENT,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{err}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        err.contains("4 tool calls repeated (same ticket and instant, or same call id) ignored"),
        "{err}"
    );
    assert!(err.contains("1 refund repeated (same id) ignored"), "{err}");
    // A provider request sent before the service received the call.
    let text = std::fs::read_to_string(JSONL).unwrap().replace(
        r#""sent":"2024-05-14T16:41:18.061Z""#,
        r#""sent":"2024-05-14T16:40:00.000Z""#,
    );
    let f = dir.path().join("early.jsonl");
    std::fs::write(&f, text).unwrap();
    let out = refundsim()
        .args(["replay", f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("early.jsonl:4: provider request for ticket 48213: sent 77.248 s before the service received the call"), "{err}");
    // `--out -` is not a file.
    let out = refundsim()
        .args(["import", LOG, "--out", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("--out -: expected a file path"));
}

#[test]
fn a_timeout_without_a_recorded_answer_replays_and_run_fails_on_a_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("short.log");
    std::fs::write(
        &log,
        "10:00:00.000  tool_call issue_refund(ticket=7, amount=500)\n\
         10:00:08.000  tool_executor: timeout after 8000ms, injecting error result\n\
         10:00:08.030  model: \"giving up\"\n",
    )
    .unwrap();
    let base = dir.path().join("no-retry.json");
    std::fs::write(
        &base,
        r#"{"name":"no-retry","horizon":"1h","arrivals":{"schedule":[{"duration":"1h","rate_per_s":0.01}]},"agent":{"retry":{"max_retries":0}},"humans":{"enabled":false}}"#,
    )
    .unwrap();
    let l = log.to_str().unwrap();
    let out = refundsim()
        .args(["replay", l, "--base", base.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{err}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(err.contains("tool call 0 timed out and the service's answer is not recorded: replayed as no answer (no refund)"), "{err}");
    // `run` on an imported scenario that no longer matches its recording exits 1: over the
    // incident's base the model retries, which the recording did not.
    let imported = dir.path().join("short.json");
    let o = imported.to_str().unwrap();
    refundsim()
        .args(["import", l, "--base", INCIDENT, "--out", o])
        .assert()
        .success();
    let out = refundsim().args(["run", o]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .contains("REPLAY DIFFERS"));
    // A hand-edited replay section is validated like any field.
    let text = std::fs::read_to_string(&imported).unwrap();
    let edited = text.replacen(r#""result": "timeout""#, r#""result": "maybe""#, 1);
    assert_ne!(edited, text);
    std::fs::write(&imported, edited).unwrap();
    let out = refundsim().args(["run", o]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("replay.tickets.7.calls.0.result: expected \"ok\", \"fail\" or \"timeout\", got \"maybe\""), "{err}");
}

#[test]
fn the_html_report_of_an_imported_scenario_compares_it_with_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("ticket.json");
    let s = sc.to_str().unwrap();
    refundsim()
        .args(["import", LOG, "--base", INCIDENT, "--out", s])
        .assert()
        .success();
    let html = dir.path().join("r.html");
    let h = html.to_str().unwrap();
    refundsim()
        .args(["report", s, "--out", h])
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(r#"<section id="recording" data-mode="exact" data-matches="true" data-recorded-refunds="2" data-replayed-refunds="2">"#),
        "{page}"
    );
    assert!(page.contains("The replay matches the recording."));
    refundsim()
        .args(["report", s, "--policy", "policies/fixed.json", "--out", h])
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains(r#"data-mode="counterfactual" data-matches="false" data-recorded-refunds="2" data-replayed-refunds="1""#));
    assert!(page.contains(r#"<tr data-ticket="48213"><td class="n">48213</td><td class="n">2</td><td class="n">1</td>"#));
}

/// A replay section keyed by something that is not a ticket number names the map and says a
/// key, not `?`; the line and column are the map's (the key that failed has no path of its own).
#[test]
fn a_ticket_key_that_is_not_a_number_is_named_as_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.json");
    std::fs::write(
        &path,
        r#"{"name":"x","replay":{"tickets":{"abc":{"calls":[]}}}}"#,
    )
    .unwrap();
    let out = refundsim().arg("run").arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "s.json:1:33: replay.tickets.<key>: invalid value: expected key to be a number"
        ),
        "{err}"
    );
}
