//! The LMC encoder, LMC paper §4.2 (with the byte grouping of §4): block rows of the grouped
//! input, and for each block the cheapest of Run, Raw, Huffman, Huffman with runs and a split, or
//! rANS or nibble pairs where those pay for their decode (see the module docs of `lmc`).

use super::estimate::{estimate_bytes, looks_incompressible, sample_says_raw, SAMPLE_WORDS};
use super::nibbles;
use super::{
    Params, KIND_HUFFMAN, KIND_HUFFMAN_RUNS, KIND_NIBBLE_PAIRS, KIND_RANS, KIND_RAW, KIND_RUN,
    KIND_SPLIT, LAYOUT_BYTES, LAYOUT_GROUPED, PREFETCH_LINES, SPLIT_LEAF,
};
use crate::byte_group::{self, Transform};
use crate::huffman::{self, EncodeScratch, Prefetch, FLAT_MAX_LEN, MAX_SYMBOLS};
use crate::rans::{self, FreqTable, LANES};
use crate::rle;

/// Reusable LMC encoder (holds scratch buffers; one per thread).
#[derive(Default)]
pub struct Encoder {
    grouped: Vec<u8>,
    alt: Vec<u8>,
    scratch: EncodeScratch,
    table: Vec<u8>,
    run_table: Vec<u8>,
    run_freqs: Vec<u32>,
    run_lengths: Vec<u8>,
    /// A nibble-pairs block's pairs, lows and code table (kind 6).
    pairs: Vec<u8>,
    lows: Vec<u8>,
    pair_table: Vec<u8>,
    /// (width, groups) of the last full block row encoded: how many of its leading groups were
    /// stored Raw by their sample, the guess for the next row (see [`split_raw_prefix`]).
    raw_prefix: (usize, usize),
}

impl Encoder {
    /// A new encoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the LMC stream of `data` to `out`.
    pub fn encode_into(&mut self, data: &[u8], params: &Params, out: &mut Vec<u8>) {
        let w = params.width.bytes();
        // Worst case: every block Raw (+1 byte each); reserving it avoids any reallocation.
        out.reserve(data.len() + data.len() / params.block_bytes() + 2 * w + 64);
        let start = out.len();
        out.push(LAYOUT_GROUPED);
        self.encode_body(data, params, w, out);
        if w > 1 && looks_sparse(data) {
            // Sparse (delta) data: also try the ungrouped layout and keep the smaller.
            let mut alt = std::mem::take(&mut self.alt);
            alt.clear();
            alt.push(LAYOUT_BYTES);
            self.encode_body(data, params, 1, &mut alt);
            if alt.len() < out.len() - start {
                out.truncate(start);
                out.extend_from_slice(&alt);
            }
            self.alt = alt;
        }
    }

    /// The blocks (and tail) of `data` grouped by `w` (1 = not grouped).
    fn encode_body(&mut self, data: &[u8], params: &Params, w: usize, out: &mut Vec<u8>) {
        let bs = params.block_bytes();
        let limit = params.limit();
        if w == 1 {
            for (k, block) in data.chunks(bs).enumerate() {
                let next = data.get((k + 1) * bs..).unwrap_or(&[]);
                self.scratch.prefetch = Prefetch::new(&next[..next.len().min(bs)], PREFETCH_LINES);
                self.encode_block(block, limit, out);
            }
            self.scratch.prefetch = Prefetch::default();
            return;
        }
        let e = byte_group::group_len(data.len(), w);
        let mut grouped = std::mem::take(&mut self.grouped);
        let row_bytes = bs * w;
        if grouped.len() < row_bytes.min(e * w) {
            grouped.resize(row_bytes.min(e * w), 0);
        }
        // Block rows: the blocks of elements [r·B, (r+1)·B) of every group, group 0 first.
        let elems = &data[..e * w];
        // Leading groups of the last full row (of this call or, for the same width, the call
        // before) that their sample sent to Raw blocks: the prediction for the next row.
        let mut raw_prefix = match self.raw_prefix {
            (width, prefix) if width == w => prefix,
            _ => 0,
        };
        for (r, row) in elems.chunks(row_bytes).enumerate() {
            let n = row.len() / w;
            let g = &mut grouped[..row.len()];
            // Only blocks of ≥ 64 KiB are sampled (see `looks_incompressible`).
            let sampled = n >= 4 * SPLIT_LEAF;
            let mut prefix = if raw_prefix > 0 && sampled {
                split_raw_prefix(row, w, params.transform, raw_prefix, g, out)
            } else {
                byte_group::split(row, w, params.transform, g);
                0
            };
            // The next row is requested while the row's last group (the exponents, for floats:
            // the most coding work) is coded, `PREFETCH_LINES · w` lines per 64 flushes.
            let next = elems.get((r + 1) * row_bytes..).unwrap_or(&[]);
            let next = &next[..next.len().min(row_bytes)];
            for (k, block) in g.chunks(n).enumerate().skip(prefix) {
                self.scratch.prefetch = if k + 1 == w {
                    Prefetch::new(next, PREFETCH_LINES * w)
                } else {
                    Prefetch::default()
                };
                let sampled_raw = self.encode_block(block, limit, out);
                if sampled_raw && k == prefix {
                    prefix += 1;
                }
            }
            if sampled {
                raw_prefix = prefix;
            }
        }
        self.raw_prefix = (w, raw_prefix);
        self.scratch.prefetch = Prefetch::default();
        out.extend_from_slice(&data[e * w..]);
        self.grouped = grouped;
    }

    /// Appends the coded `block`; returns whether its sample sent it to a Raw block (see
    /// [`looks_incompressible`]).
    fn encode_block(&mut self, block: &[u8], limit: u32, out: &mut Vec<u8>) -> bool {
        // Leaf histograms in one pass: 1, 2 or 4 leaves of ≥ SPLIT_LEAF bytes.
        let leaves = match block.len() / SPLIT_LEAF {
            0 | 1 => 1,
            2 | 3 => 2,
            _ => 4,
        };
        let mut bounds = [0usize; 5];
        for i in 0..leaves {
            bounds[i + 1] = split_point(block.len(), leaves, i + 1);
        }
        let mut h = [[0u32; 256]; 4];
        if leaves == 4 && block.len().is_multiple_of(8 * SAMPLE_WORDS) {
            // Whole blocks: the sample is counted per leaf, and when the block is coded only
            // the bytes outside the sample are counted next (the sample words are the first 8
            // bytes of each stride, and every leaf holds a whole number of strides).
            let parts = std::array::from_fn(|i| &block[bounds[i]..bounds[i + 1]]);
            let stride = block.len() / SAMPLE_WORDS;
            let mut counts = huffman::Histograms4::new();
            counts.add_runs(parts, stride, 0, 8);
            if sample_says_raw(&counts.total(), 8 * SAMPLE_WORDS) {
                out.push(KIND_RAW);
                out.extend_from_slice(block);
                return true;
            }
            counts.add_runs(parts, stride, 8, stride);
            counts.finish_into(&mut h);
        } else if looks_incompressible(block) {
            out.push(KIND_RAW);
            out.extend_from_slice(block);
            return true;
        } else if leaves == 1 {
            let hist = huffman::histogram(block);
            self.encode_leaf(block, &hist, limit, out);
            return false;
        } else if leaves == 4 {
            h = huffman::histograms4(std::array::from_fn(|i| &block[bounds[i]..bounds[i + 1]]));
        } else {
            for i in 0..leaves {
                h[i] = huffman::histogram(&block[bounds[i]..bounds[i + 1]]);
            }
        }
        self.encode_leaves(block, &h, &bounds[..=leaves], limit, out);
        false
    }

    /// Codes `block`, cut into 2 or 4 leaves at `bounds` with histograms `h`, as one leaf or as
    /// split blocks, whichever is estimated cheapest.
    fn encode_leaves(
        &mut self,
        block: &[u8],
        h: &[[u32; 256]; 4],
        bounds: &[usize],
        limit: u32,
        out: &mut Vec<u8>,
    ) {
        let leaves = bounds.len() - 1;
        let sum =
            |a: &[u32; 256], b: &[u32; 256]| -> [u32; 256] { std::array::from_fn(|i| a[i] + b[i]) };
        if leaves == 2 {
            let whole = sum(&h[0], &h[1]);
            let split = 1.0
                + estimate_bytes(&h[0], bounds[1])
                + estimate_bytes(&h[1], bounds[2] - bounds[1]);
            if split_pays(split, estimate_bytes(&whole, block.len()), block.len()) {
                out.push(KIND_SPLIT);
                self.encode_leaf(&block[..bounds[1]], &h[0], limit, out);
                self.encode_leaf(&block[bounds[1]..], &h[1], limit, out);
            } else {
                self.encode_leaf(block, &whole, limit, out);
            }
            return;
        }
        // Four leaves: optimal tree over {whole, two halves, four quarters} by estimated cost.
        let q: [f64; 4] = std::array::from_fn(|i| estimate_bytes(&h[i], bounds[i + 1] - bounds[i]));
        let halves = [sum(&h[0], &h[1]), sum(&h[2], &h[3])];
        let mut half_split = [false; 2];
        let mut half_cost = [0f64; 2];
        for j in 0..2 {
            let single = estimate_bytes(&halves[j], bounds[2 * j + 2] - bounds[2 * j]);
            let split = 1.0 + q[2 * j] + q[2 * j + 1];
            half_split[j] = split_pays(split, single, bounds[2 * j + 2] - bounds[2 * j]);
            half_cost[j] = if half_split[j] { split } else { single };
        }
        let whole = sum(&halves[0], &halves[1]);
        let split = 1.0 + half_cost[0] + half_cost[1];
        if !split_pays(split, estimate_bytes(&whole, block.len()), block.len()) {
            return self.encode_leaf(block, &whole, limit, out);
        }
        out.push(KIND_SPLIT);
        for j in 0..2 {
            if half_split[j] {
                out.push(KIND_SPLIT);
                self.encode_leaf(
                    &block[bounds[2 * j]..bounds[2 * j + 1]],
                    &h[2 * j],
                    limit,
                    out,
                );
                self.encode_leaf(
                    &block[bounds[2 * j + 1]..bounds[2 * j + 2]],
                    &h[2 * j + 1],
                    limit,
                    out,
                );
            } else {
                self.encode_leaf(
                    &block[bounds[2 * j]..bounds[2 * j + 2]],
                    &halves[j],
                    limit,
                    out,
                );
            }
        }
    }

    fn encode_leaf(&mut self, block: &[u8], hist: &[u32; 256], limit: u32, out: &mut Vec<u8>) {
        let n = block.len();
        if let Some(v) = hist.iter().position(|&c| c as usize == n) {
            out.push(KIND_RUN);
            out.push(v as u8);
            return;
        }

        let (lengths, bits) = leaf_lengths(hist, limit);
        self.table.clear();
        huffman::write_table(&lengths, &mut self.table);
        let plain_cost = 1 + huffman_body_cost(self.table.len(), bits);
        let raw_cost = 1 + n;

        let (max_i, &max_f) = hist
            .iter()
            .enumerate()
            .max_by_key(|&(i, &f)| (f, std::cmp::Reverse(i)))
            .unwrap_or((0, &0));
        let mut run_cost = usize::MAX;
        let mut nrun = 0;
        if max_f as f64 >= rle::RUN_TRY_SHARE * n as f64 {
            self.run_freqs.resize(MAX_SYMBOLS, 0);
            let (nr, extra) = rle::run_histogram(block, max_i as u8, &mut self.run_freqs);
            nrun = nr;
            let nsym = 256 + nrun;
            self.run_lengths.resize(nsym, 0);
            huffman::build_lengths(&self.run_freqs[..nsym], limit, &mut self.run_lengths);
            let rbits = huffman::code_cost_bits(&self.run_freqs[..nsym], &self.run_lengths) + extra;
            self.run_table.clear();
            huffman::write_table(&self.run_lengths, &mut self.run_table);
            run_cost = 3 + huffman_body_cost(self.run_table.len(), rbits);
        }

        let best = run_cost.min(plain_cost).min(raw_cost);
        if max_f as f64 >= RANS_TRY_SHARE * n as f64 && self.try_rans(block, hist, best, out) {
            return;
        }
        if run_cost < plain_cost && run_cost < raw_cost {
            out.push(KIND_HUFFMAN_RUNS);
            huffman::encode_runs(
                block,
                max_i as u8,
                &self.run_lengths[..256 + nrun],
                &self.run_table,
                &mut self.scratch,
                out,
            );
        } else if plain_cost < raw_cost {
            if !is_flat(&lengths)
                && self.try_nibble_pairs(block, hist, bits, plain_cost, limit, out)
            {
                return;
            }
            out.push(KIND_HUFFMAN);
            huffman::encode_plain(block, &lengths, &self.table, &mut self.scratch, out);
        } else {
            out.push(KIND_RAW);
            out.extend_from_slice(block);
        }
    }

    /// Appends `block` as nibble pairs (kind 6) and returns `true` when, at the best turn, the
    /// entropy of its high nibbles plus 4 bits is under `plain_bits` (the plain code's bits: a
    /// cheap test from the histogram `hist` that the low nibbles carry nothing a code could use)
    /// and the pairs' exact cost is at most `1 / PAIRS_SLACK` over `plain_cost`, the plain
    /// Huffman block's; else leaves `out` as it was.
    fn try_nibble_pairs(
        &mut self,
        block: &[u8],
        hist: &[u32; 256],
        plain_bits: u64,
        plain_cost: usize,
        limit: u32,
        out: &mut Vec<u8>,
    ) -> bool {
        let n = block.len();
        if n < MIN_PAIRS_BLOCK || plain_bits < MIN_PAIRS_BITS * n as u64 {
            return false;
        }
        let (turn, bits_per_byte) = nibbles::best_turn(hist);
        if bits_per_byte * n as f64 >= plain_bits as f64 {
            return false;
        }
        self.lows.clear();
        nibbles::split(block, turn, &mut self.pairs, &mut self.lows);
        let pair_hist = huffman::histogram(&self.pairs);
        let (lengths, bits) = leaf_lengths(&pair_hist, limit);
        self.pair_table.clear();
        huffman::write_table(&lengths, &mut self.pair_table);
        let cost = 2 + huffman_body_cost(self.pair_table.len(), bits) + self.lows.len();
        if cost > plain_cost + plain_cost / PAIRS_SLACK {
            return false;
        }
        out.push(KIND_NIBBLE_PAIRS);
        out.push(turn);
        huffman::encode_plain(
            &self.pairs,
            &lengths,
            &self.pair_table,
            &mut self.scratch,
            out,
        );
        out.extend_from_slice(&self.lows);
        true
    }

    /// Appends `block` as a rANS block and returns `true` when that costs at most
    /// `(1 − RANS_MIN_SAVING)` of `best`, the cheapest other kind's exact cost in bytes; else
    /// leaves `out` as it was. The estimate (the quantized code's cost plus the block's fixed
    /// fields) decides whether to code at all; the coded length decides whether to keep it.
    fn try_rans(
        &mut self,
        block: &[u8],
        hist: &[u32; 256],
        best: usize,
        out: &mut Vec<u8>,
    ) -> bool {
        let Some(table) = FreqTable::from_histogram(hist) else {
            return false;
        };
        let budget = best as f64 * (1.0 - RANS_MIN_SAVING);
        let present = hist.iter().filter(|&&c| c > 0).count();
        // kind + symbol count + (symbol, freq) per symbol + word counts and states.
        let fixed = 1 + 2 + 3 * present + 8 * LANES;
        if fixed as f64 + table.cost_bits(hist) / 8.0 > budget {
            return false;
        }
        let at = out.len();
        out.push(KIND_RANS);
        rans::lanes::encode_with_table(block, &table, out);
        if (out.len() - at) as f64 <= budget {
            return true;
        }
        out.truncate(at);
        false
    }
}

/// The code lengths of a plain Huffman leaf with histogram `hist` (not one value repeated), and
/// their cost in bits: a flat code when it costs at most `1 / FLAT_SLACK` more than the optimal
/// code under `limit` (it decodes faster), else that optimal code, or the one limited to 11 bits
/// when that costs at most 1/1024 more (codes of at most 11 bits decode with a half-size table
/// holding more symbols per lookup).
pub(crate) fn leaf_lengths(hist: &[u32; 256], limit: u32) -> ([u8; 256], u64) {
    let mut lengths = [0u8; 256];
    huffman::build_lengths(hist, limit, &mut lengths);
    let bits = huffman::code_cost_bits(hist, &lengths);
    if let Some((flat, flat_bits)) = flat_lengths(hist) {
        if flat_bits <= bits + bits / FLAT_SLACK {
            return (flat, flat_bits);
        }
    }
    if limit > FAST_CODE_LIMIT && lengths.iter().any(|&l| u32::from(l) > FAST_CODE_LIMIT) {
        let mut short = [0u8; 256];
        huffman::build_lengths(hist, FAST_CODE_LIMIT, &mut short);
        let short_bits = huffman::code_cost_bits(hist, &short);
        if short_bits <= bits + bits / 1024 {
            return (short, short_bits);
        }
    }
    (lengths, bits)
}

/// Whether every used symbol of `lengths` has the same length: a flat code, which the decoder
/// reads at fixed bit positions, several symbols a step (the low bytes of Adam's second moment):
/// nibble pairs would decode slower than that.
fn is_flat(lengths: &[u8; 256]) -> bool {
    let mut used = lengths.iter().filter(|&&l| l > 0);
    let first = used.next();
    used.all(|l| Some(l) == first)
}

/// The flat code for `hist` when it has one of at most [`FLAT_MAX_LEN`] bits: every used byte,
/// and the lowest unused ones up to `2^l`, coded in `l` = ⌈log2(used)⌉ bits; and its cost in
/// bits.
fn flat_lengths(hist: &[u32; 256]) -> Option<([u8; 256], u64)> {
    let used = hist.iter().filter(|&&c| c > 0).count();
    let l = used.next_power_of_two().trailing_zeros();
    if used < 2 || l > FLAT_MAX_LEN {
        return None;
    }
    let mut lengths = [0u8; 256];
    let mut spare = (1usize << l) - used;
    for (len, &c) in lengths.iter_mut().zip(hist) {
        if c > 0 || spare > 0 {
            spare -= (c == 0) as usize;
            *len = l as u8;
        }
    }
    let n: u64 = hist.iter().map(|&c| u64::from(c)).sum();
    Some((lengths, n * u64::from(l)))
}

/// Splits the whole elements of `row` (width `w`) into byte groups, the first `prefix` written
/// straight into `out` as Raw blocks and the others into `grouped` (group `k` at `k · n`), in
/// one pass; then checks each of the `prefix` blocks with the sample of
/// [`looks_incompressible`], as [`Encoder::encode_block`] would. The first block that fails and
/// those after it are moved to `grouped` and taken out of `out`. Returns how many stayed. The
/// stream is the same as if every group had gone through `grouped`, minus one copy of the row's
/// raw bytes: the encoder calls this when the row before began with `prefix` such blocks.
fn split_raw_prefix(
    row: &[u8],
    w: usize,
    transform: Transform,
    prefix: usize,
    grouped: &mut [u8],
    out: &mut Vec<u8>,
) -> usize {
    const { assert!(KIND_RAW == 0) };
    let n = row.len() / w;
    let at = out.len();
    // Kind bytes (KIND_RAW = 0) and room for the blocks, overwritten by the split.
    out.resize(at + prefix * (1 + n), KIND_RAW);
    {
        let mut parts: [&mut [u8]; 8] = Default::default();
        let direct = out[at..].chunks_exact_mut(1 + n).map(|b| &mut b[1..]);
        let staged = grouped[..row.len()].chunks_exact_mut(n).skip(prefix);
        for (p, g) in parts.iter_mut().zip(direct.chain(staged)) {
            *p = g;
        }
        byte_group::split_groups(row, transform, &mut parts[..w]);
    }
    let block = |k: usize| at + k * (1 + n) + 1..at + (k + 1) * (1 + n);
    let kept = (0..prefix)
        .find(|&k| !looks_incompressible(&out[block(k)]))
        .unwrap_or(prefix);
    for k in kept..prefix {
        grouped[k * n..(k + 1) * n].copy_from_slice(&out[block(k)]);
    }
    out.truncate(at + kept * (1 + n));
    kept
}

/// Where leaf `i` of `parts` starts in a block of `n` bytes, as the decoder's halving sees it
/// (the first half of a split is `len / 2`).
fn split_point(n: usize, parts: usize, i: usize) -> usize {
    match (parts, i) {
        (_, 0) => 0,
        (p, i) if i == p => n,
        (2, 1) | (4, 2) => n / 2,
        (4, 1) => (n / 2) / 2,
        (4, 3) => n / 2 + (n - n / 2) / 2,
        _ => unreachable!(),
    }
}

/// A flat code ([`flat_lengths`]) is kept when its streams cost at most `1 / FLAT_SLACK` more
/// than the optimal code's. Its table is smaller and it decodes without a chain of shifts
/// (`decode_kernels`): on the low bytes of Adam's second moment in bf16 (7 bits over 128 even
/// values, lengths 6–8 when optimal) the whole file decodes 15–25 % faster and comes out
/// smaller, since the flat table is shorter; 1/32 gave the same bytes as 1/64
/// (BENCHMARKS.md, issue 28).
const FLAT_SLACK: u64 = 64;

/// The longest code for which the decoder's fast multi-symbol path uses 11-bit tables; the encoder
/// prefers it over a 12-bit code when the cost is negligible (see [`Encoder`]).
const FAST_CODE_LIMIT: u32 = 11;

/// The most frequent byte must cover at least this share of a block before a rANS block is
/// tried: below it the Huffman code's lengths are within a fraction of a bit of their ideal
/// and rANS would save too little to pay for its slower decode.
const RANS_TRY_SHARE: f64 = 0.5;

/// Share of the cheapest other block a rANS block must save to be kept: rANS decodes one byte
/// per step where a multi-symbol Huffman table decodes several.
const RANS_MIN_SAVING: f64 = 1.0 / 32.0;

/// A nibble-pairs block (kind 6) is kept when it costs at most `1 / PAIRS_SLACK` more than the
/// plain Huffman block: it decodes one symbol per two bytes where the plain block decodes one per
/// byte. On the fp32 XOR delta of the benchmark set two thirds of its pair blocks are up to 0.1 %
/// larger than plain; with them the file decompresses 5 % faster for 0.015 % of its size
/// (BENCHMARKS.md, "Nibble pairs").
const PAIRS_SLACK: usize = 512;

/// Blocks shorter than this are not tried as nibble pairs (their code tables dominate).
const MIN_PAIRS_BLOCK: usize = 1024;

/// Blocks whose plain code spends fewer bits per byte than this are not tried as nibble pairs:
/// their codes are short enough that the decoder's multi-symbol tables read two or more bytes a
/// lookup already, and looking for the turn cost 1.5 % of compressing MiniLM fp16, where no
/// block takes pairs.
const MIN_PAIRS_BITS: u64 = 6;

/// A split must save (by estimate) at least `1 / SPLIT_SHARE` of the bytes it splits: each leaf
/// costs the decoder a code table of its own (building a multi-symbol table takes 3–6 µs, the
/// time to decode 10–16 KiB), and a split that saves a few bytes made the block decode up to
/// twice as slowly. Against a margin of 8 bytes, 128 decompressed the digits MLP's Adam moments
/// 9–12 % faster and compressed them 5–7 % faster, for 0.06–0.17 % of their size; MiniLM's
/// weights and the transformer's moments 1–3 % faster for 0.01–0.04 %; the others did not move
/// beyond their spread (BENCHMARKS.md, "Splits that pay for their tables").
const SPLIT_SHARE: usize = 128;

/// The least a split of `n` bytes must save, by estimate, in bytes (see [`SPLIT_SHARE`]).
fn split_margin(n: usize) -> f64 {
    (n / SPLIT_SHARE) as f64
}

/// Whether splitting `n` bytes, estimated at `split` bytes split and `whole` bytes as one leaf,
/// saves at least [`split_margin`]: the one rule of every split the encoder makes.
fn split_pays(split: f64, whole: f64, n: usize) -> bool {
    split + split_margin(n) < whole
}

/// At least half of a sample of the bytes (every 61st) is zero.
fn looks_sparse(data: &[u8]) -> bool {
    let (mut zeros, mut n) = (0usize, 0usize);
    for &b in data.iter().step_by(61) {
        zeros += (b == 0) as usize;
        n += 1;
    }
    2 * zeros >= n && n > 0
}

/// The bytes of a Huffman block's body after its kind (and run fields): `table_len` bytes of
/// table, the 4 LEB128 stream sizes (costed as 4 of the size of a quarter of the streams) and
/// `bits` of streams, each of the 4 rounded up to a byte.
fn huffman_body_cost(table_len: usize, bits: u64) -> usize {
    table_len + leb_len(bits / 32) * 4 + bits.div_ceil(8) as usize + 3
}

fn leb_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::super::{decode_into, encode, Width};
    use super::*;

    fn rt(data: &[u8], p: &Params) -> Vec<u8> {
        let enc = encode(data, p);
        let mut out = vec![0u8; data.len()];
        decode_into(&enc, p, &mut out).expect("decodes");
        assert_eq!(out, data);
        enc
    }

    #[test]
    fn constant_block_is_two_bytes() {
        let p = Params::new(Width::W1);
        let enc = rt(&[7u8; 1000], &p);
        assert_eq!(enc, vec![LAYOUT_GROUPED, KIND_RUN, 7]);
    }

    #[test]
    fn skewed_data_uses_huffman() {
        let data: Vec<u8> = (0..5000u32).map(|i| (i % 7 == 0) as u8 * 3).collect();
        let enc = rt(&data, &Params::new(Width::W1));
        assert!(enc.len() < data.len() / 3, "{}", enc.len());
    }

    #[test]
    fn sparse_data_uses_runs() {
        let mut data = vec![0u8; 60000];
        for i in (0..data.len()).step_by(97) {
            data[i] = (i % 251) as u8 | 1;
        }
        let enc = rt(&data, &Params::new(Width::W1));
        assert_eq!(enc[..2], [LAYOUT_GROUPED, KIND_HUFFMAN_RUNS]);
        // Plain Huffman cannot go below 1 bit per byte.
        assert!(enc.len() < data.len() / 8 / 2, "{}", enc.len());
    }

    /// The high bytes of a dense training delta: 72 % zeros, the rest spread over 32 values.
    /// A Huffman code spends at least a bit on each zero (0.47 bits of information), so the
    /// block is coded with rANS, within 2 % of its order-0 entropy, and decodes to itself.
    #[test]
    fn skewed_blocks_use_rans_near_their_entropy() {
        let mut random = crate::xorshift(0x7a2e_0de1_7a00_0072);
        let data: Vec<u8> = (0..60_000)
            .map(|_| {
                let r = random();
                if r % 100 < 72 {
                    0
                } else {
                    1 + (r >> 32) as u8 % 32
                }
            })
            .collect();
        let enc = rt(&data, &Params::new(Width::W1));
        assert_eq!(enc[..2], [LAYOUT_GROUPED, KIND_RANS]);
        let hist = huffman::histogram(&data);
        let entropy_bytes = bitlens_stats::entropy::cost_bits(&hist) / 8.0;
        let (_, huffman_bits) = leaf_lengths(&hist, 12);
        assert!(
            (enc.len() as f64) < entropy_bytes * 1.02 + 200.0,
            "{} bytes against an entropy of {entropy_bytes:.0}",
            enc.len()
        );
        assert!(enc.len() as f64 * 8.0 < huffman_bits as f64 * (1.0 - RANS_MIN_SAVING));
    }

    /// Bytes uniform over `2^l` values (and over one fewer, which leaves a spare code) get
    /// a flat code, which decodes to the same bytes; a skewed block does not.
    #[test]
    fn near_uniform_leaves_get_flat_codes() {
        let mut random = crate::xorshift(0x5151_7e57_f1a7_c0de);
        for l in 1..=FLAT_MAX_LEN {
            // One spare code costs 1 / 2^l of a bit per byte: under the slack from 5 bits on.
            for values in [1u64 << l, (1u64 << l) - 1] {
                if values < (1 << l) && l < 5 {
                    continue;
                }
                // Even values, as the sign-rotated low byte of a non-negative bf16 has.
                let data: Vec<u8> = (0..40_000).map(|_| (random() % values) as u8 * 2).collect();
                let hist = huffman::histogram(&data);
                let (lengths, bits) = leaf_lengths(&hist, 12);
                let coded: Vec<u8> = lengths.iter().copied().filter(|&x| x > 0).collect();
                assert_eq!(coded.len(), 1 << l, "{values} values");
                assert!(coded.iter().all(|&x| u32::from(x) == l), "{values} values");
                assert_eq!(bits, data.len() as u64 * u64::from(l));
                let enc = rt(&data, &Params::new(Width::W1));
                assert_eq!(enc[1], KIND_HUFFMAN, "{values} values");
            }
        }
        let skewed: Vec<u8> = (0..40_000)
            .map(|i| (i % 7 == 0) as u8 * 3 + (i % 3) as u8)
            .collect();
        let (lengths, _) = leaf_lengths(&huffman::histogram(&skewed), 12);
        let mut seen: Vec<u8> = lengths.iter().copied().filter(|&x| x > 0).collect();
        seen.dedup();
        assert!(
            seen.len() > 1,
            "a skewed block keeps its optimal code: {seen:?}"
        );
    }

    /// Bytes of four uniform bits and four skewed ones, turned (the sign-rotated low mantissa
    /// byte of an XOR delta keeps the sign's bit at the bottom): coded as nibble pairs at the turn
    /// that brings the uniform bits to the low nibble, within the slack of the plain Huffman
    /// block, and decoded to themselves at even and odd lengths.
    #[test]
    fn uniform_low_nibbles_use_nibble_pairs_at_their_turn() {
        for turn in [0u32, 1, 5] {
            for n in [60_000, 60_001] {
                let data = bitlens_test_support::rng::turned_nibbles(u64::from(turn), n, turn);
                let enc = rt(&data, &Params::new(Width::W1));
                assert_eq!(
                    enc[1..3],
                    [KIND_NIBBLE_PAIRS, turn as u8],
                    "turn {turn}, {n} bytes"
                );
                let (lengths, bits) = leaf_lengths(&huffman::histogram(&data), 12);
                let mut table = Vec::new();
                huffman::write_table(&lengths, &mut table);
                let plain = 1 + huffman_body_cost(table.len(), bits);
                assert!(
                    enc.len() - 1 <= plain + plain / PAIRS_SLACK,
                    "turn {turn}, {n} bytes"
                );
            }
        }
    }

    /// Two halves of a block whose statistics differ a little (16 bytes, one of them three times
    /// as frequent in the second half): a split would save ~140 bytes by estimate, more than
    /// the 8 bytes that used to decide, but less than 1/128 of the block, so the block gets one
    /// code; halves that differ a lot (the test `heterogeneous_block_is_split`) still split.
    #[test]
    fn splits_that_save_less_than_their_share_are_not_made() {
        let mut random = crate::xorshift(0x5e1f_5ba1_e000_0128);
        let n = 1 << 16;
        let mut block: Vec<u8> = (0..n / 2).map(|_| (random() & 15) as u8).collect();
        block.extend((0..n / 2).map(|_| match random() % 18 {
            0..=2 => 0,
            r => (r - 2) as u8,
        }));
        let halves = [
            huffman::histogram(&block[..n / 2]),
            huffman::histogram(&block[n / 2..]),
        ];
        let whole: [u32; 256] = std::array::from_fn(|i| halves[0][i] + halves[1][i]);
        let saving = estimate_bytes(&whole, n)
            - (1.0 + estimate_bytes(&halves[0], n / 2) + estimate_bytes(&halves[1], n / 2));
        assert!(
            8.0 < saving && saving < split_margin(n),
            "saving {saving} bytes"
        );
        let p = Params::new(Width::W1);
        let enc = rt(&block, &p);
        assert_eq!(enc[..2], [LAYOUT_GROUPED, KIND_HUFFMAN]);
    }

    #[test]
    fn incompressible_data_costs_one_byte_per_block() {
        let mut random = crate::xorshift(0x1234_5678_9abc_def0);
        let data: Vec<u8> = (0..200_000).map(|_| (random() >> 24) as u8).collect();
        let p = Params::new(Width::W4);
        let enc = rt(&data, &p);
        let blocks = 4 * (data.len() / 4).div_ceil(p.block_bytes());
        assert_eq!(enc.len(), 1 + data.len() + blocks);
    }

    /// Rows whose groups switch between random and skewed bytes, so that the raw prefix the
    /// encoder predicts from the row before is right, too long (a group, or the first group, turns
    /// out compressible) or meets a short last row.
    fn rows_of_changing_groups(w: usize, p: &Params) -> Vec<u8> {
        let mut random = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        // Per row and group: random (true) or skewed (false) bytes.
        let plan: [&[bool]; 6] = [
            &[true, false, true, false, true, false, true, false],
            &[false, true, true, true, true, true, true, false],
            &[true, true, true, true, true, true, true, false],
            &[true, false, true, true, false, false, false, false],
            &[true, true, true, true, true, true, true, true],
            &[true, true, false, true, false, true, false, true],
        ];
        let n = p.block_bytes();
        let mut data = Vec::new();
        for (r, groups) in plan.iter().enumerate() {
            let elems = if r + 1 == plan.len() { n / 3 } else { n };
            for i in 0..elems {
                for &g in &groups[..w] {
                    data.push(if g {
                        (random() >> 24) as u8
                    } else {
                        (i % 5 == 0) as u8 * 3
                    });
                }
            }
        }
        data.push(9);
        data
    }

    #[test]
    fn raw_blocks_split_straight_into_the_output_give_the_same_stream() {
        // Blocks do not depend on other rows, so the whole stream must be the rows' own streams
        // one after the other, whichever raw prefix the encoder predicted for each.
        for width in [Width::W2, Width::W4, Width::W8] {
            let w = width.bytes();
            let mut p = Params::new(width);
            p.block_log2 = 16;
            // Bytes stay in their groups (the sign rotation would mix the groups' bits).
            p.transform = Transform::None;
            let data = rows_of_changing_groups(w, &p);
            let whole = rt(&data, &p);
            let mut rows = vec![LAYOUT_GROUPED];
            let (elems, tail) = data.split_at(data.len() / w * w);
            for row in elems.chunks(p.block_bytes() * w) {
                rows.extend_from_slice(&encode(row, &p)[1..]);
            }
            rows.extend_from_slice(tail);
            assert_eq!(whole, rows, "width {w}");
            let raw = whole.iter().filter(|&&b| b == KIND_RAW).count();
            assert!(raw >= 20, "width {w}: {raw} raw blocks at most");
        }
    }
}
