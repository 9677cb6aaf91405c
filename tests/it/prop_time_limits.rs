//! Time limits across tries and effects that commit early (issue 29, item 6) as properties: the
//! claim's policy (`policies/keys-and-probe.json`) holds when a layer's `deadline` cuts its
//! tries, when a run-level retry checkpoints its steps, and when the service goes on working
//! after its refund commits; and the worlds do draw them.
//!
//! Fixed proptest seeds and case budgets, which `PROPTEST_CASES` overrides
//! (`common::prop::runner`).

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestCaseError;

use refundsim::explore::strategy::world_with_time_limits;
use refundsim::explore::{check_case, policy, Case};
use refundsim::scenario::LayerKind;

use crate::common::prop::{runner, sampler};

/// A deadline cuts a try as a per-try timeout does (its work keeps running, the per-ticket key
/// covers the next try), a checkpoint only removes requests, and the ledger records a refund
/// when it commits, so the probe after a timeout during the service's late work finds it.
#[test]
fn holds_keys_and_probe_with_deadlines_checkpoints_and_late_work() {
    let mut r = runner(256, 61);
    let result = r.run(&world_with_time_limits(), |mut case: Case| {
        policy::keys_and_probe(&mut case.scenario);
        check_case(&case).map_err(|v| TestCaseError::fail(format!("{v}\n{}", v.story.join("\n"))))
    });
    if let Err(e) = result {
        panic!("keys and probe with time limits: {e}");
    }
}

/// The worlds draw deadlines on the layers they add, every checkpoint on a run-level retry,
/// and late work in the service.
#[test]
fn worlds_draw_deadlines_checkpoints_and_late_work() {
    let mut r = sampler(7);
    let strategy = world_with_time_limits();
    let (mut deadlines, mut late, mut reruns) = (0, 0, 0);
    let mut checkpoints = std::collections::BTreeMap::new();
    for _ in 0..512 {
        let s = strategy.new_tree(&mut r).unwrap().current().scenario;
        deadlines += s.layers.values().filter(|l| l.deadline.is_some()).count();
        reruns += s
            .layers
            .values()
            .filter(|l| l.timeout_retries.is_some())
            .count();
        late += usize::from(!s.refunds_service.work_after_refund.is_zero());
        for l in s.layers.values().filter(|l| l.kind == LayerKind::RunRetry) {
            *checkpoints
                .entry(format!("{:?}", l.checkpoint))
                .or_insert(0) += 1;
        }
    }
    assert!(deadlines >= 20, "deadlines: {deadlines}");
    assert!(late >= 100, "late work: {late} of 512");
    assert!(reruns >= 10, "timeout_retries: {reruns}");
    assert_eq!(
        checkpoints.len(),
        3,
        "every checkpoint on a run-level retry: {checkpoints:?}"
    );
    assert!(checkpoints.values().all(|&n| n >= 3), "{checkpoints:?}");
}
