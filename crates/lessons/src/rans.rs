//! rANS step by step, for the `ans` lesson: NeuZip (paper 003 §2.2) codes the exponents of the
//! weights with ANS; this traces the codec's own rANS coder ([`bitlens_codecs::rans`]) on a short symbol
//! sequence, e.g. the first exponents of a tensor ([`exponents`]).
//!
//! Nothing is re-implemented: the frequencies are [`FreqTable::from_histogram`]'s (12-bit
//! quantization), the encoding steps are the encoder's own loop ([`encode_lanes`], with a hook
//! that records each step), the block bytes are the encoder's ([`encode_with_table`]), and
//! decoding reads the block with the decoder's header reader ([`read_block`]) and slot table and
//! steps it with the decoder's [`step`]. The trace shows, per symbol: its lane (symbol `i` is coded by state
//! `i mod 4`), frequency and cumulative frequency, the state before and after, and the 16-bit
//! word renormalization wrote (encoding, last symbol first) or read (decoding, first symbol
//! first). Its sizes put the block beside the Shannon bound and a Huffman code of the same symbols
//! ([`plain_code`], the LMC encoder's lengths).

use crate::huffman::plain_code;
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::huffman::DEFAULT_CODE_LIMIT;
use bitlens_codecs::lesson_exports::float::exponent_field;
use bitlens_codecs::lesson_exports::rans::{
    encode_lanes, encode_with_table, lanes_finished, read_block, step, Slots,
};
use bitlens_codecs::rans::{FreqTable, LANES, PROB_BITS, RANS_L};
use bitlens_stats::entropy::cost_bits;

/// Longest sequence traced (a lesson shows a few hundred steps; the bound keeps the trace small).
pub const MAX_TRACE_SYMBOLS: usize = 1 << 16;

/// Why a sequence cannot be traced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TraceError {
    /// More than [`MAX_TRACE_SYMBOLS`] symbols.
    #[error("{0} symbols is more than the {MAX_TRACE_SYMBOLS} a trace shows")]
    TooLong(usize),
    /// No symbols.
    #[error("no symbols to trace")]
    Empty,
    /// The decoder rejected the encoder's block (a bug: the tests check it never happens).
    #[error("the decoder rejected the block: {0}")]
    Decode(String),
}

/// One symbol's quantized frequency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FreqEntry {
    /// The symbol.
    pub symbol: u8,
    /// How often it occurs in the sequence.
    pub count: u32,
    /// Its frequency out of 2^12: the share of the state space it owns.
    pub freq: u32,
    /// Its first slot: the frequencies of the smaller symbols summed.
    pub cum: u32,
}

/// One step of the encoder (symbols are coded last first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct EncodeStep {
    /// The symbol's position in the sequence.
    pub index: usize,
    /// Its lane (`index mod 4`).
    pub lane: usize,
    /// The symbol.
    pub symbol: u8,
    /// Its frequency.
    pub freq: u32,
    /// Its cumulative frequency.
    pub cum: u32,
    /// The lane's state before.
    pub state_before: u32,
    /// The 16-bit word written when the state was too large to take the symbol (its low half),
    /// if any.
    pub emitted: Option<u16>,
    /// The lane's state after: `(x / freq) · 4096 + x mod freq + cum`, `x` the state after
    /// renormalization.
    pub state_after: u32,
}

/// One step of the decoder (symbols come out first first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct DecodeStep {
    /// The symbol's position.
    pub index: usize,
    /// Its lane.
    pub lane: usize,
    /// The lane's state before.
    pub state_before: u32,
    /// The slot `state mod 4096` that names the symbol.
    pub slot: u32,
    /// The symbol decoded.
    pub symbol: u8,
    /// The 16-bit word read when the state fell below 2^16, if any.
    pub read: Option<u16>,
    /// The lane's state after: `freq · (state / 4096) + slot − cum`, then the word shifted in.
    pub state_after: u32,
}

/// Sizes of the sequence coded three ways.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Sizes {
    /// Symbols.
    pub symbols: usize,
    /// The Shannon bound: Σ count · log2(n / count) bits.
    pub entropy_bits: f64,
    /// What the quantized frequencies cost: Σ count · (12 − log2 freq) bits.
    pub quantized_bits: f64,
    /// The rANS block: table, word counts, final states and words, in bytes.
    pub rans_bytes: usize,
    /// Of which the frequency table.
    pub rans_table_bytes: usize,
    /// Of which the four word counts and four final states (32 bytes).
    pub rans_state_bytes: usize,
    /// Of which the renormalization words.
    pub rans_word_bytes: usize,
    /// Huffman (the LMC encoder's code for these symbols): Σ count · length bits.
    pub huffman_code_bits: u64,
    /// Its code-length table, in bytes.
    pub huffman_table_bytes: usize,
}

/// A traced rANS block.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Trace {
    /// The sequence.
    pub symbols: Vec<u8>,
    /// Probability precision: frequencies are out of 2^`scale_bits`.
    pub scale_bits: u32,
    /// States are kept in [`lower_bound`, 2^32) (the decoder's normalization interval).
    pub lower_bound: u32,
    /// Interleaved lanes.
    pub lanes: usize,
    /// The frequency table, by symbol.
    pub table: Vec<FreqEntry>,
    /// The encoder's steps, in its order (last symbol first).
    pub encode: Vec<EncodeStep>,
    /// Each lane's final state, stored in the block (the decoder's start).
    pub final_states: [u32; LANES],
    /// Each lane's words, in decoding order.
    pub words: [Vec<u16>; LANES],
    /// The block's bytes: exactly [`bitlens_codecs::rans::encode_block`]'s output.
    pub bytes: Vec<u8>,
    /// The decoder's steps, first symbol first.
    pub decode: Vec<DecodeStep>,
    /// The decoded sequence (equal to `symbols`).
    pub decoded: Vec<u8>,
    /// Sizes against entropy and Huffman.
    pub sizes: Sizes,
}

/// Traces coding `symbols` with the codec's rANS coder and decoding them back.
pub fn trace(symbols: &[u8]) -> Result<Trace, TraceError> {
    if symbols.len() > MAX_TRACE_SYMBOLS {
        return Err(TraceError::TooLong(symbols.len()));
    }
    if symbols.is_empty() {
        return Err(TraceError::Empty);
    }
    let mut hist = [0u32; 256];
    symbols.iter().for_each(|&s| hist[s as usize] += 1);
    let table = FreqTable::from_histogram(&hist).ok_or(TraceError::Empty)?;
    let mut encode = Vec::with_capacity(symbols.len());
    let (final_states, mut words) = encode_lanes(symbols, &table, |s| {
        let sym = symbols[s.index];
        encode.push(EncodeStep {
            index: s.index,
            lane: s.index % LANES,
            symbol: sym,
            freq: table.freq(sym),
            cum: table.cum(sym),
            state_before: s.before,
            emitted: s.word,
            state_after: s.after,
        })
    });
    // The encoder pushes words as it goes; the decoder reads them last first.
    words.iter_mut().for_each(|w| w.reverse());
    let mut bytes = Vec::new();
    encode_with_table(symbols, &table, &mut bytes);
    let (decode, decoded) = decode_trace(&bytes, symbols.len())?;
    let entries: Vec<FreqEntry> = (0..=255u8)
        .filter(|&s| table.freq(s) > 0)
        .map(|s| FreqEntry {
            symbol: s,
            count: hist[s as usize],
            freq: table.freq(s),
            cum: table.cum(s),
        })
        .collect();
    let word_bytes = 2 * words.iter().map(Vec::len).sum::<usize>();
    let code = plain_code(&hist, DEFAULT_CODE_LIMIT);
    let sizes = Sizes {
        symbols: symbols.len(),
        entropy_bits: cost_bits(&hist),
        quantized_bits: table.cost_bits(&hist),
        rans_bytes: bytes.len(),
        rans_table_bytes: 2 + 3 * entries.len(),
        rans_state_bytes: 8 * LANES,
        rans_word_bytes: word_bytes,
        huffman_code_bits: code.code_bits,
        huffman_table_bytes: code.table_bytes,
    };
    Ok(Trace {
        symbols: symbols.to_vec(),
        scale_bits: PROB_BITS,
        lower_bound: RANS_L,
        lanes: LANES,
        table: entries,
        encode,
        final_states,
        words,
        bytes,
        decode,
        decoded,
        sizes,
    })
}

/// Decodes the block `bytes` of `n` symbols one symbol at a time, with the decoder's reader,
/// slot table and step.
fn decode_trace(bytes: &[u8], n: usize) -> Result<(Vec<DecodeStep>, Vec<u8>), TraceError> {
    let block = read_block(bytes, n, 0)
        .map_err(|e| TraceError::Decode(e.to_string()))?
        .ok_or(TraceError::Empty)?;
    let mut states = block.states;
    let mut read = [0usize; LANES];
    let mut steps = Vec::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    for index in 0..n {
        let lane = index % LANES;
        let (before, at) = (states[lane], read[lane]);
        let slot = before & ((1 << PROB_BITS) - 1);
        let symbol = match &block.table {
            Slots::Table(table) => step(
                &table.0,
                &mut states[lane],
                block.lane_words[lane],
                &mut read[lane],
            ),
            // A single-symbol block: every state stays 2^16 and no word is read.
            Slots::Single(s) => *s,
        };
        let read_word = (read[lane] > at)
            .then(|| block.lane_words[lane].get(at..at + 2))
            .flatten()
            .map(|b| u16::from_le_bytes([b[0], b[1]]));
        steps.push(DecodeStep {
            index,
            lane,
            state_before: before,
            slot,
            symbol,
            read: read_word,
            state_after: states[lane],
        });
        out.push(symbol);
    }
    if matches!(block.table, Slots::Table(_)) && !lanes_finished(&block, states, read) {
        return Err(TraceError::Decode(
            "final states or word counts do not match".into(),
        ));
    }
    Ok((steps, out))
}

/// The biased exponent fields of the first `count` elements of `data` (little-endian elements
/// of `format`): the symbols NeuZip codes with rANS.
pub fn exponents(data: &[u8], format: FloatFormat, count: usize) -> Vec<u8> {
    data.chunks_exact(format.width())
        .take(count)
        .map(|b| exponent_field(format, b) as u8)
        .collect()
}

#[cfg(test)]
mod tests;
