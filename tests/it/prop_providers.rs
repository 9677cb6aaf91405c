//! Providers and failures beyond the happy path as properties: the claim's policy with the
//! mitigation that matches the world's provider holds on every provider the worlds draw (see
//! `prop_safety::holds_keys_and_probe_with_retries_allowed_at_every_layer`, whose worlds draw
//! them); each mitigation's absence has a counterexample that shrinks to at most 3 tickets; and
//! the worlds do draw the new parts.
//!
//! Fixed proptest seeds and case budgets, which `PROPTEST_CASES` overrides
//! (`common::prop::runner`).

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestCaseError;

use refundsim::explore::strategy::{world, world_with_provider_refusals};
use refundsim::explore::{check_case, policy, Case};
use refundsim::scenario::{LayerKind, ProviderKind};

use crate::common::prop::{counterexample, runner, sampler};

#[test]
fn breaks_each_provider_mitigation_taken_away_with_a_small_counterexample() {
    for (i, (name, twin)) in policy::PROVIDER_TWINS.iter().enumerate() {
        let minimal = counterexample(*twin, 80 + i as u8);
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

/// The same twins with the mitigation back hold over the same worlds.
#[test]
fn holds_each_provider_with_its_mitigation() {
    let kinds = [
        ProviderKind::KeysIgnored,
        ProviderKind::DedupWindow,
        ProviderKind::BusinessId,
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        let mut r = runner(256, 90 + i as u8);
        let result = r.run(&world(), |mut case: Case| {
            case.scenario.provider.kind = kind;
            policy::keys_and_probe(&mut case.scenario);
            check_case(&case)
                .map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
        });
        if let Err(e) = result {
            panic!("{kind:?} under its mitigation: {e}");
        }
    }
}

/// The worlds draw every provider, the service's crash, its unique-constraint conflict, the
/// LLM error with a run-level retry, the object lock and `Retry-After`.
#[test]
fn worlds_draw_providers_and_failures() {
    let mut r = sampler(7);
    let strategy = world();
    let mut kinds = std::collections::BTreeSet::new();
    let (mut crash, mut conflict, mut llm, mut lock, mut after) = (0, 0, 0, 0, 0);
    for _ in 0..256 {
        let s = strategy.new_tree(&mut r).unwrap().current().scenario;
        kinds.insert(format!("{:?}", s.provider.kind));
        crash += usize::from(s.refunds_service.crash_after_provider_ok > 0.0);
        conflict += usize::from(
            s.refunds_service.local_dedup
                && s.refunds_service.on_pending_row == refundsim::scenario::OnPendingRow::Conflict,
        );
        llm += usize::from(
            s.agent.llm_error_after_tool > 0.0
                && s.layers.values().any(|l| l.kind == LayerKind::RunRetry),
        );
        lock += usize::from(s.provider.lock_concurrent_requests);
        after += usize::from(s.provider.retry_after.is_some());
    }
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    for (what, n) in [
        ("crash", crash),
        ("conflict", conflict),
        ("llm", llm),
        ("lock", lock),
        ("retry_after", after),
    ] {
        assert!(n >= 10, "{what}: {n} of 256");
    }
}

/// The claim's policy holds on a provider that refuses a finished duplicate with an error
/// (`provider.duplicate_rejected_status`) instead of replaying it, whatever the status and the
/// provider kind: the per-ticket key is never rotated, so a refusal is never followed by a
/// second refund under a new key (the twin with rotation is in `PROVIDER_TWINS`).
#[test]
fn holds_keys_and_probe_on_providers_that_refuse_finished_duplicates() {
    let mut r = runner(256, 95);
    let result = r.run(&world_with_provider_refusals(), |mut case: Case| {
        policy::keys_and_probe(&mut case.scenario);
        check_case(&case).map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("keys and probe on a refusing provider: {e}");
    }
}

/// The refusing worlds draw every status and leave it off too.
#[test]
fn worlds_draw_provider_refusals() {
    let mut r = sampler(7);
    let strategy = world_with_provider_refusals();
    let mut seen = std::collections::BTreeMap::new();
    for _ in 0..256 {
        let s = strategy.new_tree(&mut r).unwrap().current().scenario;
        *seen
            .entry(s.provider.duplicate_rejected_status)
            .or_insert(0) += 1;
    }
    let drawn: Vec<_> = seen.keys().copied().collect();
    assert_eq!(drawn, [None, Some(400), Some(409), Some(422), Some(500)]);
    assert!(seen.values().all(|&n| n >= 10), "{seen:?}");
}
