//! Throughput of one full simulation run of `scenarios/carrier-outage.json`.
//!
//! Each iteration is one call to [`refundsim::run::run`] at the fixed seed 157 (the scenario's
//! default since the 2026-11-30 recalibration; it was 28 before): simulate the whole horizon on
//! the virtual-time executor, evaluate every metric, check the `expect` bounds and find the
//! incident-shaped tickets. Loading and validating the scenario file happens once, outside the
//! measured loop.
//!
//! Three benches:
//!
//! - `carrier_outage_seed157`: the scenario as it is (the incident).
//! - `carrier_outage_fixed_seed157`: the same scenario with `policies/fixed.json` merged in.
//! - `carrier_outage_seeds_1_20`: the incident at seeds 1 to 20, one after another, per
//!   iteration (throughput = their total engine events); compare with the `floor` bench, which
//!   processes the same number of events in a bare `BinaryHeap` loop.
//!
//! Throughput is set to the number of engine events (`report.sim_events`) the run processes, so
//! criterion reports events per second alongside the time per run. Runs are deterministic, so
//! every iteration does identical work.
//!
//! Run with `cargo bench --bench carrier_outage`; results are recorded in `docs/performance.md`
//! (measured at seed 28, before the recalibration). The numbers are measurements, not asserted
//! anywhere.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use refundsim::run::{run, Invocation};
use refundsim::scenario::{load, Scenario};

/// mimalloc, as in the `refundsim` binary: a run allocates and frees small objects at a high
/// rate, and the bench should measure what the CLI does.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

#[path = "../src/allocator.rs"]
mod allocator;

const SEED: u64 = 157;

fn manifest_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn load_scenario(policies: &[PathBuf]) -> Scenario {
    let path = manifest_path("scenarios/carrier-outage.json");
    load(&path, policies, &[]).unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

fn bench_one(c: &mut Criterion, name: &str, scenario: &Scenario) {
    let how = Invocation::default();
    let probe = run(scenario, SEED, &how);
    let events = probe.report.sim_events;
    eprintln!(
        "{name}: {} tickets, {events} sim events per run",
        probe.report.metrics.tickets
    );

    let mut group = c.benchmark_group("refundsim");
    // A run takes tens of milliseconds: flat sampling keeps 20 samples within the time budget.
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(events));
    group.bench_function(name, |b| {
        b.iter(|| run(black_box(scenario), black_box(SEED), &how))
    });
    group.finish();
}

/// Runs the scenario at seeds 1..=20 per iteration; throughput = their total engine events.
fn bench_seeds_1_20(c: &mut Criterion, scenario: &Scenario) {
    let how = Invocation::default();
    let events: u64 = (1..=20)
        .map(|seed| run(scenario, seed, &how).report.sim_events)
        .sum();
    eprintln!("carrier_outage_seeds_1_20: {events} sim events per iteration (seeds 1-20)");

    let mut group = c.benchmark_group("refundsim");
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.throughput(Throughput::Elements(events));
    group.bench_function("carrier_outage_seeds_1_20", |b| {
        b.iter(|| {
            for seed in 1..=20 {
                black_box(run(black_box(scenario), black_box(seed), &how));
            }
        })
    });
    group.finish();
}

fn carrier_outage(c: &mut Criterion) {
    let incident = load_scenario(&[]);
    bench_one(c, &format!("carrier_outage_seed{SEED}"), &incident);

    let fixed = load_scenario(&[manifest_path("policies/fixed.json")]);
    bench_one(c, &format!("carrier_outage_fixed_seed{SEED}"), &fixed);

    bench_seeds_1_20(c, &incident);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5));
    targets = carrier_outage
}
criterion_main!(benches);
