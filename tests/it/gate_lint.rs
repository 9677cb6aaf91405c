//! `refundsim lint`: each rule with a failing and a passing fixture (tests/fixtures/lint/), the
//! incident and the fixed policy, input shapes, exit codes.

use crate::common;
use common::*;

/// `refundsim lint FILE --json`: the exit code and the (id, path) of every finding.
fn lint(file: &str) -> (i32, Vec<(String, String, String)>) {
    let out = refundsim().args(["lint", file, "--json"]).output().unwrap();
    let code = out.status.code().unwrap();
    assert!(code <= 1, "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (code, findings)
}

fn ids(findings: &[(String, String, String)]) -> Vec<&str> {
    findings.iter().map(|f| f.0.as_str()).collect()
}

fn fixture(name: &str) -> String {
    format!("tests/fixtures/lint/{name}")
}

#[test]
fn each_rule_fires_on_its_failing_fixture_and_not_on_its_passing_one() {
    let cases = [
        (
            "retry-any-tool",
            "retry-non-idempotent",
            "agent.retry.applies_to",
        ),
        (
            "idempotent-claim",
            "tool-idempotent-claim-unbacked",
            "tools.0.annotations.idempotentHint",
        ),
        (
            "key-missing",
            "idempotency-key-missing",
            "refunds_service.idempotency_key",
        ),
        (
            "key-per-attempt",
            "idempotency-key-per-attempt",
            "refunds_service.idempotency_key",
        ),
        ("on-timeout", "timeout-reports-error", "executor.on_timeout"),
        ("burst", "timeout-below-burst-p99", "executor.timeout"),
        (
            "sdk-retries",
            "sdk-retries-without-stable-key",
            "refunds_service.stripe_client.max_network_retries",
        ),
        (
            "retention",
            "key-retention-too-short",
            "stripe.idempotency_key_retention",
        ),
        (
            "sdk-timeout-probe",
            "sdk-timeout-probe-race",
            "refunds_service.stripe_client.timeout",
        ),
    ];
    for (stem, id, path) in cases {
        let fail = fixture(&format!("{stem}.fail.json"));
        let (code, found) = lint(&fail);
        let hit = found.iter().find(|f| f.0 == id);
        assert_eq!(
            hit.map(|f| (f.1.as_str(), f.2.as_str())),
            Some(("error", path)),
            "{fail}: {found:?}"
        );
        assert_eq!(code, 1, "{fail}");
        let pass = match stem {
            "key-missing" | "key-per-attempt" => fixture("key.pass.json"),
            _ => fixture(&format!("{stem}.pass.json")),
        };
        let (_, found) = lint(&pass);
        assert!(!ids(&found).contains(&id), "{pass}: {found:?}");
    }
}

/// The rules on the layers of the call path: (fixture stem, passing fixture, rule id,
/// severity, path).
const LAYER_RULES: &[(&str, &str, &str, &str, &str)] = &[
    (
        "layer-retry",
        "layer-retry",
        "layer-retry-without-stable-key",
        "error",
        "layers.sidecar.max_retries",
    ),
    (
        "layer-retry-sdk",
        "layer-retry-sdk",
        "layer-retry-without-stable-key",
        "error",
        "refunds_service.stripe_client.max_network_retries",
    ),
    (
        "layer-retry-dropped",
        "layer-retry-dropped",
        "layer-retry-without-stable-key",
        "error",
        "refunds_service.stripe_client.retry_dropped_connection",
    ),
    (
        "hedge",
        "hedge",
        "hedge-without-stable-key",
        "error",
        "layers.egress_hedge.max_retries",
    ),
    (
        "hedge",
        "hedge-above-ledger",
        "hedge-below-ledger",
        "warning",
        "stack",
    ),
    (
        "layer-timeout",
        "layer-timeout",
        "layer-timeout-below-p99",
        "warning",
        "layers.sidecar.per_try_timeout",
    ),
    (
        "key-rotated",
        "key-rotated",
        "key-rotated-on-unknown-outcome",
        "error",
        "refunds_service.new_nonce_after_error",
    ),
    (
        "key-rotated-sdk",
        "key-rotated-sdk",
        "key-rotated-on-unknown-outcome",
        "error",
        "refunds_service.stripe_client.key",
    ),
    (
        "proxy-budget",
        "proxy-budget",
        "proxy-retry-without-budget",
        "warning",
        "layers.gateway.budget",
    ),
    (
        "mcp-client-resends",
        "mcp-client-resends",
        "mcp-client-resends-without-key",
        "error",
        "layers.mcp.duplicate_send_probability",
    ),
    (
        "mcp-client-reissue",
        "mcp-client-reissue",
        "mcp-client-resends-without-key",
        "error",
        "layers.mcp.reissue_on_stream_break",
    ),
    (
        "stored-failure",
        "stored-failure",
        "stored-failure-replayed",
        "warning",
        "refunds_service.rotate_key",
    ),
    (
        "work-after-refund",
        "work-after-refund",
        "work-after-effect-past-timeout",
        "error",
        "refunds_service.work_after_refund",
    ),
    (
        "other-trigger",
        "other-trigger",
        "event-dedup-misses-other-trigger",
        "error",
        "deliveries.duplicate_from",
    ),
    (
        "breaker-timeouts",
        "breaker-timeouts",
        "breaker-counts-timeouts",
        "error",
        "layers.breaker.breaker.failure_on",
    ),
];

#[test]
fn each_layer_rule_fires_on_its_failing_fixture_and_not_on_its_passing_one() {
    for (stem, pass, id, severity, path) in LAYER_RULES {
        let fail = fixture(&format!("{stem}.fail.json"));
        let (code, found) = lint(&fail);
        let hits: Vec<_> = found.iter().filter(|f| f.0 == *id).collect();
        assert_eq!(hits.len(), 1, "{fail}: one finding of {id}: {found:?}");
        assert_eq!(
            (hits[0].1.as_str(), hits[0].2.as_str()),
            (*severity, *path),
            "{fail}"
        );
        if *severity == "error" {
            assert_eq!(code, 1, "{fail}");
        }
        let pass = fixture(&format!("{pass}.pass.json"));
        let (_, found) = lint(&pass);
        assert!(!ids(&found).contains(id), "{pass}: {found:?}");
    }
}

/// Every shipped recipe, linted as a scenario, breaks a layer rule at the layer it is about,
/// and its fix (`policies/recipes/NAME.fix.json`) clears that finding. `lint` takes no
/// `--policy`, so the scenario under its fix is loaded and linted through the library.
#[test]
fn every_recipe_is_flagged_and_its_fix_clears_the_finding() {
    let recipes = [
        (
            "framework-retry-middleware",
            "layer-retry-without-stable-key",
            "layers.framework_retry.max_retries",
        ),
        (
            "stacked-retries",
            "layer-retry-without-stable-key",
            "layers.framework_retry.max_retries",
        ),
        (
            "proxy-retries-post",
            "layer-retry-without-stable-key",
            "layers.sidecar.max_retries",
        ),
        (
            "sdk-new-key-per-retry",
            "layer-retry-without-stable-key",
            "refunds_service.stripe_client.max_network_retries",
        ),
        (
            "sdk-new-key-per-retry",
            "key-rotated-on-unknown-outcome",
            "refunds_service.stripe_client.key",
        ),
        (
            "stripe-node-reset-retry",
            "layer-retry-without-stable-key",
            "refunds_service.stripe_client.retry_dropped_connection",
        ),
        (
            "abort-in-flight",
            "abort-in-flight",
            "executor.cancellation",
        ),
        (
            "pool-acquire-retry",
            "acquire-retries-past-timeout",
            "refunds_service.acquire_retries",
        ),
        (
            "lookup-on-unknown-outcome",
            "unknown-outcome-as-failure",
            "refunds_service.on_unknown_outcome",
        ),
        (
            "key-rotated-on-unknown",
            "key-rotated-on-unknown-outcome",
            "refunds_service.rotate_key",
        ),
        (
            "provider-ignores-keys",
            "provider-ignores-keys",
            "provider.kind",
        ),
        (
            "provider-dedup-window",
            "retry-outside-dedup-window",
            "provider.dedup_window",
        ),
        (
            "provider-business-id-dedup",
            "business-id-not-stable",
            "refunds_service.business_id",
        ),
        (
            "unique-constraint-conflict",
            "pending-row-conflict",
            "refunds_service.on_pending_row",
        ),
        (
            "crash-after-provider-ok",
            "idempotency-key-missing",
            "refunds_service.idempotency_key",
        ),
        (
            "run-level-retry-replays-tools",
            "layer-retry-without-stable-key",
            "layers.agent_run.max_retries",
        ),
        (
            "duplicate-webhook-delivery",
            "consumer-without-event-dedup",
            "deliveries.consumer_dedup",
        ),
        (
            "concurrent-handlers-same-key",
            "key-conflict-retried-under-new-key",
            "refunds_service.on_key_conflict",
        ),
        (
            "provider-errors-on-reused-key",
            "duplicate-refused-read-as-failure",
            "provider.duplicate_rejected_status",
        ),
        (
            "client-replaces-service-key",
            "client-key-replaces-service-key",
            "refunds_service.stripe_client.key",
        ),
        (
            "egress-proxy-connect-failure",
            "layer-retry-without-stable-key",
            "layers.egress.max_retries",
        ),
        (
            "stale-pending-marked-failed",
            "stale-pending-marked-failed",
            "reconciliation.stale_pending.check_provider",
        ),
        (
            "redelivery-while-unacked",
            "visibility-timeout-below-handler",
            "deliveries.queue.visibility_timeout",
        ),
        (
            "redelivery-while-unacked",
            "consumer-without-event-dedup",
            "deliveries.consumer_dedup",
        ),
        (
            "rebalance-redelivers-batch",
            "rebalance-drain-below-handler",
            "deliveries.rebalance.drain_deadline",
        ),
        (
            "mcp-reissue-on-broken-stream",
            "mcp-client-resends-without-key",
            "layers.mcp.reissue_on_stream_break",
        ),
        (
            "mcp-duplicated-call",
            "mcp-client-resends-without-key",
            "layers.mcp.duplicate_send_probability",
        ),
        (
            "dedup-record-deleted-on-second-copy",
            "dedup-record-deleted-on-duplicate",
            "deliveries.dedup_record.delete_on_duplicate",
        ),
        (
            "deadline-across-tries",
            "layer-retry-without-stable-key",
            "layers.activity_retry.max_retries",
        ),
        (
            "effect-commits-before-run-ends",
            "work-after-effect-past-timeout",
            "refunds_service.work_after_refund",
        ),
        (
            "hedged-requests",
            "hedge-without-stable-key",
            "layers.hedge.max_retries",
        ),
        (
            "circuit-breaker-strands-payment",
            "breaker-counts-timeouts",
            "layers.breaker.breaker.failure_on",
        ),
    ];
    let mut shipped: Vec<String> = std::fs::read_dir("scenarios/recipes")
        .unwrap()
        .map(|e| e.unwrap().path().display().to_string())
        .collect();
    shipped.sort();
    for file in &shipped {
        let name = file
            .trim_start_matches("scenarios/recipes/")
            .trim_end_matches(".json");
        let cases: Vec<_> = recipes.iter().filter(|r| r.0 == name).collect();
        assert!(!cases.is_empty(), "a recipe without a lint case: {file}");
        let (code, found) = lint(file);
        assert_eq!(code, 1, "{file}: {found:?}");
        let scenario = std::path::Path::new(file);
        let fix = std::path::PathBuf::from(format!("policies/recipes/{name}.fix.json"));
        let bare = refundsim::lint::scenario_rules(
            &refundsim::scenario::load(scenario, &[], &[]).unwrap(),
        );
        let fixed = refundsim::lint::scenario_rules(
            &refundsim::scenario::load(scenario, &[fix], &[]).unwrap(),
        );
        for (_, id, path) in cases {
            let at =
                |fs: &[refundsim::lint::Finding]| fs.iter().any(|f| f.id == *id && f.path == *path);
            assert!(
                found.iter().any(|f| f.0 == *id && f.2 == *path),
                "{file}: {id} at {path}: {found:?}"
            );
            assert!(at(&bare), "{file}: {id} at {path} from the library");
            assert!(
                !at(&fixed),
                "{file} under its fix still breaks {id} at {path}"
            );
        }
    }
}

/// The `sdk-timeout-probe-race` finding of `file` under `sets`, linted through the library.
fn probe_race(file: &str, sets: &[&str]) -> Option<refundsim::lint::Finding> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let s = refundsim::scenario::load(std::path::Path::new(file), &[], &sets).unwrap();
    refundsim::lint::scenario_rules(&s)
        .into_iter()
        .find(|f| f.id == "sdk-timeout-probe-race")
}

#[test]
fn sdk_timeout_probe_race_names_both_values_and_the_mitigations() {
    let fail = fixture("sdk-timeout-probe.fail.json");
    let out = refundsim().args(["lint", &fail]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for part in [
        "error[sdk-timeout-probe-race] refunds_service.stripe_client.timeout: executor.on_timeout is \"probe_status\"",
        "refunds_service.stripe_client.timeout 2s is below the provider's p99 (stripe.latency p99 3s)",
        "the status probe tells the model \"no refund was made\"",
        "fix: send a per-ticket idempotency key (refunds_service.idempotency_key \"per_ticket\"",
        "raise refunds_service.stripe_client.timeout to the provider's p99 (3s) or above",
        "refunds_service.sdk_timeout_recorded_as: \"unknown\"",
    ] {
        assert!(text.contains(part), "{part:?} not in\n{text}");
    }
    // A stable per-ticket key replays the retry: a warning (the probe still says "none").
    let keyed = probe_race(&fail, &["refunds_service.idempotency_key=per_ticket"]).unwrap();
    assert_eq!(keyed.severity, refundsim::lint::Severity::Warning);
    // A per-ticket key rotated after the error does not: an error, whose fix keeps the key.
    let rotated = probe_race(
        &fail,
        &[
            "refunds_service.idempotency_key=per_ticket",
            "refunds_service.new_nonce_after_error=true",
        ],
    )
    .unwrap();
    assert_eq!(rotated.severity, refundsim::lint::Severity::Error);
    assert!(
        rotated.hint.starts_with("keep the ticket's key"),
        "{rotated:?}"
    );
    // No probe, no race (the timeout is `timeout-reports-error`'s business).
    assert_eq!(
        probe_race(&fail, &["executor.on_timeout=report_error"]),
        None
    );
    // An SDK timeout exactly at the p99 passes.
    assert_eq!(
        probe_race(&fail, &["refunds_service.stripe_client.timeout=3s"]),
        None
    );
    // `stripe.latency_choices` replaces the latency draw, so its p99 (here the longest) counts.
    let choices = probe_race(
        &fixture("sdk-timeout-probe.pass.json"),
        &[r#"stripe.latency_choices=["1s","6s"]"#],
    )
    .unwrap();
    assert!(
        choices
            .message
            .contains("5s is below the provider's p99 (stripe.latency_choices p99 6s)"),
        "{choices:?}"
    );
}

/// The race the rule names happens: the failing fixture double-refunds (the probe reads `none`
/// after the SDK's 2 s timeout, the model retries without a key), the passing one does not.
#[test]
fn sdk_timeout_probe_race_double_refunds_in_a_run() {
    let fail = fixture("sdk-timeout-probe.fail.json");
    assert_eq!(run_json(&[&fail])["duplicate_refund_tickets"], 1);
    let pass = fixture("sdk-timeout-probe.pass.json");
    assert_eq!(run_json(&[&pass])["duplicate_refund_tickets"], 0);
}

#[test]
fn tool_lists_get_only_tool_rules() {
    let (code, found) = lint(&fixture("mcp-tools-list.fail.json"));
    assert_eq!(code, 0, "warnings do not fail");
    assert_eq!(
        found,
        vec![(
            "tool-annotations-missing".to_string(),
            "warning".to_string(),
            "tools.1.annotations".to_string()
        )]
    );
    let (_, found) = lint(&fixture("anthropic-tool.fail.json"));
    assert_eq!(ids(&found), vec!["tool-annotations-missing"]);
    assert_eq!(found[0].2, "annotations");
    for pass in ["mcp-jsonrpc.pass.json", "anthropic-tools.pass.json"] {
        assert_eq!(lint(&fixture(pass)), (0, vec![]), "{pass}");
    }
}

#[test]
fn the_incident_fails_with_the_retry_rule_and_the_fixed_policy_passes() {
    let (code, found) = lint(INCIDENT);
    assert_eq!(code, 1);
    assert_eq!(
        ids(&found),
        vec![
            "tool-annotations-missing",
            "retry-non-idempotent",
            "idempotency-key-missing",
            "timeout-reports-error",
            "unknown-outcome-as-failure",
            "timeout-below-burst-p99"
        ]
    );
    let (code, found) = lint("policies/fixed.json");
    assert_eq!(code, 0);
    assert_eq!(ids(&found), vec!["tool-annotations-missing"]);
    // An empty policy is the defaults, i.e. the incident's retry rule.
    let (code, found) = lint("policies/key-only.json");
    assert_eq!(code, 1);
    assert!(ids(&found).contains(&"retry-non-idempotent"));
}

#[test]
fn text_output_names_file_rule_path_and_fix() {
    let out = refundsim().args(["lint", INCIDENT]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(
        "scenarios/carrier-outage.json: error[retry-non-idempotent] agent.retry.applies_to: the agent may retry `issue_refund`"
    ), "{text}");
    assert!(
        text.contains("  fix: set agent.retry.applies_to to \"idempotent_tools\""),
        "{text}"
    );
    assert!(
        text.contains("10.8 s (overhead 20ms + pool wait 9.2 s + Stripe p99 1s 600ms;"),
        "{text}"
    );
    assert!(
        text.ends_with(
            "lint FAILED: 4 error(s), 2 warning(s) in scenarios/carrier-outage.json (scenario)\n"
        ),
        "{text}"
    );
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("syntax.json", "{\"tools\": [", "syntax.json:1:"),
        (
            "number.json",
            "5",
            "expected a scenario, a policy, a tools/list result or tool definitions",
        ),
        (
            "hint.json",
            r#"{"tools":[{"name":"x","annotations":{"readOnlyHint":1}}]}"#,
            "hint.json: tools.0.annotations.readOnlyHint: expected true or false",
        ),
        (
            "policy.json",
            r#"{"executor":{"timout":"8s"}}"#,
            "policy.json: executor.timout: unknown field `timout`",
        ),
    ];
    for (name, text, want) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let out = refundsim().arg("lint").arg(&p).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{name}: {err}");
    }
}

#[test]
fn empty_and_non_json_files_say_what_was_expected() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    let text = dir.path().join("hello.json");
    std::fs::write(&empty, "").unwrap();
    std::fs::write(&text, "hello\n").unwrap();
    for (f, needle) in [(&empty, "file is empty"), (&text, "not valid JSON")] {
        let out = assert_cmd::Command::cargo_bin("refundsim")
            .unwrap()
            .arg("lint")
            .arg(f)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle) && err.lines().count() == 1, "{err}");
    }
}

/// `refundsim lint ARGS --json`: the exit code and the report.
fn lint_args(args: &[&str]) -> (i32, serde_json::Value) {
    command_json("lint", args)
}

/// Every finding as (id, severity, path, message), without the file.
fn findings(v: &serde_json::Value) -> Vec<[String; 4]> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| ["id", "severity", "path", "message"].map(|k| f[k].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn a_scenario_with_policy_and_set_is_linted_as_show_prints_it() {
    let (code, merged) = lint_args(&[INCIDENT, "--policy", "policies/fixed.json"]);
    assert_eq!(code, 0, "{merged}");
    assert_eq!(
        merged["files"][0],
        serde_json::json!({"file": INCIDENT, "kind": "scenario", "applied": ["policy policies/fixed.json"]})
    );
    // The same findings as linting what `show` prints for the same arguments.
    let dir = tempfile::tempdir().unwrap();
    for extra in [vec![], vec!["--set", "executor.timeout=9s"]] {
        let mut args = vec![INCIDENT, "--policy", "policies/fixed.json"];
        args.extend(&extra);
        let shown = refundsim().arg("show").args(&args).output().unwrap();
        assert_eq!(shown.status.code(), Some(0));
        let file = dir.path().join("shown.json");
        std::fs::write(&file, &shown.stdout).unwrap();
        let (code_shown, of_shown) = lint_args(&[file.to_str().unwrap()]);
        let (code_merged, of_merged) = lint_args(&args);
        assert_eq!(code_shown, code_merged, "{extra:?}");
        assert_eq!(findings(&of_shown), findings(&of_merged), "{extra:?}");
    }
    // A --set alone: the incident with a 9 s timeout still fails the burst rule (10.8 s).
    let (code, v) = lint_args(&[INCIDENT, "--set", "executor.timeout=9s"]);
    assert_eq!(code, 1);
    let burst = findings(&v)
        .into_iter()
        .find(|f| f[0] == "timeout-below-burst-p99")
        .unwrap();
    assert!(
        burst[3].starts_with("executor timeout 9s is below"),
        "{burst:?}"
    );
    // The text names what was merged.
    let out = refundsim()
        .args(["lint", INCIDENT, "--policy", "policies/fixed.json"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.ends_with(
            "in scenarios/carrier-outage.json (scenario after policy policies/fixed.json)\n"
        ),
        "{text}"
    );
    // The policy alone still lints over the defaults (CI uses it).
    let (code, alone) = lint_args(&["policies/fixed.json"]);
    assert_eq!(code, 0);
    assert_eq!(
        alone["files"][0],
        serde_json::json!({"file": "policies/fixed.json", "kind": "policy"})
    );
}

#[test]
fn policy_and_set_need_scenarios_and_bad_sets_are_named() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["policies/fixed.json", "--policy", "policies/key-only.json"],
            "error: policies/fixed.json: --policy and --set apply to scenarios, and this is a policy; expected a scenario file",
        ),
        (
            &[INCIDENT, "--set", "refunds_service.pool_size=0"],
            "error: scenarios/carrier-outage.json: refunds_service.pool_size: invalid value: expected an integer ≥ 1, got 0 (after applying --set refunds_service.pool_size=0)",
        ),
        (
            &[INCIDENT, "--set", "=3"],
            "error: --set =3: empty PATH",
        ),
    ];
    for (args, want) in cases {
        let out = refundsim().arg("lint").args(args).output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
}
