//! `refundsim diff`: pairs whose answer is known, the paired interval against the unpaired one,
//! tolerances, bad input.

use crate::common;
use common::*;

fn diff_json(args: &[&str]) -> (i32, serde_json::Value) {
    command_json("diff", args)
}

fn row<'a>(v: &'a serde_json::Value, metric: &str) -> &'a serde_json::Value {
    v["scenarios"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == metric)
        .unwrap()
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap()
}

fn empty_policy(dir: &tempfile::TempDir) -> String {
    let p = dir.path().join("none.json");
    std::fs::write(&p, "{}").unwrap();
    p.display().to_string()
}

#[test]
fn removing_the_key_fails_with_the_worst_seed_to_replay() {
    let dir = tempfile::tempdir().unwrap();
    let none = empty_policy(&dir);
    let (code, v) = diff_json(&[
        INCIDENT,
        "--baseline",
        "policies/key-only.json",
        "--candidate",
        &none,
        "--seeds",
        "1..10",
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["paired"], true);
    let d = row(&v, "duplicate_refund_tickets");
    assert_eq!(d["ok"], false);
    assert_eq!(f(&d["tolerance"]), 0.0);
    let diff = f(&d["difference"]["mean"]);
    assert!((diff - (f(&d["candidate_mean"]) - f(&d["baseline_mean"]))).abs() < 1e-9);
    assert!(f(&d["difference"]["low"]) > 0.0, "{d}");
    let (seed, cmd) = (
        d["worst"][0].as_u64().unwrap(),
        d["worst"][1].as_str().unwrap(),
    );
    assert_eq!(
        cmd,
        format!("refundsim run scenarios/carrier-outage.json --seed {seed} --policy {none}")
    );
    // The worst seed's increase is the largest paired difference.
    let dup = |p: &str| {
        run_json(&[INCIDENT, "--seed", &seed.to_string(), "--policy", p])
            ["duplicate_refund_tickets"]
            .as_f64()
            .unwrap()
    };
    assert!(dup(&none) - dup("policies/key-only.json") >= diff);
}

#[test]
fn raising_the_timeout_lowers_executor_timeouts_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    let none = empty_policy(&dir);
    let (code, v) = diff_json(&[
        INCIDENT,
        "--baseline",
        &none,
        "--candidate",
        "policies/timeout-15s-only.json",
        "--seeds",
        "1..10",
    ]);
    assert_eq!(code, 0);
    let t = row(&v, "executor_timeouts");
    assert_eq!(f(&t["candidate_mean"]), 0.0);
    assert!(f(&t["baseline_mean"]) > 0.0);
    assert!(f(&t["difference"]["high"]) < 0.0, "{t}");
    assert_eq!(t["tolerance"], serde_json::Value::Null);
    assert!(f(&row(&v, "duplicate_refund_tickets")["difference"]["mean"]) < 0.0);
}

#[test]
fn pairing_narrows_the_interval_and_tolerances_apply() {
    let dir = tempfile::tempdir().unwrap();
    let none = empty_policy(&dir);
    let args = [
        INCIDENT,
        "--baseline",
        &none,
        "--candidate",
        "policies/key-only.json",
        "--seeds",
        "1..10",
    ];
    let (_, paired) = diff_json(&args);
    let mut unpaired_args = args.to_vec();
    unpaired_args.extend(["--candidate-seeds", "11..20"]);
    let (_, unpaired) = diff_json(&unpaired_args);
    assert_eq!(unpaired["paired"], false);
    let width = |v: &serde_json::Value| {
        let d = &row(v, "false_failures")["difference"];
        f(&d["high"]) - f(&d["low"])
    };
    assert!(
        width(&paired) < width(&unpaired),
        "{} vs {}",
        width(&paired),
        width(&unpaired)
    );

    // key-only lowers false failures; a tolerance of −100 on their mean difference is not met.
    let mut strict = args.to_vec();
    strict.extend(["--tolerance", "false_failures=-100"]);
    let (code, v) = diff_json(&strict);
    assert_eq!(code, 1);
    assert_eq!(f(&row(&v, "false_failures")["tolerance"]), -100.0);
}

#[test]
fn text_output_is_a_table_with_a_verdict() {
    let out = refundsim()
        .args([
            "diff",
            INCIDENT,
            "--baseline",
            "policies/fixed.json",
            "--candidate",
            "policies/fixed.json",
            "--seeds",
            "1..3",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("baseline policies/fixed.json vs candidate policies/fixed.json — paired on seeds 1..3\n"), "{text}");
    assert!(text.contains("  duplicate_refund_tickets          count            0            0            0                    [0, 0]        ≤ 0  ok\n"), "{text}");
    // Aligned whatever the longest metric name (`pool_wait_over_threshold_fraction`, 33
    // characters): every row without a verdict is as wide as the header without its own.
    let header = text.lines().find(|l| l.starts_with("  metric ")).unwrap();
    let width = header.chars().count() - "  verdict".len();
    let rows: Vec<&str> = text.lines().filter(|l| l.ends_with(" -")).collect();
    assert!(rows.len() > 30, "{text}");
    for row in rows {
        assert_eq!(row.chars().count(), width, "{row}\n{header}");
    }
    assert!(
        text.contains("  candidate in itself: safe (on its seeds, safety invariants violated: at_most_one_refund_per_ticket 0/3, no_over_refund 0/3, no_lost_refund 0/3, conservation 0/3); its expect states what it leaves open, so the comparison alone decides\n"),
        "{text}"
    );
    assert!(text.ends_with("\ndiff ok\n"), "{text}");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["--tolerance", "dups=0"],
            "--tolerance dups=0: unknown metric \"dups\"",
        ),
        (&["--seeds", "x"], "--seeds x: expected seeds as A..B"),
        (
            &["--candidate-seeds", "3..1"],
            "--candidate-seeds 3..1: expected A ≤ B",
        ),
    ];
    for (extra, want) in cases {
        let out = refundsim()
            .args([
                "diff",
                INCIDENT,
                "--baseline",
                "policies/fixed.json",
                "--candidate",
                "policies/key-only.json",
            ])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(out.stdout.is_empty());
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

#[test]
fn one_seed_is_refused_because_an_interval_needs_two() {
    let out = assert_cmd::Command::cargo_bin("refundsim")
        .unwrap()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "diff",
            "--baseline",
            "policies/key-only.json",
            "--candidate",
            "policies/fixed.json",
        ])
        .args(["scenarios/carrier-outage.json", "--seeds", "7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("at least 2 seeds"));
}

#[test]
fn the_candidate_is_judged_safe_or_not_apart_from_the_comparison() {
    let dir = tempfile::tempdir().unwrap();
    let none = empty_policy(&dir);
    // The incident against itself: no difference, so the comparison passes, but on seeds 2 and
    // 3 the candidate duplicates refunds (tests/pinned/carrier-outage.csv: 0, 25, 89).
    let args = [
        INCIDENT,
        "--baseline",
        &none,
        "--candidate",
        &none,
        "--seeds",
        "1..3",
    ];
    let (code, v) = diff_json(&args);
    assert_eq!(code, 0);
    let sc = &v["scenarios"][0];
    assert_eq!(sc["candidate_safe"], false);
    let dup = &sc["candidate_safety"][0];
    assert_eq!(dup["invariant"], "at_most_one_refund_per_ticket");
    assert_eq!(
        (dup["violating_seeds"].as_u64(), dup["seeds"].as_u64()),
        (Some(2), Some(3))
    );
    assert_eq!(
        dup["first"],
        serde_json::json!([
            2,
            format!("refundsim run scenarios/carrier-outage.json --seed 2 --policy {none}")
        ])
    );
    assert_eq!(sc["candidate_safety"][2]["invariant"], "no_lost_refund");
    assert_eq!(sc["candidate_safety"][2]["violating_seeds"], 0);
    // The incident as written states its duplicates (its own expect), so by default the
    // comparison alone decides; --require-safe makes its unsafety fail the diff anyway.
    assert_eq!(sc["candidate_claims_safety"], false);
    let mut strict = args.to_vec();
    strict.push("--require-safe");
    let (code, v) = diff_json(&strict);
    assert_eq!((code, &v["passed"]), (1, &serde_json::json!(false)));
    assert!(v["reason"]
        .as_str()
        .unwrap()
        .starts_with("scenarios/carrier-outage.json: candidate unsafe: duplicate_refund_tickets ≤ 0 failed on 2 of 3 seeds; worst seed 3: 89"));
}

#[test]
fn text_shows_units_money_in_dollars_and_latency_in_ms() {
    let dir = tempfile::tempdir().unwrap();
    let none = empty_policy(&dir);
    let out = refundsim()
        .args([
            "diff",
            INCIDENT,
            "--baseline",
            &none,
            "--candidate",
            &none,
            "--seeds",
            "2..4",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("  candidate in itself: UNSAFE (on its seeds, safety invariants violated: at_most_one_refund_per_ticket 3/3, no_over_refund 3/3, no_lost_refund 0/3, conservation 0/3); its expect states what it leaves open, so the comparison alone decides\n"), "{text}");
    // over_refund_cents on seeds 2, 3, 4: 342937, 1586106, 1470284 cents, mean $11,331.09
    // (tests/pinned/carrier-outage.csv).
    let money = text
        .lines()
        .find(|l| l.starts_with("  over_refund_cents "))
        .unwrap();
    assert_eq!(
        money.split_whitespace().take(5).collect::<Vec<_>>(),
        [
            "over_refund_cents",
            "$",
            "$11,331.09",
            "$11,331.09",
            "$0.00"
        ],
        "{money}"
    );
    let p99 = text
        .lines()
        .find(|l| l.starts_with("  latency_tool_call_p99_ms "))
        .unwrap();
    assert_eq!(p99.split_whitespace().nth(1), Some("ms"), "{p99}");
    assert!(
        text.contains("\n  metric                             unit     baseline"),
        "{text}"
    );
}

#[test]
fn set_applies_to_both_sides_and_their_replay_commands() {
    let dir = tempfile::tempdir().unwrap();
    let none = empty_policy(&dir);
    let (code, v) = diff_json(&[
        INCIDENT,
        "--baseline",
        &none,
        "--candidate",
        "policies/key-only.json",
        "--seeds",
        "2..3",
        "--set",
        "executor.timeout=9s",
        "--tolerance",
        "false_failures=-1000",
    ]);
    assert_eq!(code, 1);
    assert_eq!(v["sets"], serde_json::json!(["executor.timeout=9s"]));
    let ff = row(&v, "false_failures");
    assert_eq!(
        ff["worst"][1].as_str().unwrap(),
        format!(
            "refundsim run scenarios/carrier-outage.json --seed {} --policy policies/key-only.json --set executor.timeout=9s",
            ff["worst"][0]
        )
    );
    // The baseline side is the incident with a 9 s timeout: its mean is that run's.
    let dup = |seed: &str| {
        run_json(&[INCIDENT, "--seed", seed, "--set", "executor.timeout=9s"])
            ["duplicate_refund_tickets"]
            .as_f64()
            .unwrap()
    };
    let want = (dup("2") + dup("3")) / 2.0;
    assert_eq!(
        f(&row(&v, "duplicate_refund_tickets")["baseline_mean"]),
        want
    );
}

/// Issue 32: the table's columns line up whatever their cells hold. The longest metric name
/// (`pool_wait_over_threshold_fraction`, 33 characters, past the first column's usual 26) and
/// a tolerance in dollars wider than its column (`≤ $10,000.00`, 12 characters, `≤` 3 bytes)
/// widen their whole column: every cell of a column ends (right-aligned) or starts (the name,
/// the verdict) at the header's character offset.
#[test]
fn every_row_has_its_columns_at_the_headers_character_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let none = empty_policy(&dir);
    let out = refundsim()
        .args([
            "diff",
            INCIDENT,
            "--baseline",
            &none,
            "--candidate",
            "policies/key-only.json",
            "--seeds",
            "1..3",
            "--explore-cases",
            "0",
            "--tolerance",
            "over_refund_cents=1000000",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let lines: Vec<Vec<char>> = text.lines().map(|l| l.chars().collect()).collect();
    let header_at = lines
        .iter()
        .position(|l| l.starts_with(&"  metric ".chars().collect::<Vec<_>>()))
        .expect("a header");
    let header: String = lines[header_at].iter().collect();
    // Where each header word ends (right-aligned columns) or starts (the verdict).
    let end_of = |word: &str| {
        header
            .find(word)
            .map(|b| header[..b].chars().count() + word.chars().count())
            .unwrap()
    };
    let ends: Vec<usize> = [
        "unit",
        "baseline",
        "candidate",
        "difference",
        "95% CI",
        "tolerance",
    ]
    .iter()
    .map(|w| end_of(w))
    .collect();
    let verdict_at = end_of("verdict") - "verdict".len();
    let rows: Vec<&Vec<char>> = lines[header_at + 1..]
        .iter()
        .take_while(|l| l.starts_with(&[' ', ' ']) && l.get(2).is_some_and(|c| *c != ' '))
        .collect();
    assert_eq!(rows.len(), 39, "one row per metric\n{text}");
    let long = "pool_wait_over_threshold_fraction";
    assert!(text.contains(&format!("\n  {long} ")), "{text}");
    assert!(text.contains(" ≤ $10,000.00  ok\n"), "{text}");
    for row in rows {
        let shown: String = row.iter().collect();
        for &e in &ends {
            assert!(
                row[e - 1] != ' ' && row.get(e).is_none_or(|c| *c == ' '),
                "a cell does not end at offset {e}:\n{shown}\n{header}"
            );
        }
        let has_verdict = row.len() > verdict_at;
        if has_verdict {
            assert!(
                row[verdict_at - 1] == ' ' && row[verdict_at] != ' ',
                "the verdict is not at offset {verdict_at}:\n{shown}\n{header}"
            );
        } else {
            assert_eq!(row.len(), ends[ends.len() - 1], "{shown}\n{header}");
        }
    }
}
