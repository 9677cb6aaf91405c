//! `run --perfetto FILE`: the Chrome Trace Event JSON of a run, read back as a viewer reads it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

use crate::common::{refundsim, INCIDENT};

/// `run SCENARIO --json --perfetto FILE`, which must exit 0: the file's bytes and the report.
fn perfetto_run(scenario: &str) -> (Vec<u8>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.perfetto.json");
    let out = refundsim()
        .args(["run", scenario, "--json", "--perfetto"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = serde_json::from_slice(&out.stdout).unwrap();
    (std::fs::read(&path).unwrap(), report)
}

/// The incident's `--perfetto` file and its `--json` report, from one run shared by the tests.
fn incident() -> &'static (Vec<u8>, Value) {
    static RUN: OnceLock<(Vec<u8>, Value)> = OnceLock::new();
    RUN.get_or_init(|| perfetto_run(INCIDENT))
}

/// A slice as a viewer sees it: its name, args and track.
#[derive(Clone, Debug)]
struct Slice {
    name: String,
    args: Value,
    tid: u64,
    ts_ns: u64,
}

/// One end of an arrow: the slice it binds to, its time and its place in the file.
#[derive(Clone, Debug)]
struct End {
    slice: Slice,
    ts_ns: u64,
    index: usize,
}

/// What a viewer builds from the file.
struct Timeline {
    /// Thread id → track name.
    tracks: BTreeMap<u64, String>,
    /// Every slice.
    slices: Vec<Slice>,
    /// Flow id → (name, start, end).
    flows: BTreeMap<u64, (String, End, End)>,
}

/// Replays the events as Perfetto's JSON importer does: sorted by time (file order on ties), a
/// stack of open slices per track; an end must close a begin, `s` binds to the innermost open
/// slice, and so does `f` with `"bp": "e"`. Panics on anything a viewer would reject.
fn timeline(doc: &Value) -> Timeline {
    let events = doc["traceEvents"].as_array().expect("a traceEvents array");
    let ns = |e: &Value| (e["ts"].as_f64().expect("a ts") * 1000.0).round() as u64;
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| ns(&events[i]));
    let mut stacks: BTreeMap<(u64, u64), Vec<Slice>> = BTreeMap::new();
    let mut tl = Timeline {
        tracks: BTreeMap::new(),
        slices: Vec::new(),
        flows: BTreeMap::new(),
    };
    let mut starts: BTreeMap<u64, (String, End)> = BTreeMap::new();
    for i in order {
        let e = &events[i];
        let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap_or(0));
        let stack = stacks.entry((pid, tid)).or_default();
        let bound = |stack: &Vec<Slice>| End {
            slice: stack
                .last()
                .cloned()
                .expect("a flow binds to an open slice"),
            ts_ns: ns(e),
            index: i,
        };
        match e["ph"].as_str().unwrap() {
            "M" => {
                if e["name"] == "thread_name" {
                    let name = e["args"]["name"].as_str().unwrap().to_string();
                    assert!(
                        tl.tracks.insert(tid, name).is_none(),
                        "tid {tid} named twice"
                    );
                }
            }
            "B" => {
                let s = Slice {
                    name: e["name"].as_str().unwrap().to_string(),
                    args: e["args"].clone(),
                    tid,
                    ts_ns: ns(e),
                };
                tl.slices.push(s.clone());
                stack.push(s);
            }
            "E" => {
                stack.pop().expect("an end closes a begin");
            }
            "s" => {
                let name = e["name"].as_str().unwrap().to_string();
                assert_eq!(e["cat"], e["name"]);
                let id = e["id"].as_u64().unwrap();
                assert!(starts.insert(id, (name, bound(stack))).is_none());
            }
            "f" => {
                assert_eq!(e["bp"], "e");
                let id = e["id"].as_u64().unwrap();
                let (name, start) = starts.remove(&id).expect("an f after its s");
                assert_eq!(e["name"], name.as_str());
                tl.flows.insert(id, (name, start, bound(stack)));
            }
            "i" => assert_eq!(e["s"], "t"),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(starts.is_empty(), "every arrow ends");
    assert!(stacks.values().all(Vec::is_empty), "every slice ends");
    tl
}

#[test]
fn the_incident_has_pool_and_ticket_tracks_and_arrows_from_each_timeout() {
    let (bytes, report) = incident();
    let doc: Value = serde_json::from_slice(bytes).expect("valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ms");
    assert_eq!(doc["otherData"]["seed"], "157");
    let tl = timeline(&doc);
    let names: Vec<&str> = tl.tracks.values().map(String::as_str).collect();
    for c in ["connection 1", "connection 2", "connection 3"] {
        assert!(names.contains(&c), "no track {c}");
    }
    assert!(!names.contains(&"connection 4"), "pool_size is 3");
    let tickets = names.iter().filter(|n| n.starts_with("ticket ")).count();
    assert!(tickets >= 3213, "{tickets} ticket tracks");
    // An arrow to the retry per model retry, one to the late response per timed-out call.
    let count = |n: &str| tl.flows.values().filter(|f| f.0 == n).count() as u64;
    assert_eq!(count("retry"), report["retries"].as_u64().unwrap());
    assert_eq!(
        count("late response"),
        report["executor_timeouts"].as_u64().unwrap()
    );

    // A duplicated ticket, as `run --json` lists them.
    let ticket = report["duplicated_ticket_ids"][0].as_u64().unwrap();
    let mine: Vec<u64> = tl
        .tracks
        .iter()
        .filter(|(_, n)| {
            *n == &format!("ticket {ticket}") || n.starts_with(&format!("ticket {ticket} ("))
        })
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(mine.len(), 2, "the zombie request gets a second track");
    let timeout = tl
        .slices
        .iter()
        .find(|s| mine.contains(&s.tid) && s.name.starts_with("executor timeout"))
        .expect("a timeout slice");
    assert_eq!(timeout.name, "executor timeout 8000 ms");
    let timed_out_call = timeout.args["call"].as_u64().unwrap();
    let arrows: Vec<&(String, End, End)> = tl
        .flows
        .values()
        .filter(|f| f.1.slice.tid == timeout.tid && f.1.slice.ts_ns == timeout.ts_ns)
        .collect();
    assert_eq!(arrows.len(), 2, "{arrows:?}");
    for (name, s, f) in arrows {
        assert_eq!(s.slice.name, timeout.name);
        assert!(
            s.ts_ns < f.ts_ns && s.index < f.index,
            "s before f: {s:?} {f:?}"
        );
        assert!(mine.contains(&f.slice.tid), "the arrow stays on the ticket");
        match name.as_str() {
            "retry" => {
                let retry_call = f.slice.args["call"].as_u64().unwrap();
                assert!(f.slice.name.starts_with(&format!("request {retry_call}")));
                assert_ne!(retry_call, timed_out_call);
            }
            "late response" => {
                assert_eq!(f.slice.name, "late response");
                assert_eq!(f.slice.args["call"].as_u64(), Some(timed_out_call));
            }
            other => panic!("arrow {other}"),
        }
    }
    let zombie = tl
        .slices
        .iter()
        .find(|s| s.name.starts_with(&format!("request {timed_out_call} ")))
        .unwrap();
    assert!(zombie.name.ends_with("(late)"), "{}", zombie.name);
    assert!(mine.contains(&zombie.tid) && zombie.tid != timeout.tid);
}

#[test]
fn the_same_seed_gives_the_same_file_and_nothing_else_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("again.json");
    let out = refundsim()
        .args(["run", INCIDENT, "--json", "--perfetto"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let (first, report) = incident();
    assert!(
        std::fs::read(&path).unwrap() == *first,
        "two runs, two files"
    );
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(&again, report);

    // The report and the JSONL trace are the same with or without --perfetto.
    let small = "scenarios/findings/zombie-behind-saturated-pool.json";
    let run = |perfetto: bool| {
        let trace = dir.path().join(format!("t{perfetto}.jsonl"));
        let mut c = refundsim();
        c.args(["run", small, "--trace"]).arg(&trace);
        if perfetto {
            c.arg("--perfetto").arg(dir.path().join("small.json"));
        }
        let out = c.output().unwrap();
        assert!(out.status.code().is_some_and(|c| c < 2));
        (out.stdout, std::fs::read(trace).unwrap())
    };
    assert_eq!(run(false), run(true));
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("small.json")).unwrap()).unwrap();
    assert!(!timeline(&doc).flows.is_empty());
}

#[test]
fn a_bad_perfetto_path_exits_2_naming_it_and_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let small = "scenarios/findings/tiny-world.json";
    let fail = |args: &[&str], path: &Path| {
        let out = refundsim()
            .args(["run", small])
            .args(args)
            .arg("--perfetto")
            .arg(path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8(out.stderr).unwrap()
    };
    let missing = Path::new("/nonexistent-dir/x.json");
    let err = fail(&[], missing);
    assert!(
        err.contains(
            "--perfetto /nonexistent-dir/x.json: directory /nonexistent-dir does not exist"
        ),
        "{err}"
    );
    assert!(fail(&[], dir.path()).contains("is a directory"));
    let err = fail(&[], Path::new(small));
    assert!(err.contains("is the input"), "{err}");
    assert!(Path::new(small).exists());
    assert!(fail(&[], Path::new("-")).contains("--perfetto -: expected a file path"));
    let same = dir.path().join("both.json");
    let err = fail(&["--trace", same.to_str().unwrap()], &same);
    assert!(err.contains("is also the --trace file"), "{err}");
    // A failure after the run (an unknown ticket) leaves neither the file nor a temp file.
    let out = dir.path().join("t.json");
    assert!(fail(&["--ticket", "999999"], &out).contains("--ticket 999999"));
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Each request an egress proxy's tries send is a slice of its own, named with its try, so
/// a reader tells them apart and each answer closes its own request (by `via`), not the latest.
#[test]
fn egress_tries_are_named_slices() {
    let (bytes, _) = perfetto_run("tests/fixtures/layers/egress-per-try-timeout.json");
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let names: Vec<&str> = doc["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "B")
        .filter_map(|e| e["name"].as_str())
        .filter(|n| n.starts_with("Stripe POST"))
        .collect();
    assert_eq!(
        names,
        [
            "Stripe POST /v1/refunds",
            "Stripe POST /v1/refunds (egress try 1)",
            "Stripe POST /v1/refunds (egress try 2)"
        ]
    );
}

/// The circuit breaker recipe's points: the breaker opens once (4 failures in 4 calls, open
/// 60 s, resilience4j's `waitDurationInOpenState`) and refuses 4 retries, each on its ticket's
/// track in the layer category.
#[test]
fn breaker_points_show_the_opening_and_the_refusals() {
    let (bytes, _) = perfetto_run("scenarios/recipes/circuit-breaker-strands-payment.json");
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let named = |name: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["name"] == name && e["cat"] == "layer")
            .collect()
    };
    let opened = named("breaker circuit opened");
    assert_eq!(opened.len(), 1);
    assert_eq!(opened[0]["args"]["failures"], 4);
    assert_eq!(opened[0]["args"]["calls"], 4);
    assert_eq!(opened[0]["args"]["open_for_ns"], 60_000_000_000u64);
    let refused = named("breaker circuit open: refused");
    assert_eq!(refused.len(), 4);
    let tracks: std::collections::BTreeSet<_> =
        refused.iter().map(|e| e["tid"].as_u64().unwrap()).collect();
    assert_eq!(tracks.len(), 4, "one refusal per ticket");
}
