//! The four lanes of a rANS block (see [`super`] for the layout): the encoder's loop over them
//! ([`encode_lanes`], with a hook called after each symbol) and the block it writes
//! ([`encode_with_table`]), the block's header read and checked
//! ([`read_block`]) and the decoder's step of one lane ([`step`]). Crate-internal: the
//! `ans` lesson reads them through `crate::lesson_exports` to trace the coder symbol by symbol.

use super::{FreqTable, LANES, PROB_BITS, PROB_SCALE, RANS_L};
use crate::error::DecodeError;

/// One encoding step of [`encode_lanes`] (what the `ans` lesson shows of it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeStep {
    /// The symbol's position in the input.
    pub index: usize,
    /// Its lane state before.
    pub before: u32,
    /// The 16-bit word renormalization wrote first, if any.
    pub word: Option<u16>,
    /// The lane state after.
    pub after: u32,
}

/// What the encoder needs of one symbol: the state from which coding it first shifts a word
/// out, and the three constants of [`next_state`] (the division by its frequency done as a
/// multiplication by its reciprocal, after ryg_rans' `Rans64EncSymbol`).
#[derive(Clone, Copy, Default)]
struct EncodeSymbol {
    /// `2^20 · freq` (`u64`: it is 2^32 for a single-symbol block's 4096).
    x_max: u64,
    /// `⌈2^64 / freq⌉` for `freq ≥ 2`; `2^64 − 1` for `freq = 1`.
    rcp: u64,
    /// `cum`, and for `freq = 1` also `2^12 − 1`.
    bias: u32,
    /// `2^12 − freq`.
    cmpl: u32,
}

impl EncodeSymbol {
    /// The constants of a symbol of frequency `freq` (in `1..=4096`) whose first slot is `cum`.
    fn new(freq: u32, cum: u32) -> Self {
        let (rcp, bias) = if freq == 1 {
            (u64::MAX, cum + PROB_SCALE - 1)
        } else {
            (u64::MAX / u64::from(freq) + 1, cum)
        };
        EncodeSymbol {
            x_max: u64::from((RANS_L >> PROB_BITS) << 16) * u64::from(freq),
            rcp,
            bias,
            cmpl: PROB_SCALE - freq,
        }
    }
}

/// The state after coding symbol `e` into state `x` (already renormalized, so
/// `x < 2^20 · freq`): `⌊x / freq⌋ · 2^12 + x mod freq + cum`, written as
/// `x + bias + q · (2^12 − freq)` with `q = ⌊x · rcp / 2^64⌋`, one multiplication where a division
/// (or an `f64` reciprocal's chain of conversions) stood. For `freq ≥ 2`, `q = ⌊x / freq⌋`
/// exactly: `rcp = 2^64 / freq + ε` with `ε < 1`, so `x · rcp / 2^64` exceeds `x / freq` by less
/// than `2^-32` (`x < 2^32`), and `x / freq` is at least `1 / freq ≥ 2^-12` below the next integer.
/// For `freq = 1`, `q = x − 1` (as `x ≥ 1`), which the bias makes up for.
#[inline(always)]
fn next_state(x: u32, e: &EncodeSymbol) -> u32 {
    let q = ((u128::from(x) * u128::from(e.rcp)) >> 64) as u32;
    x + e.bias + q * e.cmpl
}

/// One lane's words as the encoder writes them: `buf[..len]`, with room for one word per
/// symbol of the lane and one more, so a word can be stored before knowing whether it counts
/// (the renormalization is then a conditional add, not a branch the predictor misses on
/// every tenth symbol).
struct LaneWords {
    buf: Vec<u16>,
    len: usize,
}

impl LaneWords {
    fn new(symbols: usize) -> Self {
        LaneWords {
            buf: vec![0; symbols / LANES + 2],
            len: 0,
        }
    }

    fn into_vec(mut self) -> Vec<u16> {
        self.buf.truncate(self.len);
        self.buf
    }
}

/// Codes symbol `index` (whose coding data is `e`) into its lane's state `st`, first shifting a
/// word out into the lane's `words` when the state is too large for it.
#[inline(always)]
fn encode_step(
    index: usize,
    e: &EncodeSymbol,
    st: &mut u32,
    words: &mut LaneWords,
    on_step: &mut impl FnMut(EncodeStep),
) {
    debug_assert!(e.x_max > 0, "symbol {index} missing from the table");
    let before = *st;
    let shift = u64::from(before) >= e.x_max;
    // The slot past the last word is always there (see `LaneWords`).
    if let Some(slot) = words.buf.get_mut(words.len) {
        *slot = before as u16;
    }
    words.len += usize::from(shift);
    let x = if shift { before >> 16 } else { before };
    *st = next_state(x, e);
    on_step(EncodeStep {
        index,
        before,
        word: shift.then_some(before as u16),
        after: *st,
    });
}

/// Codes `symbols` (last first) into the four lane states and their words (in encoding order),
/// calling `on_step` after each symbol.
#[inline(always)]
pub fn encode_lanes(
    symbols: &[u8],
    table: &FreqTable,
    mut on_step: impl FnMut(EncodeStep),
) -> ([u32; LANES], [Vec<u16>; LANES]) {
    let mut coded = [EncodeSymbol::default(); 256];
    for (e, (&freq, &cum)) in coded.iter_mut().zip(table.freq.iter().zip(&table.cum)) {
        if freq > 0 {
            *e = EncodeSymbol::new(freq, cum);
        }
    }
    let [mut s0, mut s1, mut s2, mut s3] = [RANS_L; LANES];
    let mut words: [LaneWords; LANES] = std::array::from_fn(|_| LaneWords::new(symbols.len()));
    let [w0, w1, w2, w3] = &mut words;
    // Symbol i is lane i mod 4's; the symbols past the last whole four first, then the fours
    // from the end, each last lane first. Four named states stay in registers.
    let whole = symbols.len() - symbols.len() % LANES;
    for (i, &s) in symbols.iter().enumerate().skip(whole).rev() {
        let (st, w) = match i % LANES {
            0 => (&mut s0, &mut *w0),
            1 => (&mut s1, &mut *w1),
            _ => (&mut s2, &mut *w2),
        };
        encode_step(i, &coded[s as usize], st, w, &mut on_step);
    }
    for (k, four) in symbols[..whole].chunks_exact(LANES).enumerate().rev() {
        let i = k * LANES;
        encode_step(i + 3, &coded[four[3] as usize], &mut s3, w3, &mut on_step);
        encode_step(i + 2, &coded[four[2] as usize], &mut s2, w2, &mut on_step);
        encode_step(i + 1, &coded[four[1] as usize], &mut s1, w1, &mut on_step);
        encode_step(i, &coded[four[0] as usize], &mut s0, w0, &mut on_step);
    }
    ([s0, s1, s2, s3], words.map(LaneWords::into_vec))
}

/// Appends one rANS block coding `symbols` with a given table (which must cover every symbol).
pub fn encode_with_table(symbols: &[u8], table: &FreqTable, out: &mut Vec<u8>) {
    table.write(out);
    let (states, words) = encode_lanes(symbols, table, |_| {});
    write_lanes(&states, &words, out);
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
pub const SLOTS: usize = PROB_SCALE as usize;

/// Decoding table of one block: per slot `symbol << 24 | freq << 12 | (slot − cum)`. A frequency
/// of 4096 (a single-symbol block) is handled before any table is built, so 12 bits suffice.
pub struct DecodeTable(pub Box<[u32; SLOTS]>);

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
pub enum Slots {
    /// From the slot table.
    Table(DecodeTable),
    /// A single-symbol block: every symbol is this one, and there are no words.
    Single(u8),
}

/// A block's header read and checked: its decoding table, the lanes' initial states and words.
pub struct Block<'a> {
    /// How symbols are decoded.
    pub table: Slots,
    /// Each lane's initial state.
    pub states: [u32; LANES],
    /// Each lane's words, little-endian `u16`s in decoding order.
    pub lane_words: [&'a [u8]; LANES],
    /// Bytes the block occupies.
    pub len: usize,
}

/// The `N` bytes of `data` at `pos` (`base` + `pos` in the stream, for the error).
fn array_at<const N: usize>(data: &[u8], pos: usize, base: usize) -> Result<[u8; N], DecodeError> {
    data.get(pos..)
        .and_then(<[u8]>::first_chunk::<N>)
        .copied()
        .ok_or_else(|| truncated(base + pos, N, data.len().saturating_sub(pos)))
}

/// Reads and checks the header of the block at the start of `data` (`None`: an empty block, two
/// bytes). `n` is the symbol count; `base` as in [`decode_block`].
pub fn read_block(data: &[u8], n: usize, base: usize) -> Result<Option<Block<'_>>, DecodeError> {
    let get = |pos: usize, len: usize| -> Result<&[u8], DecodeError> {
        data.get(pos..pos + len)
            .ok_or_else(|| truncated(base + pos, len, data.len().saturating_sub(pos)))
    };
    let u32_at = |pos: usize| array_at(data, pos, base).map(u32::from_le_bytes);
    let present = array_at(data, 0, base).map(u16::from_le_bytes)? as usize;
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
        *c = u32_at(pos)? as usize;
        pos += 4;
    }
    let mut states = [0u32; LANES];
    for st in &mut states {
        *st = u32_at(pos)?;
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

pub(super) fn corrupt(base: usize, reason: &'static str) -> DecodeError {
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
pub fn step(table: &[u32; SLOTS], st: &mut u32, lane: &[u8], r: &mut usize) -> u8 {
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
pub fn lanes_finished(block: &Block, states: [u32; LANES], read: [usize; LANES]) -> bool {
    (0..LANES).all(|j| read[j] == block.lane_words[j].len() && states[j] == RANS_L)
}

#[cfg(test)]
mod tests {
    use super::{next_state, EncodeSymbol, PROB_BITS};

    /// Every frequency, at the states where a quotient changes (multiples of it, one either
    /// side) up to the largest state the encoder codes from (below `2^20 · freq`, at most
    /// 2^32 − 1), and at a spread of states between: the reciprocal's next state is the one of
    /// the textbook division, for a symbol at the first and at the last slot it can start at.
    #[test]
    fn reciprocal_step_is_exact() {
        let mut r = crate::xorshift(0xd1f_f4e9);
        for freq in 1..=4096u32 {
            let top = (u64::from(freq) << 20).min(1 << 32) - 1;
            let symbols = [0, 4096 - freq].map(|cum| (cum, EncodeSymbol::new(freq, cum)));
            let check = |x: u64| {
                if (16..=top).contains(&x) {
                    let x = x as u32;
                    for (cum, e) in &symbols {
                        let want = u64::from((x / freq) << PROB_BITS) + u64::from(x % freq + cum);
                        assert_eq!(u64::from(next_state(x, e)), want, "{x} at {freq}, {cum}");
                    }
                }
            };
            for k in [
                0,
                1,
                2,
                3,
                (top + 1) / u64::from(freq) - 1,
                top / u64::from(freq),
            ] {
                let m = k * u64::from(freq);
                check(m);
                check(m + 1);
                check(m.saturating_sub(1));
            }
            check(16);
            check(top);
            for _ in 0..64 {
                let x = r() % (top + 1);
                check(x);
                check(x - x % u64::from(freq));
                check((x - x % u64::from(freq)).saturating_sub(1));
            }
        }
    }
}
