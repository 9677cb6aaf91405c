//! Hash maps keyed by ticket ids (or by the model's short ids and keys), for the per-event
//! lookups of the model and the online consumers (the world's leases, the ledger, the fake
//! Stripe's charges, keys and executions, the evaluator's and the incident-shape scan's open
//! tickets).
//!
//! Ticket ids are integers, so one multiplication by an odd constant spreads them (consecutive
//! ids land in distinct buckets); std's default SipHash, with its random keys, cost more than the
//! lookup, and a `BTreeMap` walks several nodes per lookup (comparing long ids that share their
//! prefix, for string keys). Deterministic. Iteration order is the hash table's, so whatever
//! folds a map's entries into an output sorts them first.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map keyed by ticket id, with [`IdHash`].
pub(crate) type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHash>>;

/// A set of ids, with [`IdHash`].
pub(crate) type IdSet = HashSet<u64, BuildHasherDefault<IdHash>>;

/// A hash map keyed by short strings (charge ids, idempotency keys), with [`IdHash`].
pub(crate) type StrMap<V> = HashMap<String, V, BuildHasherDefault<IdHash>>;

/// The hasher of [`IdMap`], [`IdSet`] and [`StrMap`]: one rotate, xor and multiply per word
/// (bytes are read eight at a time, little-endian, the last word zero-padded).
#[derive(Default)]
pub(crate) struct IdHash(u64);

impl Hasher for IdHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
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
