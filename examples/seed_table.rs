//! Distribution of a scenario's outcomes over a range of seeds, with no policy and under each
//! given policy on its own, printed as a Markdown table (one row per policy).
//!
//! ```text
//! cargo run --release --example seed_table -- SCENARIO [--seeds A..B] [--policy FILE]...
//! cargo run --release --example seed_table -- scenarios/carrier-outage.json \
//!     --policy policies/key-only.json --policy policies/fixed.json
//! ```
//!
//! `--seeds A..B` is inclusive (default `1..100`). The first row is the scenario as written
//! ("(none: the incident)"); each `--policy` is then merged over the scenario alone, not on top
//! of the previous ones. Columns: duplicate-refund tickets (p10/p50/p90 by nearest rank, and
//! mean), the share of seeds with at least one duplicate, and the means of over-refund (dollars),
//! lost refunds, false failures, executor timeouts, escalations and manual refunds.
//!
//! A bad argument or an unreadable or invalid file prints a message naming it on stderr and
//! exits with code 2. The output is a pure function of the arguments.

use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use refundsim::invariants::Metrics;
use refundsim::run::run;
use refundsim::scenario::{load, Scenario};

/// Outcome distribution over seeds, per policy, as a Markdown table.
#[derive(Parser)]
struct Args {
    /// Scenario file (JSON).
    scenario: PathBuf,
    /// Inclusive seed range `A..B`.
    #[arg(long, default_value = "1..100", value_parser = parse_seeds)]
    seeds: RangeInclusive<u64>,
    /// Policy (JSON merge patch) to apply alone over the scenario; repeatable, one row each.
    #[arg(long = "policy", value_name = "FILE")]
    policies: Vec<PathBuf>,
}

fn parse_seeds(s: &str) -> Result<RangeInclusive<u64>, String> {
    let bad = || format!("`{s}`: expected A..B with integers A <= B, e.g. 1..100");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u64, u64) = (
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    );
    if a > b {
        return Err(bad());
    }
    Ok(a..=b)
}

fn main() -> ExitCode {
    let args = Args::parse(); // usage errors: message on stderr, exit code 2
    let mut rows = vec![("(none: the incident)".to_string(), vec![])];
    rows.extend(
        args.policies
            .iter()
            .map(|p| (p.display().to_string(), vec![p.clone()])),
    );
    // Load every scenario before printing anything, so a bad file leaves no partial table.
    let mut loaded = Vec::new();
    for (label, policy) in rows {
        match load(&args.scenario, &policy, &[]) {
            Ok(scenario) => loaded.push((label, scenario)),
            Err(e) => {
                eprintln!("seed_table: {e}");
                return ExitCode::from(2);
            }
        }
    }

    println!("| policy | dup p10 | dup p50 | dup p90 | dup mean | seeds with dup | over-refund mean | lost mean | false failures mean | timeouts mean | escalations mean | manual refunds mean |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (label, scenario) in &loaded {
        println!(
            "| {label} | {} |",
            row(scenario, args.seeds.clone()).join(" | ")
        );
    }
    ExitCode::SUCCESS
}

/// The table cells after the policy name, for `scenario` over `seeds`.
fn row(scenario: &Scenario, seeds: RangeInclusive<u64>) -> Vec<String> {
    let runs: Vec<Metrics> = seeds
        .map(|seed| run(scenario, seed, &Default::default()).report.metrics)
        .collect();
    let mean =
        |f: fn(&Metrics) -> u64| runs.iter().map(|m| f(m) as f64).sum::<f64>() / runs.len() as f64;
    let mut dups: Vec<u64> = runs.iter().map(|m| m.duplicate_refund_tickets).collect();
    dups.sort_unstable();
    let rank = |pct: usize| dups[(pct * dups.len()).div_ceil(100).max(1) - 1].to_string();
    let with_dup = runs
        .iter()
        .filter(|m| m.duplicate_refund_tickets > 0)
        .count();
    vec![
        rank(10),
        rank(50),
        rank(90),
        format!("{:.1}", mean(|m| m.duplicate_refund_tickets)),
        format!("{:.0}%", 100.0 * with_dup as f64 / runs.len() as f64),
        dollars(mean(|m| m.over_refund_cents)),
        format!("{:.2}", mean(|m| m.lost_refunds)),
        format!("{:.2}", mean(|m| m.false_failures)),
        format!("{:.2}", mean(|m| m.executor_timeouts)),
        format!("{:.2}", mean(|m| m.escalations)),
        format!("{:.2}", mean(|m| m.manual_refunds)),
    ]
}

/// Cents as `$1,234.56`.
fn dollars(cents: f64) -> String {
    let s = format!("{:.2}", cents / 100.0);
    let (int, frac) = s.split_once('.').unwrap_or((&s, "00"));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("${grouped}.{frac}")
}
