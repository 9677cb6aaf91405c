//! The layered call path's recipes (`scenarios/recipes/`): each shows its duplicates, and its
//! fix (`policies/recipes/NAME.fix.json`) removes them on the same seed.

use crate::common;
use common::*;

const RECIPES: &[(&str, u64, u64)] = &[
    // (name, duplicate-refund tickets, extra refunds) on the recipe's own seed.
    ("framework-retry-middleware", 3, 6),
    ("stacked-retries", 3, 31),
    ("proxy-retries-post", 3, 6),
    ("sdk-new-key-per-retry", 3, 6),
    ("stripe-node-reset-retry", 3, 3),
    ("abort-in-flight", 3, 3),
    ("pool-acquire-retry", 4, 4),
    ("lookup-on-unknown-outcome", 3, 3),
    ("key-rotated-on-unknown", 3, 3),
    ("provider-ignores-keys", 3, 3),
    ("provider-dedup-window", 3, 3),
    ("provider-business-id-dedup", 3, 3),
    ("unique-constraint-conflict", 3, 3),
    ("crash-after-provider-ok", 4, 4),
    ("run-level-retry-replays-tools", 3, 3),
    ("duplicate-webhook-delivery", 3, 3),
    ("concurrent-handlers-same-key", 3, 3),
    ("provider-errors-on-reused-key", 3, 3),
    ("client-replaces-service-key", 3, 3),
    ("egress-proxy-connect-failure", 3, 8),
    ("stale-pending-marked-failed", 3, 3),
    ("redelivery-while-unacked", 3, 6),
    ("rebalance-redelivers-batch", 3, 3),
    ("dedup-record-deleted-on-second-copy", 3, 3),
    ("deadline-across-tries", 3, 9),
    ("effect-commits-before-run-ends", 3, 3),
    ("mcp-reissue-on-broken-stream", 3, 3),
    ("mcp-duplicated-call", 3, 3),
    ("hedged-requests", 3, 3),
    ("circuit-breaker-strands-payment", 4, 4),
];

#[test]
fn every_recipe_shows_its_duplicates_and_its_fix_removes_them() {
    let shipped: Vec<String> = std::fs::read_dir("scenarios/recipes")
        .unwrap()
        .map(|e| {
            e.unwrap()
                .file_name()
                .to_string_lossy()
                .replace(".json", "")
        })
        .collect();
    assert_eq!(
        shipped.len(),
        RECIPES.len(),
        "a recipe without a test: {shipped:?}"
    );
    for (name, dups, extra) in RECIPES {
        let scenario = format!("scenarios/recipes/{name}.json");
        let r = run_json(&[&scenario]);
        assert_eq!(r["duplicate_refund_tickets"], *dups, "{name}");
        assert_eq!(r["extra_refunds"], *extra, "{name}");
        assert_eq!(r["expectations_met"], true, "{name}");
        let fix = format!("policies/recipes/{name}.fix.json");
        let f = run_json(&[&scenario, "--policy", &fix]);
        assert_eq!(f["duplicate_refund_tickets"], 0, "{name} under its fix");
        assert_eq!(f["extra_refunds"], 0, "{name} under its fix");
        assert_eq!(f["lost_refunds"], 0, "{name} under its fix");
        // The fix changes the world, so the safety invariants gate it (not the recipe's
        // "at least 3 duplicates"), without the fix restating `expect`.
        assert_eq!(f["expectations_met"], true, "{name} under its fix");
        assert_eq!(f["tickets"], r["tickets"], "{name}: same tickets");
    }
}

#[test]
fn abort_in_flight_closes_the_connection_but_stripe_still_commits() {
    let out = refundsim()
        .args([
            "run",
            "scenarios/recipes/abort-in-flight.json",
            "--ticket",
            "1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let order = [
        "00:00:02.024  stripe: POST /v1/refunds for call #1 → no response, aborted_by_caller",
        "00:00:02.086  tool_executor: get_status(ticket=1) → none",
        "00:00:03.044  stripe: refund re_00000001 created by call #1, $42.00 succeeded (for the FIRST call)",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|l| text.find(l).unwrap_or_else(|| panic!("{l}\n{text}")))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
    // queued_only leaves the call in flight: no abort, the probe waits for the refund.
    let fixed = run_json(&[
        "scenarios/recipes/abort-in-flight.json",
        "--set",
        "executor.cancellation=queued_only",
    ]);
    assert_eq!(fixed["false_failures"], 0);
    assert_eq!(fixed["refunds_created"], 3);
}

#[test]
fn a_spent_retry_budget_is_traced() {
    let out = refundsim()
        .args([
            "run",
            "scenarios/recipes/framework-retry-middleware.json",
            "--ticket",
            "1",
        ])
        .args([
            "--set",
            r#"layers.framework_retry.budget={"budget_percent":0,"min_retry_concurrency":0}"#,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("00:00:02.024  framework_retry: retry budget spent, not retrying"),
        "{text}"
    );
    assert!(!text.contains("retrying (try 2)"), "{text}");
}

#[test]
fn a_layer_is_reached_by_name_from_set_and_policies() {
    // No framework retries: one refund per ticket, and the model is told each call failed.
    let r = run_json(&[
        "scenarios/recipes/framework-retry-middleware.json",
        "--set",
        "layers.framework_retry.max_retries=0",
    ]);
    assert_eq!(r["duplicate_refund_tickets"], 0);
    assert_eq!(r["refunds_created"], 3);
    // One more retry than the default: four tries, four refunds per ticket.
    let r = run_json(&[
        "scenarios/recipes/framework-retry-middleware.json",
        "--set",
        "layers.framework_retry.max_retries=3",
    ]);
    assert_eq!(r["extra_refunds"], 9);
}

#[test]
fn story_labels_each_try_by_layer() {
    let out = refundsim()
        .args([
            "run",
            "scenarios/recipes/stacked-retries.json",
            "--ticket",
            "1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("framework_retry: timeout, retrying (try 2) after"),
        "{text}"
    );
    assert!(
        text.contains("(for the FIRST call, framework_retry try 2, executor try 2)"),
        "{text}"
    );
    assert!(text.contains("(for the SECOND call)"), "{text}");
    let sdk = refundsim()
        .args([
            "run",
            "scenarios/recipes/sdk-new-key-per-retry.json",
            "--ticket",
            "1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(sdk.stdout).unwrap();
    assert!(
        text.contains("00:00:01.344  stripe: POST /v1/refunds for call #1 (sdk try 2) → no response, connection_lost"),
        "{text}"
    );
}

#[test]
fn retries_that_multiply_past_1000_requests_a_ticket_are_refused() {
    let out = refundsim()
        .args(["run", "scenarios/recipes/framework-retry-middleware.json"])
        .args(["--set", "layers.framework_retry.max_retries=100"])
        .args(["--set", "agent.retry.max_retries=9"])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "layers: would not finish: the retries of the stack multiply to 1,010 Stripe requests"
        ),
        "{err}"
    );
}

#[test]
fn bad_stacks_are_refused_with_the_field_named() {
    let cases: &[(&str, &str)] = &[
        ("stack=[\"executor\",\"model_retry\",\"refunds_service\",\"sdk\"]", "stack: invalid value: expected the built-in layers once each and in this order"),
        ("stack=[]", "sdk; got an empty list"),
        ("layers.framework_retry={\"kind\":\"retry\",\"max_retries\":1,\"num_retries\":2}", "duplicate field `max_retries` (`num_retries` is another spelling of `max_retries`: give one of them, once)"),
        ("stack=[\"model_retry\",\"framework_retry\",\"executor\",\"refunds_service\",\"sdk\",\"nope\"]", "stack.5: unknown layer \"nope\""),
        ("stack=[\"model_retry\",\"executor\",\"refunds_service\",\"framework_retry\",\"sdk\"]", "stack.3: layer \"framework_retry\" sits between refunds_service and sdk"),
        ("stack=null", "layers.framework_retry: layer \"framework_retry\" is not in `stack`"),
        ("layers.framework_retry.max_retries=1000", "layers.framework_retry.max_retries: invalid value: expected at most 100 retries"),
        ("layers.framework_retry.retry_on=[\"teapot\"]", "layers.framework_retry.retry_on"),
        ("layers.framework_retry.per_try_timeout=0s", "layers.framework_retry.per_try_timeout"),
        ("schema_version=1", "layers: `layers` needs schema_version 2"),
        ("layers.typo.max_retries=3", "unknown layer \"typo\"; expected one of the layers defined in `layers` (framework_retry)"),
        ("layers.framework_retry.backoff={\"base\":\"10s\",\"max\":\"1s\"}", "layers.framework_retry.backoff.max: invalid value: expected a cap ≥ backoff.base (10s), got 1s"),
        ("layers.framework_retry={\"kind\":\"proxy\",\"applies_to\":\"idempotent_tools\"}", "layers.framework_retry.applies_to: `applies_to` is the tool filter of a framework `retry` layer"),
        ("layers={\"\":{\"kind\":\"retry\"}}", "invalid layer name \"\""),
        ("layers.framework_retry.backoff={\"jitter\":\"proportional\",\"jitter_factor\":1.5}", "layers.framework_retry.backoff.jitter_factor: invalid value: expected a number in [0, 1], got 1.5"),
        ("layers.framework_retry.backoff={\"jitter\":\"full\",\"jitter_factor\":0.2}", "layers.framework_retry.backoff.jitter_factor: `jitter_factor` is the factor of `jitter: \"proportional\"`"),
    ];
    for (set, want) in cases {
        let out = refundsim()
            .args([
                "run",
                "scenarios/recipes/framework-retry-middleware.json",
                "--set",
                set,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{set}: {err}");
        assert!(err.contains(want), "{set}: {err}");
    }
}

#[test]
fn show_prints_the_merged_scenario_and_its_stack_which_runs_the_same() {
    let out = refundsim()
        .args(["show", INCIDENT, "--policy", "policies/fixed.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        shown["stack"],
        serde_json::json!(["model_retry", "executor", "refunds_service", "sdk"])
    );
    assert_eq!(shown["schema_version"], 2);
    assert_eq!(shown["executor"]["timeout"], "15s", "the policy is merged");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shown.json");
    std::fs::write(&path, &out.stdout).unwrap();
    let again = run_json(&[path.to_str().unwrap()]);
    let direct = run_json(&[INCIDENT, "--policy", "policies/fixed.json"]);
    for m in [
        "tickets",
        "refunds_created",
        "duplicate_refund_tickets",
        "escalations",
    ] {
        assert_eq!(again[m], direct[m], "{m}");
    }
    let recipe = refundsim()
        .args(["show", "scenarios/recipes/proxy-retries-post.json"])
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&recipe.stdout).unwrap();
    assert_eq!(shown["stack"][2], "sidecar");
    assert_eq!(
        shown["layers"]["sidecar"]["max_retries"], 2,
        "num_retries is an alias"
    );
}

/// A run-level retry above the model re-runs the whole turn when a tool failure its `retry_on`
/// names is raised (here the executor's timeout), and when its own per-try timeout ends a turn;
/// the tool calls of every earlier turn still reach Stripe.
#[test]
fn a_run_level_retry_re_runs_the_turn_and_its_tools() {
    let f = "tests/fixtures/layers/run-retry.json";
    let r = run_json(&[f]);
    assert_eq!(r["refunds_created"], 3, "three turns, three refunds");
    assert_eq!(r["retries"], 0, "the model itself never retried");
    assert_eq!(r["escalations"], 1);
    let out = refundsim()
        .args(["run", f, "--ticket", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("00:00:02.024  job: timeout, retrying (try 2) after 0.214s"),
        "{text}"
    );
    assert!(text.contains("(for the THIRD call, job try 3)"), "{text}");
    // The run's own timeout (1 s, under Stripe's 3 s): two turns, two refunds, and the model
    // is told the outcome is unknown.
    let timed = run_json(&[
        f,
        "--set",
        r#"layers.job={"kind":"run_retry","per_try_timeout":"1s"}"#,
        "--set",
        "executor.timeout=15s",
    ]);
    assert_eq!(timed["refunds_created"], 2);
    // Only above the model, and only one.
    let out = refundsim()
        .args([
            "run",
            f,
            "--set",
            r#"stack=["model_retry","job","executor","refunds_service","sdk"]"#,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("stack.1: layer \"job\" is a run_retry"),
        "{err}"
    );
}

/// An egress proxy after the SDK resends the SDK's request as it is: without a key every try
/// that executes is a refund; with a per-ticket key the retry is replayed.
#[test]
fn an_egress_proxy_between_sdk_and_stripe_resends_the_same_request() {
    let f = "tests/fixtures/layers/egress-proxy.json";
    let r = run_json(&[f]);
    assert_eq!(r["refunds_created"], 3);
    assert_eq!(r["duplicate_refund_tickets"], 1);
    let keyed = run_json(&[f, "--set", "refunds_service.idempotency_key=per_ticket"]);
    assert_eq!(keyed["refunds_created"], 1);
    assert_eq!(keyed["stripe_replays"], 1);
    let out = refundsim()
        .args(["run", f, "--set", r#"layers.egress={"kind":"retry"}"#])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("stack.4: layer \"egress\" sits after sdk; expected only a proxy or a circuit_breaker there"),
        "{err}"
    );
}

/// Common random numbers across stacks: a layer that never retries adds nothing to any draw
/// key, so the incident with an idle sidecar and an idle framework layer is the same run.
#[test]
fn an_idle_layer_changes_no_draw() {
    let bare = run_json(&[INCIDENT]);
    let idle = run_json(&[
        INCIDENT,
        "--set",
        r#"layers={"mw":{"kind":"retry","max_retries":0},"sidecar":{"kind":"proxy","max_retries":0}}"#,
        "--set",
        r#"stack=["model_retry","mw","executor","sidecar","refunds_service","sdk"]"#,
    ]);
    for m in [
        "tickets",
        "tool_calls",
        "executor_timeouts",
        "refunds_created",
        "duplicate_refund_tickets",
        "over_refund_cents",
        "sim_end_ns",
    ] {
        assert_eq!(idle[m], bare[m], "{m}");
    }
}

/// A duplicate webhook delivery starts a second handler, whose refund is a second refund; the
/// consumer's event-id dedup drops it. Two handlers at once with one key: the loser's 409 is
/// retried under a new key (two refunds) or looked up (one).
#[test]
fn duplicate_deliveries_start_a_second_handler_unless_deduped() {
    let story = |args: &[&str]| {
        let out = refundsim().args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let webhook = "scenarios/recipes/duplicate-webhook-delivery.json";
    let text = story(&["run", webhook, "--ticket", "1"]);
    for l in [
        "00:00:00.000  webhook: ticket.created evt_1 delivered, agent started",
        "00:00:30.000  webhook: ticket.created evt_1 delivered AGAIN (at-least-once), a second agent handler started",
        "00:00:30.439  [handler 2] stripe: refund re_00000002 created by call #2, $42.00 succeeded (for the FIRST call)",
    ] {
        assert!(text.contains(l), "{l}\n{text}");
    }
    let fixed = run_json(&[
        webhook,
        "--policy",
        "policies/recipes/duplicate-webhook-delivery.fix.json",
    ]);
    assert_eq!(
        (
            fixed["duplicate_deliveries"].clone(),
            fixed["deliveries_deduped"].clone(),
            fixed["refunds_created"].clone()
        ),
        (3.into(), 3.into(), 3.into())
    );
    let text = story(&[
        "run",
        webhook,
        "--policy",
        "policies/recipes/duplicate-webhook-delivery.fix.json",
        "--ticket",
        "1",
    ]);
    assert!(text.contains(
        "00:00:30.000  webhook: ticket.created evt_1 delivered again, dropped (event id already seen)"
    ));
    assert!(!text.contains("[handler 2]"), "{text}");

    // Both handlers time out and escalate: one escalation per ticket, and one human takes it
    // (a helpdesk ticket has one assignee), so ticket 1 gets one manual refund, not two.
    let both = [
        webhook,
        "--set",
        "executor.timeout=100ms",
        "--set",
        "agent.retry.max_retries=0",
        "--set",
        "humans.enabled=true",
    ];
    let m = run_json(&both);
    assert_eq!(
        (m["escalations"].clone(), m["manual_refunds"].clone()),
        (3.into(), 1.into())
    );
    let text = story(&[&["run"][..], &both, &["--ticket", "1"]].concat());
    assert_eq!(text.matches("escalated to a human").count(), 2, "{text}");
    assert_eq!(
        text.matches("human: issued a manual refund").count(),
        1,
        "{text}"
    );

    let racing = "scenarios/recipes/concurrent-handlers-same-key.json";
    let text = story(&["run", racing, "--ticket", "1"]);
    for l in [
        "00:00:00.269  [handler 2] stripe: POST /v1/refunds for call #2 → 409 idempotency_key_in_use",
        "00:00:00.269  [handler 2] refunds_service: retriable-4xx, retrying (try 2) after 0.000s",
        "00:00:02.269  [handler 2] stripe: refund re_00000002 created by call #2, $42.00 succeeded (for the FIRST call)",
    ] {
        assert!(text.contains(l), "{l}\n{text}");
    }
    let looked_up = run_json(&[racing, "--set", "refunds_service.on_key_conflict=lookup"]);
    assert_eq!(looked_up["refunds_created"], 3);
    assert_eq!(looked_up["false_failures"], 0);
    assert_eq!(looked_up["escalations"], 0);
    // `fail` keeps the money right too, but the loser's model escalates a refunded ticket.
    let failed = run_json(&[racing, "--set", "refunds_service.on_key_conflict=fail"]);
    assert_eq!(failed["refunds_created"], 3);
    assert_eq!(failed["escalations"], 3);
}

/// Without duplicates, `deliveries` changes nothing: a probability of 0 gives the run it gave
/// before (the same JSON report, no `duplicate_deliveries` key).
#[test]
fn deliveries_at_probability_zero_change_nothing() {
    let mut plain = run_json(&["scenarios/recipes/key-rotated-on-unknown.json"]);
    let mut zero = run_json(&[
        "scenarios/recipes/key-rotated-on-unknown.json",
        "--set",
        "deliveries.duplicate_probability=0",
        "--set",
        "deliveries.consumer_dedup=event_id",
    ]);
    // The replay command names the `--set`s; and since the `--set`s change a field, the gate is
    // the safety invariants instead of the recipe's own `expect` (docs/ci.md, "Which expect").
    // Everything the run computes is the same.
    assert_eq!(plain["expectations_met"], true);
    assert_eq!(zero["expectations_met"], false);
    for key in ["replay", "expectations", "expectations_met"] {
        plain[key] = serde_json::Value::Null;
        zero[key] = serde_json::Value::Null;
    }
    assert_eq!(plain, zero);
    assert!(plain.get("duplicate_deliveries").is_none());
}

/// The claim's premise (1) in `policies/keys-and-probe.json` needs the service's key to reach
/// Stripe: a client that replaces it (`stripe_client.key: replace_per_call`) breaks the claim
/// as soon as something above the service retries on its own, here the tool's own HTTP retry
/// (a `retry` layer between the executor and the service, 2 retries), which the executor's
/// status probe does not stop: it runs before the executor hears anything. Each retry is a new
/// call under a new client key. The same world with the key let through (`reuse`) has none.
#[test]
fn keys_and_probe_break_when_the_client_replaces_the_service_key() {
    let base = [
        "scenarios/recipes/client-replaces-service-key.json",
        "--policy",
        "policies/keys-and-probe.json",
        "--set",
        r#"layers={"framework_retry":{"kind":"retry"}}"#,
        "--set",
        r#"stack=["model_retry","executor","framework_retry","refunds_service","sdk"]"#,
    ];
    let broken = run_json(&base);
    assert_eq!(broken["duplicate_refund_tickets"], 3);
    assert_eq!(broken["extra_refunds"], 6);
    let mut with_reuse = base.to_vec();
    with_reuse.extend(["--set", "refunds_service.stripe_client.key=reuse"]);
    let kept = run_json(&with_reuse);
    assert_eq!(kept["duplicate_refund_tickets"], 0);
    assert_eq!(kept["refunds_created"], 3);
}

/// `stripe.faults.connect_failure` gives the proxy's `connect-failure` class something to
/// match: under the recipe's fix (`retry_on: ["connect-failure"]`) a try that could not
/// connect is retried, nothing reached Stripe for it, and the ticket has one refund; the reset
/// after commit is passed up, not sent again.
#[test]
fn a_connect_failure_is_retried_and_nothing_reached_stripe() {
    let out = refundsim()
        .args([
            "run",
            "scenarios/recipes/egress-proxy-connect-failure.json",
            "--policy",
            "policies/recipes/egress-proxy-connect-failure.fix.json",
            "--seed",
            "5",
            "--ticket",
            "1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let order = [
        "00:00:00.038  stripe: POST /v1/refunds for call #1 → could not connect, nothing sent (connect_failed)",
        "00:00:00.038  egress: connect-failure, retrying (try 2) after 0.016s",
        "00:00:00.454  stripe: refund re_00000001 created by call #1, $42.00 succeeded (for the FIRST call)",
        "00:00:00.454  stripe: POST /v1/refunds for call #1 (egress try 2) → no response, connection_lost",
        "00:00:00.454  tool_result: { error: \"stripe connection_lost (HTTP 0)\" } [fail]",
    ];
    let mut at = 0;
    for line in order {
        let found = text[at..]
            .find(line)
            .unwrap_or_else(|| panic!("missing or out of order: {line}\n{text}"));
        at += found + line.len();
    }
    assert_eq!(text.matches(" created by call #").count(), 1, "{text}");
    assert_eq!(text.matches("retrying (try").count(), 1, "{text}");
}

/// The stale-pending sweep (`reconciliation.stale_pending`): marked failed without asking
/// Stripe, the ticket's key is rotated and the human's re-run is a second refund; asking Stripe
/// first records the refund, and the re-run is replayed under the kept key.
#[test]
fn the_stale_pending_sweep_rotates_the_key_unless_it_asks_the_provider() {
    let story = |policy: Option<&str>| {
        let mut args = vec![
            "run",
            "scenarios/recipes/stale-pending-marked-failed.json",
            "--ticket",
            "1",
        ];
        if let Some(p) = policy {
            args.extend(["--policy", p]);
        }
        let out = refundsim().args(&args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let broken = story(None);
    for line in [
        "00:16:00.000  stale-pending sweep: pending for 15m 59s, marked FAILED without asking Stripe; the service writes a new key for the next request",
        "00:31:53.731  stripe: refund re_00000004 created by call #4, $42.00 succeeded (for the HUMAN'S call)",
    ] {
        assert!(broken.contains(line), "missing: {line}\n{broken}");
    }
    let fixed = story(Some(
        "policies/recipes/stale-pending-marked-failed.fix.json",
    ));
    for line in [
        "00:16:00.000  stale-pending sweep: pending for 15m 59s; asked Stripe, found re_00000001 (made by call #1) and recorded it",
        "00:31:53.361  stripe: POST /v1/refunds for call #4 → 200 replayed re_00000001 (made by call #1)",
    ] {
        assert!(fixed.contains(line), "missing: {line}\n{fixed}");
    }
    // Without the sweep the key is never rotated and the re-run is replayed too.
    let none = run_json(&[
        "scenarios/recipes/stale-pending-marked-failed.json",
        "--set",
        "reconciliation.stale_pending=null",
    ]);
    assert_eq!(none["duplicate_refund_tickets"], 0);
}

/// `backoff.jitter: proportional` spreads each delay ±`jitter_factor` around it (Polly v8's
/// ±25 %): the framework layer's 1 s delay before its first retry lands in [0.75 s, 1.25 s]
/// on every seed, and not always at the same point (so the draw is used).
#[test]
fn proportional_jitter_keeps_each_delay_within_its_band() {
    let mut seen = std::collections::BTreeSet::new();
    for seed in 1..=8 {
        let out = refundsim()
            .args([
                "run",
                "scenarios/recipes/framework-retry-middleware.json",
                "--seed",
                &seed.to_string(),
                "--ticket",
                "1",
                "--set",
                r#"layers.framework_retry.backoff={"kind":"constant","base":"1s","jitter":"proportional","jitter_factor":0.25}"#,
            ])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let line = text
            .lines()
            .find(|l| l.contains("framework_retry:") && l.contains("retrying (try 2) after"))
            .unwrap_or_else(|| panic!("no retry line on seed {seed}:\n{text}"));
        let secs: f64 = line
            .rsplit("after ")
            .next()
            .unwrap()
            .trim_end_matches('s')
            .parse()
            .unwrap();
        assert!((0.75..=1.25).contains(&secs), "seed {seed}: {line}");
        seen.insert((secs * 1000.0) as u64);
    }
    assert!(seen.len() > 4, "{seen:?}");
}

/// Redelivery that depends on the ack, as the story prints it: an SQS message received again
/// each time its 30 s visibility timeout expires while the agent run still works, until
/// `maxReceiveCount` 3 dead-letters it; a Kafka rebalance that redelivers the batch after its
/// 5 min drain deadline; a dedup record deleted at the second broker's copy, so the sender's
/// resend runs again. Each fix leaves one run per ticket.
#[test]
fn redelivery_stories_show_receives_rebalances_and_deleted_records() {
    let story = |args: &[&str]| {
        let out = refundsim().args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let unacked = "scenarios/recipes/redelivery-while-unacked.json";
    let text = story(&["run", unacked, "--ticket", "1"]);
    for l in [
        "00:00:00.000  evt_1 as msg_1_0 delivered, agent started",
        "00:00:30.000  evt_1 as msg_1_0 REDELIVERED (receive #2, visibility timeout 30 s expired), another agent handler started",
        "00:01:00.000  evt_1 as msg_1_0 REDELIVERED (receive #3, visibility timeout 30 s expired), another agent handler started",
        "00:01:30.000  msg_1_0 moved to the dead-letter queue after 3 receives",
        "00:01:40.424  [handler 3] stripe: refund re_00000004 created by call #4, $42.00 succeeded (for the FIRST call)",
    ] {
        assert!(text.contains(l), "{l}\n{text}");
    }
    assert!(
        !text.contains("acked (receive"),
        "a dead-lettered message is gone: {text}"
    );
    let fixed = story(&[
        "run",
        unacked,
        "--policy",
        "policies/recipes/redelivery-while-unacked.fix.json",
        "--ticket",
        "1",
    ]);
    assert!(
        fixed.contains("00:00:40.424  msg_1_0 acked (receive #1): deleted from the queue"),
        "{fixed}"
    );
    assert!(!fixed.contains("REDELIVERED"), "{fixed}");

    let batch = "scenarios/recipes/rebalance-redelivers-batch.json";
    let text = story(&["run", batch, "--ticket", "2"]);
    assert!(text.contains(
        "00:06:00.000  evt_2 as msg_2_0 REDELIVERED (receive #2, consumer-group rebalance: not committed within the 5 min drain deadline), another agent handler started"
    ), "{text}");
    assert!(
        text.contains("00:12:00.424  [handler 2] stripe: refund"),
        "{text}"
    );

    let deleted = "scenarios/recipes/dedup-record-deleted-on-second-copy.json";
    let text = story(&["run", deleted, "--ticket", "1"]);
    for l in [
        "00:00:00.000  evt_1 delivered again, dropped (event id already seen); dedup record DELETED, a further copy will run",
        "00:00:30.000  evt_1 as msg_1_2 delivered AGAIN (the sender resent it), another agent handler started",
    ] {
        assert!(text.contains(l), "{l}\n{text}");
    }
    let fixed = run_json(&[
        deleted,
        "--policy",
        "policies/recipes/dedup-record-deleted-on-second-copy.fix.json",
    ]);
    assert_eq!(
        (
            fixed["duplicate_deliveries"].clone(),
            fixed["deliveries_deduped"].clone(),
            fixed["refunds_created"].clone()
        ),
        (6.into(), 6.into(), 3.into())
    );
}

/// The effect commits part-way through the run: the story shows the refund recorded at 1 s,
/// the run going on, the executor's timeout at 15 s reported as a failure and the model's
/// retry making a second refund; under the fix the probe finds the first refund in the ledger.
#[test]
fn effect_commits_before_run_ends_story_shows_the_run_going_on() {
    let story = |args: &[&str]| {
        let out = refundsim().args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let recipe = "scenarios/recipes/effect-commits-before-run-ends.json";
    let text = story(&["run", recipe, "--ticket", "1"]);
    for l in [
        "00:00:01.044  refunds-service: refund re_00000001 recorded in the ledger; the run goes on 20000ms before answering (work after the refund)",
        "00:00:15.024  tool_result: { error: \"timeout after 15000ms\" } [fail]",
        "00:00:16.109  stripe: refund re_00000002 created by call #2, $42.00 succeeded (for the SECOND call)",
        "00:00:21.044  [async, arrives after executor gave up] refunds-service response for the FIRST call: { status: \"refunded\", refund_id: \"re_00000001\" }",
    ] {
        assert!(text.contains(l), "{l}\n{text}");
    }
    let fixed = story(&[
        "run",
        recipe,
        "--policy",
        "policies/recipes/effect-commits-before-run-ends.fix.json",
        "--ticket",
        "1",
    ]);
    assert!(
        fixed.contains("00:00:15.086  tool_executor: get_status(ticket=1) → refunded re_00000001 (made by call #1)"),
        "{fixed}"
    );
    assert!(!fixed.contains("re_00000002"), "{fixed}");
}
