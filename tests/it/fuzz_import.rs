//! Fuzzing the importers like the scenario loader (issue 13): proptest mutates the recorded
//! fixtures (the incident's log, OTLP documents, JSON lines, a refund export, a Stripe list,
//! LangSmith runs, Langfuse observations, an OpenAI Agents SDK trace export) at the text
//! level — a line deleted, duplicated or swapped, a token replaced by an extreme or ill-typed
//! value, the text cut short — and imports the result over the incident.
//!
//! What must hold for every mutant: no panic; a rejection names the file first
//! (`NAME:LINE: …`); an accepted recording builds a replay scenario that loads back and runs.
//!
//! `cargo test` runs 64 cases; `PROPTEST_CASES=N cargo test --release --test it fuzz_import`
//! runs more (`.ci/run` runs 500).

use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

use refundsim::import::{self, Format, ImportOptions};
use refundsim::run::{run, Invocation};
use refundsim::scenario::{load, load_str};

const FIXTURES: [(&str, Format); 10] = [
    (
        "tests/fixtures/incident/incident-trace-ticket-48213.log",
        Format::Log,
    ),
    ("tests/fixtures/import/ticket-48213.otlp.json", Format::Otlp),
    ("tests/fixtures/import/ticket-48213.jsonl", Format::Jsonl),
    (
        "tests/fixtures/import/ticket-48213.refunds.csv",
        Format::RefundsCsv,
    ),
    (
        "tests/fixtures/import/standard/ticket-T-7.otlp.json",
        Format::Otlp,
    ),
    (
        "tests/fixtures/import/standard/ticket-T-7.stripe-list.json",
        Format::StripeList,
    ),
    (
        "tests/fixtures/import/spec/langsmith-runs.json",
        Format::Langsmith,
    ),
    (
        "tests/fixtures/import/spec/langsmith-runs.jsonl",
        Format::Langsmith,
    ),
    (
        "tests/fixtures/import/spec/langfuse-observations.jsonl",
        Format::Langfuse,
    ),
    (
        "tests/fixtures/import/spec/openai-agents-trace.json",
        Format::OpenaiAgents,
    ),
];

const TOKENS: [&str; 16] = [
    "",
    "-1",
    "0",
    "1e309",
    "NaN",
    "99999999999999999999999",
    "18446744073709551616",
    "\"\"",
    "null",
    "{}",
    "[]",
    "x",
    "23:59:59.999",
    "9xx",
    "\u{0}",
    "ticket=",
];

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// Replace the n-th run of digits (or word) with a token.
    ReplaceToken(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(a, b)| Mutation::ReplaceToken(a, b)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let n = lines.len().max(1);
    match *m {
        Mutation::DeleteLine(i) => {
            if !lines.is_empty() {
                lines.remove(i % n);
            }
        }
        Mutation::DuplicateLine(i) => {
            if !lines.is_empty() {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
        }
        Mutation::SwapLines(a, b) => {
            if !lines.is_empty() {
                lines.swap(a % n, b % n);
            }
        }
        Mutation::ReplaceToken(i, t) => {
            // Token boundaries: maximal runs of ASCII alphanumerics.
            let mut spans = Vec::new();
            let mut start = None;
            for (k, c) in text.char_indices() {
                match (c.is_ascii_alphanumeric(), start) {
                    (true, None) => start = Some(k),
                    (false, Some(s)) => {
                        spans.push((s, k));
                        start = None;
                    }
                    _ => {}
                }
            }
            if let Some(s) = start {
                spans.push((s, text.len()));
            }
            if spans.is_empty() {
                return text.to_string();
            }
            let (s, e) = spans[i % spans.len()];
            return format!("{}{}{}", &text[..s], TOKENS[t], &text[e..]);
        }
        Mutation::Truncate(i) => {
            let mut cut = i % (text.len() + 1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
    }
    lines.join("\n")
}

#[test]
fn mutated_recordings_never_panic_and_name_their_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let base = load(&root.join("scenarios/carrier-outage.json"), &[], &[]).unwrap();
    let texts: Vec<(String, String, Format)> = FIXTURES
        .iter()
        .map(|(p, f)| {
            let text = std::fs::read_to_string(root.join(p)).unwrap();
            (p.rsplit('/').next().unwrap().to_string(), text, *f)
        })
        .collect();
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]));
    let opts = ImportOptions {
        date: Some("2024-05-14".into()),
        ..ImportOptions::default()
    };
    // The unmutated fixtures import, build and replay exactly.
    for (name, text, f) in &texts {
        import::read_text(name, text, *f, &opts).unwrap();
    }
    let strategy = (
        0..texts.len(),
        prop::collection::vec(mutation(), 1..4),
        any::<bool>(),
    );
    runner
        .run(&strategy, |(which, ms, detect)| {
            let (name, text, format) = &texts[which];
            let mut mutated = text.clone();
            for m in &ms {
                mutated = apply(&mutated, m);
            }
            let format = if detect {
                match Format::detect(&mutated) {
                    Some(f) => f,
                    None => return Ok(()),
                }
            } else {
                *format
            };
            let rec = match import::read_text(name, &mutated, format, &opts) {
                Ok(r) => r,
                Err(e) => {
                    let msg = e.to_string();
                    prop_assert!(msg.starts_with(&format!("{name}:")), "{msg}");
                    return Ok(());
                }
            };
            let built = import::build(&rec, &base, std::slice::from_ref(name), &opts);
            let (sc, _) = match built {
                Ok(b) => b,
                Err(e) => {
                    prop_assert!(e.to_string().starts_with(&format!("{name}:")), "{e}");
                    return Ok(());
                }
            };
            let json =
                serde_json::to_string(&sc).map_err(|e| TestCaseError::fail(e.to_string()))?;
            match load_str(&json, "imported") {
                Ok(sc) => {
                    let out = run(&sc, sc.seed, &Invocation::default());
                    prop_assert!(out.report.recording.is_some());
                }
                Err(e) => {
                    // A recording the scenario rules refuse (e.g. an amount of 0): named.
                    prop_assert!(e.to_string().starts_with("imported:"), "{e}");
                }
            }
            Ok(())
        })
        .unwrap();
}
