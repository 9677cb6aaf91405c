//! Exhaustive mode on a tiny world (`scenarios/findings/tiny-world.json`: 2 tickets, 4 latency
//! choices, 30 % of responses lost after commit): every schedule checked depth-first, each
//! request's fault (here: its response lost or not) one of the schedule's decisions. Zero
//! violations with the full fix, with and without faults; the schedule counts, pinned apart from
//! safety; the first violation, with its story, for the incident's policy and for each single
//! fix; and a violation that only a fault decision finds.

use std::path::Path;
use std::time::Duration;

use refundsim::explore::exhaustive::{exhaustive, exhaustive_of, Exhaustive};
use refundsim::explore::policy;
use refundsim::explore::CLAIM;
use refundsim::scenario::{load, Scenario};

fn tiny() -> Scenario {
    load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/findings/tiny-world.json"),
        &[],
        &[],
    )
    .unwrap()
}

/// The tiny world with no fault at all: schedules vary timing only.
fn without_faults(sc: &mut Scenario) {
    sc.stripe.faults.response_lost_after_commit = 0.0;
}

/// The tiny world with both commit faults: 20 % of refunds answered 500, 30 % lost.
fn with_500(sc: &mut Scenario) {
    sc.stripe.faults.error_500_after_commit = 0.2;
}

/// The tiny world with only the 500: 20 % of refunds answered 500, none lost.
fn only_500(sc: &mut Scenario) {
    without_faults(sc);
    with_500(sc);
}

/// A change to a scenario: a variant of the tiny world, or a policy.
type Change = fn(&mut Scenario);

/// `tiny()` changed by `world`, then `policy`: every schedule, or the first violating one.
fn explore(world: Change, policy: Change) -> Exhaustive {
    let mut sc = tiny();
    world(&mut sc);
    policy(&mut sc);
    exhaustive(&sc, 100_000)
}

fn as_written(_: &mut Scenario) {}

#[test]
fn full_fix_holds_on_every_schedule_of_the_tiny_world() {
    let worlds: [(&str, Change); 4] = [
        ("no fault", without_faults),
        ("responses lost (as written)", as_written),
        ("500s", only_500),
        ("500s and responses lost", with_500),
    ];
    for (name, world) in worlds {
        let r = explore(world, policy::full_fix);
        assert_eq!(r.first_violation, None, "{name}");
        assert!(r.complete, "{name}: not every schedule was visited");
    }
}

#[test]
fn schedule_counts_of_the_tiny_world_under_the_full_fix() {
    // Without faults, only timing varies (26 while the probe was a free oracle; a probe that
    // takes time leaves fewer exact ties at the timeout).
    assert_eq!(explore(without_faults, policy::full_fix).schedules, 20);
    // Each request also decides whether its one enabled fault happens.
    assert_eq!(explore(as_written, policy::full_fix).schedules, 80);
    assert_eq!(explore(only_500, policy::full_fix).schedules, 80);
    // Three outcomes per request: no fault, a 500, the response lost.
    assert_eq!(explore(with_500, policy::full_fix).schedules, 180);
}

#[test]
fn incident_and_each_single_fix_have_a_violating_schedule() {
    let mut sc = tiny();
    policy::incident(&mut sc);
    let r = exhaustive(&sc, 100_000);
    let (v, _) = r
        .first_violation
        .expect("the incident's policy double-refunds");
    assert_eq!(v.invariant, "at_most_one_refund_per_ticket");
    for (name, fix) in policy::SINGLE_FIXES {
        let mut sc = tiny();
        fix(&mut sc);
        let r = exhaustive(&sc, 100_000);
        let (v, choices) = r
            .first_violation
            .unwrap_or_else(|| panic!("{name}: no violating schedule in {}", r.schedules));
        assert!(
            !v.story.is_empty(),
            "{name}: the violation comes with its story"
        );
        eprintln!(
            "--- {name}: {v} after {} schedules, choices {choices:?}\n{}",
            r.schedules,
            v.story.join("\n")
        );
    }
}

/// `policies/probe-only.json`: the single fix with a probe that waits up to 60 s.
fn probe_only_60s(sc: &mut Scenario) {
    policy::probe_only(sc);
    sc.executor.probe_interval = Duration::from_secs(1);
    sc.executor.probe_max_wait = Duration::from_secs(60);
}

#[test]
fn a_fault_decision_finds_what_timing_alone_does_not() {
    // Timing alone: every timeout ends with the probe finding the refund.
    let r = explore(without_faults, probe_only_60s);
    assert_eq!(r.first_violation, None);
    assert!(r.complete);
    assert_eq!(r.schedules, 20);
    // A lost response is not a timeout: no probe, the model is told "failed" and retries.
    for (world, fault, shown) in [
        (
            as_written as Change,
            "no response, connection_lost",
            "HTTP 0",
        ),
        (only_500, "→ 500 api_error", "HTTP 500"),
    ] {
        let r = explore(world, probe_only_60s);
        let (v, choices) = r.first_violation.expect("a fault double-refunds");
        assert_eq!(v.invariant, "at_most_one_refund_per_ticket");
        // Ticket 1's latency and fault, then ticket 2's latency and fault: the fault is taken.
        assert_eq!(choices[..4], [0, 0, 0, 1], "{}", v.story.join("\n"));
        let story = v.story.join("\n");
        assert!(story.contains(fault), "{story}");
        assert!(story.contains(shown), "{story}");
    }
    // The incident's policy meets the lost response in its second schedule too.
    let (v, _) = explore(as_written, policy::incident)
        .first_violation
        .expect("the incident's policy double-refunds");
    assert!(v.story.join("\n").contains("connection_lost"));
}

#[test]
fn an_adversary_locking_every_request_starves_a_ticket() {
    // Every request answered 429 `lock_timeout`: nothing executes, the human gives up after their
    // tries, and the ticket ends with no refund. A liveness failure that exhaustive mode finds
    // because it treats "every request locked" (probability 0.2^n) as a schedule like any other.
    let r = explore(|sc| sc.stripe.faults.lock_timeout = 0.2, policy::full_fix);
    let (v, _) = r.first_violation.expect("a starved ticket");
    assert_eq!(v.invariant, "no_lost_refund");
    let story = v.story.join("\n");
    assert!(story.contains("429 lock_timeout"), "{story}");
    assert!(!story.contains("refund re_"), "{story}");
}

/// The headline claim on every schedule of the tiny world, faults included: under
/// `policy::keys_and_probe` (retries allowed, the probe a real call) no schedule breaks a claim
/// invariant — so a probe that lies, or a model that retries after "do not retry", fails here
/// even when the key keeps the money safe. Its own count, apart from safety.
#[test]
fn keys_and_probe_holds_on_every_schedule_of_the_tiny_world_claim_invariants_included() {
    for (name, world) in [
        ("no fault", without_faults as Change),
        ("responses lost (as written)", as_written),
        ("500s and responses lost", with_500),
    ] {
        let mut sc = tiny();
        world(&mut sc);
        policy::keys_and_probe(&mut sc);
        let r = exhaustive_of(CLAIM, &sc, 100_000);
        assert_eq!(r.first_violation, None, "{name}");
        assert!(r.complete, "{name}: not every schedule was visited");
    }
}

#[test]
fn schedule_counts_of_the_tiny_world_under_keys_and_probe() {
    let count = |world: Change| {
        let mut sc = tiny();
        world(&mut sc);
        policy::keys_and_probe(&mut sc);
        exhaustive_of(CLAIM, &sc, 100_000).schedules
    };
    assert_eq!(
        (count(without_faults), count(as_written), count(with_500)),
        (20, 80, 180)
    );
}
