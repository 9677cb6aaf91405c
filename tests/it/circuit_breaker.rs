//! `kind: circuit_breaker`: the recipe's story (the breaker opening in the burst and refusing
//! the keyed retry), where the breaker sits relative to a retry layer, and its validation.

use crate::common;
use common::*;

const RECIPE: &str = "scenarios/recipes/circuit-breaker-strands-payment.json";

fn story(args: &[&str], ticket: &str) -> String {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["--ticket", ticket]);
    let out = refundsim().args(&all).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn in_order(text: &str, lines: &[&str]) {
    let mut at = 0;
    for line in lines {
        let found = text[at..]
            .find(line)
            .unwrap_or_else(|| panic!("missing or out of order: {line}\n{text}"));
        at += found + line.len();
    }
}

/// Ticket 4's timeout is the fourth failure in four calls: the breaker opens for resilience4j's
/// 60 s, refuses the model's keyed retry at once, the ticket is escalated, Stripe commits the
/// first try 2 s later, and the human refunds again.
#[test]
fn the_story_shows_the_breaker_opening_and_stranding_the_payment() {
    let text = story(&[RECIPE], "4");
    in_order(
        &text,
        &[
            "00:00:08.336  tool_executor: timeout after 8000ms, injecting error result",
            "00:00:08.336  breaker: circuit OPENED (4 failures in 4 calls); refusing every call for 60.000s",
            "00:00:08.385  tool_call issue_refund(ticket=4, amount=2500)",
            "00:00:08.385  breaker: circuit open, call refused at once (circuit-open), nothing sent; open 59.951s more",
            "00:00:08.385  tool_result: { error: \"CircuitBreaker 'breaker' is OPEN and does not permit further calls\" } [fail]",
            "00:00:08.410  escalated to a human",
            "00:00:10.356  stripe: refund re_00000004 created by call #4, $25.00 succeeded (for the FIRST call)",
            "00:01:11.793  human: issued a manual refund from the dashboard (no idempotency key)",
            "00:01:21.793  stripe: refund re_00000007 created, $25.00 succeeded (manual refund by a human)",
        ],
    );
    // Ticket 1's retry came before the breaker opened: its key found the refund.
    let one = story(&[RECIPE], "1");
    assert!(!one.contains("circuit open"), "{one}");
    assert!(
        one.contains("tool_result: { status: \"refunded\", refund_id: \"re_00000001\" }"),
        "{one}"
    );
}

/// Polly's own defaults (minimum throughput 100) never open in a six-ticket burst: every keyed
/// retry reaches the service and finds its refund.
#[test]
fn polly_defaults_need_a_hundred_calls() {
    let r = run_json(&[RECIPE, "--set", "layers.breaker.breaker={}"]);
    assert_eq!(r["duplicate_refund_tickets"], 0);
    assert_eq!(r["escalations"], 0);
    assert!(r.get("breaker_rejections").is_none(), "left out when 0");
    let recipe = run_json(&[RECIPE]);
    assert_eq!(recipe["breaker_rejections"], 4);
    assert_eq!(recipe["escalations"], 4);
}

/// A framework retry (LangChain's defaults) outside the breaker sees each refusal and retries
/// into the open breaker until it gives up: every ticket is escalated and refunded twice.
/// Inside, the breaker sees only the last try of each call: the retry's later tries replay the
/// keyed refund, the breaker records successes and never opens.
#[test]
fn retry_outside_the_breaker_strands_what_retry_inside_recovers() {
    let framework = r#"layers.framework_retry={"kind":"retry"}"#;
    let outside =
        r#"stack=["model_retry","framework_retry","breaker","executor","refunds_service","sdk"]"#;
    let inside =
        r#"stack=["model_retry","breaker","framework_retry","executor","refunds_service","sdk"]"#;
    let o = run_json(&[RECIPE, "--set", framework, "--set", outside]);
    let i = run_json(&[RECIPE, "--set", framework, "--set", inside]);
    assert_eq!(
        (
            &o["duplicate_refund_tickets"],
            &o["escalations"],
            &o["tool_calls"]
        ),
        (&6.into(), &6.into(), &12.into())
    );
    assert_eq!(
        (
            &i["duplicate_refund_tickets"],
            &i["escalations"],
            &i["tool_calls"]
        ),
        (&0.into(), &0.into(), &6.into())
    );
    let text = story(&[RECIPE, "--set", framework, "--set", outside], "1");
    assert!(
        text.contains("framework_retry: circuit-open, retrying (try 2)"),
        "{text}"
    );
}

/// Below the executor (in the HTTP client's pipeline to the service) the breaker never sees the
/// executor's timeouts: the executor drops the call, which counts as nothing (both libraries
/// record only calls that end). The recipe's four timeouts no longer open it, every keyed retry
/// finds its refund, and nothing is duplicated: where the breaker sits is the fix.
#[test]
fn a_breaker_below_the_executor_does_not_count_its_timeouts() {
    let below = r#"stack=["model_retry","executor","breaker","refunds_service","sdk"]"#;
    let r = run_json(&[RECIPE, "--set", below]);
    assert_eq!(
        (&r["duplicate_refund_tickets"], &r["escalations"]),
        (&0.into(), &0.into())
    );
    assert!(r.get("breaker_rejections").is_none(), "{r}");
}

/// After `sdk` (in the service's HTTP client to Stripe) a breaker counting 5xx opens on Stripe's
/// 500s that followed a commit; its refusals reach the SDK as a connection never made (nothing
/// sent, no HTTP status; stripe-node retries it), so the keyed retries that would have found the refunds never reach
/// Stripe and the tickets are escalated. The model is told the breaker's own words.
#[test]
fn a_breaker_after_the_sdk_refuses_before_stripe() {
    let args = [
        RECIPE,
        "--set",
        r#"stack=["model_retry","executor","refunds_service","sdk","breaker"]"#,
        "--set",
        "stripe.faults.error_500_after_commit=0.6",
        "--set",
        r#"stripe.latency={"p50":"1s","p99":"1s"}"#,
        "--set",
        r#"layers.breaker.breaker.failure_on=["5xx"]"#,
        "--set",
        "refunds_service.stripe_client.max_network_retries=2",
    ];
    let r = run_json(&args);
    // Each refused SDK try is counted: the SDK retries a connection never made.
    assert_eq!(r["breaker_rejections"], 15, "{r}");
    assert_eq!(r["escalations"], 3, "{r}");
    let text = story(&args, "4");
    in_order(
        &text,
        &[
            "00:00:01.356  stripe: POST /v1/refunds for call #4 → 500 api_error",
            "00:00:01.356  breaker: circuit OPENED (2 failures in 4 calls); refusing every call for 60.000s",
            "breaker: circuit open, call refused at once (circuit-open), nothing sent",
            "tool_result: { error: \"CircuitBreaker 'breaker' is OPEN and does not permit further calls\" } [fail]",
            "escalated to a human",
        ],
    );
    assert!(!text.contains("(HTTP 0)"), "{text}");
}

/// Validation: a breaker never sits between the service and its SDK, does not retry, and its
/// settings are in range.
#[test]
fn breaker_settings_are_validated() {
    let cases = [
        (
            r#"stack=["model_retry","executor","refunds_service","breaker","sdk"]"#,
            "sits between refunds_service and sdk, which run in one process",
        ),
        (
            "layers.breaker.max_retries=2",
            "a circuit_breaker does not retry",
        ),
        (
            "layers.breaker.breaker.failure_ratio=1.5",
            "expected a ratio in (0, 1]",
        ),
        (
            "layers.breaker.breaker.minimum_throughput=0",
            "expected at least 1",
        ),
        (
            "layers.breaker.breaker.sampling_duration=\"30s\"",
            "either time-based",
        ),
        ("layers.breaker.breaker.failure_on=[]", "never opens"),
    ];
    for (set, message) in cases {
        let window = "layers.breaker.breaker.window_calls=100";
        refused(&["run", RECIPE, "--set", window, "--set", set], message);
    }
}

/// `breaker-counts-timeouts` is an error while escalations reach humans who may refund without
/// looking, a warning when they always look, and gone once timeouts are not counted.
#[test]
fn the_lint_rule_weighs_who_takes_the_escalation() {
    let severity = |sets: &[&str]| -> Option<String> {
        let sc = refundsim::scenario::load(
            std::path::Path::new(RECIPE),
            &[],
            &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap();
        refundsim::lint::scenario_rules(&sc)
            .into_iter()
            .find(|f| f.id == "breaker-counts-timeouts")
            .map(|f| format!("{:?}", f.severity).to_lowercase())
    };
    assert_eq!(severity(&[]).as_deref(), Some("error"));
    assert_eq!(
        severity(&["humans.check_probability=1"]).as_deref(),
        Some("warning")
    );
    assert_eq!(
        severity(&[r#"layers.breaker.breaker.failure_on=["5xx","timeout"]"#]).as_deref(),
        Some("error"),
        "a listed timeout counts"
    );
    assert_eq!(
        severity(&[r#"layers.breaker.breaker.failure_on=["5xx","429"]"#]),
        None
    );
}

/// Polly's rule with a 100 ms break: ticket 4's timeout opens it, ticket 4's retry is refused,
/// ticket 5's retry 123 ms later finds it half-open and goes through as the one probe, ticket
/// 6's retry is refused while that probe is in flight, and the probe's success (the keyed retry
/// answered with the first refund) closes it.
#[test]
fn a_short_break_goes_half_open_and_the_probe_closes_it() {
    let polly = r#"layers.breaker.breaker={"minimum_throughput":4,"failure_ratio":0.5,"break_duration":"100ms"}"#;
    let five = story(&[RECIPE, "--set", polly], "5");
    in_order(
        &five,
        &[
            "00:00:08.459  breaker: circuit half-open, this call goes through as a probe",
            "00:00:10.509  breaker: circuit closed after 1 probe(s)",
            "00:00:10.509  tool_result: { status: \"refunded\", refund_id: \"re_00000005\" }",
        ],
    );
    let six = story(&[RECIPE, "--set", polly], "6");
    in_order(
        &six,
        &[
            "00:00:08.604  breaker: circuit half-open with its probes in flight, call refused at once (circuit-open), nothing sent",
            "00:00:08.604  tool_result: { error: \"The circuit is now open and is not allowing calls. (breaker)\" } [fail]",
        ],
    );
    let r = run_json(&[RECIPE, "--set", polly]);
    assert_eq!(
        (&r["duplicate_refund_tickets"], &r["breaker_rejections"]),
        (&3.into(), &3.into())
    );
}
