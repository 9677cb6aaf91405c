//! In an exact replay the recording wins over the fake provider's rules, and the disagreement is
//! reported as a finding about the recording (issue 26, item 2). A counterfactual lets Stripe's
//! rules decide (that is its point), and reports no such finding.

use crate::common::{command_json, INCIDENT};

const KEY_IGNORED: &str = "tests/fixtures/import/recording-wins/key-ignored.jsonl";
const SAME_ID: &str = "tests/fixtures/import/recording-wins/same-id.jsonl";

fn findings(v: &serde_json::Value) -> Vec<(String, String, String)> {
    v["comparison"]["recording_findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["request"].as_str().unwrap().to_string(),
                f["recorded"].as_str().unwrap().to_string(),
                f["provider_rules"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn refunds(v: &serde_json::Value) -> (u64, u64) {
    let t = &v["comparison"]["tickets"][0];
    (
        t["recorded_refunds"].as_u64().unwrap(),
        t["replayed_refunds"].as_u64().unwrap(),
    )
}

/// Two requests with one key, each returning its own refund: Stripe would have replayed the
/// first answer, the recording shows a second refund. The replay makes both, matches, and says
/// which request the rules disagree with.
#[test]
fn a_key_the_provider_did_not_keep_replays_as_recorded_with_a_finding() {
    let (code, v) = command_json("replay", &[KEY_IGNORED]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["comparison"]["matches"], true);
    assert_eq!(refunds(&v), (2, 2));
    let f = findings(&v);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "48213/0/0");
    assert_eq!(f[0].1, "200 with a new refund");
    assert!(f[0].2.starts_with("200 as an idempotent replay"), "{f:?}");
}

/// Two requests without a key returning the same refund: Stripe's rules would have made a new
/// one; the recording says the second returned the first's. The replay makes one.
#[test]
fn an_answer_returning_an_earlier_refund_makes_none() {
    let (code, v) = command_json("replay", &[SAME_ID]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(refunds(&v), (1, 1));
    let f = findings(&v);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "48213/0/0");
    assert_eq!(f[0].1, "200 returning an earlier request's refund");
    assert_eq!(f[0].2, "a new refund (no Idempotency-Key sent)");
}

/// The text names the finding and still says the replay matches.
#[test]
fn the_text_lists_the_findings_before_the_verdict() {
    let out = crate::common::refundsim()
        .args(["replay", KEY_IGNORED])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let finding = text
        .find("request 48213/0/0: recorded 200 with a new refund; Stripe's rules: 200 as an idempotent replay")
        .expect(&text);
    let verdict = text.find("replay matches the recording").expect(&text);
    assert!(finding < verdict, "{text}");
}

/// A faithful recording has no finding; a counterfactual has none either (the rules decide):
/// with a key per ticket the provider's rules replay the later request, one refund.
#[test]
fn faithful_recordings_and_counterfactuals_report_no_finding() {
    for files in [
        &["tests/fixtures/incident/incident-trace-ticket-48213.log"][..],
        &[
            "tests/fixtures/import/ticket-48213.jsonl",
            "tests/fixtures/import/ticket-48213.refunds.csv",
        ],
    ] {
        let mut args = files.to_vec();
        args.extend(["--base", INCIDENT]);
        let (code, v) = command_json("replay", &args);
        assert_eq!(code, 0, "{files:?}: {v:#}");
        assert!(findings(&v).is_empty(), "{files:?}: {v:#}");
    }
    let (code, v) = command_json(
        "replay",
        &[
            KEY_IGNORED,
            "--set",
            "refunds_service.idempotency_key=per_ticket",
        ],
    );
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["mode"], "counterfactual");
    assert!(findings(&v).is_empty(), "{v:#}");
    assert_eq!(refunds(&v), (2, 1));
}

/// A lost answer after Stripe made the refund, then the retry's 200 (Stripe's replay of the
/// saved answer under the ticket's key), exported as instrumentation records it (no response
/// body, so no refund id) with the provider's list: the export's one refund is the lost
/// request's, so the 200 made none. With or without the key header recorded, the replay gives
/// one refund and no finding (the recording is not read as a provider breaking its rules).
#[test]
fn a_retry_answered_by_stripes_replay_is_no_new_refund() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("w.json");
    std::fs::write(
        &sc,
        serde_json::json!({
            "name": "lost-then-replayed", "seed": 747, "horizon": "5m",
            "clock_origin": "2025-03-07T10:00:00Z",
            "arrivals": {"tickets": [{"id": 1000, "opened_at": "0ms", "amount_cents": 1,
                                      "charge_amount_cents": 3}]},
            "executor": {"timeout": "1s", "on_timeout": "report_error"},
            "refunds_service": {"pool_size": 1, "idempotency_key": "per_ticket"},
            "stripe": {"latency_choices": ["300ms"],
                       "faults": {"response_lost_after_commit": 0.3}},
            "humans": {"enabled": false}
        })
        .to_string(),
    )
    .unwrap();
    for capture in ["arguments,headers", "arguments"] {
        let (otlp, list) = (dir.path().join("o.json"), dir.path().join("l.json"));
        let out = crate::common::refundsim()
            .arg("run")
            .arg(&sc)
            .arg("--otlp")
            .arg(&otlp)
            .args(["--otlp-capture", capture])
            .arg("--stripe-list")
            .arg(&list)
            .args(["--ticket", "1000"])
            .output()
            .unwrap();
        let story = String::from_utf8_lossy(&out.stdout);
        assert!(story.contains("no response, connection_lost"), "{story}");
        assert!(story.contains("200 replayed re_00000001"), "{story}");
        let (code, v) = command_json(
            "replay",
            &[
                otlp.to_str().unwrap(),
                list.to_str().unwrap(),
                "--base",
                sc.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{capture}: {v:#}");
        assert_eq!(refunds(&v), (1, 1), "{capture}");
        assert!(findings(&v).is_empty(), "{capture}: {v:#}");
    }
}

/// The HTML report of the imported recording lists the finding beside the verdict.
#[test]
fn the_html_report_lists_the_findings() {
    let dir = tempfile::tempdir().unwrap();
    let (sc, html) = (dir.path().join("r.json"), dir.path().join("r.html"));
    let out = crate::common::refundsim()
        .args(["import", KEY_IGNORED, "--out"])
        .arg(&sc)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = crate::common::refundsim()
        .arg("report")
        .arg(&sc)
        .arg("--out")
        .arg(&html)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(
            "<li>request 48213/0/0: recorded 200 with a new refund; Stripe's rules: 200 as an \
             idempotent replay"
        ),
        "{}",
        &page[page.find("id=\"recording\"").unwrap_or(0)..][..2000.min(page.len())]
    );
}

/// One key, two 200s without refund ids, and the provider's list showing two refunds, each
/// created within a second of one answer: the second 200 made a refund of its own (the key was
/// not kept), so the replay makes both and says so. Before, the second 200 was read as
/// Stripe's replay: 1 refund replayed of 2 recorded, exit 1, the list's second refund called
/// one made outside the agent.
#[test]
fn a_list_showing_two_refunds_under_one_key_keeps_both() {
    let dir = "tests/fixtures/import/recording-wins";
    let (code, v) = command_json(
        "replay",
        &[
            &format!("{dir}/same-key-two-refunds.otlp.json"),
            &format!("{dir}/same-key-two-refunds.stripe-list.json"),
            "--base",
            INCIDENT,
        ],
    );
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(refunds(&v), (2, 2));
    let f = findings(&v);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "T-100000/0/0");
    assert_eq!(f[0].1, "200 with a new refund");
    let found = &v["comparison"]["recording_findings"][0];
    assert_eq!(found["ticket_label"], "T-100000");
    assert_eq!(found["ticket"], 100000);
}

/// `--format otlp` applies to every file: a Stripe list given with it is refused, not read as
/// a trace without spans (which dropped the list's refunds without a word).
#[test]
fn format_otlp_refuses_a_file_that_is_not_otlp() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("x.json");
    let out = crate::common::refundsim()
        .args([
            "import",
            "tests/fixtures/import/recording-wins/same-key-two-refunds.otlp.json",
            "tests/fixtures/import/recording-wins/same-key-two-refunds.stripe-list.json",
            "--format",
            "otlp",
            "--out",
        ])
        .arg(&out_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("same-key-two-refunds.stripe-list.json:1: expected an OTLP/JSON export"),
        "{err}"
    );
    assert!(!out_path.exists());
}

/// `run --ticket` takes the text id a recording gave a ticket, as stories print it, and a bad
/// one says what was expected and which text ids there are.
#[test]
fn run_ticket_takes_the_recordings_text_id() {
    let dir = tempfile::tempdir().unwrap();
    let sc = dir.path().join("r.json");
    let d = "tests/fixtures/import/recording-wins";
    let out = crate::common::refundsim()
        .args(["import"])
        .arg(format!("{d}/same-key-two-refunds.otlp.json"))
        .arg(format!("{d}/same-key-two-refunds.stripe-list.json"))
        .arg("--out")
        .arg(&sc)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let run = |ticket: &str| {
        crate::common::refundsim()
            .arg("run")
            .arg(&sc)
            .args(["--ticket", ticket])
            .output()
            .unwrap()
    };
    let by_label = run("T-100000");
    assert_eq!(by_label.status.code(), Some(0), "{by_label:?}");
    let text = String::from_utf8_lossy(&by_label.stdout);
    assert!(text.contains("\nticket T-100000:\n"), "{text}");
    assert_eq!(by_label.stdout, run("100000").stdout);
    let bad = run("T-9");
    assert_eq!(bad.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr).trim(),
        "error: --ticket T-9: expected a ticket id (a number), or a text id the recording gave \
         (replay.ticket_labels: T-100000 is ticket 100000)"
    );
}
