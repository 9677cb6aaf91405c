//! Recordings written from the formats' public specifications by someone who had not read the
//! importer (`tests/fixtures/import/spec/`, sources quoted in its README): five tickets, two
//! refunded twice, as OTLP GenAI spans, MCP client spans and OpenInference spans, beside
//! Stripe's own list of refunds. `expected.json` holds the facts each file tells.
//!
//! Each must import without a flag, replay every recorded instant, count each ticket's refunds
//! as `expected.json` does, and give the same counterfactual for every ticket whatever the
//! format.

use crate::common::{command_json, INCIDENT};

const DIR: &str = "tests/fixtures/import/spec";
const LIST: &str = "tests/fixtures/import/spec/stripe-refunds-list.json";

/// The OTLP recordings of the same world.
const OTLP: [&str; 3] = [
    "otlp-genai.json",
    "mcp-client.otlp.json",
    "openinference.otlp.json",
];

/// `expected.json`'s (ticket id, refund count) per ticket.
fn expected_refunds() -> Vec<(String, u64)> {
    let e: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{DIR}/expected.json")).unwrap())
            .unwrap();
    e["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["ticket_id"].as_str().unwrap().to_string(),
                t["refunds"]["count"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// (ticket label, recorded refunds, replayed refunds, replayed tool calls) of one ticket.
type TicketRow = (String, u64, u64, u64);

/// The exit code, the JSON and a [`TicketRow`] per ticket.
fn replay(files: &[String], extra: &[&str]) -> (i32, serde_json::Value, Vec<TicketRow>) {
    let mut args: Vec<&str> = files.iter().map(String::as_str).collect();
    args.extend(["--base", INCIDENT]);
    args.extend(extra);
    let (code, v) = command_json("replay", &args);
    let rows = v["comparison"]["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["ticket_label"].as_str().unwrap_or_default().to_string(),
                t["recorded_refunds"].as_u64().unwrap(),
                t["replayed_refunds"].as_u64().unwrap(),
                t["replayed_tool_calls"].as_u64().unwrap(),
            )
        })
        .collect();
    (code, v, rows)
}

#[test]
fn each_otlp_convention_replays_exactly_with_the_recorded_refunds() {
    let want = expected_refunds();
    for f in OTLP {
        for with_list in [false, true] {
            let mut files = vec![format!("{DIR}/{f}")];
            if with_list {
                files.push(LIST.to_string());
            }
            let (code, v, rows) = replay(&files, &[]);
            assert_eq!(code, 0, "{files:?}: {:#}", v["comparison"]);
            assert_eq!(v["comparison"]["matches"], true, "{files:?}");
            let got: Vec<(String, u64)> = rows.iter().map(|r| (r.0.clone(), r.1)).collect();
            assert_eq!(got, want, "{files:?}");
            let from = if with_list {
                "refund export"
            } else {
                "provider requests"
            };
            for t in v["comparison"]["tickets"].as_array().unwrap() {
                assert_eq!(t["recorded_refunds_from"], from, "{files:?}");
            }
        }
    }
}

#[test]
fn every_format_gives_the_same_counterfactual_for_every_ticket() {
    for policy in [
        "policies/key-only.json",
        "policies/probe-only.json",
        "policies/timeout-15s-only.json",
        "policies/pool-resize-only.json",
        "policies/fixed.json",
    ] {
        let answers: Vec<Vec<TicketRow>> = OTLP
            .iter()
            .map(|f| {
                replay(
                    &[format!("{DIR}/{f}"), LIST.to_string()],
                    &["--policy", policy],
                )
                .2
            })
            .collect();
        assert!(
            answers.windows(2).all(|w| w[0] == w[1]),
            "{policy}: {answers:#?}"
        );
        // No fix leaves a ticket refunded twice.
        assert!(
            answers[0].iter().all(|t| t.2 == 1),
            "{policy}: {:?}",
            answers[0]
        );
    }
}
