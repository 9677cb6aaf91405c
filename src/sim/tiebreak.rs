//! Who decides the order of (near-)simultaneous events and, in exhaustive mode, discrete draws.
//!
//! By default a run fires timers in `(time, sequence)` order. In exploration mode a [`TieBreak`]
//! picks which of the timers due within `epsilon` of the earliest fires next, so a property test
//! or `refundsim explore` visits other interleavings; [`Script`] replays or enumerates choice
//! sequences for an exhaustive depth-first search.

use rand::Rng;

use super::rng::StreamRng;

/// Most candidates offered at one decision (the earliest `MAX_CANDIDATES` due timers).
pub(crate) const MAX_CANDIDATES: usize = 8;

/// Chooses among `n ≥ 2` alternatives.
pub trait TieBreak {
    /// An index in `0..n`.
    fn choose(&mut self, n: usize) -> usize;
    /// Whether discrete draws (a Stripe request's latency from `stripe.latency_choices`, and
    /// whether it meets one of the faults enabled in `stripe.faults`) also go through
    /// [`TieBreak::choose`] instead of the seeded streams. True only for exhaustive enumeration.
    fn drives_draws(&self) -> bool {
        false
    }
}

/// Picks uniformly with a seeded stream: the tie-break seed of a property-test case.
pub(crate) struct Seeded(pub StreamRng);

impl TieBreak for Seeded {
    fn choose(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }
}

/// Follows a prefix of choices, then takes 0 at every new decision, recording each decision's
/// `(choice, alternatives)`: one step of a depth-first enumeration of choice sequences.
#[derive(Clone, Debug, Default)]
pub(crate) struct Script {
    prefix: Vec<usize>,
    /// Decisions taken in this run: `(choice, number of alternatives)`.
    pub taken: Vec<(usize, usize)>,
}

impl Script {
    /// A script that replays `prefix`.
    pub(crate) fn new(prefix: Vec<usize>) -> Self {
        Script {
            prefix,
            taken: Vec::new(),
        }
    }

    /// The next prefix in depth-first order after a run that took `taken`, or `None` when every
    /// sequence has been visited.
    pub(crate) fn next_prefix(taken: &[(usize, usize)]) -> Option<Vec<usize>> {
        let last = taken.iter().rposition(|&(c, n)| c + 1 < n)?;
        let mut p: Vec<usize> = taken[..last].iter().map(|&(c, _)| c).collect();
        p.push(taken[last].0 + 1);
        Some(p)
    }
}

impl TieBreak for Script {
    fn choose(&mut self, n: usize) -> usize {
        let i = self.taken.len();
        let c = self.prefix.get(i).copied().unwrap_or(0).min(n - 1);
        self.taken.push((c, n));
        c
    }
    fn drives_draws(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_first_enumerates_every_sequence_once() {
        // A tree with a 2-way then a 3-way decision: 6 leaves.
        let mut prefix = Some(vec![]);
        let mut leaves = Vec::new();
        while let Some(p) = prefix {
            let mut s = Script::new(p);
            let a = s.choose(2);
            let b = s.choose(3);
            leaves.push((a, b));
            prefix = Script::next_prefix(&s.taken);
        }
        assert_eq!(leaves, vec![(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]);
    }
}
