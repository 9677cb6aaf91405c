//! The floor under the engine: how fast can a bare event loop go on this machine?
//!
//! One iteration processes a fixed [`FLOOR_EVENTS`] = 2,836,873 events: what the engine needed
//! for the incident's seeds 1–20 (`scenarios/carrier-outage.json`, the sum of
//! `report.sim_events`) at commit `d93c1cc`, when the performance issue set the goal. The number
//! stays fixed so that an engine that needs fewer events for the same world is credited for it
//! (the performance issue's rule); the engine's count today is printed beside it. Each event is the least a discrete-event simulator can do: pop the earliest of 1,000 live timers
//! from a `std::collections::BinaryHeap`, draw one exponential delay (mean 1 s, in integer
//! nanoseconds) from a fixed-seed `rand_chacha::ChaCha8Rng` by `-ln(u)`, and push the timer back
//! at `now + delay`. No tasks, no wakers, no model.
//!
//! Compare its time per iteration with `carrier_outage_seeds_1_20` in the `carrier_outage` bench:
//! the ratio is how far the engine plus model are above a bare heap loop. Run with
//! `cargo bench --bench floor`; the numbers are measurements, not asserted anywhere.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use refundsim::run::{run, Invocation};
use refundsim::scenario::load;

/// mimalloc, as in the `refundsim` binary: a run allocates and frees small objects at a high
/// rate, and the bench should measure what the CLI does.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

#[path = "../src/allocator.rs"]
mod allocator;

/// Live timers kept in the heap at all times.
const LIVE_TIMERS: u64 = 1_000;
/// Mean of the exponential delay, in nanoseconds (1 s).
const MEAN_DELAY_NS: f64 = 1e9;

/// Events per iteration: the incident's seeds 1–20 at commit `d93c1cc` (2,836,873).
const FLOOR_EVENTS: u64 = 2_836_873;

/// Total engine events (`report.sim_events`) of the incident at seeds 1..=20 today.
fn incident_events_seeds_1_20() -> u64 {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/carrier-outage.json");
    let scenario = load(&path, &[], &[]).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let how = Invocation::default();
    (1..=20)
        .map(|seed| run(&scenario, seed, &how).report.sim_events)
        .sum()
}

/// Runs `events` pop-draw-push steps over `LIVE_TIMERS` timers; returns the final clock (ns) so
/// the work cannot be optimised away.
fn heap_loop(events: u64) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let mut delay = move || {
        let u = 1.0 - rng.random::<f64>(); // in (0, 1]
        (-libm::log(u) * MEAN_DELAY_NS) as u64
    };
    // Keys are (deadline, sequence number), min-ordered, like the engine's timers.
    let mut heap: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::with_capacity(LIVE_TIMERS as usize);
    for seq in 0..LIVE_TIMERS {
        heap.push(Reverse((delay(), seq)));
    }
    let mut now = 0;
    for seq in LIVE_TIMERS..LIVE_TIMERS + events {
        let Reverse((due, _)) = heap.pop().expect("the heap is never empty");
        now = due;
        heap.push(Reverse((now + delay(), seq)));
    }
    now
}

fn floor(c: &mut Criterion) {
    let events = FLOOR_EVENTS;
    eprintln!(
        "floor: {events} events per iteration (the incident's seeds 1-20 at d93c1cc; today's engine needs {})",
        incident_events_seeds_1_20()
    );
    let mut group = c.benchmark_group("refundsim");
    group.sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(events));
    group.bench_function("floor_binary_heap_1000_timers", |b| {
        b.iter(|| heap_loop(black_box(events)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = floor
}
criterion_main!(benches);
