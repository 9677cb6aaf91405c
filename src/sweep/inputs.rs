//! What a sweep's numbers depend on ([`Inputs`]): the grid, the seeds, the requirements and the
//! scenario they were run on, and the mapping from a run's index to its grid point and seed.
//! Below `exec`, `vet`, `merge`, `files`, `read` and `plot`, which all read it.

use serde::{Deserialize, Serialize};

use super::axis::Axis;
use super::require::Require;

/// Everything a sweep's numbers depend on: two shards merge only when these are equal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Inputs {
    /// refundsim's version (a different model may give different numbers).
    pub refundsim: String,
    /// Scenario file as given.
    pub scenario_path: String,
    /// Policy files as given.
    pub policies: Vec<String>,
    /// `--set` overrides.
    pub sets: Vec<String>,
    /// The axes.
    pub vary: Vec<Axis>,
    /// First seed.
    pub seed_first: u64,
    /// Last seed (included).
    pub seed_last: u64,
    /// Requirements, resolved (`duplicate_refund_tickets.max<=0`).
    pub require: Vec<Require>,
    /// `--minimize` paths.
    pub minimize: Vec<String>,
    /// The metric names, in column order.
    pub metrics: Vec<String>,
    /// The scenario after policies and `--set`, before the varied fields (what `refundsim show`
    /// prints), so a changed file is noticed even under the same name.
    pub base_scenario: serde_json::Value,
}

impl Inputs {
    /// The varied paths.
    pub fn paths(&self) -> Vec<String> {
        self.vary.iter().map(|a| a.path.clone()).collect()
    }

    /// Number of grid points.
    pub fn point_count(&self) -> usize {
        self.vary.iter().map(|a| a.values.len()).product()
    }

    /// Number of seeds each point runs.
    pub(crate) fn seed_count(&self) -> usize {
        (self.seed_last - self.seed_first + 1) as usize
    }

    /// Number of runs of the whole sweep: points × seeds.
    pub(crate) fn run_count(&self) -> usize {
        self.point_count() * self.seed_count()
    }

    /// Seeds, ascending.
    pub fn seeds(&self) -> Vec<u64> {
        (self.seed_first..=self.seed_last).collect()
    }

    /// Each axis's value index at grid point `p` (first axis slowest).
    pub fn indices(&self, mut p: usize) -> Vec<usize> {
        let mut out = vec![0; self.vary.len()];
        for (i, a) in self.vary.iter().enumerate().rev() {
            out[i] = p % a.values.len();
            p /= a.values.len();
        }
        out
    }

    /// The varied values at grid point `p`.
    pub fn values(&self, p: usize) -> Vec<String> {
        self.indices(p)
            .iter()
            .zip(&self.vary)
            .map(|(&i, a)| a.values[i].clone())
            .collect()
    }

    /// The `--set` arguments of grid point `p`: the sweep's own, then its varied values.
    pub fn point_sets(&self, p: usize) -> Vec<String> {
        let mut sets = self.sets.clone();
        sets.extend(
            self.indices(p)
                .iter()
                .zip(&self.vary)
                .map(|(&i, a)| a.set(i)),
        );
        sets
    }

    /// The (grid point, seed) of the run at `index` in run order: point-major, seeds
    /// ascending (the inverse of [`Inputs::run_index`]).
    pub fn run_at(&self, index: usize) -> (usize, u64) {
        let seeds = self.seed_count();
        (index / seeds, self.seed_first + (index % seeds) as u64)
    }

    /// The index in run order of grid point `point`'s run on `seed` (the inverse of
    /// [`Inputs::run_at`]). `seed` must be one of the sweep's.
    pub fn run_index(&self, point: usize, seed: u64) -> usize {
        point * self.seed_count() + (seed - self.seed_first) as usize
    }

    /// Every (point, seed) run in run order ([`Inputs::run_at`] of each index).
    pub fn jobs(&self) -> Vec<(usize, u64)> {
        (0..self.run_count()).map(|i| self.run_at(i)).collect()
    }
}
