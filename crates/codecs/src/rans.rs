//! An interleaved, table-driven rANS entropy coder over bytes (NeuZip §2.2 uses ANS for exponents).
//!
//! 32-bit states renormalized 16 bits at a time, probabilities quantized to 12 bits (so the decoder's
//! slot table is 4096 entries, L1-resident), and [`LANES`] = 4 states, each with **its own word
//! stream**: symbol `i` of a block belongs to lane `i mod 4`, and nothing is shared between lanes,
//! so the decoder's loop carries four independent dependency chains (a single shared word stream
//! chains every lane through its read position). The renormalization is a conditional move, not a
//! branch. `examples/rans_speed.rs` measures ns per symbol on real bf16 exponents; 4 and 8 lanes
//! measured the same here, so the smaller state wins. The generic ANS crates measured about 10×
//! too slow for bulk streams; this is NeuZip's hot loop. The encoder keeps the four states in
//! registers too, divides by a symbol's frequency as a multiplication by its 64-bit reciprocal
//! (exact for every state and frequency, `lanes::next_state`) and stores a word before knowing
//! whether it counts: 1.9–2.3 ns a byte with each block's table, from 9.9 (`examples/rans_speed.rs`;
//! BENCHMARKS.md, "rANS blocks for skewed bytes" and "The rANS encoder by multiplication").
//!
//! ## Block layout (little-endian)
//! ```text
//! u16 present            number of distinct symbols, 0..=256 (0 only for an empty block)
//! present × (u8 symbol, u16 freq)   strictly increasing symbols, freq ≥ 1, Σ freq = 4096
//! 4 × u32 words_j        number of 16-bit renormalization words of lane j
//! 4 × u32 state_j        lane j's initial state, in [2^16, 2^32)
//! lane 0's words_0 × u16, then lane 1's, … lane 3's, each in decoding order
//! ```
//! The decoder checks every field, never reads past the block, and finally checks that every lane
//! consumed exactly its words and ended at state 2^16 (the encoder's start), which catches most
//! corruption.
//!
//! `lanes` holds the four lanes' encoding loop and the block writer, the block header reader and
//! the decoder's step.

use crate::error::DecodeError;

pub(crate) mod lanes;
use lanes::{corrupt, encode_with_table, lanes_finished, read_block, step, Slots};

/// Probability precision in bits.
pub const PROB_BITS: u32 = 12;
const PROB_SCALE: u32 = 1 << PROB_BITS;
/// Lower bound of the normalized state interval: states live in [2^16, 2^32), and a state is
/// renormalized 16 bits (one word) at a time.
pub const RANS_L: u32 = 1 << 16;
/// Interleaved lanes (states with their own word streams).
pub const LANES: usize = 4;

/// Normalized symbol frequencies summing to 2^[`PROB_BITS`].
#[derive(Debug, Clone)]
pub struct FreqTable {
    freq: [u32; 256],
    cum: [u32; 256],
}

impl FreqTable {
    /// Quantizes a histogram: every symbol present gets at least 1, the total is 4096.
    /// Returns `None` for an empty histogram.
    pub fn from_histogram(hist: &[u32; 256]) -> Option<FreqTable> {
        let total: u64 = hist.iter().map(|&c| u64::from(c)).sum();
        if total == 0 {
            return None;
        }
        let mut freq = [0u32; 256];
        for (f, &c) in freq.iter_mut().zip(hist) {
            if c > 0 {
                *f = ((u64::from(c) * u64::from(PROB_SCALE) + total / 2) / total).max(1) as u32;
            }
        }
        let mut sum: i64 = freq.iter().map(|&f| i64::from(f)).sum();
        // Fix rounding drift on the symbols that can best afford it (largest first).
        while sum != i64::from(PROB_SCALE) {
            let (i, _) = freq
                .iter()
                .enumerate()
                .filter(|(_, &f)| sum < i64::from(PROB_SCALE) || f > 1)
                .max_by_key(|(_, &f)| f)
                .expect("a present symbol exists");
            if sum > i64::from(PROB_SCALE) {
                let take = (sum - i64::from(PROB_SCALE)).min(i64::from(freq[i]) - 1);
                freq[i] -= take as u32;
                sum -= take;
            } else {
                freq[i] += (i64::from(PROB_SCALE) - sum) as u32;
                sum = i64::from(PROB_SCALE);
            }
        }
        Some(Self::with_freqs(freq))
    }

    fn with_freqs(freq: [u32; 256]) -> FreqTable {
        let mut cum = [0u32; 256];
        let mut acc = 0;
        for (c, &f) in cum.iter_mut().zip(&freq) {
            *c = acc;
            acc += f;
        }
        FreqTable { freq, cum }
    }

    /// The quantized frequency of `symbol` (out of 2^[`PROB_BITS`]; 0 if absent).
    pub fn freq(&self, symbol: u8) -> u32 {
        self.freq[symbol as usize]
    }

    /// The cumulative frequency of the symbols below `symbol`: its slots start there.
    pub fn cum(&self, symbol: u8) -> u32 {
        self.cum[symbol as usize]
    }

    /// Bits the given histogram costs under this table (excluding the table itself).
    pub fn cost_bits(&self, hist: &[u32; 256]) -> f64 {
        hist.iter()
            .zip(&self.freq)
            .filter(|(&c, _)| c > 0)
            .map(|(&c, &f)| f64::from(c) * (f64::from(PROB_BITS) - f64::from(f).log2()))
            .sum()
    }

    fn write(&self, out: &mut Vec<u8>) {
        let present = self.freq.iter().filter(|&&f| f > 0).count() as u16;
        out.extend_from_slice(&present.to_le_bytes());
        for (s, &f) in self.freq.iter().enumerate() {
            if f > 0 {
                out.push(s as u8);
                out.extend_from_slice(&(f as u16).to_le_bytes());
            }
        }
    }
}

/// Appends one rANS block coding `symbols` to `out`.
pub fn encode_block(symbols: &[u8], out: &mut Vec<u8>) {
    let mut hist = [0u32; 256];
    for &s in symbols {
        hist[s as usize] += 1;
    }
    let Some(table) = FreqTable::from_histogram(&hist) else {
        out.extend_from_slice(&0u16.to_le_bytes());
        return;
    };
    encode_with_table(symbols, &table, out);
}

/// Decodes one block from the start of `data` into `out` (whose length is the symbol count) and
/// returns the bytes the block occupied. `base` is the block's offset in the enclosing stream, used
/// only in error positions.
pub fn decode_block(data: &[u8], out: &mut [u8], base: usize) -> Result<usize, DecodeError> {
    let Some(block) = read_block(data, out.len(), base)? else {
        return Ok(2);
    };
    let table = match &block.table {
        Slots::Table(table) => &*table.0,
        Slots::Single(s) => {
            out.fill(*s);
            return Ok(block.len);
        }
    };
    // Each lane reads its own words; a lane that runs out reads zeros and fails the count check
    // after the loop, so the hot loop has no early exit. Four explicit lanes keep every state,
    // table pointer and read position in registers.
    let [mut s0, mut s1, mut s2, mut s3] = block.states;
    let [l0, l1, l2, l3] = block.lane_words;
    let (mut r0, mut r1, mut r2, mut r3) = (0usize, 0usize, 0usize, 0usize);
    let mut groups = out.chunks_exact_mut(LANES);
    for g in &mut groups {
        g[0] = step(table, &mut s0, l0, &mut r0);
        g[1] = step(table, &mut s1, l1, &mut r1);
        g[2] = step(table, &mut s2, l2, &mut r2);
        g[3] = step(table, &mut s3, l3, &mut r3);
    }
    let rest = groups.into_remainder();
    let lanes_state = [
        (&mut s0, l0, &mut r0),
        (&mut s1, l1, &mut r1),
        (&mut s2, l2, &mut r2),
    ];
    for (o, (st, lane, r)) in rest.iter_mut().zip(lanes_state) {
        *o = step(table, st, lane, r);
    }
    if !lanes_finished(&block, [s0, s1, s2, s3], [r0, r1, r2, r3]) {
        return Err(corrupt(base, "final states or word counts do not match"));
    }
    Ok(block.len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn skewed_data_codes_near_its_entropy() {
        let mut x = 7u64;
        let data: Vec<u8> = (0..200_000)
            .map(|_| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                // geometric-ish: ~2.5 bits of entropy
                ((x >> 40) as u32).trailing_zeros().min(20) as u8 + 100
            })
            .collect();
        let mut hist = [0u32; 256];
        data.iter().for_each(|&b| hist[b as usize] += 1);
        let n = data.len() as f64;
        let h: f64 = hist
            .iter()
            .filter(|&&c| c > 0)
            .map(|&c| -(c as f64 / n) * (c as f64 / n).log2())
            .sum();
        let mut out = Vec::new();
        encode_block(&data, &mut out);
        let bits = out.len() as f64 * 8.0 / n;
        assert!(bits < h * 1.01 + 0.01, "{bits} bits/symbol vs entropy {h}");
        let mut back = vec![0u8; data.len()];
        assert_eq!(decode_block(&out, &mut back, 0).unwrap(), out.len());
        assert_eq!(back, data);
    }

    #[test]
    fn single_symbol_blocks_round_trip() {
        for n in [1, 3, 4, 5, 384, 70_000] {
            let data = vec![42u8; n];
            let mut out = Vec::new();
            encode_block(&data, &mut out);
            let mut back = vec![0u8; n];
            assert_eq!(decode_block(&out, &mut back, 0).unwrap(), out.len());
            assert_eq!(back, data);
        }
    }

    #[test]
    fn corrupt_tables_are_rejected() {
        let mut out = Vec::new();
        encode_block(&[1, 2, 3, 3, 3], &mut out);
        let mut back = [0u8; 5];
        let mut bad = out.clone();
        bad[3] = 0; // freq of symbol 1 → low byte 0 (sum no longer 4096)
        assert!(decode_block(&bad, &mut back, 0).is_err());
        let mut bad = out.clone();
        bad[5] = 1; // second symbol not increasing
        assert!(decode_block(&bad, &mut back, 0).is_err());
        assert!(decode_block(&out[..out.len() - 1], &mut back, 0).is_err());
    }

    proptest! {
        #[test]
        fn round_trips(data in prop::collection::vec(any::<u8>(), 0..3000), skew in 0u8..8) {
            let data: Vec<u8> = data.iter().map(|&b| b >> skew).collect();
            let mut out = Vec::new();
            encode_block(&data, &mut out);
            let mut back = vec![0u8; data.len()];
            prop_assert_eq!(decode_block(&out, &mut back, 0).unwrap(), out.len());
            prop_assert_eq!(back, data);
        }

        #[test]
        fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..400), n in 0usize..500) {
            let mut back = vec![0u8; n];
            let _ = decode_block(&data, &mut back, 0);
        }
    }
}
