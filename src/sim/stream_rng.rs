//! [`StreamRng`]: ChaCha8 computed one 64-byte block at a time.
//!
//! A run derives a fresh stream for every entity (a ticket's amount, one Stripe request's
//! latency…) and draws only a few numbers from each. `rand_chacha::ChaCha8Rng` computes four
//! blocks (256 bytes) whenever it needs more output, so most of that work was thrown away.
//! `StreamRng` computes one block (sixteen 32-bit words) at a time and is otherwise the same
//! generator: for the same 32-byte seed it returns **exactly the same sequence** as
//! `ChaCha8Rng::from_seed` (stream 0), through `next_u32`, `next_u64` and `fill_bytes` in any
//! mix — the tests below compare them over many seeds, lengths and block boundaries. Recorded
//! runs and pinned outputs therefore do not move.
//!
//! The block function is ChaCha with 8 rounds (Bernstein 2008; the layout of RFC 8439 §2.3
//! with a 64-bit block counter in words 12–13 and the 64-bit stream id, always 0, in words
//! 14–15, as rand_chacha lays them out). On x86_64 it runs on SSE2 (part of every x86_64 CPU),
//! elsewhere on portable scalar code; both give the same bits (tested). Streams made in a batch
//! ([`StreamRng::from_keys_drawn`]) compute their first blocks two at a time on AVX2 where the
//! CPU has it (detected at run time), again with the same bits (tested).

use rand::{RngCore, SeedableRng};

/// Words per ChaCha block.
const BLOCK_WORDS: usize = 16;

/// Double rounds of ChaCha8.
const DOUBLE_ROUNDS: usize = 4;

/// "expand 32-byte k", the ChaCha constants (words 0–3).
const SIGMA: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// A ChaCha8 random stream with the output of `rand_chacha::ChaCha8Rng` (stream 0) for the same
/// seed, computing one 64-byte block at a time. 120 bytes, against about 330 for `ChaCha8Rng`.
///
/// Built by [`crate::sim::Streams::stream`] (or [`SeedableRng::from_seed`]); draws go through
/// [`rand::Rng`]. A new stream computes nothing until its first draw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamRng {
    /// The 256-bit key (words 4–11), from the seed's bytes read as little-endian words.
    key: [u32; 8],
    /// The counter of the next block to compute.
    next_block: u64,
    /// The current block's output words.
    words: [u32; BLOCK_WORDS],
    /// The next unread word of `words`; `BLOCK_WORDS` when all are read.
    index: usize,
}

impl StreamRng {
    /// The stream whose key is `key` (four 64-bit words, each split into two little-endian
    /// 32-bit words): the same stream as `from_seed` of those words' little-endian bytes.
    pub(crate) fn from_key(key: [u64; 4]) -> Self {
        let mut k = [0u32; 8];
        for (pair, w) in k.chunks_exact_mut(2).zip(key) {
            pair[0] = w as u32;
            pair[1] = (w >> 32) as u32;
        }
        StreamRng {
            key: k,
            next_block: 0,
            words: [0; BLOCK_WORDS],
            index: BLOCK_WORDS,
        }
    }

    /// The streams of `keys` (each as [`StreamRng::from_key`] makes it) with their first
    /// blocks already computed, all at once: for a model component that knows which streams it
    /// will draw from next (the background load's holds). The same streams, word for word, as
    /// deriving each alone and drawing; only faster. On x86_64 CPUs with AVX2 (detected at run
    /// time) two blocks are computed per instruction, one in each 128-bit half of a 256-bit
    /// register; elsewhere one at a time as [`RngCore::next_u64`] would.
    pub(crate) fn from_keys_drawn<const N: usize>(keys: [[u64; 4]; N]) -> [StreamRng; N] {
        let mut rngs = keys.map(StreamRng::from_key);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (just detected).
            unsafe { first_blocks_avx2(&mut rngs) };
            return rngs;
        }
        for rng in &mut rngs {
            rng.refill(0);
        }
        rngs
    }

    /// Computes the next block into `words` and marks its first `skip` words as read.
    /// `#[inline]`, with the block function inlined into it, so that a draw that needs a new
    /// block does not call out for it whatever codegen unit the draw lands in (a call per
    /// block cost about 15 % of the block).
    #[inline]
    fn refill(&mut self, skip: usize) {
        block(&self.key, self.next_block, &mut self.words);
        self.next_block = self.next_block.wrapping_add(1);
        self.index = skip;
    }
}

impl SeedableRng for StreamRng {
    type Seed = [u8; 32];

    /// The stream of key `seed` (read as eight little-endian 32-bit words), block counter 0 and
    /// stream id 0: `rand_chacha::ChaCha8Rng::from_seed(seed)`'s stream.
    fn from_seed(seed: [u8; 32]) -> Self {
        let mut key = [0u64; 4];
        for (w, bytes) in key.iter_mut().zip(seed.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            *w = u64::from_le_bytes(b);
        }
        StreamRng::from_key(key)
    }
}

/// The same reading rules as rand_core's `BlockRng` (which `ChaCha8Rng` is): output is the
/// sequence of the blocks' 32-bit words; `next_u64` takes two words, low word first (across a
/// block boundary too); `fill_bytes` takes whole words as little-endian bytes and drops the
/// unused bytes of its last word.
impl RngCore for StreamRng {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        if self.index >= BLOCK_WORDS {
            self.refill(0);
        }
        let w = self.words[self.index];
        self.index += 1;
        w
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        let i = self.index;
        if i + 1 < BLOCK_WORDS {
            self.index = i + 2;
            (u64::from(self.words[i + 1]) << 32) | u64::from(self.words[i])
        } else if i >= BLOCK_WORDS {
            self.refill(2);
            (u64::from(self.words[1]) << 32) | u64::from(self.words[0])
        } else {
            let lo = u64::from(self.words[BLOCK_WORDS - 1]);
            self.refill(1);
            (u64::from(self.words[0]) << 32) | lo
        }
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(4) {
            let bytes = self.next_u32().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }
}

/// One ChaCha8 block of `key` at block counter `counter` (stream id 0) into `out`.
#[inline(always)]
fn block(key: &[u32; 8], counter: u64, out: &mut [u32; BLOCK_WORDS]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE2 is part of the x86_64 baseline: every x86_64 CPU has it, and rustc enables
    // it for every x86_64 target.
    unsafe {
        block_sse2(key, counter, out)
    }
    #[cfg(not(target_arch = "x86_64"))]
    block_portable(key, counter, out)
}

/// The state before the rounds: constants, key, block counter, stream id 0.
fn initial_state(key: &[u32; 8], counter: u64) -> [u32; BLOCK_WORDS] {
    let mut s = [0u32; BLOCK_WORDS];
    s[..4].copy_from_slice(&SIGMA);
    s[4..12].copy_from_slice(key);
    s[12] = counter as u32;
    s[13] = (counter >> 32) as u32;
    s
}

/// One ChaCha block in portable scalar code (the reference for [`block_sse2`]).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn block_portable(key: &[u32; 8], counter: u64, out: &mut [u32; BLOCK_WORDS]) {
    #[inline(always)]
    fn quarter(x: &mut [u32; BLOCK_WORDS], a: usize, b: usize, c: usize, d: usize) {
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(16);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(12);
        x[a] = x[a].wrapping_add(x[b]);
        x[d] = (x[d] ^ x[a]).rotate_left(8);
        x[c] = x[c].wrapping_add(x[d]);
        x[b] = (x[b] ^ x[c]).rotate_left(7);
    }
    let init = initial_state(key, counter);
    let mut x = init;
    for _ in 0..DOUBLE_ROUNDS {
        quarter(&mut x, 0, 4, 8, 12);
        quarter(&mut x, 1, 5, 9, 13);
        quarter(&mut x, 2, 6, 10, 14);
        quarter(&mut x, 3, 7, 11, 15);
        quarter(&mut x, 0, 5, 10, 15);
        quarter(&mut x, 1, 6, 11, 12);
        quarter(&mut x, 2, 7, 8, 13);
        quarter(&mut x, 3, 4, 9, 14);
    }
    for ((o, w), i) in out.iter_mut().zip(x).zip(init) {
        *o = w.wrapping_add(i);
    }
}

/// One ChaCha block with the state's four rows in four SSE2 registers: a column round works on
/// all four columns at once, and rotating rows b, c, d by one, two and three lanes turns the
/// diagonals into columns for the diagonal round.
///
/// Inlined into [`StreamRng::refill`]: a run computes a block for nearly every stream it
/// derives, and a call per block cost about 15 % of the block. Without `#[target_feature]`,
/// which would keep it out of line: SSE2 is enabled for every x86_64 target anyway.
///
/// # Safety
/// The CPU must support SSE2 (every x86_64 CPU does).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn block_sse2(key: &[u32; 8], counter: u64, out: &mut [u32; BLOCK_WORDS]) {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_loadu_si128, _mm_or_si128, _mm_shuffle_epi32,
        _mm_shufflehi_epi16, _mm_shufflelo_epi16, _mm_slli_epi32, _mm_srli_epi32, _mm_storeu_si128,
        _mm_xor_si128,
    };

    let init = initial_state(key, counter);
    let rows = init.as_ptr().cast::<__m128i>();
    let (a0, b0, c0, d0) = (
        _mm_loadu_si128(rows),
        _mm_loadu_si128(rows.add(1)),
        _mm_loadu_si128(rows.add(2)),
        _mm_loadu_si128(rows.add(3)),
    );
    let (mut a, mut b, mut c, mut d) = (a0, b0, c0, d0);
    // Each 32-bit lane rotated left by 16 (swap its 16-bit halves), 12, 8 and 7 bits.
    let rot16 = |x| _mm_shufflehi_epi16(_mm_shufflelo_epi16(x, 0b10_11_00_01), 0b10_11_00_01);
    let rot12 = |x| _mm_or_si128(_mm_slli_epi32(x, 12), _mm_srli_epi32(x, 20));
    let rot8 = |x| _mm_or_si128(_mm_slli_epi32(x, 8), _mm_srli_epi32(x, 24));
    let rot7 = |x| _mm_or_si128(_mm_slli_epi32(x, 7), _mm_srli_epi32(x, 25));
    macro_rules! round {
        () => {
            a = _mm_add_epi32(a, b);
            d = rot16(_mm_xor_si128(d, a));
            c = _mm_add_epi32(c, d);
            b = rot12(_mm_xor_si128(b, c));
            a = _mm_add_epi32(a, b);
            d = rot8(_mm_xor_si128(d, a));
            c = _mm_add_epi32(c, d);
            b = rot7(_mm_xor_si128(b, c));
        };
    }
    for _ in 0..DOUBLE_ROUNDS {
        round!();
        // Lane i of b, c, d takes word i+1, i+2, i+3 of its row: diagonals become columns.
        b = _mm_shuffle_epi32(b, 0b00_11_10_01);
        c = _mm_shuffle_epi32(c, 0b01_00_11_10);
        d = _mm_shuffle_epi32(d, 0b10_01_00_11);
        round!();
        b = _mm_shuffle_epi32(b, 0b10_01_00_11);
        c = _mm_shuffle_epi32(c, 0b01_00_11_10);
        d = _mm_shuffle_epi32(d, 0b00_11_10_01);
    }
    let o = out.as_mut_ptr().cast::<__m128i>();
    _mm_storeu_si128(o, _mm_add_epi32(a, a0));
    _mm_storeu_si128(o.add(1), _mm_add_epi32(b, b0));
    _mm_storeu_si128(o.add(2), _mm_add_epi32(c, c0));
    _mm_storeu_si128(o.add(3), _mm_add_epi32(d, d0));
}

/// The first block (counter 0) of each stream in `rngs`, two streams at a time, and marks it
/// unread: each 256-bit register holds the same row of two blocks, one per 128-bit half, and
/// runs [`block_sse2`]'s rounds on both (AVX2's shuffles work within each half). The 16- and
/// 8-bit rotations are byte shuffles (`vpshufb`). An odd last stream goes through
/// [`block_sse2`].
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn first_blocks_avx2(rngs: &mut [StreamRng]) {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_add_epi32, _mm256_castsi256_si128, _mm256_extracti128_si256,
        _mm256_loadu2_m128i, _mm256_or_si256, _mm256_set_epi8, _mm256_setzero_si256,
        _mm256_shuffle_epi32, _mm256_shuffle_epi8, _mm256_slli_epi32, _mm256_srli_epi32,
        _mm256_xor_si256, _mm_storeu_si128,
    };

    // Byte shuffles that rotate each 32-bit lane left by 16 and by 8 bits.
    let r16 = _mm256_set_epi8(
        13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2, //
        13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2,
    );
    let r8 = _mm256_set_epi8(
        14, 13, 12, 15, 10, 9, 8, 11, 6, 5, 4, 7, 2, 1, 0, 3, //
        14, 13, 12, 15, 10, 9, 8, 11, 6, 5, 4, 7, 2, 1, 0, 3,
    );
    let rot12 = |x| _mm256_or_si256(_mm256_slli_epi32(x, 12), _mm256_srli_epi32(x, 20));
    let rot7 = |x| _mm256_or_si256(_mm256_slli_epi32(x, 7), _mm256_srli_epi32(x, 25));

    let mut pairs = rngs.chunks_exact_mut(2);
    for pair in &mut pairs {
        let (first, second) = pair.split_at_mut(1);
        let (x, y) = (&mut first[0], &mut second[0]);
        // Row a: the constants; rows b and c: the keys; row d: block counter 0, stream id 0.
        let a0 = _mm256_loadu2_m128i(SIGMA.as_ptr().cast(), SIGMA.as_ptr().cast());
        let b0 = _mm256_loadu2_m128i(y.key.as_ptr().cast(), x.key.as_ptr().cast());
        let c0 = _mm256_loadu2_m128i(y.key.as_ptr().add(4).cast(), x.key.as_ptr().add(4).cast());
        let d0: __m256i = _mm256_setzero_si256();
        let (mut a, mut b, mut c, mut d) = (a0, b0, c0, d0);
        macro_rules! round {
            () => {
                a = _mm256_add_epi32(a, b);
                d = _mm256_shuffle_epi8(_mm256_xor_si256(d, a), r16);
                c = _mm256_add_epi32(c, d);
                b = rot12(_mm256_xor_si256(b, c));
                a = _mm256_add_epi32(a, b);
                d = _mm256_shuffle_epi8(_mm256_xor_si256(d, a), r8);
                c = _mm256_add_epi32(c, d);
                b = rot7(_mm256_xor_si256(b, c));
            };
        }
        for _ in 0..DOUBLE_ROUNDS {
            round!();
            b = _mm256_shuffle_epi32(b, 0b00_11_10_01);
            c = _mm256_shuffle_epi32(c, 0b01_00_11_10);
            d = _mm256_shuffle_epi32(d, 0b10_01_00_11);
            round!();
            b = _mm256_shuffle_epi32(b, 0b10_01_00_11);
            c = _mm256_shuffle_epi32(c, 0b01_00_11_10);
            d = _mm256_shuffle_epi32(d, 0b00_11_10_01);
        }
        let rows = [
            _mm256_add_epi32(a, a0),
            _mm256_add_epi32(b, b0),
            _mm256_add_epi32(c, c0),
            _mm256_add_epi32(d, d0),
        ];
        for (i, row) in rows.into_iter().enumerate() {
            _mm_storeu_si128(
                x.words.as_mut_ptr().add(4 * i).cast::<__m128i>(),
                _mm256_castsi256_si128(row),
            );
            _mm_storeu_si128(
                y.words.as_mut_ptr().add(4 * i).cast::<__m128i>(),
                _mm256_extracti128_si256(row, 1),
            );
        }
        for rng in [x, y] {
            rng.next_block = 1;
            rng.index = 0;
        }
    }
    for rng in pairs.into_remainder() {
        rng.refill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;

    /// Seeds spread over the key space: zeros, ones, and a SplitMix64 sequence.
    fn seeds() -> Vec<[u8; 32]> {
        let mut out = vec![[0u8; 32], [0xff; 32]];
        let mut z: u64 = 0x0123_4567_89ab_cdef;
        for _ in 0..200 {
            let mut s = [0u8; 32];
            for chunk in s.chunks_mut(8) {
                z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut m = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                m = (m ^ (m >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                chunk.copy_from_slice(&(m ^ (m >> 31)).to_le_bytes());
            }
            out.push(s);
        }
        out
    }

    /// Draws `n` times from both generators with a mix of widths chosen by `pattern`, so that
    /// `next_u64` and `fill_bytes` straddle both generators' block and buffer boundaries.
    fn same_sequence(seed: [u8; 32], n: usize, pattern: u64) {
        let mut ours = StreamRng::from_seed(seed);
        let mut theirs = ChaCha8Rng::from_seed(seed);
        for step in 0..n {
            match (pattern >> (2 * (step % 32))) & 3 {
                0 => assert_eq!(ours.next_u32(), theirs.next_u32(), "u32 at draw {step}"),
                1 | 2 => assert_eq!(ours.next_u64(), theirs.next_u64(), "u64 at draw {step}"),
                _ => {
                    let len = 1 + step % 11;
                    let (mut a, mut b) = ([0u8; 11], [0u8; 11]);
                    ours.fill_bytes(&mut a[..len]);
                    theirs.fill_bytes(&mut b[..len]);
                    assert_eq!(a, b, "{len} bytes at draw {step}");
                }
            }
        }
    }

    #[test]
    fn same_output_as_rand_chacha_over_seeds_lengths_and_widths() {
        for (i, seed) in seeds().into_iter().enumerate() {
            let pattern = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            for n in [1, 2, 7, 8, 9, 15, 16, 17, 40] {
                same_sequence(seed, n, pattern);
            }
        }
        // Long runs: several of our blocks and of rand_chacha's four-block buffers.
        for seed in seeds().into_iter().take(20) {
            same_sequence(seed, 400, 0x5555_5555_5555_5555); // all u64
            same_sequence(seed, 400, 0); // all u32
            same_sequence(seed, 400, 0x1b1b_1b1b_1b1b_1b1b); // u32, u64, u64, bytes
            same_sequence(seed, 400, 0x9c4e_2f17_d3a8_6b05);
        }
    }

    #[test]
    fn one_word_then_u64s_straddle_the_block_boundary() {
        // After one u32, the 8th u64 takes word 15 of block 0 and word 0 of block 1.
        let seed = seeds()[7];
        let mut ours = StreamRng::from_seed(seed);
        let mut theirs = ChaCha8Rng::from_seed(seed);
        assert_eq!(ours.next_u32(), theirs.next_u32());
        for _ in 0..40 {
            assert_eq!(ours.next_u64(), theirs.next_u64());
        }
    }

    #[test]
    fn zero_key_block_is_the_published_chacha8_keystream() {
        // ChaCha8 with a zero key and nonce starts with bytes 3e 00 ef 2f (the reference test
        // vectors of Bernstein's ChaCha8), i.e. the little-endian word 0x2fef003e.
        let mut rng = StreamRng::from_seed([0; 32]);
        let first: Vec<u32> = (0..4).map(|_| rng.next_u32()).collect();
        let mut reference = ChaCha8Rng::from_seed([0; 32]);
        let expected: Vec<u32> = (0..4).map(|_| reference.next_u32()).collect();
        assert_eq!(first, expected);
        assert_eq!(first[0], 0x2fef_003e);
    }

    /// The portable path gives the same bits as the SSE2 one (and, through the tests above,
    /// as rand_chacha), on every platform this test runs on.
    #[test]
    fn portable_block_equals_the_one_in_use() {
        for (i, seed) in seeds().into_iter().enumerate() {
            let key = StreamRng::from_seed(seed).key;
            for counter in [
                0,
                1,
                2,
                3,
                4,
                63,
                64,
                u32::MAX as u64,
                u64::MAX,
                i as u64 * 977,
            ] {
                let (mut a, mut b) = ([0; BLOCK_WORDS], [0; BLOCK_WORDS]);
                block_portable(&key, counter, &mut a);
                block(&key, counter, &mut b);
                assert_eq!(a, b, "seed {i}, counter {counter}");
            }
        }
    }

    #[test]
    fn portable_block_matches_rand_chacha() {
        for seed in seeds().into_iter().take(50) {
            let key = StreamRng::from_seed(seed).key;
            let mut theirs = ChaCha8Rng::from_seed(seed);
            for counter in 0..6 {
                let mut a = [0; BLOCK_WORDS];
                block_portable(&key, counter, &mut a);
                let b: [u32; BLOCK_WORDS] = std::array::from_fn(|_| theirs.next_u32());
                assert_eq!(a, b, "counter {counter}");
            }
        }
    }

    /// Streams made in a batch (two blocks per AVX2 instruction where the CPU has it, an odd
    /// last one alone) draw what each stream made alone draws, across block boundaries.
    #[test]
    fn streams_made_in_batches_equal_streams_made_alone() {
        fn check<const N: usize>(offset: usize) {
            let seeds = seeds();
            let keys: [[u64; 4]; N] = std::array::from_fn(|i| {
                let seed = seeds[(offset + i) % seeds.len()];
                std::array::from_fn(|w| {
                    u64::from_le_bytes(seed[8 * w..8 * w + 8].try_into().expect("8 bytes"))
                })
            });
            let mut batch = StreamRng::from_keys_drawn(keys);
            for (i, rng) in batch.iter_mut().enumerate() {
                assert_eq!((rng.index, rng.next_block), (0, 1), "stream {i} of {N}");
                let mut alone = StreamRng::from_key(keys[i]);
                for draw in 0..20 {
                    assert_eq!(
                        rng.next_u64(),
                        alone.next_u64(),
                        "stream {i} of {N}, #{draw}"
                    );
                }
            }
        }
        for offset in [0, 1, 37, 150] {
            check::<1>(offset);
            check::<2>(offset);
            check::<3>(offset);
            check::<8>(offset);
        }
    }

    #[test]
    fn a_new_stream_computes_nothing_until_drawn() {
        let rng = StreamRng::from_seed([3; 32]);
        assert_eq!(rng.index, BLOCK_WORDS);
        assert_eq!(rng.next_block, 0);
    }
}
