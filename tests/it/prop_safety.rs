//! The mission's promise as properties: with per-ticket keys, a status probe and retries only for
//! idempotent tools, no interleaving yields more than one refund per ticket; and each single fix
//! alone has a counterexample that proptest finds and shrinks to at most 3 tickets.
//!
//! Fixed proptest seeds and case budgets; a longer soak of the property:
//! `PROPTEST_CASES=30000 cargo test --release --test it prop_safety::holds`.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestCaseError;

use refundsim::explore::{check_case, check_case_claim, policy, strategy::world, Case};
use refundsim::history::Keep;
use refundsim::run::run;
use refundsim::run::run_keeping;
use refundsim::scenario::StatusSource;
use refundsim::scenario::{Cancellation, KeyRotation, LayerKind};

use crate::common::prop::{counterexample, runner, sampler};

#[test]
fn holds_full_fix_never_double_refunds_over_refunds_or_loses_a_refund() {
    let mut r = runner(1024, 1);
    let result = r.run(&world(), |mut case: Case| {
        policy::full_fix(&mut case.scenario);
        check_case(&case).map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("the full fix has a counterexample: {e}");
    }
}

/// The headline claim as stated: with `policies/keys-and-probe.json` (per-ticket key, the probe,
/// humans who check) and retries allowed everywhere the worlds draw them — the model's rule on
/// any tool, compliance below 1, executor, framework, proxy and SDK retries, faults including
/// lost responses and 500 after commit — no world breaks a claim invariant: at most one refund
/// per ticket, no over-refund, no lost refund, conservation, truthful probes, no unknown
/// outcome shown as a failure, no retry after "do not retry" by a compliant model.
#[test]
fn holds_keys_and_probe_with_retries_allowed_at_every_layer() {
    let mut r = runner(1024, 2);
    let result = r.run(&world(), |mut case: Case| {
        policy::keys_and_probe(&mut case.scenario);
        check_case_claim(&case)
            .map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("the claim has a counterexample: {e}");
    }
}

/// The claim's worlds do retry: the model (also after "do not retry", when it does not comply),
/// and under faults that lose responses or answer 500 after committing.
#[test]
fn keys_and_probe_worlds_retry_and_fault() {
    let mut r = sampler(3);
    let strategy = world();
    let (mut worlds_retrying, mut retries, mut noncompliant, mut faults, mut probes) =
        (0, 0, 0, 0, 0);
    for _ in 0..256 {
        let mut sc = strategy.new_tree(&mut r).unwrap().current().scenario;
        policy::keys_and_probe(&mut sc);
        let m = run(&sc, sc.seed, &Default::default()).report.metrics;
        worlds_retrying += usize::from(m.retries > 0);
        retries += m.retries;
        noncompliant += usize::from(sc.agent.retry.compliance < 1.0 && m.retries > 0);
        faults += usize::from(
            sc.stripe.faults.error_500_after_commit > 0.0
                || sc.stripe.faults.response_lost_after_commit > 0.0,
        );
        probes += m.status_probes;
    }
    eprintln!("of 256 claim worlds: {worlds_retrying} with model retries ({retries} in all), {noncompliant} by a model below full compliance, {faults} with commit faults; {probes} probes");
    assert!(worlds_retrying >= 10, "{worlds_retrying}");
    assert!(noncompliant > 0 && faults > 0 && probes > 0);
}

/// Each twin of the claim's policy changes one thing and breaks it: money moves twice (or more
/// than approved), in a world that shrinks to at most 3 tickets.
#[test]
fn breaks_each_claim_twin_with_a_small_counterexample() {
    for (i, (name, twin)) in policy::CLAIM_TWINS.iter().enumerate() {
        let minimal = counterexample(*twin, 60 + i as u8);
        let v = check_case(&minimal).expect_err("the shrunk case still fails");
        assert!(
            ["at_most_one_refund_per_ticket", "no_over_refund"].contains(&v.invariant.as_str()),
            "{name}: {v}"
        );
        let n = minimal.scenario.arrivals.tickets.len();
        assert!(n <= 3, "{name}: shrunk to {n} tickets");
        eprintln!("--- {name}: {v} with {n} ticket(s)\n{}", v.story.join("\n"));
    }
}

/// With the per-ticket key, the naive status source (completed refunds only) cannot move money
/// twice — though its probes do lie, which `truthful_probes` reports.
#[test]
fn per_ticket_key_makes_the_naive_status_source_harmless_to_money() {
    let mut r = runner(512, 4);
    let untruthful = std::cell::Cell::new(0u64);
    let result = r.run(&world(), |mut case: Case| {
        policy::keys_and_probe(&mut case.scenario);
        case.scenario.refunds_service.status_source = StatusSource::CompletedOnly;
        let m = run(&case.scenario, case.scenario.seed, &Default::default())
            .report
            .metrics;
        untruthful.set(untruthful.get() + m.untruthful_probes);
        check_case(&case).map_err(|v| TestCaseError::fail(v.to_string()))
    });
    if let Err(e) = result {
        panic!("a per-ticket key with the naive source moved money twice: {e}");
    }
    assert!(
        untruthful.get() > 0,
        "the naive source never lied: the test shows nothing"
    );
}

#[test]
fn breaks_each_single_fix_alone_has_a_small_counterexample() {
    for (i, (name, fix)) in policy::SINGLE_FIXES.iter().enumerate() {
        let minimal = counterexample(*fix, 20 + i as u8);
        let v = check_case(&minimal).expect_err("the shrunk case still fails");
        let n = minimal.scenario.arrivals.tickets.len();
        assert!(n <= 3, "{name}: shrunk to {n} tickets");
        eprintln!("--- {name}: {v} with {n} ticket(s)\n{}", v.story.join("\n"));
    }
}

/// The premise's "never rotate the key" is needed: the full fix with a key rotated after any
/// error (unknown outcomes included) has a small counterexample, a layer's retry under the new key.
#[test]
fn breaks_full_fix_with_key_rotated_after_unknown_outcome() {
    let minimal = counterexample(
        |s| {
            policy::full_fix(s);
            s.refunds_service.rotate_key = KeyRotation::AfterError;
        },
        40,
    );
    let v = check_case(&minimal).expect_err("the shrunk case still fails");
    let n = minimal.scenario.arrivals.tickets.len();
    assert!(n <= 3, "shrunk to {n} tickets");
    eprintln!(
        "--- full fix, key rotated after errors: {v} with {n} ticket(s), stack {:?}\n{}",
        minimal.scenario.stack,
        v.story.join("\n")
    );
}

#[test]
fn covers_layers_the_worlds_draw_retry_and_proxy_layers_and_aborts() {
    let mut r = sampler(7);
    let strategy = world();
    let (mut retry, mut proxy, mut abort, mut timeouts) = (0, 0, 0, 0);
    for _ in 0..256 {
        let sc = strategy.new_tree(&mut r).unwrap().current().scenario;
        let kinds: Vec<LayerKind> = sc.layers.values().map(|l| l.kind).collect();
        retry += usize::from(kinds.contains(&LayerKind::Retry));
        proxy += usize::from(kinds.contains(&LayerKind::Proxy));
        abort += usize::from(
            sc.executor.cancellation == Cancellation::AbortInFlight
                || sc
                    .layers
                    .values()
                    .any(|l| l.cancellation == Cancellation::AbortInFlight),
        );
        timeouts += usize::from(sc.layers.values().any(|l| l.per_try_timeout.is_some()));
    }
    eprintln!("of 256 worlds: {retry} with a retry layer, {proxy} with a proxy, {abort} with an abort, {timeouts} with a per-try timeout");
    assert!(retry > 0 && proxy > 0 && abort > 0 && timeouts > 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn determinism_any_case_twice_gives_identical_histories(case in world()) {
        let a = run_keeping(&case.scenario, case.scenario.seed, &Default::default(), Keep::All);
        let b = run_keeping(&case.scenario, case.scenario.seed, &Default::default(), Keep::All);
        prop_assert!(a.history.events.len() > 10);
        prop_assert_eq!(a.history, b.history);
    }

    #[test]
    fn round_trip_scenario_json_scenario(case in world()) {
        let text = serde_json::to_string(&case.scenario).unwrap();
        let back = refundsim::scenario::load_str(&text, "round-trip").unwrap();
        prop_assert_eq!(back, case.scenario);
    }
}
