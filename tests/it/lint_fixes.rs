//! A lint finding's suggested fix is one that clears it (issue 27, item 3): every shipped
//! scenario and every lint fixture is linted; each finding's `fix` (its `PATH=VALUE`
//! overrides) is applied through `--set`, exactly as `refundsim lint FILE --set …` does
//! ([`refundsim::lint::lint_files_with`], the function the command calls), and the file linted
//! again: that finding (same rule, same path) must be gone. Every rule of
//! [`refundsim::lint::RULES`] must fire, with a fix, on at least one of these files, so a rule
//! added without a triggering fixture fails here.
//!
//! And the provider-aware rules on the worlds of the issue: a business-id provider behind two
//! retrying layers lints clean with one business id per ticket (and has no duplicate on 20
//! seeds), and is flagged, with the business id as the fix, when the id is per request.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use refundsim::lint::{lint_files_with, Finding, LintReport, DEFAULTS_BASE, RULES};

use crate::common;
use common::*;

/// The JSON files under `dir` (recursively), sorted, without tool definitions.
fn json_files(dir: &str, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            json_files(p.to_str().unwrap(), out);
        } else if p.extension().is_some_and(|x| x == "json")
            && !p.to_string_lossy().ends_with(".tool.json")
        {
            out.push(p);
        }
    }
}

fn lint(file: &Path, sets: &[String]) -> LintReport {
    lint_files_with(&[file.to_path_buf()], &[], sets)
        .unwrap_or_else(|e| panic!("{} with --set {sets:?}: {e}", file.display()))
}

fn same(a: &Finding, b: &Finding) -> bool {
    a.id == b.id && a.path == b.path
}

/// Every scenario, and every policy over the defaults written out as a scenario (the same
/// scenario `lint` lints for a policy, so `--set` can apply to it), as (name, scenario file).
fn linted_scenarios(tmp: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    json_files("scenarios", &mut files);
    json_files("tests/fixtures/lint", &mut files);
    let mut out = Vec::new();
    for f in files {
        let report = lint(&f, &[]);
        match report.files[0].kind {
            "scenario" => out.push((f.display().to_string(), f)),
            "policy" => {
                let mut doc: serde_json::Value = serde_json::from_str(DEFAULTS_BASE).unwrap();
                let patch: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
                json_patch::merge(&mut doc, &patch);
                let name = f.file_name().unwrap().to_string_lossy().to_string();
                let as_scenario = tmp.join(&name);
                std::fs::write(&as_scenario, doc.to_string()).unwrap();
                out.push((format!("{} (policy)", f.display()), as_scenario));
            }
            _ => {} // tool lists: `--set` applies to scenarios only
        }
    }
    out
}

#[test]
fn every_rule_fires_somewhere_and_its_suggested_fix_clears_the_finding() {
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = linted_scenarios(tmp.path());
    assert!(scenarios.len() > 60, "{} files", scenarios.len());
    let mut fixed_rules: BTreeSet<&str> = BTreeSet::new();
    let mut failures = Vec::new();
    for (name, file) in &scenarios {
        let before = lint(file, &[]);
        for f in &before.findings {
            assert!(
                RULES.contains(&f.id),
                "{name}: rule {} is not in refundsim::lint::RULES",
                f.id
            );
            if f.fix.is_empty() {
                failures.push(format!("{name}: {} at {} has no fix", f.id, f.path));
                continue;
            }
            let after = lint(file, &f.fix);
            if after.findings.iter().any(|g| same(f, g)) {
                failures.push(format!(
                    "{name}: {} at {} is still there after --set {}",
                    f.id,
                    f.path,
                    f.fix.join(" --set ")
                ));
            } else {
                fixed_rules.insert(f.id);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let untested: Vec<&&str> = RULES
        .iter()
        .filter(|r| !fixed_rules.contains(**r))
        .collect();
    assert!(
        untested.is_empty(),
        "rules that fire on no shipped scenario or lint fixture (add a failing fixture under \
         tests/fixtures/lint/): {untested:?}"
    );
}

/// The fix applied through the command line gives the same answer as through the library: the
/// failing business-id world under its finding's `--set`s exits 0.
#[test]
fn the_printed_apply_line_is_what_the_command_takes() {
    let fail = "tests/fixtures/lint/business-id-layers.fail.json";
    let out = refundsim().args(["lint", fail]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let apply = text
        .lines()
        .skip_while(|l| !l.contains("error[business-id-not-stable]"))
        .find_map(|l| l.strip_prefix("  apply: "))
        .expect("an apply line");
    assert_eq!(
        apply,
        "--set refunds_service.business_id=per_ticket --set refunds_service.on_key_conflict=lookup"
    );
    let mut args = vec!["lint", fail];
    args.extend(apply.split(' '));
    let out = refundsim().args(&args).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("lint ok: 0 error(s), 1 warning(s)"), "{text}");
}

/// One error of a `lint --json` report: (id, path, hint, fix).
type Error = (String, String, String, Vec<String>);

/// `refundsim lint FILE --json`: the exit code and every error.
fn errors(file: &str, sets: &[&str]) -> (i32, Vec<Error>) {
    let mut args = vec![file];
    for s in sets {
        args.extend(["--set", s]);
    }
    let (code, v) = command_json("lint", &args);
    let found = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            let fix = f["fix"]
                .as_array()
                .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            (
                f["id"].as_str().unwrap().to_string(),
                f["path"].as_str().unwrap().to_string(),
                f["hint"].as_str().unwrap().to_string(),
                fix,
            )
        })
        .collect();
    (code, found)
}

/// The world: a business-id provider behind a framework retry and a sidecar proxy.
/// With the business id per ticket, 20 seeds give no duplicate and lint exits 0 (it reported
/// two `layer-retry-without-stable-key` errors whose fix, a per-ticket idempotency key, the
/// provider ignores). With the id per request, both layers and the id are flagged, the fix is
/// the business id, and the seeds duplicate.
#[test]
fn a_business_id_world_lints_clean_with_a_stable_id_and_is_flagged_with_a_per_request_one() {
    let pass = "tests/fixtures/lint/business-id-layers.pass.json";
    let fail = "tests/fixtures/lint/business-id-layers.fail.json";
    assert_eq!(errors(pass, &[]), (0, vec![]));
    let (code, found) = errors(fail, &[]);
    assert_eq!(code, 1);
    let at: Vec<(&str, &str)> = found.iter().map(|f| (f.0.as_str(), f.1.as_str())).collect();
    assert_eq!(
        at,
        [
            (
                "layer-retry-without-stable-key",
                "layers.framework_retry.max_retries"
            ),
            (
                "layer-retry-without-stable-key",
                "layers.sidecar.max_retries"
            ),
            ("business-id-not-stable", "refunds_service.business_id"),
        ]
    );
    for (id, path, hint, fix) in &found {
        assert!(
            hint.starts_with("set refunds_service.business_id to \"per_ticket\""),
            "{id} at {path}: {hint}"
        );
        assert!(!hint.contains("idempotency_key"), "{id} at {path}: {hint}");
        assert_eq!(fix[0], "refunds_service.business_id=per_ticket", "{id}");
    }
    // Stripe's fix changes nothing on this provider: the same three errors.
    let (code, keyed) = errors(fail, &["refunds_service.idempotency_key=per_ticket"]);
    assert_eq!((code, keyed.len()), (1, 3), "{keyed:?}");
    // And the simulation agrees with lint.
    let dups = |file: &str| {
        let (_, v) = command_json("check", &[file, "--seeds", "1..20"]);
        let bound = v["cases"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["metric"] == "duplicate_refund_tickets")
            .cloned()
            .unwrap();
        (
            bound["value"].as_f64().unwrap(),
            bound["failing_seeds"].as_array().unwrap().len(),
        )
    };
    assert_eq!(dups(pass), (0.0, 0));
    assert_eq!(dups(fail), (3.0, 20));
}

/// A provider that ignores keys: a per-ticket idempotency key (Stripe's fix) leaves both
/// layers flagged; the sidecar in front of the service is fixed by the service's own dedup, and
/// the egress proxy after the SDK, which nothing above can guard, only by retrying connection
/// failures alone.
#[test]
fn on_a_provider_that_ignores_keys_the_fix_is_the_services_dedup_or_a_narrower_retry() {
    let fail = "tests/fixtures/lint/keys-ignored-layers.fail.json";
    let (code, found) = errors(fail, &[]);
    assert_eq!(code, 1);
    let fixes: Vec<(&str, &[String])> = found
        .iter()
        .map(|f| (f.1.as_str(), f.3.as_slice()))
        .collect();
    assert_eq!(
        fixes,
        [
            (
                "layers.sidecar.max_retries",
                &["refunds_service.local_dedup=true".to_string()][..]
            ),
            (
                "layers.egress.max_retries",
                &["layers.egress.retry_on=[\"connect-failure\"]".to_string()][..]
            ),
        ]
    );
    assert!(
        found.iter().all(|f| f.2.contains("keys_ignored")),
        "{found:?}"
    );
    assert_eq!(
        errors("tests/fixtures/lint/keys-ignored-layers.pass.json", &[]),
        (0, vec![])
    );
}

/// A duplicate window: a layer whose retries all land inside the window is not flagged; one
/// whose backoff carries a try past it is, with the span in the message.
#[test]
fn on_a_duplicate_window_only_a_retry_that_can_land_past_the_window_is_flagged() {
    let (code, found) = errors("tests/fixtures/lint/dedup-window-layers.fail.json", &[]);
    assert_eq!(code, 1);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].0.as_str(), found[0].1.as_str()),
        (
            "layer-retry-without-stable-key",
            "layers.framework_retry.max_retries"
        )
    );
    assert_eq!(found[0].3, ["refunds_service.local_dedup=true"]);
    let (_, v) = command_json(
        "lint",
        &["tests/fixtures/lint/dedup-window-layers.fail.json"],
    );
    let message = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "layer-retry-without-stable-key")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains(
            "within provider.dedup_window (2m) of the first request, and this retry can reach it up to 3m 45s after"
        ),
        "{message}"
    );
    assert_eq!(
        errors("tests/fixtures/lint/dedup-window-layers.pass.json", &[]),
        (0, vec![])
    );
}
