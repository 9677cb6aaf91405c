//! Recordings written from the formats' public specifications by someone who had not read the
//! importer (`tests/fixtures/import/spec/`, sources quoted in its README): five tickets, two
//! refunded twice, as OTLP GenAI spans, MCP client spans and OpenInference spans, as LangSmith
//! runs, Langfuse observations and the OpenAI Agents SDK's trace export, beside Stripe's own
//! list of refunds. `expected.json` holds the facts each file tells.
//!
//! Each must import without a flag, replay every recorded instant, count each ticket's refunds
//! as `expected.json` does, and give the same counterfactual for every ticket whatever the
//! format. The agent-side formats hold no provider facts: with the provider's list they give
//! the OTLP answer ticket by ticket; without it they cannot see the refunds the timed-out
//! calls made (see [`agent_formats_alone_miss_the_refunds_of_timed_out_calls`]).

use crate::common::{command_json, refundsim, INCIDENT};

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
type Row = (String, u64, u64, u64);

/// The exit code, the report and a [`Row`] per ticket.
fn replay(files: &[String], extra: &[&str]) -> (i32, serde_json::Value, Vec<Row>) {
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
        let answers: Vec<Vec<Row>> = OTLP
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

/// The agent-side recordings of the same world: the agent's tool calls and the model's
/// decisions, no provider facts.
const AGENT: [&str; 4] = [
    "langsmith-runs.json",
    "langsmith-runs.jsonl",
    "langfuse-observations.jsonl",
    "openai-agents-trace.json",
];

/// The policies every format is compared under.
const POLICIES: [&str; 5] = [
    "policies/key-only.json",
    "policies/probe-only.json",
    "policies/timeout-15s-only.json",
    "policies/pool-resize-only.json",
    "policies/fixed.json",
];

fn expected() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(format!("{DIR}/expected.json")).unwrap()).unwrap()
}

/// ns since the Unix epoch of an RFC 3339 time in `expected.json`.
fn ns(t: &serde_json::Value) -> i64 {
    let at = humantime::parse_rfc3339(t.as_str().unwrap()).unwrap();
    at.duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as i64
}

/// Per ticket, the refunds made by a call whose tool result was a timeout: the refund exists,
/// but the result the model got, all an agent-side trace records, does not name it.
fn refunds_of_timed_out_calls() -> Vec<(String, u64)> {
    expected()["tickets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let hidden = t["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["result"] == "timeout" && !c["refund_created_by_this_call"].is_null())
                .count();
            (t["ticket_id"].as_str().unwrap().to_string(), hidden as u64)
        })
        .collect()
}

/// The recorded instants of one ticket's comparison rows of kind `what`, ns since the Unix
/// epoch (`origin` is the replay's virtual time 0), each checked to have replayed within its
/// tolerance.
fn recorded(ticket: &serde_json::Value, what: &str, origin: i64) -> Vec<i64> {
    ticket["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["what"] == what)
        .map(|r| {
            assert_eq!(r["ok"], true, "{r}");
            origin + r["recorded_ns"].as_i64().unwrap()
        })
        .collect()
}

#[test]
fn each_agent_format_replays_exactly_with_and_without_the_list() {
    let want = expected_refunds();
    let hidden = refunds_of_timed_out_calls();
    let truth = expected();
    // Virtual time 0 is the first recorded instant less one second, on a whole second.
    let origin = ns(&truth["tickets"][0]["tool_calls"][0]["start"]) - 1_000_000_000;
    for f in AGENT {
        for with_list in [false, true] {
            let mut files = vec![format!("{DIR}/{f}")];
            if with_list {
                files.push(LIST.to_string());
            }
            let (code, v, rows) = replay(&files, &[]);
            assert_eq!(code, 0, "{files:?}: {:#}", v["comparison"]);
            assert_eq!(v["comparison"]["matches"], true, "{files:?}");
            // With the list, the provider's truth; without, the refunds the tool results name:
            // not those of the calls that timed out.
            let got: Vec<(String, u64)> = rows.iter().map(|r| (r.0.clone(), r.1)).collect();
            let expect: Vec<(String, u64)> = if with_list {
                want.clone()
            } else {
                want.iter()
                    .zip(&hidden)
                    .map(|((t, n), (_, h))| (t.clone(), n - h))
                    .collect()
            };
            assert_eq!(got, expect, "{files:?}");
            let from = if with_list {
                "refund export"
            } else {
                "tool results"
            };
            for (t, truth) in v["comparison"]["tickets"]
                .as_array()
                .unwrap()
                .iter()
                .zip(truth["tickets"].as_array().unwrap())
            {
                assert_eq!(t["recorded_refunds_from"], from, "{files:?}");
                // Every instant the format carries is the ground truth's, and replays.
                let calls = truth["tool_calls"].as_array().unwrap();
                let starts: Vec<i64> = calls.iter().map(|c| ns(&c["start"])).collect();
                let ends: Vec<i64> = calls.iter().map(|c| ns(&c["end"])).collect();
                let decisions: Vec<i64> = truth["model_decisions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| ns(&d["end"]))
                    .collect();
                assert_eq!(recorded(t, "tool_call", origin), starts, "{files:?}");
                assert_eq!(recorded(t, "tool_result", origin), ends, "{files:?}");
                assert_eq!(
                    recorded(t, "model_decision", origin),
                    decisions,
                    "{files:?}"
                );
                let results: Vec<&str> = t["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|r| r["what"] == "result")
                    .map(|r| r["recorded_value"].as_str().unwrap())
                    .collect();
                let truth_results: Vec<&str> = calls
                    .iter()
                    .map(|c| c["result"].as_str().unwrap())
                    .collect();
                assert_eq!(results, truth_results, "{files:?}");
            }
            // What the replay took from the base rather than the recording, said.
            let drawn: Vec<&str> = v["drawn_from_base"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["fact"].as_str().unwrap())
                .collect();
            let mut facts = vec![
                "provider requests",
                "the service's answers",
                "Idempotency-Key",
            ];
            // The SDK's timeout text states the 8 s; the others' runs do not.
            if f != "openai-agents-trace.json" {
                facts.insert(0, "executor timeout");
            }
            assert_eq!(drawn, facts, "{files:?}");
        }
    }
}

#[test]
fn import_says_which_facts_the_base_supplied() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("replay.json");
    for f in AGENT {
        let o = refundsim()
            .args([
                "import",
                &format!("{DIR}/{f}"),
                LIST,
                "--base",
                INCIDENT,
                "--out",
                out.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{f}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.contains("drawn from the base scenario, not recorded:\n"),
            "{f}: {text}"
        );
        assert!(
            text.contains(
                "  - provider requests: none recorded: each answered call's time at the provider \
                 is the smaller of its answer time and the median of the base's stripe.latency \
                 (380ms), the rest its time to reach the provider; a request the recording does \
                 not hold (a counterfactual's retry) draws from the base's stripe.latency \
                 {\"p50\":\"380ms\",\"p99\":\"1s 600ms\"}\n"
            ),
            "{f}: {text}"
        );
        assert!(
            text.contains(
                "  - the service's answers: 3 timed-out calls without a recorded answer from the \
                 service: each replayed as an answer 1 ms and the median of the base's \
                 stripe.latency (380ms) after the executor gave up, 2 of them a refund (the \
                 provider's list shows one that no other answer returned), the others none\n"
            ),
            "{f}: {text}"
        );
        assert!(
            text.contains(
                "  - Idempotency-Key: not recorded for any request: the base's \
                 refunds_service.idempotency_key (none) decides what each carries\n"
            ),
            "{f}: {text}"
        );
        let sc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        assert_eq!(sc["executor"]["timeout"], "8s", "{f}");
    }
}

#[test]
fn agent_formats_with_the_list_give_the_otlp_answer_for_every_ticket() {
    for policy in POLICIES {
        let otlp = replay(
            &[format!("{DIR}/otlp-genai.json"), LIST.to_string()],
            &["--policy", policy],
        )
        .2;
        for f in AGENT {
            let agent = replay(
                &[format!("{DIR}/{f}"), LIST.to_string()],
                &["--policy", policy],
            )
            .2;
            assert_eq!(agent, otlp, "{f} + list under {policy}");
        }
    }
}

/// Without the provider's list an agent-side trace cannot tell that the calls that timed out
/// (T-100001's and T-100003's first) went on to make a refund: the tool result says only
/// "timed out", and no span of the refunds service or of Stripe is recorded. The replay then
/// takes their work as never answered (`drawn_from_base`: "none a refund"). Every fix still
/// leaves each ticket one refund, as with OTLP; but where a fix turns on that late answer — a
/// 15 s timeout, a status probe or a bigger pool lets the first call's own refund come back to
/// the model in OTLP, so it never retries — the agent trace alone retries, and its
/// counterfactual shows two tool calls for those tickets where OTLP shows one. Its recorded
/// refunds are one fewer too. Given the list, the answer is OTLP's (the test above).
#[test]
fn agent_formats_alone_miss_the_refunds_of_timed_out_calls() {
    let hidden = refunds_of_timed_out_calls();
    for policy in POLICIES {
        let otlp = replay(
            &[format!("{DIR}/otlp-genai.json"), LIST.to_string()],
            &["--policy", policy],
        )
        .2;
        // The policies under which the first call's late answer decides whether it is retried.
        let turns_on_the_late_answer =
            policy != "policies/key-only.json" && policy != "policies/fixed.json";
        for f in AGENT {
            let agent = replay(&[format!("{DIR}/{f}")], &["--policy", policy]).2;
            for ((a, o), (_, h)) in agent.iter().zip(&otlp).zip(&hidden) {
                assert_eq!(a.0, o.0, "{f} under {policy}");
                assert_eq!(
                    a.1,
                    o.1 - h,
                    "{f} under {policy}: recorded refunds of {}",
                    a.0
                );
                assert_eq!(
                    a.2, o.2,
                    "{f} under {policy}: counterfactual refunds of {}",
                    a.0
                );
                let extra_retry = u64::from(*h > 0 && turns_on_the_late_answer);
                assert_eq!(
                    a.3,
                    o.3 + extra_retry,
                    "{f} under {policy}: counterfactual tool calls of {}",
                    a.0
                );
            }
        }
    }
}

#[test]
fn the_sdks_timeout_text_can_be_named_otherwise() {
    let file = format!("{DIR}/openai-agents-trace.json");
    // Another text: the SDK's default is then an ordinary tool result, and the replay, whose
    // 8 s timeout still fires, no longer matches the recording.
    let (code, v, _) = replay(
        std::slice::from_ref(&file),
        &["--timeout-output", "Tool call timed out"],
    );
    assert_eq!(code, 1);
    assert_eq!(v["comparison"]["matches"], false);
    // A glob without {seconds} recognises it and states no timeout.
    let (code, v, _) = replay(
        std::slice::from_ref(&file),
        &["--timeout-output", "Tool '*' timed out after * seconds."],
    );
    assert_eq!(code, 0);
    assert_eq!(v["drawn_from_base"][0]["fact"], "executor timeout");
    let bad = refundsim()
        .args(["replay", &file, "--base", INCIDENT, "--timeout-output", "*"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("--timeout-output \"*\": expected the text of a timed-out tool's result"),
        "{err}"
    );
}
