//! Hedged requests (`kind: hedge`) as properties over generated worlds
//! (`strategy::world_with_hedges`): the claim (`policies/keys-and-probe.json`) holds with a hedge
//! anywhere on the call path, hedges do occur in those worlds, and without a key a hedge alone
//! duplicates a refund, in a world that shrinks to one ticket.
//!
//! Fixed proptest seeds and case budgets, which `PROPTEST_CASES` overrides
//! (`common::prop::runner`).

use proptest::strategy::Strategy;
use proptest::test_runner::TestCaseError;

use refundsim::explore::strategy::world_with_hedges;
use refundsim::explore::{check_case, check_case_claim, policy, Case};
use refundsim::history::{EventKind, Keep};
use refundsim::run::run_keeping;
use refundsim::scenario::{KeyMode, Scenario};

use crate::common::prop::{counterexample_in, runner};

/// The claim over worlds with a hedge around the tool or in front of the service
/// ([`hedge_above_the_ledger`]): a per-ticket key makes every hedged try the same refund (a loser still executing gets
/// 409 `idempotency_key_in_use`, a later one a replay), and the generated worlds are valid
/// scenarios in which hedges are sent.
#[test]
fn holds_keys_and_probe_with_hedges() {
    let mut r = runner(128, 93);
    let hedges = std::cell::Cell::new(0u64);
    let result = r.run(&world_with_hedges(), |mut case: Case| {
        let text = serde_json::to_string(&case.scenario).unwrap();
        refundsim::scenario::load_str(&text, "generated")
            .map_err(|e| TestCaseError::fail(format!("an invalid world: {e}")))?;
        policy::keys_and_probe(&mut case.scenario);
        hedge_above_the_ledger(&mut case.scenario);
        let out = run_keeping(
            &case.scenario,
            case.scenario.seed,
            &Default::default(),
            Keep::All,
        );
        let n = out
            .history
            .events
            .iter()
            .filter(|e| matches!(e.kind, EventKind::LayerHedge { .. }))
            .count();
        hedges.set(hedges.get() + n as u64);
        check_case_claim(&case)
            .map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("the claim has a counterexample with hedges: {e}");
    }
    assert!(hedges.get() > 100, "hedges sent: {}", hedges.get());
}

/// The hedge moved above the service's ledger (in front of `refunds_service` when it was after
/// `sdk`) with Polly's default `retry_on` (every failure non-fatal). Below the ledger a hedge can
/// answer the service with a try's definite failure while another try still executes at the
/// provider, which the probe then denies
/// ([`an_egress_hedge_hides_a_running_try_from_the_ledger`]).
fn hedge_above_the_ledger(s: &mut Scenario) {
    s.layers.get_mut("hedge").unwrap().retry_on = None;
    let stack = s.stack.as_mut().unwrap();
    if stack.last().is_some_and(|n| n == "hedge") {
        stack.pop();
        let at = stack.iter().position(|n| n == "refunds_service").unwrap();
        stack.insert(at, "hedge".to_string());
    }
}

/// Nothing but the hedge can repeat the refund: no key, no other retries, no humans.
fn only_hedges_repeat(s: &mut Scenario) {
    s.refunds_service.idempotency_key = KeyMode::None;
    s.agent.retry.max_retries = 0;
    s.executor.retry = None;
    s.refunds_service.stripe_client.max_network_retries = 0;
    s.layers.retain(|name, _| name == "hedge");
    if let Some(stack) = &mut s.stack {
        let built_in = ["model_retry", "executor", "refunds_service", "sdk"];
        stack.retain(|n| built_in.contains(&n.as_str()) || n == "hedge");
    }
    s.humans.enabled = false;
}

/// Without a key, a hedge alone duplicates a refund (a hedged try sent while the first is still
/// running, both reaching Stripe), in a world that shrinks to one ticket; hedging off
/// (`max_retries` 0) closes it.
#[test]
fn breaks_without_a_key_and_hedging_off_closes_it() {
    let worlds = world_with_hedges().prop_map(|mut c| {
        only_hedges_repeat(&mut c.scenario);
        c
    });
    let minimal = counterexample_in(worlds, 256, 94);
    let v = check_case(&minimal).expect_err("the shrunk case still fails");
    assert_eq!(v.invariant, "at_most_one_refund_per_ticket", "{v}");
    assert_eq!(minimal.scenario.arrivals.tickets.len(), 1);
    assert!(
        v.story.iter().any(|l| l.contains("hedge: ")),
        "{}",
        v.story.join("\n")
    );
    eprintln!("--- hedge without a key: {v}\n{}", v.story.join("\n"));
    let mut off = minimal.clone();
    off.scenario.layers.get_mut("hedge").unwrap().max_retries = Some(0);
    assert_eq!(check_case(&off), Ok(()));
}

/// A hedge after `sdk` (an egress hedge) below the service's ledger breaks the claim: one try's
/// definite failure (a provider's in-flight-duplicate answer, a 429) is the first answer and is
/// reported, the try still executing at the provider is dropped client-side and commits, and
/// the service, which saw one request fail, tells the probe no refund was made. The same world
/// with the hedge above the ledger holds.
#[test]
fn an_egress_hedge_hides_a_running_try_from_the_ledger() {
    let worlds = world_with_hedges().prop_map(|mut c| {
        policy::keys_and_probe(&mut c.scenario);
        let stack = c.scenario.stack.as_mut().unwrap();
        stack.retain(|n| n != "hedge");
        stack.push("hedge".to_string());
        c
    });
    let mut r = runner(256, 95);
    let found = r.run(&worlds, |case: Case| {
        check_case_claim(&case).map_err(|v| TestCaseError::fail(v.invariant))
    });
    let Err(proptest::test_runner::TestError::Fail(_, minimal)) = found else {
        panic!("no counterexample: {found:?}");
    };
    let v = check_case_claim(&minimal).expect_err("the shrunk case still fails");
    assert_eq!(v.invariant, "truthful_probes", "{v}");
    assert!(
        v.story.iter().any(|l| l.contains("hedge: ")),
        "{}",
        v.story.join("\n")
    );
    eprintln!("--- egress hedge: {v}\n{}", v.story.join("\n"));
    let mut above = minimal.clone();
    hedge_above_the_ledger(&mut above.scenario);
    assert_eq!(check_case_claim(&above), Ok(()));
}
