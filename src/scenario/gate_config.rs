//! How the CI gate treats a scenario (issue 27): the seeds `check` and `diff` run by default
//! (`gate`), and the bounds within which `explore` — and so the gate's bounded exploration —
//! may perturb it (`exploration`). Neither changes what one run simulates: a policy or `--set`
//! that touches only these keeps the scenario as written (see [`super::gate_expect`]).

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Seeds and exploration cases of `refundsim check` and `refundsim diff` when their flags are
/// not given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct GateConfig {
    /// Seeds `1..=seeds` that `check` and `diff` run without `--seeds`: 1 to 10,000.
    /// Default: [`DEFAULT_GATE_SEEDS`] (30). With 30 seeds a regression that duplicates on one
    /// seed in ten is missed with probability 0.9³⁰ ≈ 4 %.
    #[serde(default = "default_seeds")]
    pub seeds: u64,
    /// Cases of the bounded `explore` that `check` runs on a case that claims safety (its
    /// `expect` bounds every safety metric at 0), and `diff` on the candidate, without
    /// `--explore-cases`; 0 turns it off; at most [`MAX_EXPLORE_CASES`]. Default:
    /// [`DEFAULT_EXPLORE_CASES`] (1,024).
    #[serde(default = "default_explore_cases")]
    pub explore_cases: u32,
}

/// The invariants of the safety property (DESIGN §3 minus truthfulness): what the gate's
/// exploration checks and what `exploration.finds` may name.
pub const SAFETY_INVARIANTS: &[&str] = &[
    "at_most_one_refund_per_ticket",
    "no_over_refund",
    "no_lost_refund",
    "conservation",
];

/// Default size of the gate's seed set: seeds 1..=30.
pub const DEFAULT_GATE_SEEDS: u64 = 30;

/// Default number of cases of the gate's bounded exploration: 1,024. 256 missed two holes the
/// findings describe (humans who check Stripe but not the service's status; a probe that reads
/// completed requests only), which 1,024 finds; a passing policy's gate on the incident stays
/// near 2 s on 2 cores.
pub const DEFAULT_EXPLORE_CASES: u32 = 1024;

/// Most cases one gate exploration may run (`gate.explore_cases`, `--explore-cases`): 100,000.
pub const MAX_EXPLORE_CASES: u32 = 100_000;

fn default_seeds() -> u64 {
    DEFAULT_GATE_SEEDS
}

fn default_explore_cases() -> u32 {
    DEFAULT_EXPLORE_CASES
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            seeds: DEFAULT_GATE_SEEDS,
            explore_cases: DEFAULT_EXPLORE_CASES,
        }
    }
}

impl GateConfig {
    /// Whether every field has its default (the section is then not printed).
    pub fn is_default(&self) -> bool {
        *self == GateConfig::default()
    }
}

/// The perturbations `explore` may make to this scenario: what the scenario stands for. A
/// recipe about one mechanism narrows them (no invented faults, no added layers), so its fix is
/// judged within the world it describes. Whatever is not listed here is the policy under test
/// and is kept as written (the retry rules, keys, probe, humans, provider).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Exploration {
    /// Most tickets in an explored world: 1 to 30. Default: 30.
    #[serde(default = "default_max_tickets")]
    pub max_tickets: u32,
    /// Tickets open within this window after the start. Default: 60 s.
    #[serde(default = "default_arrival_window", with = "humantime_serde")]
    #[schemars(with = "String")]
    pub arrival_window: Duration,
    /// Each Stripe fault (`error_500_after_commit`, `response_lost_after_commit`,
    /// `lock_timeout`) is drawn as the scenario's probability, off, or uniform up to this:
    /// 0 to 1. 0 keeps faults as written or off (no invented faults). Default: 0.5.
    #[serde(default = "default_fault_max")]
    pub fault_probability_max: f64,
    /// Whether an explored world may gain a framework `retry` layer and a `proxy` layer.
    /// Default: true.
    #[serde(default = "yes")]
    pub add_layers: bool,
    /// An invariant the exploration is known to break (e.g. `at_most_one_refund_per_ticket`):
    /// a policy that fixes part of an incident asserts the hole it leaves open, and `check`
    /// then requires the bounded exploration to find it (and says so when the hole closes).
    /// Default: none — a case that claims safety must survive the exploration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finds: Option<String>,
}

fn default_max_tickets() -> u32 {
    30
}

fn default_arrival_window() -> Duration {
    Duration::from_secs(60)
}

fn default_fault_max() -> f64 {
    0.5
}

fn yes() -> bool {
    true
}

impl Default for Exploration {
    fn default() -> Self {
        Exploration {
            max_tickets: default_max_tickets(),
            arrival_window: default_arrival_window(),
            fault_probability_max: default_fault_max(),
            add_layers: true,
            finds: None,
        }
    }
}

impl Exploration {
    /// Whether every field has its default (the section is then not printed).
    pub fn is_default(&self) -> bool {
        *self == Exploration::default()
    }
}
