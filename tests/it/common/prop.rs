//! The property tests' proptest plumbing, one copy for `prop_safety`, `prop_providers` and
//! `prop_deliveries`: a runner with a fixed seed and case budget (which `PROPTEST_CASES`
//! overrides), a sampler for tests that only draw worlds, and the search for a shrunk
//! counterexample.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

use refundsim::explore::{check_case, strategy::world, Case};
use refundsim::scenario::Scenario;

/// A runner of `cases` cases from the ChaCha seed `[seed; 32]`, without failure persistence
/// and with up to 4,096 shrink iterations. `PROPTEST_CASES`, when set to a number, replaces
/// `cases` (a longer soak: `PROPTEST_CASES=30000 cargo test --release --test it
/// prop_safety::holds`).
pub fn runner(cases: u32, seed: u8) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, seeded(seed))
}

/// A runner for tests that draw worlds themselves (`strategy.new_tree(&mut r)`) and run no
/// cases: proptest's default config, the ChaCha seed `[seed; 32]`.
pub fn sampler(seed: u8) -> TestRunner {
    TestRunner::new_with_rng(Config::default(), seeded(seed))
}

fn seeded(seed: u8) -> TestRng {
    TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32])
}

/// Searches `strategy`'s cases with [`runner`]`(cases, seed)` for one that breaks an invariant
/// ([`check_case`]) and returns it shrunk.
///
/// # Panics
/// When no case breaks one: the test expected a counterexample.
pub fn counterexample_in(strategy: impl Strategy<Value = Case>, cases: u32, seed: u8) -> Case {
    let result = runner(cases, seed).run(&strategy, |case| {
        check_case(&case).map_err(|v| TestCaseError::fail(v.to_string()))
    });
    match result {
        Err(TestError::Fail(_, minimal)) => minimal,
        other => panic!("expected a counterexample, got {other:?}"),
    }
}

/// [`counterexample_in`] over generated worlds ([`world`]) with `fix` applied, 512 cases: the
/// shrunk world that breaks an invariant under `fix` alone.
pub fn counterexample(fix: fn(&mut Scenario), seed: u8) -> Case {
    counterexample_in(
        world().prop_map(move |mut c| {
            fix(&mut c.scenario);
            c
        }),
        512,
        seed,
    )
}
