//! `refundsim sweep` and `refundsim merge` as a user runs them: the table and recommendation,
//! common random numbers, byte-identical files across thread counts and across shards run as
//! separate processes, the documented Kubernetes line, and bad input (exit 2, no files).

use std::path::{Path, PathBuf};

use crate::common;
use common::*;

/// The incident's first two spikes only (22 minutes), on a 2 × 2 grid: the 8 s timeout with
/// pool 3 duplicates on some seeds, every other point on none.
pub(crate) const SMALL: &[&str] = &[
    INCIDENT,
    "--set",
    "horizon=22m",
    "--vary",
    "executor.timeout=8s,15s",
    "--vary",
    "refunds_service.pool_size=3..4",
    "--seeds",
    "1..6",
];

const FILES: &[&str] = &[
    "summary.csv",
    "points.csv",
    "runs.csv",
    "sweep.json",
    "p_duplicate.svg",
    "duplicates.svg",
    "latency-executor.timeout.svg",
    "latency-refunds_service.pool_size.svg",
];

fn sweep(args: &[&str], out: &Path) -> assert_cmd::Command {
    let mut c = refundsim();
    c.arg("sweep").args(args).arg("--out").arg(out);
    c
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn column(csv: &str, name: &str) -> Vec<String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let i = header
        .iter()
        .position(|h| *h == name)
        .unwrap_or_else(|| panic!("no {name}"));
    lines
        .map(|l| l.split(',').nth(i).unwrap().to_string())
        .collect()
}

/// The incident's grid: 3 of 4 points are safe on the seeds, but every point lints with errors
/// (no key, retries on any tool, a timeout reported as an error), so nothing is recommended
/// (it recommended 8 s with pool 4 before lint vetted the choice): exit 1, and each safe
/// point passed over with lint's rules.
#[test]
fn the_table_the_safe_region_and_no_recommendation_that_lint_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(SMALL, dir.path())
        .args(["--minimize", "executor.timeout"])
        .assert()
        .code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.starts_with(
            "sweep scenarios/carrier-outage.json: 4 points × 6 seeds (1..6) = 24 runs\n\
             executor.timeout  refunds_service.pool_size  P(dup)  dups mean  resp p50 ms  \
             resp p99 ms  safe      lint  explore\n"
        ),
        "{stdout}"
    );
    for line in [
        "safe (duplicate_refund_tickets.max<=0): 3 of 4 points\n",
        "lint: 0 of 4 points clean (no error finding); errors: retry-non-idempotent (4), \
         idempotency-key-missing (4), timeout-reports-error (4), timeout-below-burst-p99 (2)\n",
        "no recommendation (smallest executor.timeout, then service response p99; among safe \
         points that lint and explore accept): 3 safe points passed over\n",
        "  skipped executor.timeout=8s refunds_service.pool_size=4: lint errors: \
         retry-non-idempotent, idempotency-key-missing, timeout-reports-error, \
         timeout-below-burst-p99\n",
        "    see: refundsim lint scenarios/carrier-outage.json --set horizon=22m --set \
         executor.timeout=8s --set refunds_service.pool_size=4\n",
        "  skipped executor.timeout=15s refunds_service.pool_size=4: lint errors: \
         retry-non-idempotent, idempotency-key-missing, timeout-reports-error\n",
        "  sizing alone does not clear these: fix what they name, then sweep again\n",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    assert!(!stdout.contains("recommended"), "{stdout}");
    for f in FILES {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    let points = read(dir.path(), "points.csv");
    assert_eq!(
        column(&points, "executor.timeout"),
        ["8s", "8s", "15s", "15s"]
    );
    assert_eq!(
        column(&points, "refunds_service.pool_size"),
        ["3", "4", "3", "4"]
    );
    assert_eq!(column(&points, "safe"), ["false", "true", "true", "true"]);
    let full = "retry-non-idempotent idempotency-key-missing timeout-reports-error";
    assert_eq!(
        column(&points, "lint"),
        [
            format!("{full} timeout-below-burst-p99"),
            format!("{full} timeout-below-burst-p99"),
            full.to_string(),
            full.to_string()
        ]
    );
    assert_eq!(column(&points, "explore"), ["", "", "", ""]);
    // 1 of 6 seeds duplicates at 8 s / pool 3, with 20 duplicate tickets on it.
    assert_eq!(column(&points, "p_duplicate")[0], "0.16666666666666666");
    assert_eq!(column(&points, "duplicate_refund_tickets.max")[0], "20");
    assert_eq!(read(dir.path(), "runs.csv").lines().count(), 1 + 24);
    let json: serde_json::Value = serde_json::from_str(&read(dir.path(), "sweep.json")).unwrap();
    assert_eq!(json["results"]["safe_points"], 3);
    assert_eq!(json["results"]["recommendation"], serde_json::Value::Null);
    let skipped = &json["results"]["vetting"]["skipped"];
    assert_eq!(
        skipped
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["point"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [1, 3, 2]
    );
    assert_eq!(skipped[0]["by"], "lint");
    assert_eq!(
        json["results"]["points"][1]["lint"],
        serde_json::json!([
            "retry-non-idempotent",
            "idempotency-key-missing",
            "timeout-reports-error",
            "timeout-below-burst-p99"
        ])
    );
    assert!(read(dir.path(), "p_duplicate.svg").starts_with("<svg"));
}

/// Past the first three, the points passed over are counted, not listed.
#[test]
fn more_than_three_points_passed_over_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(
        &[
            INCIDENT,
            "--set",
            "horizon=22m",
            "--vary",
            "executor.timeout=15s,20s",
            "--vary",
            "refunds_service.pool_size=4..6",
            "--seeds",
            "1..2",
            "--minimize",
            "executor.timeout",
        ],
        dir.path(),
    )
    .assert()
    .code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains("): 6 safe points passed over\n"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches("  skipped executor.timeout=").count(),
        3,
        "{stdout}"
    );
    assert!(
        stdout.contains("  skipped 3 more safe points (3 by lint, 0 by explore)\n"),
        "{stdout}"
    );
}

/// The same grid under the fixed policy lints clean, and the seeds call every point safe; but
/// humans still refund an escalated ticket without looking 20 % of the time, and a short
/// explore breaks safety at each of the first three candidates, so nothing is recommended,
/// and the replay command it prints finds the violation. With humans who always look, the
/// first candidate explores clean and is recommended, saying so.
#[test]
fn explore_vets_the_recommendation_and_its_replay_finds_what_it_found() {
    let fixed: Vec<&str> = SMALL
        .iter()
        .copied()
        .chain([
            "--policy",
            "policies/fixed.json",
            "--minimize",
            "executor.timeout",
        ])
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(&fixed, dir.path()).assert().code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains("lint: 4 of 4 points clean (no error finding)\n"),
        "{stdout}"
    );
    let violated =
        "explore: at_most_one_refund_per_ticket violated (ticket 4) within 256 cases (seed 1)";
    assert!(
        stdout.contains(&format!(
            "  skipped executor.timeout=8s refunds_service.pool_size=4: {violated}\n"
        )),
        "{stdout}"
    );
    assert_eq!(stdout.matches("  skipped ").count(), 3, "{stdout}");
    assert_eq!(
        column(&read(dir.path(), "points.csv"), "explore"),
        ["violation", "violation", "", "violation"]
    );
    let replay = stdout
        .lines()
        .find_map(|l| l.strip_prefix("    replay: refundsim "))
        .expect("a replay line");
    assert_eq!(
        replay,
        "explore scenarios/carrier-outage.json --policy policies/fixed.json --set horizon=22m \
         --set executor.timeout=8s --set refunds_service.pool_size=4 --cases 256 --seed 1"
    );
    let minimal = dir.path().join("minimal.json");
    let found = refundsim()
        .args(replay.split(' '))
        .arg("--out")
        .arg(&minimal)
        .assert()
        .code(1);
    let text = String::from_utf8(found.get_output().stdout.clone()).unwrap();
    assert!(
        text.starts_with("violation: at_most_one_refund_per_ticket violated"),
        "{text}"
    );

    let looked: Vec<&str> = fixed
        .iter()
        .copied()
        .chain(["--set", "humans.check_probability=1"])
        .collect();
    let out = sweep(&looked, &dir.path().join("looked"))
        .assert()
        .success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains(
            "recommended (smallest executor.timeout, then service response p99; lint clean, \
             explore clean in 256 cases with seed 1): executor.timeout=8s \
             refunds_service.pool_size=4\n"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("skipped"), "{stdout}");
}

#[test]
fn every_point_sees_the_same_tickets_on_a_seed() {
    let dir = tempfile::tempdir().unwrap();
    sweep(SMALL, dir.path()).assert().success();
    let runs = read(dir.path(), "runs.csv");
    let (seeds, tickets) = (column(&runs, "seed"), column(&runs, "tickets"));
    for s in 1..=6 {
        let per_point: Vec<&String> = seeds
            .iter()
            .zip(&tickets)
            .filter(|(x, _)| **x == s.to_string())
            .map(|(_, t)| t)
            .collect();
        assert_eq!(per_point.len(), 4);
        assert!(
            per_point.iter().all(|t| *t == per_point[0]),
            "seed {s}: {per_point:?}"
        );
    }
    // Seeds differ from one another (it is not one seed run 6 times).
    assert_ne!(tickets[0], tickets[1]);
}

#[test]
fn files_are_byte_identical_across_thread_counts() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (dir, threads) in [(&one, "1"), (&two, "2")] {
        refundsim()
            .env("RAYON_NUM_THREADS", threads)
            .arg("sweep")
            .args(SMALL)
            .arg("--out")
            .arg(dir.path())
            .assert()
            .success();
    }
    for f in FILES {
        assert_eq!(read(one.path(), f), read(two.path(), f), "{f}");
    }
}

fn shards(args: &[&str], n: u32, root: &Path) -> Vec<PathBuf> {
    (1..=n)
        .map(|k| {
            let dir = root.join(format!("shard-{k}"));
            sweep(args, &dir)
                .args(["--shard", &format!("{k}/{n}")])
                .assert()
                .success();
            dir
        })
        .collect()
}

fn merge(dirs: &[PathBuf], out: &Path) -> assert_cmd::assert::Assert {
    refundsim()
        .arg("merge")
        .args(dirs)
        .arg("--out")
        .arg(out)
        .assert()
}

#[test]
fn merged_shards_give_the_unsharded_files_back() {
    let root = tempfile::tempdir().unwrap();
    let whole = root.path().join("whole");
    sweep(SMALL, &whole).assert().success();
    let mut dirs = shards(SMALL, 3, root.path());
    // A shard holds only its runs: every third of 24.
    assert_eq!(read(&dirs[1], "runs.csv").lines().count(), 1 + 8);
    assert!(!dirs[1].join("points.csv").exists());
    dirs.reverse();
    let merged = root.path().join("merged");
    merge(&dirs, &merged).success();
    for f in FILES {
        assert_eq!(read(&whole, f), read(&merged, f), "{f}");
    }
}

/// With `--minimize`, the merge vets the recommendation as the whole sweep does (lint every
/// point, explore the candidates): the same points.csv (lint and explore columns), sweep.json
/// (recommendation and skipped points) and exit code.
#[test]
fn merged_shards_vet_the_recommendation_as_the_whole_sweep_does() {
    let args: Vec<&str> = SMALL
        .iter()
        .copied()
        .chain([
            "--policy",
            "policies/fixed.json",
            "--minimize",
            "executor.timeout",
        ])
        .collect();
    let root = tempfile::tempdir().unwrap();
    let whole = root.path().join("whole");
    sweep(&args, &whole).assert().code(1);
    let dirs = shards(&args, 2, root.path());
    let merged = root.path().join("merged");
    merge(&dirs, &merged).code(1);
    for f in FILES {
        assert_eq!(read(&whole, f), read(&merged, f), "{f}");
    }
    assert!(read(&merged, "sweep.json").contains("\"by\": \"explore\""));
}

#[test]
fn merge_refuses_to_write_over_a_shard_and_a_rerun_leaves_no_stale_plots() {
    let root = tempfile::tempdir().unwrap();
    let dirs = shards(SMALL, 2, root.path());
    let before = read(&dirs[0], "runs.csv");
    let a = merge(&dirs, &dirs[0]).code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("is one of the shard directories being merged"),
        "{err}"
    );
    assert_eq!(read(&dirs[0], "runs.csv"), before, "the shard is untouched");

    // A 1-field re-run into a 2-field sweep's directory: the heatmaps go.
    let out = root.path().join("rerun");
    sweep(SMALL, &out).assert().success();
    assert!(out.join("p_duplicate.svg").exists());
    let one_field = [
        INCIDENT,
        "--set",
        "horizon=22m",
        "--vary",
        "refunds_service.pool_size=3..4",
        "--seeds",
        "1..2",
    ];
    sweep(&one_field, &out).assert().success();
    assert!(
        !out.join("p_duplicate.svg").exists(),
        "a stale heatmap was left"
    );
    assert!(!out.join("latency-executor.timeout.svg").exists());
    assert!(out.join("latency-refunds_service.pool_size.svg").exists());

    // --minimize names each field once.
    let a = sweep(SMALL, &root.path().join("twice"))
        .args([
            "--minimize",
            "executor.timeout",
            "--minimize",
            "executor.timeout",
        ])
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("--minimize executor.timeout: given twice"),
        "{err}"
    );
}

fn merge_error(dirs: &[PathBuf], out: &Path) -> String {
    let a = merge(dirs, out).code(2);
    assert!(!out.exists(), "no output on a refused merge");
    String::from_utf8(a.get_output().stderr.clone()).unwrap()
}

#[test]
fn merge_refuses_missing_duplicate_and_foreign_shards() {
    let root = tempfile::tempdir().unwrap();
    let dirs = shards(SMALL, 3, root.path());
    let out = root.path().join("out");
    let err = merge_error(&dirs[..2], &out);
    assert!(
        err.contains("missing shard 3/3; expected all 3 shards of the sweep"),
        "{err}"
    );
    let err = merge_error(
        &[
            dirs[0].clone(),
            dirs[1].clone(),
            dirs[1].clone(),
            dirs[2].clone(),
        ],
        &out,
    );
    assert!(err.contains("shard 2/3 given twice"), "{err}");
    // The same grid on other seeds is another sweep.
    let mut other: Vec<&str> = SMALL.to_vec();
    *other.last_mut().unwrap() = "1..5";
    let foreign = root.path().join("foreign");
    sweep(&other, &foreign)
        .args(["--shard", "3/3"])
        .assert()
        .success();
    let err = merge_error(&[dirs[0].clone(), dirs[1].clone(), foreign.clone()], &out);
    assert!(err.contains("foreign: a different sweep from"), "{err}");
    assert!(err.contains("its seed_last differs"), "{err}");
    // A shard whose runs.csv lost a run.
    let csv = read(&dirs[2], "runs.csv");
    let cut: Vec<&str> = csv.lines().collect();
    std::fs::write(
        dirs[2].join("runs.csv"),
        cut[..cut.len() - 1].join("\n") + "\n",
    )
    .unwrap();
    let err = merge_error(&dirs, &out);
    assert!(
        err.contains(
            "shard-3: runs.csv: 7 runs (7 distinct); expected the 8 runs of shard 3/3, each once"
        ),
        "{err}"
    );
    let err = merge_error(&[root.path().join("nowhere")], &out);
    assert!(err.contains("nowhere: cannot read sweep.json"), "{err}");
}

#[test]
fn bad_vary_arguments_exit_2_and_write_nothing() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let cases: &[(&str, &str)] = &[
        (
            "refunds_service.pool_sise=3,4",
            "--vary refunds_service.pool_sise=3,4: value 3:",
        ),
        (
            "refunds_service.pool_size=4..2",
            "--vary refunds_service.pool_size=4..2: 4..2: expected A ≤ B, got 4 > 2",
        ),
        (
            "executor.timeout=8s..15s",
            "expected an integer range A..B, or a step for decimals and durations",
        ),
        (
            "executor.timeout=soon",
            "--vary executor.timeout=soon: value soon:",
        ),
    ];
    for (vary, expected) in cases {
        let a = refundsim()
            .args(["sweep", INCIDENT, "--vary", vary, "--out"])
            .arg(&out)
            .assert()
            .code(2);
        let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
        assert!(err.contains(expected), "{vary}: {err}");
        assert!(!out.exists(), "{vary}: wrote {}", out.display());
        // The user typed --vary, not --set: the error says so.
        assert!(!err.contains("--set "), "{vary}: {err}");
    }
    for (vary, expected) in [
        ("x=bogus", "(after applying --vary x=bogus)"),
        (
            "executor.timeout=soon",
            "(after applying --vary executor.timeout=soon)",
        ),
    ] {
        let a = refundsim()
            .args(["sweep", INCIDENT, "--vary", vary, "--out"])
            .arg(&out)
            .assert()
            .code(2);
        let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
        assert!(err.contains(expected), "{vary}: {err}");
        assert!(!err.contains("--set"), "{vary}: {err}");
    }
    let a = refundsim()
        .args([
            "sweep",
            INCIDENT,
            "--vary",
            "executor.timeout=8s",
            "--shard",
            "4/3",
            "--out",
        ])
        .arg(&out)
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert!(
        err.contains("--shard 4/3: expected 1 ≤ K ≤ N, got K = 4, N = 3"),
        "{err}"
    );
}

#[test]
fn no_safe_point_exits_1_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = sweep(SMALL, dir.path())
        .args([
            "--require",
            "latency.tool_call.p99_ms<=100",
            "--minimize",
            "refunds_service.pool_size",
        ])
        .assert()
        .code(1);
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        stdout.contains("safe (latency.tool_call.p99_ms.max<=100): 0 of 4 points"),
        "{stdout}"
    );
    assert!(stdout.contains("no safe point"), "{stdout}");
    assert_eq!(
        column(&read(dir.path(), "points.csv"), "safe"),
        ["false"; 4]
    );
}

/// The `args` line of docs/scale.md's Indexed Job, and its `completions`.
fn indexed_job() -> (String, u32) {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scale.md"))
        .unwrap();
    let manifest = doc.split("kind: Job").nth(1).expect("a Job manifest");
    let line = manifest
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("refundsim sweep"))
        .expect("the shard's command line");
    let completions: u32 = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("completions: "))
        .unwrap()
        .parse()
        .unwrap();
    let shards_env = manifest
        .split("name: SHARDS")
        .nth(1)
        .and_then(|r| r.lines().nth(1))
        .unwrap()
        .trim();
    assert_eq!(
        shards_env,
        format!("value: \"{completions}\""),
        "SHARDS = completions"
    );
    (line.to_string(), completions)
}

#[test]
fn kubernetes_indexed_job_line_shards_and_merges() {
    let (line, n) = indexed_job();
    assert_eq!(n, 4);
    // The documented line on the small grid: its grid and seeds replaced, its --shard and
    // --out arithmetic run as written, with /results in a temporary directory.
    let (head, rest) = line.split_once(" --vary").unwrap();
    let (_, tail) = rest.split_once(" --shard ").unwrap();
    assert_eq!(head, format!("refundsim sweep {INCIDENT}"));
    assert_eq!(
        tail,
        r#""$((JOB_COMPLETION_INDEX+1))/$SHARDS" --out "/results/shard-$JOB_COMPLETION_INDEX""#
    );
    let root = tempfile::tempdir().unwrap();
    let results = root.path().join("results");
    let small = SMALL[1..].join(" ");
    let script = format!(
        "{head} {small} --shard {}",
        tail.replace("/results", &results.display().to_string())
    );
    let bin = assert_cmd::cargo::cargo_bin("refundsim");
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for index in 0..n {
        std::process::Command::new("sh")
            .args(["-c", &script])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("PATH", &path)
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env("SHARDS", n.to_string())
            .output()
            .map(|o| assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr)))
            .unwrap();
    }
    let dirs: Vec<PathBuf> = (0..n).map(|i| results.join(format!("shard-{i}"))).collect();
    let shard_of = |i: usize| {
        let json: serde_json::Value = serde_json::from_str(&read(&dirs[i], "sweep.json")).unwrap();
        json["shard"].clone()
    };
    assert_eq!(shard_of(0), serde_json::json!({"k": 1, "n": 4}));
    assert_eq!(shard_of(3), serde_json::json!({"k": 4, "n": 4}));
    let merged = results.join("sweep");
    merge(&dirs, &merged).success();
    let whole = root.path().join("whole");
    sweep(SMALL, &whole).assert().success();
    for f in FILES {
        assert_eq!(read(&whole, f), read(&merged, f), "{f}");
    }
}

/// A sweep's runs (grid points × seeds) are capped, and the refusal names the flags and the
/// product before anything is loaded or run (issue 13: 100 M runs grew to 2.9 GB first).
#[test]
fn a_sweep_of_more_than_a_million_runs_is_refused_naming_the_flags() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("out");
    let a = refundsim()
        .args([
            "sweep",
            INCIDENT,
            "--vary",
            "executor.timeout=1s..1000s:1s",
            "--vary",
            "refunds_service.pool_size=1..10",
            "--seeds",
            "1..10000",
            "--out",
        ])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .code(2);
    let err = String::from_utf8(a.get_output().stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    for needle in [
        "error: --seeds 1..10000: 10,000 points",
        "--vary executor.timeout=1s..1000s:1s --vary refunds_service.pool_size=1..10: 1000 × 10 values",
        "× 10,000 seeds = 100,000,000 runs",
        "expected at most 1,000,000 runs",
    ] {
        assert!(err.contains(needle), "{err:?} lacks {needle:?}");
    }
    assert!(!out.exists());
    // At the limit it is admitted (a shard of one run shows it got past the check).
    refundsim()
        .args([
            "sweep",
            INCIDENT,
            "--set",
            "horizon=1m",
            "--vary",
            "refunds_service.pool_size=1..100",
            "--seeds",
            "1..10000",
            "--shard",
            "1/1000000",
            "--out",
        ])
        .arg(&out)
        .assert()
        .success();
}

/// One point and one seed read as singulars.
#[test]
fn a_sweep_of_one_run_says_so_in_the_singular() {
    let dir = tempfile::tempdir().unwrap();
    let out = refundsim()
        .args(["sweep", INCIDENT, "--set", "horizon=\"2m\""])
        .args(["--vary", "executor.timeout=8s", "--seeds", "1..1", "--out"])
        .arg(dir.path().join("s"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with(&format!(
            "sweep {INCIDENT}: 1 point × 1 seed (1..1) = 1 run\n"
        )),
        "{text}"
    );
    assert!(text.contains("of 1 point\n"), "{text}");
}
