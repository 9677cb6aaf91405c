//! Fuzzing the scenario and policy loaders, and the engine behind them, on the stable toolchain:
//! proptest mutates the shipped scenario and policy files (every JSON file under `scenarios/`,
//! `policies/` and `tests/fixtures/`) — a node replaced by an extreme or ill-typed value, a
//! member deleted, an unknown member added — and loads the result as a user's file.
//!
//! What must hold for every mutant: no panic; a rejection is a [`ScenarioError`] whose message
//! starts with the file's name and, for a value the loader refuses, names its dotted JSON path
//! (the CLI turns every `ScenarioError` into exit 2); an accepted scenario runs (horizon capped
//! at 10 minutes of virtual time to keep a case short) without a panic.
//!
//! `cargo test` runs 48 cases. A long session (about 10 minutes on one core):
//! `PROPTEST_CASES=20000 cargo test --release --test it fuzz_inputs`. A failure prints the
//! mutated file, shrunk.

use std::path::{Path, PathBuf};
use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Value};

use refundsim::run::{run, Invocation};
use refundsim::scenario::{load, ScenarioError};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every shipped JSON input, sorted, as (path, is a policy, parsed JSON).
fn corpus() -> Vec<(PathBuf, bool, Value)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "json") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for d in ["scenarios", "policies", "tests/fixtures"] {
        walk(&root().join(d), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            // A policy is a patch: no `name` and no `arrivals` of its own.
            let policy = p.starts_with(root().join("policies"));
            v.is_object().then_some((p, policy, v))
        })
        .collect()
}

/// The values a mutation writes: extremes of every JSON type and the durations, rates and
/// probabilities a loader must bound.
fn pool() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(1),
        json!(0.5),
        json!(-0.0),
        json!(1e308),
        json!(-1e308),
        json!(5e-324),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(4294967296u64),
        json!(1e9),
        json!(0.999999),
        json!(3),
        json!(""),
        json!("1ms"),
        json!("59m"),
        json!("100000h"),
        json!("per_ticket"),
        json!("probe_status"),
        json!("0s"),
        json!("1ns"),
        json!("-1s"),
        json!("99999999h"),
        json!("8s"),
        json!("1.5"),
        json!("NaN"),
        json!("\u{0}"),
        json!("<script>alert(1)</script>"),
        json!([]),
        json!([1, 2, 3]),
        json!({}),
        json!({"p50": "1ms", "p99": "0ms"}),
        json!({"p50": "10s", "p99": "1s"}),
        json!({"unknown_field": 1}),
    ]
}

/// JSON pointers of every node of `v`, in document order.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                pointers(
                    c,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// One mutation: which node (an index taken modulo the node count), what to do, which value.
#[derive(Clone, Debug)]
struct Mutation {
    node: usize,
    op: u8,
    value: usize,
}

fn mutate(doc: &mut Value, m: &Mutation, pool: &[Value]) {
    let mut ptrs = Vec::new();
    pointers(doc, String::new(), &mut ptrs);
    let ptr = &ptrs[m.node % ptrs.len()];
    let value = pool[m.value % pool.len()].clone();
    match m.op % 6 {
        // Delete the member (or empty the document's array element).
        0 if !ptr.is_empty() => {
            let (parent, key) = ptr.rsplit_once('/').unwrap();
            match doc.pointer_mut(parent) {
                Some(Value::Object(o)) => {
                    o.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
                Some(Value::Array(a)) => {
                    if let Ok(i) = key.parse::<usize>() {
                        if i < a.len() {
                            a.remove(i);
                        }
                    }
                }
                _ => {}
            }
        }
        // Add a member to an object (unknown, or a copy of the value under a known name).
        1 => {
            if let Some(Value::Object(o)) = doc.pointer_mut(ptr) {
                o.insert("fuzz_unknown".into(), value);
            } else if let Some(slot) = doc.pointer_mut(ptr) {
                *slot = value;
            }
        }
        // Replace a leaf by one of its own JSON type, so that more mutants pass the loader's
        // types and reach its range checks and the engine.
        4 | 5 => {
            if let Some(slot) = doc.pointer_mut(ptr) {
                let same: Vec<&Value> = pool
                    .iter()
                    .filter(|v| std::mem::discriminant(*v) == std::mem::discriminant(&*slot))
                    .collect();
                if !same.is_empty() && !slot.is_object() && !slot.is_array() {
                    *slot = same[m.value % same.len()].clone();
                }
            }
        }
        // Replace the node.
        _ => {
            if let Some(slot) = doc.pointer_mut(ptr) {
                *slot = value;
            }
        }
    }
}

fn mutations() -> impl Strategy<Value = (usize, Vec<Mutation>)> {
    (
        any::<usize>(),
        prop::collection::vec(
            (any::<usize>(), any::<u8>(), any::<usize>()).prop_map(|(node, op, value)| Mutation {
                node,
                op,
                value,
            }),
            1..4,
        ),
    )
}

fn check_one(
    corpus: &[(PathBuf, bool, Value)],
    dir: &Path,
    (file, muts): &(usize, Vec<Mutation>),
) -> Result<(), TestCaseError> {
    let pool = pool();
    let (path, is_policy, original) = &corpus[file % corpus.len()];
    let mut doc = original.clone();
    for m in muts {
        mutate(&mut doc, m, &pool);
    }
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let written = dir.join("mutant.json");
    std::fs::write(&written, &text).unwrap();
    let loaded = if *is_policy {
        load(
            &root().join("scenarios/carrier-outage.json"),
            std::slice::from_ref(&written),
            &[],
        )
    } else {
        load(&written, &[], &[])
    };
    let origin = if *is_policy {
        root().join("scenarios/carrier-outage.json")
    } else {
        written.clone()
    };
    match loaded {
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(
                msg.starts_with(&origin.display().to_string())
                    || msg.starts_with(&written.display().to_string()),
                "{}: the message does not name the file: {msg}\n{text}",
                path.display()
            );
            if let ScenarioError::Invalid { path: field, .. } = &e {
                prop_assert!(
                    !field.is_empty() || msg.contains(": (top level): "),
                    "{}: no JSON path in: {msg}",
                    path.display()
                );
            }
            prop_assert!(msg.len() < 2000, "an overlong message: {} bytes", msg.len());
            // The mutant is well-formed JSON: a syntax error can only be a policy that is not
            // an object (serde_json's "expected value" for a mistyped enum used to leak here).
            prop_assert!(
                !matches!(e, ScenarioError::Syntax { .. }) || (*is_policy && !doc.is_object()),
                "{}: a syntax error for well-formed JSON: {msg}\n{text}",
                path.display()
            );
        }
        Ok(mut sc) => {
            sc.horizon = sc.horizon.min(Duration::from_secs(600));
            // A panic anywhere in the run fails the case (proptest catches it and shrinks).
            run(&sc, sc.seed, &Invocation::default());
        }
    }
    Ok(())
}

#[test]
fn mutated_inputs_never_panic_and_name_their_field() {
    let corpus = corpus();
    assert!(
        corpus.len() > 40,
        "only {} shipped JSON inputs found",
        corpus.len()
    );
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let dir = tempfile::tempdir().unwrap();
    if let Err(e) = runner.run(&mutations(), |case| check_one(&corpus, dir.path(), &case)) {
        panic!("{e}");
    }
}
