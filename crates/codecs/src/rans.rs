//! An interleaved, table-driven rANS entropy coder over bytes (NeuZip §2.2 uses ANS for exponents).
//!
//! 32-bit states renormalized 16 bits at a time, probabilities quantized to 12 bits (so the decoder's
//! slot table is 4096 entries, L1-resident), and [`LANES`] = 4 states, each with **its own word
//! stream**: symbol `i` of a block belongs to lane `i mod 4`, and nothing is shared between lanes,
//! so the decoder's loop carries four independent dependency chains (a single shared word stream
//! chains every lane through its read position). The renormalization is a conditional move, not a
//! branch. `examples/rans_speed.rs` measures ns per symbol on real bf16 exponents; 4 and 8 lanes
//! measured the same here, so the smaller state wins. The generic ANS crates measured about 10×
//! too slow for bulk streams; this is NeuZip's hot loop.
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
//! [`trace`] runs this coder step by step for the `ans` lesson.

use crate::error::DecodeError;

pub mod trace;

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

/// Appends one rANS block coding `symbols` with a given table (which must cover every symbol).
pub fn encode_with_table(symbols: &[u8], table: &FreqTable, out: &mut Vec<u8>) {
    table.write(out);
    let (states, words) = encode_lanes(symbols, table, |_| {});
    write_lanes(&states, &words, out);
}

/// One encoding step of [`encode_lanes`], as [`trace`] shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EncodeStep {
    /// The symbol's position in the input.
    pub index: usize,
    /// Its lane state before.
    pub before: u32,
    /// The 16-bit word renormalization wrote first, if any.
    pub word: Option<u16>,
    /// The lane state after.
    pub after: u32,
}

/// Codes `symbols` (last first) into the four lane states and their words (in encoding order),
/// calling `on_step` after each symbol.
#[inline(always)]
pub(crate) fn encode_lanes(
    symbols: &[u8],
    table: &FreqTable,
    mut on_step: impl FnMut(EncodeStep),
) -> ([u32; LANES], [Vec<u16>; LANES]) {
    let mut states = [RANS_L; LANES];
    let mut words: [Vec<u16>; LANES] = Default::default();
    for (i, &s) in symbols.iter().enumerate().rev() {
        let lane = i % LANES;
        let st = &mut states[lane];
        let before = *st;
        let f = table.freq[s as usize];
        debug_assert!(f > 0, "symbol {s} missing from the table");
        // u64: for f = 4096 (a single-symbol block) the bound is 2^32.
        let x_max = u64::from((RANS_L >> PROB_BITS) << 16) * u64::from(f);
        let mut word = None;
        if u64::from(*st) >= x_max {
            words[lane].push(*st as u16);
            word = Some(*st as u16);
            *st >>= 16;
        }
        *st = ((*st / f) << PROB_BITS) + (*st % f) + table.cum[s as usize];
        on_step(EncodeStep {
            index: i,
            before,
            word,
            after: *st,
        });
    }
    (states, words)
}

/// Appends the word counts, the states and the words (each lane's in decoding order).
fn write_lanes(states: &[u32; LANES], words: &[Vec<u16>; LANES], out: &mut Vec<u8>) {
    for w in words {
        out.extend_from_slice(&(w.len() as u32).to_le_bytes());
    }
    for st in states {
        out.extend_from_slice(&st.to_le_bytes());
    }
    for w in words {
        out.reserve(2 * w.len());
        for x in w.iter().rev() {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
}

/// Slots of the decoding table (2^[`PROB_BITS`]).
pub(crate) const SLOTS: usize = PROB_SCALE as usize;

/// Decoding table of one block: per slot `symbol << 24 | freq << 12 | (slot − cum)`. A frequency
/// of 4096 (a single-symbol block) is handled before any table is built, so 12 bits suffice.
pub(crate) struct DecodeTable(Box<[u32; SLOTS]>);

fn truncated(offset: usize, needed: usize, available: usize) -> DecodeError {
    DecodeError::Truncated {
        offset: offset as u64,
        needed: needed as u64,
        available: available as u64,
    }
}

fn bad_table(block: usize, reason: &'static str) -> DecodeError {
    DecodeError::InvalidCodeTable {
        block: block as u64,
        reason,
    }
}

/// How a block's symbols are decoded.
pub(crate) enum Slots {
    /// From the slot table.
    Table(DecodeTable),
    /// A single-symbol block: every symbol is this one, and there are no words.
    Single(u8),
}

/// A block's header read and checked: its decoding table, the lanes' initial states and words.
pub(crate) struct Block<'a> {
    /// How symbols are decoded.
    pub(crate) table: Slots,
    /// Each lane's initial state.
    pub(crate) states: [u32; LANES],
    /// Each lane's words, little-endian `u16`s in decoding order.
    pub(crate) lane_words: [&'a [u8]; LANES],
    /// Bytes the block occupies.
    pub(crate) len: usize,
}

/// Reads and checks the header of the block at the start of `data` (`None`: an empty block, two
/// bytes). `n` is the symbol count; `base` as in [`decode_block`].
pub(crate) fn read_block(
    data: &[u8],
    n: usize,
    base: usize,
) -> Result<Option<Block<'_>>, DecodeError> {
    let get = |pos: usize, len: usize| -> Result<&[u8], DecodeError> {
        data.get(pos..pos + len)
            .ok_or_else(|| truncated(base + pos, len, data.len().saturating_sub(pos)))
    };
    let present = u16::from_le_bytes(get(0, 2)?.try_into().expect("2")) as usize;
    if present == 0 {
        return if n == 0 {
            Ok(None)
        } else {
            Err(bad_table(base, "empty table for a non-empty block"))
        };
    }
    if present > 256 {
        return Err(bad_table(base, "more than 256 symbols"));
    }
    let entries = get(2, 3 * present)?;
    let mut table = DecodeTable(Box::new([0; SLOTS]));
    let mut cum = 0u32;
    let mut last: Option<u8> = None;
    let mut single = None;
    for e in entries.chunks_exact(3) {
        let s = e[0];
        let f = u32::from(u16::from_le_bytes([e[1], e[2]]));
        if last.is_some_and(|l| s <= l) {
            return Err(bad_table(base, "symbols not strictly increasing"));
        }
        if f == 0 || cum + f > PROB_SCALE {
            return Err(bad_table(base, "frequencies do not sum to 4096"));
        }
        if f == PROB_SCALE {
            single = Some(s);
        } else {
            for slot in cum..cum + f {
                table.0[slot as usize] = (u32::from(s) << 24) | (f << 12) | (slot - cum);
            }
        }
        cum += f;
        last = Some(s);
    }
    if cum != PROB_SCALE {
        return Err(bad_table(base, "frequencies do not sum to 4096"));
    }
    let mut pos = 2 + 3 * present;
    let mut counts = [0usize; LANES];
    for c in &mut counts {
        *c = u32::from_le_bytes(get(pos, 4)?.try_into().expect("4")) as usize;
        pos += 4;
    }
    let mut states = [0u32; LANES];
    for st in &mut states {
        *st = u32::from_le_bytes(get(pos, 4)?.try_into().expect("4"));
        pos += 4;
    }
    if states.iter().any(|&s| s < RANS_L) {
        return Err(corrupt(base, "initial state below the normalization bound"));
    }
    let total_words = counts.iter().try_fold(0usize, |a, &c| a.checked_add(c));
    let word_bytes = total_words
        .and_then(|t| t.checked_mul(2))
        .ok_or_else(|| truncated(base + pos, usize::MAX, data.len() - pos))?;
    let words = get(pos, word_bytes)?;
    if let Some(s) = single {
        // A single-symbol block carries no information beyond its table.
        if word_bytes != 0 || states.iter().any(|&x| x != RANS_L) {
            return Err(corrupt(base, "single-symbol block with a word stream"));
        }
        return Ok(Some(Block {
            table: Slots::Single(s),
            states,
            lane_words: [&[]; LANES],
            len: pos,
        }));
    }
    let mut lane_words: [&[u8]; LANES] = [&[]; LANES];
    let mut at = 0;
    for (lw, &c) in lane_words.iter_mut().zip(&counts) {
        *lw = &words[at..at + 2 * c];
        at += 2 * c;
    }
    Ok(Some(Block {
        table: Slots::Table(table),
        states,
        lane_words,
        len: pos + word_bytes,
    }))
}

fn corrupt(base: usize, reason: &'static str) -> DecodeError {
    DecodeError::CorruptBitstream {
        block: base as u64,
        stream: 0,
        reason,
    }
}

/// One decoding step of a lane: the symbol in the slot `st mod 4096` of `table`, the state
/// advanced past it and, when it falls below 2^16, the lane's next word (at byte `r`) shifted
/// in. A lane that runs out of words reads zeros (caught by the word count check at the end).
#[inline(always)]
pub(crate) fn step(table: &[u32; SLOTS], st: &mut u32, lane: &[u8], r: &mut usize) -> u8 {
    let e = table[(*st & (PROB_SCALE - 1)) as usize];
    let x = ((e >> 12) & 0xFFF) * (*st >> PROB_BITS) + (e & 0xFFF);
    let need = x < RANS_L;
    let word = match lane.get(*r..*r + 2) {
        Some(b) => u32::from(u16::from_le_bytes([b[0], b[1]])),
        None => 0,
    };
    *st = if need { (x << 16) | word } else { x };
    *r += 2 * usize::from(need);
    (e >> 24) as u8
}

/// Whether every lane read exactly its words and ended at the encoder's start state 2^16.
pub(crate) fn lanes_finished(block: &Block, states: [u32; LANES], read: [usize; LANES]) -> bool {
    (0..LANES).all(|j| read[j] == block.lane_words[j].len() && states[j] == RANS_L)
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
