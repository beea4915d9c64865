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

/// Codes `symbols` (last first) into the four lane states and their words (in encoding order),
/// calling `on_step` after each symbol.
#[inline(always)]
pub fn encode_lanes(
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
