//! Duplicate deliveries of a ticket's triggering event (at-least-once webhooks) and two
//! handlers racing on one key, as properties over generated worlds
//! (`strategy::world_with_deliveries`): the claim holds with them, and the absence of each
//! mitigation — consumer dedup on the event id, "409 means in progress, look it up" — is found
//! and shrinks to a small world.
//!
//! Fixed proptest seeds and case budgets, which `PROPTEST_CASES` overrides
//! (`common::prop::runner`).

use proptest::strategy::Strategy;
use proptest::test_runner::TestCaseError;

use proptest::strategy::ValueTree;

use refundsim::explore::strategy::{world, world_with_deliveries, world_with_redelivery};
use refundsim::explore::{check_case, check_case_claim, policy, Case};
use refundsim::run::run;
use refundsim::scenario::{ConsumerDedup, KeyMode, LatencyDist, OnKeyConflict, Scenario};

use crate::common::prop::{counterexample_in, runner, sampler};

/// The claim (`policies/keys-and-probe.json`) over worlds that also deliver events twice, with
/// or without consumer dedup and with every `on_key_conflict` the claim allows: the per-ticket
/// key alone covers a duplicate delivery (a later handler is replayed, a concurrent one gets a
/// 409 that the probe or a lookup resolves), as long as a conflict is never retried under a
/// new key, which `keys_and_probe` rules out.
#[test]
fn holds_keys_and_probe_with_duplicate_deliveries() {
    let mut r = runner(256, 90);
    let duplicates = std::cell::Cell::new(0u64);
    let result = r.run(&world_with_deliveries(), |mut case: Case| {
        policy::keys_and_probe(&mut case.scenario);
        let m = run(&case.scenario, case.scenario.seed, &Default::default())
            .report
            .metrics;
        duplicates.set(duplicates.get() + m.duplicate_deliveries - m.deliveries_deduped);
        check_case_claim(&case)
            .map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("the claim has a counterexample with duplicate deliveries: {e}");
    }
    assert!(
        duplicates.get() > 100,
        "second handlers ran: {}",
        duplicates.get()
    );
}

/// Every ticket's event delivered twice, `delay` apart, to a consumer that does not dedup.
fn delivered_twice(s: &mut Scenario, delay: u64) {
    s.deliveries.duplicate_probability = 1.0;
    s.deliveries.duplicate_delay =
        LatencyDist::constant(refundsim::explore::strategy::millis(delay));
    s.deliveries.consumer_dedup = ConsumerDedup::None;
}

/// Searches worlds under `fix`, every event delivered twice (1 ms to 40 s apart), 256 cases,
/// and returns the shrunk counterexample.
fn counterexample(fix: fn(&mut Scenario), seed: u8) -> Case {
    let twice = (world(), 1u64..=40_000).prop_map(move |(mut c, delay)| {
        fix(&mut c.scenario);
        delivered_twice(&mut c.scenario, delay);
        c
    });
    counterexample_in(twice, 256, seed)
}

/// Nothing but the delivery can repeat the refund: no key, no retries anywhere, no humans.
fn only_deliveries_repeat(s: &mut Scenario) {
    s.refunds_service.idempotency_key = KeyMode::None;
    s.agent.retry.max_retries = 0;
    s.executor.retry = None;
    s.refunds_service.stripe_client.max_network_retries = 0;
    s.layers.clear();
    s.stack = None;
    s.humans.enabled = false;
}

/// Consumer dedup's absence: with nothing else to stop it, a second delivery refunds again,
/// in a world that shrinks to one ticket; with `consumer_dedup: event_id` the same worlds
/// hold.
#[test]
fn breaks_without_consumer_dedup_and_event_id_dedup_closes_it() {
    let minimal = counterexample(only_deliveries_repeat, 91);
    let v = check_case(&minimal).expect_err("the shrunk case still fails");
    assert_eq!(v.invariant, "at_most_one_refund_per_ticket", "{v}");
    assert_eq!(minimal.scenario.arrivals.tickets.len(), 1);
    eprintln!("--- no consumer dedup: {v}\n{}", v.story.join("\n"));
    let mut fixed = minimal.clone();
    fixed.scenario.deliveries.consumer_dedup = ConsumerDedup::EventId;
    assert_eq!(check_case(&fixed), Ok(()));
}

/// "409 means in progress, look it up"'s absence: the claim's policy with a service that
/// retries a key conflict under a new key breaks when two handlers overlap, in a world that
/// shrinks to at most 3 tickets; with `lookup` the same world holds.
#[test]
fn breaks_claim_when_key_conflict_retried_under_new_key_and_lookup_closes_it() {
    let minimal = counterexample(
        |s| {
            policy::keys_and_probe(s);
            s.refunds_service.on_key_conflict = OnKeyConflict::RetryNewKey;
        },
        92,
    );
    let v = check_case(&minimal).expect_err("the shrunk case still fails");
    assert!(
        ["at_most_one_refund_per_ticket", "no_over_refund"].contains(&v.invariant.as_str()),
        "{v}"
    );
    let n = minimal.scenario.arrivals.tickets.len();
    assert!(n <= 3, "shrunk to {n} tickets");
    assert!(
        v.story
            .iter()
            .any(|l| l.contains("409 idempotency_key_in_use")),
        "{}",
        v.story.join("\n")
    );
    eprintln!(
        "--- retry_new_key: {v} with {n} ticket(s)\n{}",
        v.story.join("\n")
    );
    let mut fixed = minimal.clone();
    fixed.scenario.refunds_service.on_key_conflict = OnKeyConflict::Lookup;
    assert_eq!(check_case(&fixed), Ok(()));
}

/// Common random numbers across the mitigation: the incident with 20 % of its webhooks
/// delivered twice (the default delay, p50 10 s) has 805 duplicate tickets; with dedup on the event id every
/// duplicate is dropped and the run gives back the incident's own 43 duplicate tickets and
/// $5,917.11 over-refund, draw for draw.
#[test]
fn dedup_gives_back_the_incident_draw_for_draw() {
    let at = |sets: &[&str]| {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/carrier-outage.json");
        let sc = refundsim::scenario::load(&path, &[], &sets).unwrap();
        run(&sc, sc.seed, &Default::default()).report.metrics
    };
    let dup = "deliveries.duplicate_probability=0.2";
    let bare = at(&[]);
    let twice = at(&[dup]);
    let deduped = at(&[dup, "deliveries.consumer_dedup=event_id"]);
    assert_eq!(
        (bare.duplicate_refund_tickets, bare.over_refund_cents),
        (43, 591_711)
    );
    assert_eq!(
        (twice.duplicate_deliveries, twice.duplicate_refund_tickets),
        (677, 805)
    );
    assert_eq!(
        (deduped.deliveries_deduped, deduped.duplicate_refund_tickets),
        (677, 43)
    );
    assert_eq!(deduped.over_refund_cents, bare.over_refund_cents);
}

/// The redelivery worlds draw every mode: a queue (with receives past the first, crashes
/// before the ack, extended visibility, early acks), a rebalance, two brokers, and dedup
/// records with a lifetime, deleted at the second copy, or written at the ack.
#[test]
fn covers_the_redelivery_modes_the_worlds_draw() {
    let mut r = sampler(29);
    let strategy = world_with_redelivery();
    let (mut queue, mut crash, mut extend, mut early, mut rebalance) = (0, 0, 0, 0, 0);
    let (mut brokers, mut lifetime, mut deleted, mut at_ack) = (0, 0, 0, 0);
    for _ in 0..256 {
        let d = strategy
            .new_tree(&mut r)
            .unwrap()
            .current()
            .scenario
            .deliveries;
        if let Some(q) = &d.queue {
            queue += 1;
            crash += usize::from(q.crash_before_ack_probability > 0.0);
            extend += usize::from(q.extend_visibility);
            early += usize::from(q.ack == refundsim::scenario::AckAt::BeforeHandler);
        }
        rebalance += usize::from(d.rebalance.is_some());
        brokers += usize::from(d.brokers == 2);
        lifetime += usize::from(d.dedup_record.lifetime.is_some());
        deleted += usize::from(d.dedup_record.delete_on_duplicate);
        at_ack += usize::from(d.dedup_record.recorded_at == refundsim::scenario::RecordAt::Ack);
    }
    eprintln!(
        "of 256 worlds: queue {queue} (crash {crash}, extend {extend}, early ack {early}), \
         rebalance {rebalance}, two brokers {brokers}, record lifetime {lifetime}, deleted \
         {deleted}, at ack {at_ack}"
    );
    for n in [
        queue, crash, extend, early, rebalance, brokers, lifetime, deleted, at_ack,
    ] {
        assert!(n > 10, "a mode drawn too rarely: {n}");
    }
}

/// The claim over worlds whose events are redelivered because of the ack: handlers longer
/// than the visibility timeout, crashes before the ack, rebalances, two brokers, dedup
/// records that expire or are deleted. Every redelivery these worlds draw comes within
/// minutes, inside Stripe's 24 h key retention, so the per-ticket key replays it (or a
/// concurrent run's 409 is probed or looked up): the claim holds, and runs beyond the first
/// did happen.
#[test]
fn holds_keys_and_probe_with_redelivery() {
    let mut r = runner(128, 93);
    let extra_runs = std::cell::Cell::new(0u64);
    let result = r.run(&world_with_redelivery(), |mut case: Case| {
        policy::keys_and_probe(&mut case.scenario);
        let m = run(&case.scenario, case.scenario.seed, &Default::default())
            .report
            .metrics;
        extra_runs.set(extra_runs.get() + m.duplicate_deliveries - m.deliveries_deduped);
        check_case_claim(&case)
            .map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("the claim has a counterexample with redelivery: {e}");
    }
    assert!(
        extra_runs.get() > 50,
        "handlers ran again: {}",
        extra_runs.get()
    );
}

/// Where the claim's premise ends: a redelivery later than Stripe's key retention. A queue
/// with SQS's longest visibility timeout (12 h) and a consumer that crashes before every ack
/// receives the message at 0, 12 h and 24 h; at 24 h the per-ticket key has expired, and the
/// third run's refund is a second refund, under the claim's own policy. Consumer dedup by
/// event id, kept for the redelivery horizon (here for ever), closes it.
#[test]
fn breaks_claim_when_a_redelivery_outlives_the_key_and_event_dedup_closes_it() {
    let at = |sets: &[&str]| {
        let mut all = vec![
            "deliveries.queue.visibility_timeout=12h",
            "deliveries.queue.crash_before_ack_probability=1",
            "deliveries.queue.max_receives=3",
            "agent.think_time.value=1s",
        ];
        all.extend_from_slice(sets);
        let sets: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let sc = refundsim::scenario::load(
            &root.join("scenarios/recipes/redelivery-while-unacked.json"),
            &[root.join("policies/keys-and-probe.json")],
            &sets,
        )
        .unwrap();
        run(&sc, sc.seed, &Default::default()).report.metrics
    };
    let m = at(&[]);
    assert_eq!(
        (
            m.duplicate_deliveries,
            m.stripe_replays,
            m.duplicate_refund_tickets
        ),
        (6, 3, 3),
        "receive #2 (12 h) is replayed by the key, receive #3 (24 h) refunds again"
    );
    let kept = at(&["deliveries.queue.visibility_timeout=11h"]);
    assert_eq!(
        kept.duplicate_refund_tickets, 0,
        "within 24 h the key replays every run"
    );
    let deduped = at(&["deliveries.consumer_dedup=event_id"]);
    assert_eq!(
        (deduped.deliveries_deduped, deduped.duplicate_refund_tickets),
        (3, 0),
        "receive #2 is dropped and acked: no receive #3"
    );
}

/// A second handler from a different trigger (`deliveries.duplicate_from: other_trigger`)
/// carries an event id of its own (`evt_1_b`): the `duplicate-webhook-delivery` recipe's fix,
/// event-id dedup at the consumer, does not recognise it (3 duplicate tickets again); a
/// per-ticket key, which every trigger's run sends, does (0).
#[test]
fn event_dedup_misses_a_second_trigger_and_a_per_ticket_key_closes_it() {
    let recipe = "scenarios/recipes/duplicate-webhook-delivery.json";
    let fix = "policies/recipes/duplicate-webhook-delivery.fix.json";
    let other = "deliveries.duplicate_from=other_trigger";
    let r = crate::common::run_json(&[recipe, "--policy", fix]);
    assert_eq!(r["duplicate_refund_tickets"], 0);
    let r = crate::common::run_json(&[recipe, "--policy", fix, "--set", other]);
    assert_eq!(r["duplicate_refund_tickets"], 3);
    assert_eq!(r["extra_refunds"], 3);
    let key = "refunds_service.idempotency_key=per_ticket";
    let r = crate::common::run_json(&[recipe, "--policy", fix, "--set", other, "--set", key]);
    assert_eq!(r["duplicate_refund_tickets"], 0);
    let out = crate::common::refundsim()
        .args([
            "run", recipe, "--policy", fix, "--set", other, "--ticket", "1",
        ])
        .output()
        .unwrap();
    let story = String::from_utf8_lossy(&out.stdout);
    assert!(
        story.contains("00:00:30.000  trigger: another trigger for the same ticket delivered evt_1_b (an event id of its own, not a resend), a second agent handler started"),
        "{story}"
    );
    let out = crate::common::refundsim()
        .args([
            "run",
            recipe,
            "--set",
            other,
            "--set",
            "deliveries.duplicate_probability=0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("deliveries.duplicate_from"));
}
