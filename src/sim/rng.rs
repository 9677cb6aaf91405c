//! Seeded, version-stable random streams derived per entity (common random numbers).
//!
//! Every draw in a run comes from a ChaCha8 stream ([`StreamRng`], the same output as
//! `rand_chacha::ChaCha8Rng`) whose 256-bit seed is derived from
//! `(root seed, stream tag, entity ids…)` by chaining the SplitMix64 finaliser. So ticket 7's
//! amount, or the Stripe latency of (ticket 7, attempt 2), is the same number whatever else the
//! run does: two policies run on the same seed see the same tickets and the same latencies, and
//! a comparison measures the policy, not noise.

pub use super::stream_rng::StreamRng;

/// SplitMix64's output function (Steele, Lea & Flood 2014): a bijective 64-bit mixer.
const fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hashes a stream name to a 64-bit tag (FNV-1a), stable across platforms and versions.
#[inline(always)]
pub const fn tag(name: &str) -> u64 {
    let bytes = name.as_bytes();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
        i += 1;
    }
    h
}

/// The root of a run's randomness: derives independent streams keyed by entity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Streams {
    root: u64,
}

impl Streams {
    /// Streams for the run with root seed `seed`.
    pub const fn new(seed: u64) -> Self {
        Streams { root: seed }
    }

    /// The root seed.
    pub const fn seed(&self) -> u64 {
        self.root
    }

    /// The stream named `name` for entity `ids` (e.g. `("stripe_latency", &[ticket, attempt])`).
    /// Same `(seed, name, ids)` ⇒ same sequence of draws, on every machine and version.
    #[inline(always)]
    pub fn stream(&self, name: &str, ids: &[u64]) -> StreamRng {
        self.stream_after(name, None, ids)
    }

    /// [`Streams::stream`] of `name` for the entity `[first, ids…]`, without building that
    /// slice (the same stream as `stream(name, &[first, ids…])`).
    ///
    /// Inlined down to the name's hash, so that the model's literal names are hashed at compile
    /// time (hashing them per stream was a third of deriving one).
    #[inline(always)]
    pub fn stream_after(&self, name: &str, first: Option<u64>, ids: &[u64]) -> StreamRng {
        self.stream_tagged(tag(name), first, ids)
    }

    /// `stream(name, &[id])` for each `id` of `ids`, derived together and each with its first
    /// block already computed ([`StreamRng::from_keys_drawn`]): the same streams, faster when a
    /// component knows which entities it will draw for next (the background load draws the
    /// holds of its next requests in batches).
    #[inline(always)]
    pub fn streams_of<const N: usize>(&self, name: &str, ids: [u64; N]) -> [StreamRng; N] {
        let h = splitmix64(self.root ^ tag(name));
        StreamRng::from_keys_drawn(ids.map(|id| Self::key_after(splitmix64(h ^ splitmix64(id)))))
    }

    /// The four key words that follow the chained hash `h` of `(root, tag, ids…)`.
    #[inline(always)]
    fn key_after(mut h: u64) -> [u64; 4] {
        // The seed's bytes are these four words, little-endian.
        let mut key = [0u64; 4];
        for (i, w) in key.iter_mut().enumerate() {
            h = splitmix64(h.wrapping_add(i as u64));
            *w = h;
        }
        key
    }

    /// [`Streams::stream_after`] of the name whose [`tag`] is `tag`.
    fn stream_tagged(&self, tag: u64, first: Option<u64>, ids: &[u64]) -> StreamRng {
        let mut h = splitmix64(self.root ^ tag);
        for &id in first.iter().chain(ids) {
            h = splitmix64(h ^ splitmix64(id));
        }
        StreamRng::from_key(Self::key_after(h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    const PINNED: u64 = 5_933_788_301_853_236_892;

    #[test]
    fn streams_are_keyed_by_entity_and_stable() {
        let s = Streams::new(42);
        let a: u64 = s.stream("amount", &[7]).random();
        let b: u64 = s.stream("amount", &[7]).random();
        let c: u64 = s.stream("amount", &[8]).random();
        let d: u64 = Streams::new(43).stream("amount", &[7]).random();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        // Pinned value: a change here breaks every recorded run and snapshot.
        assert_eq!(a, PINNED);
        assert_ne!(
            s.stream("x", &[1, 2]).random::<u64>(),
            s.stream("x", &[2, 1]).random::<u64>()
        );
    }

    /// A batch of streams is the same streams as deriving each alone, word for word (here on
    /// whichever block path the CPU takes, AVX2 or not), past their first blocks too.
    #[test]
    fn streams_of_equal_each_stream_alone() {
        use rand::RngCore;
        for root in [0, 1, 157, u64::MAX] {
            let s = Streams::new(root);
            let ids = [0, 1, 2, 7, 49_410, u64::MAX, 3];
            let mut batch = s.streams_of("background_hold", ids);
            for (rng, id) in batch.iter_mut().zip(ids) {
                let mut alone = s.stream("background_hold", &[id]);
                for draw in 0..20 {
                    assert_eq!(
                        rng.next_u64(),
                        alone.next_u64(),
                        "root {root} id {id} #{draw}"
                    );
                }
            }
            let [mut one] = s.streams_of("x", [5]);
            assert_eq!(one.next_u32(), s.stream("x", &[5]).next_u32());
            assert_ne!(batch[0].next_u64(), batch[1].next_u64());
        }
    }

    /// Every derived stream is `rand_chacha::ChaCha8Rng` of the derived seed, as before
    /// [`StreamRng`] replaced it: recorded runs keep their numbers.
    #[test]
    fn derived_streams_equal_chacha8rng_of_the_derived_seed() {
        use rand::{RngCore, SeedableRng};
        use rand_chacha::ChaCha8Rng;
        let old = |root: u64, name: &str, ids: &[u64]| {
            let mut h = splitmix64(root ^ tag(name));
            for &id in ids {
                h = splitmix64(h ^ splitmix64(id));
            }
            let mut seed = [0u8; 32];
            for (i, chunk) in seed.chunks_mut(8).enumerate() {
                h = splitmix64(h.wrapping_add(i as u64));
                chunk.copy_from_slice(&h.to_le_bytes());
            }
            ChaCha8Rng::from_seed(seed)
        };
        for root in [0, 1, 157, u64::MAX] {
            for name in ["amount", "stripe_latency", "nonce", ""] {
                for ids in [&[][..], &[7], &[49_410, 2, 1]] {
                    let mut ours = Streams::new(root).stream(name, ids);
                    let mut theirs = old(root, name, ids);
                    for draw in 0..40 {
                        assert_eq!(ours.next_u64(), theirs.next_u64(), "{name} {ids:?} #{draw}");
                    }
                }
            }
        }
    }
}
