//! Hash maps keyed by ticket ids, for the per-event lookups of the model and the online
//! consumers (the world's leases, the evaluator's and the incident-shape scan's open tickets).
//!
//! Ticket ids are integers, so one multiplication by an odd constant spreads them (consecutive
//! ids land in distinct buckets); std's default SipHash, with its random keys, cost more than the
//! lookup, and a `BTreeMap` walks several nodes per lookup. Deterministic. Iteration order is
//! the hash table's, so whatever folds a map's entries into an output sorts them first.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map keyed by ticket id, with [`IdHash`].
pub(crate) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHash>>;

/// The hasher of [`IdMap`]: one rotate, xor and multiply per word.
#[derive(Default)]
pub(crate) struct IdHash(u64);

impl Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(29) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The entries of `map`, ascending by id (the order a `BTreeMap` would give).
pub(crate) fn into_sorted<V>(map: IdMap<V>) -> Vec<(u64, V)> {
    let mut all: Vec<(u64, V)> = map.into_iter().collect();
    all.sort_unstable_by_key(|&(id, _)| id);
    all
}
