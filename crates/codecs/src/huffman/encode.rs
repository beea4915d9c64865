//! Writing a Huffman block body, LMC paper §4.2: the code-length table, the four stream sizes and
//! the four streams, for plain blocks and for blocks with run symbols ([`crate::rle`]).
//!
//! The encoder codes the quarters one after the other (one lane's state fits in registers;
//! interleaved lanes spilled), with separate code and length tables and a branch-free flush.
//! Blocks with few distinct bytes are coded two symbols per lookup from a pair table. Flushes run
//! in windows of 64 into a fixed-size slice at a masked offset, which leaves the loop without
//! bounds checks and with no `unsafe` (the loops are in `encode_kernels`).

use super::bitio::{put_leb128, BitOut};
use super::encode_kernels::{
    encode_lanes_dispatch, encode_pairs_dispatch, fill_pairs, pair_table, PairTable, WINDOW,
};
use super::encode_stride::encode_flat_stride;
use super::lengths::encode_codes;
use super::lookup::{flat_length, flat_stride, length_counts};
use super::prefetch::Prefetch;
use super::{quarters, MAX_SYMBOLS};

/// Reusable scratch space of the block encoder.
#[derive(Default)]
pub struct EncodeScratch {
    streams: [Vec<u8>; 4],
    plain: Vec<u8>,
    pairs: Option<PairTable>,
    /// Lines of the next block row to request while coding (see [`Prefetch`]).
    pub prefetch: Prefetch,
}

/// Appends the body of a plain Huffman block (table, sizes, four streams) coding `block` with
/// `lengths` (256 entries, a complete code covering every byte in `block`); `table` is
/// [`super::write_table`]`(lengths)`.
pub fn encode_plain(
    block: &[u8],
    lengths: &[u8],
    table: &[u8],
    scratch: &mut EncodeScratch,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(table);
    let mut codes = [0u32; 256];
    encode_codes(lengths, &mut codes);
    let max_len = lengths.iter().copied().max().unwrap_or(0) as usize;
    let qs = quarters(block.len());
    // One scratch buffer, stream j at offset j·cap (fewer live registers in the hot loop).
    let cap = qs[3] * max_len / 8 + 16 + WINDOW + 8;
    if scratch.plain.len() < 4 * cap {
        scratch.plain.resize(4 * cap, 0);
    }
    let used = lengths.iter().filter(|&&l| l > 0).count();
    // A flat code of evenly spaced symbols (Adam's second moment's low bytes) is computed.
    let stride = flat_length(&length_counts(lengths))
        .and_then(|len| flat_stride(lengths, len))
        .and_then(|stride| {
            encode_flat_stride(
                stride,
                block,
                &codes,
                &mut scratch.plain,
                cap,
                &mut scratch.prefetch,
            )
        });
    let sizes = if let Some(sizes) = stride {
        sizes
    } else if used * used <= block.len() / PAIR_TABLE_SHARE {
        let pairs = pair_table(&mut scratch.pairs);
        fill_pairs(&codes, pairs);
        encode_pairs_dispatch(
            max_len <= 9,
            block,
            &codes,
            pairs,
            &mut scratch.plain,
            cap,
            &mut scratch.prefetch,
        )
    } else {
        encode_lanes_dispatch(
            max_len <= 11,
            block,
            &codes,
            &mut scratch.plain,
            cap,
            &mut scratch.prefetch,
        )
    };
    for &s in &sizes {
        put_leb128(s as u32, out);
    }
    for (j, &n) in sizes.iter().enumerate() {
        out.extend_from_slice(&scratch.plain[j * cap..j * cap + n]);
    }
}

/// Pair coding is used when the block has at least this many bytes per pair-table entry written
/// (`used²`), so that filling the table costs a small part of what the pair loop saves.
const PAIR_TABLE_SHARE: usize = 4;

/// Appends the body of a Huffman-with-runs block: `run_value`, `nrun`, table, sizes, streams.
/// `lengths` has `256 + nrun` entries and must cover every token of `block` (see
/// [`crate::rle::run_histogram`]); `table` is [`super::write_table`]`(lengths)`.
pub fn encode_runs(
    block: &[u8],
    run_value: u8,
    lengths: &[u8],
    table: &[u8],
    scratch: &mut EncodeScratch,
    out: &mut Vec<u8>,
) {
    let nrun = lengths.len() - 256;
    out.push(run_value);
    out.push(nrun as u8);
    out.extend_from_slice(table);
    let mut codes = [0u32; MAX_SYMBOLS];
    encode_codes(lengths, &mut codes[..lengths.len()]);
    let qs = quarters(block.len());
    let mut start = 0;
    let mut sizes = [0usize; 4];
    for j in 0..4 {
        let q = &block[start..start + qs[j]];
        start += qs[j];
        let s = &mut scratch.streams[j];
        let need = q.len() * 4 + 16;
        if s.len() < need {
            s.resize(need, 0);
        }
        let mut w = BitOut::new(s);
        crate::rle::for_each_token(q, run_value, |tok| match tok {
            crate::rle::Token::Literal(b) => {
                w.put(codes[b as usize]);
                w.flush();
            }
            crate::rle::Token::Run { k, extra } => {
                w.put(codes[256 + k as usize]);
                w.put_bits(extra, k as u32);
                w.flush();
            }
        });
        sizes[j] = w.finish();
    }
    for &s in &sizes {
        put_leb128(s as u32, out);
    }
    for (s, &n) in scratch.streams.iter().zip(&sizes) {
        out.extend_from_slice(&s[..n]);
    }
}
