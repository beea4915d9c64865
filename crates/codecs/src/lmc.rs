//! LMC, the block-adaptive byte-grouped Huffman + RLE codec of the LMC paper §4.2 (with the
//! byte grouping of §4 and the entropy estimate of §4.1).
//!
//! One LMC stream codes the raw bytes of one tensor (or of one PLMC segment) of element width
//! `w`. The stream has no header of its own: width, transform, block size and length travel out of
//! band (in the PLMC header, [`crate::plmc`]).
//!
//! ## Layout of an LMC stream of `n` input bytes
//! The first byte names the layout: `0` = grouped (below), `1` = not grouped (the `n` bytes are
//! coded as with `w = 1` and no transform; any other value is
//! [`DecodeError::BadHeader`] `layout`). The encoder writes `0` except for sparse input (at
//! least half of a 1-in-61 byte sample is zero, e.g. the XOR of two checkpoints), for which it
//! encodes both and keeps the smaller: grouping codes every changed element's position once per
//! byte group, which costs more than it saves when the changed bytes are random.
//!
//! Group `g` is byte `g` of every whole element after the transform ([`crate::byte_group`]);
//! each group has `e = n / w` bytes and is cut into blocks of `B` bytes (the last one shorter).
//! Blocks are stored row by row, so encoder and decoder only ever hold one row (`w × B` bytes,
//! cache-resident) of grouped data:
//! ```text
//! layout u8                            0 = grouped, 1 = not grouped (then w = 1 below)
//! for r in 0..ceil(e / B):             (w = 1: the input itself is the only group, e = n)
//!     for g in 0..w:
//!         block (g, r)                 bytes [r·B, min(e, (r+1)·B)) of group g
//! tail: n % w bytes, verbatim          (the trailing partial element)
//! ```
//! Every block starts with a kind byte; lengths are implied by `B`, `n` and splits:
//! ```text
//! 0 Raw              kind, then the block's bytes verbatim
//! 1 Run              kind, value: the block is `value` repeated (the paper's (value, count);
//!                    the count is the block length)
//! 2 Huffman          kind, then the body in crate::huffman (table, 4 × LEB128 sizes, 4 streams)
//! 3 Huffman + runs   kind, run_value u8, nrun u8 (1..=21), then the same body over 256 + nrun
//!                    symbols (crate::rle)
//! 4 Split            kind, then block(first len/2 bytes), then block(remaining bytes); both
//!                    halves must be ≥ 4096 bytes (MIN_SPLIT_HALF)
//! ```
//! Any other kind byte is [`DecodeError::BadBlockKind`].
//!
//! ## Encoder choices per block
//! Run if the block is one value; else the cheapest of Raw, Huffman and (when the most frequent
//! byte covers ≥ 50 % of the block, [`crate::rle::RUN_TRY_SHARE`]) Huffman + runs, comparing exact
//! code costs plus table and size fields. Raw costs one byte per block, so incompressible input
//! grows by 1 / B (0.0015 % at 64 KiB) plus the PLMC header and segment table.
//!
//! Before that, a block of ≥ 32 KiB may be split (kind 4) into halves or quarters of ≥ 16 KiB
//! when the estimated cost (order-0 entropy + a table estimate, from the quarter histograms
//! that the single histogram pass produces anyway) saves ≥ 8 bytes: a block that straddles two
//! tensors or a change of statistics then gets two codebooks. This is the paper's block
//! adaptivity taken one step further; it costs ~3 % of compression speed.
//!
//! And before anything, a block of ≥ 64 KiB whose *sample* (4 KiB of it: 1/16 of a 64 KiB
//! block, 1/32 of a 128 KiB one) has an order-0 entropy within 1/64 of 8 bits (bias-corrected,
//! see `sample_says_raw`) is stored Raw without a full histogram or a code: the
//! low mantissa bytes of weights, which Huffman would shrink by ~0.3 % at the price of a table
//! and a slow decode. When the optimal code needs 12-bit codes, the encoder also builds the
//! 11-bit-limited one and keeps it if it costs at most 1/1024 more: the decoder's tables are then
//! half the size. Both choices change ratios by less than 0.0001 on the real weights below
//! (bf16 0.66451 → 0.66459, fp16 0.84735 → 0.84736, fp32 0.81826 → 0.81832) and leave every
//! byte decodable by any decoder of this format.
//!
//! ## Choices and the measurements behind them
//! Ratios (compressed / original) of the data section of all-MiniLM-L6-v2 compressed as one
//! stream (`examples/lmc_speed.rs --ratio-only`), with the 64 KiB order-0 bound of the same
//! (sign-rotated) grouping. ZipNN on the same files: bf16 0.665, fp16 0.848, fp32 0.819.
//!
//! **Block size B = 64 KiB** per group stream (with splitting, code limit 12; speed = bf16,
//! one thread, MB/s of input by thread CPU time):
//! ```text
//! block     bf16      fp16      fp32      compress  decompress
//! 16 KiB    0.66482   0.84795   0.81843     988      1768
//! 32 KiB    0.66458   0.84750   0.81830    1094      1897
//! 64 KiB    0.66450   0.84734   0.81825    1139      1901   <- chosen (best ratio on all three)
//! 128 KiB   0.66451   0.84735   0.81854    1266      1941
//! bound     0.66019   0.84468   0.81639   (64 KiB order-0, sign-rotated groups)
//! ```
//! Smaller blocks lower the entropy but pay more tables; larger ones adapt less (128 KiB gives
//! up 0.0003 on fp32, whose margin to ZipNN is the smallest).
//!
//! **Except for 2-byte elements: B = 128 KiB** (a block row is then 256 KiB of input, as for
//! fp32). Re-measured after the pair coder (below), `lmc_speed`, one thread, thread CPU time,
//! the two block sizes alternating:
//! ```text
//! block     bf16 stream  bf16 per tensor  fp16 per tensor  fp32 per tensor   bf16 compress  decompress
//! 64 KiB    0.66459      0.66440          0.84717          0.81813           1412-1432      3344 MB/s
//! 128 KiB   0.66460      0.66433          0.84713          0.81841           1521-1526      3630 MB/s
//! ```
//! For bf16 and fp16 the larger block costs nothing (per tensor it is even smaller) and is 7 %
//! faster to compress and 9 % faster to decompress (half the tables to build and read); fp32
//! keeps 64 KiB.
//!
//! **Pair coding.** When a block uses few distinct bytes (`used² ≤ n / 4`, e.g. the exponent
//! group), the encoder looks codes up two symbols at a time in a 2^16-entry pair table, of
//! which it fills only the `used²` entries the block can meet. The loop then spends ~5.3 rather
//! than ~9 instructions per symbol (callgrind); compression of bf16 went from 980 to 1100 MB/s
//! on a busy machine (same run, alternating), and the split code / length tables another 1–4 %
//! (13 % fewer instructions per pass, 338 M → 293 M). The streams are identical to one-symbol
//! coding. On bf16 one thread now spends ~32 % of compression in this loop, ~21 % in the
//! histograms and the rest in grouping, sampling and moving bytes (measured by skipping parts).
//! Preferring 9-bit codes (three pairs per flush) when they cost ≤ 1/1024 (or 1/256) more was
//! tried: almost no block qualifies and the extra code build cost more than it saved.
//!
//! **Each byte counted once, raw bytes moved once.** Two encoder-only changes that leave every
//! stream byte-identical (checked on the three MiniLM files through `bitlens compress`):
//! - For a block of a multiple of 4 KiB, the sample that decides Raw is counted per leaf
//!   ([`huffman::Histograms4::add_runs`]); a block that is then coded only counts the bytes
//!   outside the sample. Before, the exponent block's sample was counted twice. bf16 compression
//!   +5 % (median of 10 alternating runs, 1773 → 1866 MB/s).
//! - A row whose previous full row (in this call, or the encoder's call before at the same width)
//!   began with `p` sampled-Raw groups is split with those `p` groups straight into the output
//!   behind their kind bytes (`split_raw_prefix`), the rest into the row buffer; a group whose
//!   sample then says "code it" is moved back. Before, the raw groups went to the row buffer and
//!   were copied out. A further +4 % (1851 → 1928 MB/s). The output area is zero-filled first
//!   (`Vec::resize`, ~5 % of a profile); a scratch build that skipped the fill (`set_len`,
//!   `unsafe`) was no faster (median 1992 vs 2002 MB/s): the fill fetches the lines the split
//!   would otherwise fetch itself.
//!
//! Together, `lmc_speed --loop compress`, 12 alternating runs: bf16 1777 → 1952 MB/s (+10 %),
//! fp32 +10 %, fp16 +6 %; `bitlens bench --codecs lmc` (per tensor) bf16 1832–1837 →
//! 1962–2000 MB/s.
//!
//! **The estimates' logarithm, fixed.** `log2_approx` used to return `e + ln(m)` for a count
//! `2^e · m`, up to 0.31 bit below `log2` (its polynomial is for the natural log), so the sampled
//! entropies and the split estimates were off (a uniform sample measured 8.09 bits). With the
//! log right, the Raw sample shrank to 4 KiB with a bias correction (see `sample_says_raw`),
//! +3 % compression, and the ratios improved a little: per tensor bf16 0.66433 → 0.66428, fp16
//! 0.84713 → 0.84705, fp32 0.81810 → 0.81807 (stream bf16 0.66460 → 0.66453).
//!
//! **Code-length limit 12 bits** (the format maximum):
//! ```text
//! limit     bf16      fp16      fp32
//! 11        0.66465   0.84796   0.81832
//! 12        0.66450   0.84734   0.81825
//! ```
//! 11 bits would let the decoder take five symbols per refill instead of four, but costs fp16
//! 0.0006 (its 5.5-bit high group has many rare symbols) and would lose to ZipNN there. The
//! decoder still uses the 5-per-refill loop (2048-entry table) for every block whose longest code
//! is ≤ 11 bits.
//!
//! **Sign rotation** ([`crate::byte_group::Transform`]) on by default: without it the ratios are
//! bf16 0.67032, fp16 0.84769, fp32 0.82101 (bounds 0.66526 / 0.84482 / 0.81891).

use crate::byte_group::{self, Transform};
use crate::error::DecodeError;
use crate::huffman::{self, DecodeScratch, EncodeScratch, Prefetch, MAX_SYMBOLS};
use crate::rle;

/// First byte of an LMC stream: blocks follow the byte-grouped layout of `Params::width`.
pub const LAYOUT_GROUPED: u8 = 0;
/// First byte of an LMC stream: the bytes are coded as they are (width 1, no transform), chosen
/// by the encoder for sparse data where one zero run per element beats one per byte group.
pub const LAYOUT_BYTES: u8 = 1;

/// Block kind byte: stored verbatim.
pub const KIND_RAW: u8 = 0;
/// Block kind byte: one value repeated.
pub const KIND_RUN: u8 = 1;
/// Block kind byte: canonical Huffman over bytes.
pub const KIND_HUFFMAN: u8 = 2;
/// Block kind byte: canonical Huffman over bytes and run symbols.
pub const KIND_HUFFMAN_RUNS: u8 = 3;
/// Block kind byte: the block is coded as two blocks, its first `len / 2` bytes and the rest.
pub const KIND_SPLIT: u8 = 4;
/// A split block's halves must be at least this long (bounds the decoder's recursion).
pub const MIN_SPLIT_HALF: usize = 4096;
/// The encoder splits blocks into at most four leaves of at least this many bytes.
const SPLIT_LEAF: usize = 16 << 10;

/// Default block size per group stream, as log2 (64 KiB), for every width but 2.
pub const DEFAULT_BLOCK_LOG2: u8 = 16;

/// The default block size for `width`, as log2: 128 KiB for 2-byte elements, else
/// [`DEFAULT_BLOCK_LOG2`] (see "Block size" in the module docs).
pub fn default_block_log2(width: Width) -> u8 {
    match width {
        Width::W2 => DEFAULT_BLOCK_LOG2 + 1,
        _ => DEFAULT_BLOCK_LOG2,
    }
}
/// Smallest allowed block size, as log2 (4 KiB).
pub const MIN_BLOCK_LOG2: u8 = 12;
/// Largest allowed block size, as log2 (1 MiB).
pub const MAX_BLOCK_LOG2: u8 = 20;

/// Element width in bytes: the number of byte groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Width {
    /// 1-byte elements (int8, fp8, raw bytes): no grouping.
    W1 = 1,
    /// 2-byte elements (bf16, fp16, int16).
    W2 = 2,
    /// 4-byte elements (fp32, int32).
    W4 = 4,
    /// 8-byte elements (fp64, int64).
    W8 = 8,
}

impl Width {
    /// Width in bytes.
    pub fn bytes(self) -> usize {
        self as usize
    }

    /// The width for an element size in bytes, if it is 1, 2, 4 or 8.
    pub fn from_bytes(n: usize) -> Option<Width> {
        match n {
            1 => Some(Width::W1),
            2 => Some(Width::W2),
            4 => Some(Width::W4),
            8 => Some(Width::W8),
            _ => None,
        }
    }
}

/// Parameters of an LMC stream (all of them are needed to decode it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Element width.
    pub width: Width,
    /// Bit transform applied to whole elements before grouping (ignored for width 1).
    pub transform: Transform,
    /// Block size per group stream as log2, in `MIN_BLOCK_LOG2..=MAX_BLOCK_LOG2`.
    pub block_log2: u8,
    /// Encoder only: longest Huffman code, `9..=12` (the decoder accepts up to 12).
    pub code_limit: u8,
}

impl Params {
    /// Defaults for `width`: sign rotation, [`default_block_log2`] blocks, 12-bit codes.
    pub fn new(width: Width) -> Self {
        Params {
            width,
            transform: Transform::SignRotate,
            block_log2: default_block_log2(width),
            code_limit: huffman::DEFAULT_CODE_LIMIT as u8,
        }
    }

    /// Block size in bytes (clamped to the allowed range).
    pub fn block_bytes(&self) -> usize {
        1 << self.block_log2.clamp(MIN_BLOCK_LOG2, MAX_BLOCK_LOG2)
    }

    fn limit(&self) -> u32 {
        (self.code_limit as u32).clamp(9, huffman::MAX_CODE_LEN)
    }
}

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
            h = counts.finish();
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
            if split + SPLIT_MARGIN < estimate_bytes(&whole, block.len()) {
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
            half_split[j] = split + SPLIT_MARGIN < single;
            half_cost[j] = if half_split[j] { split } else { single };
        }
        let whole = sum(&halves[0], &halves[1]);
        if 1.0 + half_cost[0] + half_cost[1] + SPLIT_MARGIN >= estimate_bytes(&whole, block.len()) {
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

        let mut lengths = [0u8; 256];
        huffman::build_lengths(hist, limit, &mut lengths);
        let mut bits = huffman::code_cost_bits(hist, &lengths);
        if limit > FAST_CODE_LIMIT && lengths.iter().any(|&l| u32::from(l) > FAST_CODE_LIMIT) {
            // Codes of at most 11 bits decode with a half-size table holding more symbols per
            // lookup; take them when they cost at most 1/1024 more.
            let mut short = [0u8; 256];
            huffman::build_lengths(hist, FAST_CODE_LIMIT, &mut short);
            let short_bits = huffman::code_cost_bits(hist, &short);
            if short_bits <= bits + bits / 1024 {
                lengths = short;
                bits = short_bits;
            }
        }
        self.table.clear();
        huffman::write_table(&lengths, &mut self.table);
        // kind + table + 4 LEB128 sizes + streams (each rounded up to a byte).
        let plain_cost =
            1 + self.table.len() + leb_len(bits / 32) * 4 + bits.div_ceil(8) as usize + 3;
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
            run_cost =
                3 + self.run_table.len() + leb_len(rbits / 32) * 4 + rbits.div_ceil(8) as usize + 3;
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
            out.push(KIND_HUFFMAN);
            huffman::encode_plain(block, &lengths, &self.table, &mut self.scratch, out);
        } else {
            out.push(KIND_RAW);
            out.extend_from_slice(block);
        }
    }
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

/// The longest code for which the decoder's fast multi-symbol path uses 11-bit tables; the encoder
/// prefers it over a 12-bit code when the cost is negligible (see [`Encoder`]).
const FAST_CODE_LIMIT: u32 = 11;

/// Cache lines of the next block row the coder requests per 64 flushes and per byte group (a
/// coded group of `n` bytes takes about `n / 256` such steps, a row `w · n / 64` lines); see
/// [`huffman::Prefetch`].
const PREFETCH_LINES: usize = 4;

/// Bytes a split must save (by estimate) before the encoder splits a block.
const SPLIT_MARGIN: f64 = 8.0;

/// Fast log2 for positive integers as f64 (error < 2e-4; only used for estimates): the
/// exponent of the `f32`, plus a polynomial for the natural log of its mantissa `m ∈ [1, 2)`
/// scaled by `log2(e)`.
#[inline]
fn log2_approx(c: u32) -> f64 {
    let x = c as f32;
    let b = x.to_bits();
    let e = ((b >> 23) as i32 - 127) as f32;
    let m = f32::from_bits((b & 0x007F_FFFF) | 0x3F80_0000);
    let ln_m = -1.741_793_9
        + (2.821_202_6 + (-1.469_956_8 + (0.447_179_55 - 0.056_570_85 * m) * m) * m) * m;
    (e + ln_m * std::f32::consts::LOG2_E) as f64
}

/// Estimated coded size in bytes of a block with histogram `h` of `n` bytes: the cheaper of Raw,
/// Run and a Huffman block costed at its order-0 entropy plus a table of ~`8 + used / 3` bytes.
fn estimate_bytes(h: &[u32; 256], n: usize) -> f64 {
    let mut s = 0f64;
    let mut used = 0usize;
    for &c in h {
        if c > 0 {
            used += 1;
            s += c as f64 * log2_approx(c);
        }
    }
    if used <= 1 {
        return 2.0;
    }
    let bits = n as f64 * log2_approx(n as u32) - s;
    let huffman = bits / 8.0 + 17.0 + used as f64 / 3.0;
    huffman.min(n as f64 + 1.0)
}

/// Smallest share of a block that entropy coding must save, judged on a sample, before the
/// encoder builds a code for it; below it the block is stored raw without a full histogram.
/// Near-random byte groups (the low mantissa bytes of weights) then cost one pass less to
/// encode and nothing to decode. Measured on the real MiniLM weights (ratio of the data
/// section at 0 / this threshold): see the module docs.
const MIN_SAMPLED_SAVING: f64 = 1.0 / 64.0;

/// Whether a sample of `block` (4 KiB of it: the first 8 bytes of every `len / 512`-byte
/// stretch) has an order-0 entropy so close to 8 bits that coding would save less than
/// [`MIN_SAMPLED_SAVING`] (see [`sample_says_raw`]).
fn looks_incompressible(block: &[u8]) -> bool {
    if block.len() < 4 * SPLIT_LEAF {
        return false;
    }
    let stride = block.len() / SAMPLE_WORDS;
    let mut h = [[0u32; 256]; 4];
    let mut count = 0usize;
    for w in block.chunks_exact(stride) {
        let w: &[u8; 8] = w[..8].try_into().expect("stride ≥ 128");
        for k in 0..4 {
            h[k][w[k] as usize] += 1;
            h[k][w[4 + k] as usize] += 1;
        }
        count += 1;
    }
    let total = std::array::from_fn(|i| h[0][i] + h[1][i] + h[2][i] + h[3][i]);
    sample_says_raw(&total, count * 8)
}

/// Whether a sample of `n` bytes with histogram `h` has an order-0 entropy within
/// [`MIN_SAMPLED_SAVING`] of 8 bits (see [`looks_incompressible`]).
///
/// The plug-in entropy of a sample is biased low by about `(m − 1) / (2 n ln 2)` bits for `m`
/// symbols seen (0.045 bit for uniform bytes at 4 KiB); the Miller–Madow term adds that back, so
/// the threshold means the same at any sample size. A 4 KiB sample compresses bf16 3 % faster
/// than the 16 KiB one before (`lmc_speed --loop compress`, 8 alternating runs: median
/// 1920 → 1967 MB/s, with the `log2_approx` fix that came with it).
fn sample_says_raw(h: &[u32; 256], n: usize) -> bool {
    let mut s = 0f64;
    let mut seen = 0u32;
    for &c in h {
        if c > 0 {
            s += c as f64 * log2_approx(c);
            seen += 1;
        }
    }
    // Entropy in bits per byte: log2(n) − Σ c·log2(c) / n, plus the bias correction.
    let plug_in = log2_approx(n as u32) - s / n as f64;
    let entropy = plug_in + f64::from(seen.max(1) - 1) / (2.0 * n as f64 * std::f64::consts::LN_2);
    entropy > 8.0 * (1.0 - MIN_SAMPLED_SAVING)
}

/// 8-byte words in the sample of [`looks_incompressible`] (4 KiB).
const SAMPLE_WORDS: usize = 512;

/// At least half of a sample of the bytes (every 61st) is zero.
fn looks_sparse(data: &[u8]) -> bool {
    let (mut zeros, mut n) = (0usize, 0usize);
    for &b in data.iter().step_by(61) {
        zeros += (b == 0) as usize;
        n += 1;
    }
    2 * zeros >= n && n > 0
}

fn leb_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Reusable LMC decoder (holds the decoding table and the group buffer; one per thread).
#[derive(Default)]
pub struct Decoder {
    grouped: Vec<u8>,
    scratch: DecodeScratch,
}

impl Decoder {
    /// A new decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes the LMC stream `payload` into `out`, whose length must be the original length.
    /// `base_offset` is added to every offset reported in errors. The whole payload must be used.
    pub fn decode_into(
        &mut self,
        payload: &[u8],
        params: &Params,
        out: &mut [u8],
        base_offset: u64,
    ) -> Result<(), DecodeError> {
        let bs = params.block_bytes();
        let n = out.len();
        let w = match payload.first() {
            Some(&LAYOUT_GROUPED) => params.width.bytes(),
            Some(&LAYOUT_BYTES) => 1,
            Some(&v) => {
                return Err(DecodeError::BadHeader {
                    offset: base_offset,
                    field: "layout",
                    value: v as u64,
                })
            }
            None => {
                return Err(DecodeError::Truncated {
                    offset: base_offset,
                    needed: 1,
                    available: 0,
                })
            }
        };
        let mut pos = 1usize;
        self.scratch.prefetch = Prefetch::default();
        if w == 1 {
            for block in out.chunks_mut(bs) {
                pos += self.decode_block(&payload[pos..], block, base_offset + pos as u64)?;
            }
        } else {
            let e = byte_group::group_len(n, w);
            let row_bytes = bs * w;
            let mut grouped = std::mem::take(&mut self.grouped);
            if grouped.len() < row_bytes.min(e * w) {
                grouped.resize(row_bytes.min(e * w), 0);
            }
            let (elems, tail) = out.split_at_mut(e * w);
            let res = (|| {
                for row in elems.chunks_mut(row_bytes) {
                    let n = row.len() / w;
                    let row_at = (row.as_ptr() as usize, row.len());
                    // Raw blocks are merged straight from the payload; the others are decoded
                    // into the row buffer first. While a block decodes, the row's output and
                    // the last raw block before it are requested into the cache for the merge.
                    let mut raw_at = [None; 8];
                    let mut last_raw = &payload[..0];
                    for (k, block) in grouped[..row.len()].chunks_mut(n).enumerate() {
                        if payload.get(pos) == Some(&KIND_RAW) && payload.len() - pos > n {
                            raw_at[k] = Some(pos + 1);
                            last_raw = &payload[pos + 1..pos + 1 + n];
                            pos += 1 + n;
                        } else {
                            self.scratch.prefetch =
                                Prefetch::new(last_raw, 2 * PREFETCH_LINES).and(row_at.0, row_at.1);
                            pos += self.decode_block(
                                &payload[pos..],
                                block,
                                base_offset + pos as u64,
                            )?;
                        }
                    }
                    let mut groups: [&[u8]; 8] = [&[]; 8];
                    for (k, (g, block)) in
                        groups.iter_mut().zip(grouped.chunks(n)).take(w).enumerate()
                    {
                        *g = match raw_at[k] {
                            Some(at) => &payload[at..at + n],
                            None => block,
                        };
                    }
                    byte_group::merge_groups(&groups[..w], params.transform, row);
                }
                let rest = &payload[pos..];
                if rest.len() < tail.len() {
                    return Err(DecodeError::Truncated {
                        offset: base_offset + pos as u64,
                        needed: tail.len() as u64,
                        available: rest.len() as u64,
                    });
                }
                tail.copy_from_slice(&rest[..tail.len()]);
                pos += tail.len();
                Ok(())
            })();
            self.grouped = grouped;
            res?;
        }
        if pos != payload.len() {
            return Err(DecodeError::TrailingBytes {
                offset: base_offset + pos as u64,
                count: (payload.len() - pos) as u64,
            });
        }
        Ok(())
    }

    /// Decodes one block from the start of `data` into `out`; returns the bytes consumed.
    fn decode_block(
        &mut self,
        data: &[u8],
        out: &mut [u8],
        off: u64,
    ) -> Result<usize, DecodeError> {
        let truncated = |needed: usize| DecodeError::Truncated {
            offset: off,
            needed: needed as u64,
            available: data.len() as u64,
        };
        let &kind = data.first().ok_or(truncated(1))?;
        match kind {
            KIND_RAW => {
                let src = data.get(1..1 + out.len()).ok_or(truncated(1 + out.len()))?;
                out.copy_from_slice(src);
                Ok(1 + out.len())
            }
            KIND_RUN => {
                let &v = data.get(1).ok_or(truncated(2))?;
                out.fill(v);
                Ok(2)
            }
            KIND_SPLIT => {
                if out.len() / 2 < MIN_SPLIT_HALF {
                    return Err(DecodeError::BadBlockKind { offset: off, kind });
                }
                let (l, r) = out.split_at_mut(out.len() / 2);
                let a = 1 + self.decode_block(&data[1..], l, off + 1)?;
                let b = self.decode_block(&data[a..], r, off + a as u64)?;
                Ok(a + b)
            }
            KIND_HUFFMAN => {
                Ok(1 + huffman::decode_plain(&data[1..], out, &mut self.scratch, off + 1, off)?)
            }
            KIND_HUFFMAN_RUNS => {
                Ok(1 + huffman::decode_runs(&data[1..], out, &mut self.scratch, off + 1, off)?)
            }
            k => Err(DecodeError::BadBlockKind {
                offset: off,
                kind: k,
            }),
        }
    }
}

/// An upper bound on the length of the LMC stream of `n` input bytes (any width): the input,
/// plus 32 bytes per block (a block is stored Raw at one byte over its length unless another
/// kind is estimated cheaper, and the estimates of table, size fields and padding are short by
/// at most 4 bytes per leaf; a split adds at most 3 kind bytes over 4 leaves), plus the layout
/// byte and the tail. Blocks are at least 4 KiB except the last of each of at most 8 groups.
pub fn max_encoded_len(n: usize) -> usize {
    n + 32 * (n / (1 << MIN_BLOCK_LOG2) + 8) + 64
}

/// Encodes `data` as one LMC stream (no header; see the module docs).
pub fn encode(data: &[u8], params: &Params) -> Vec<u8> {
    let mut out = Vec::new();
    Encoder::new().encode_into(data, params, &mut out);
    out
}

/// Decodes one LMC stream into `out` (exactly the original length).
pub fn decode_into(payload: &[u8], params: &Params, out: &mut [u8]) -> Result<(), DecodeError> {
    Decoder::new().decode_into(payload, params, out, 0)
}

/// The order-0 entropy bound of §4.1 for `data` under `params`: the sum, over groups and over
/// blocks of each group, of the block's empirical byte entropy, in bytes (the trailing partial
/// element counted at 8 bits per byte). No block-local order-0 coder of the same grouping can do
/// better than this, table costs aside.
pub fn entropy_bound_bytes(data: &[u8], params: &Params) -> f64 {
    let w = params.width.bytes();
    let bs = params.block_bytes();
    let mut g = vec![0u8; data.len()];
    byte_group::split(data, w, params.transform, &mut g);
    let e = byte_group::group_len(data.len(), w);
    let mut bits = 0f64;
    for k in 0..w {
        for block in g[k * e..(k + 1) * e].chunks(bs) {
            let h = huffman::histogram(block);
            let n = block.len() as f64;
            bits += h
                .iter()
                .filter(|&&c| c > 0)
                .map(|&c| -(c as f64) * (c as f64 / n).log2())
                .sum::<f64>();
        }
    }
    bits / 8.0 + (data.len() - w * e) as f64
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn incompressible_data_costs_one_byte_per_block() {
        let mut random = crate::xorshift(0x1234_5678_9abc_def0);
        let data: Vec<u8> = (0..200_000).map(|_| (random() >> 24) as u8).collect();
        let p = Params::new(Width::W4);
        let enc = rt(&data, &p);
        let blocks = 4 * (data.len() / 4).div_ceil(p.block_bytes());
        assert_eq!(enc.len(), 1 + data.len() + blocks);
    }

    #[test]
    fn log2_approx_is_close() {
        for c in (1..70_000u32).chain([1 << 20, 3 << 20, 131_071, 131_072, u32::MAX]) {
            let err = (log2_approx(c) - (c as f64).log2()).abs();
            assert!(err < 2e-4, "log2({c}): error {err}");
        }
    }

    #[test]
    fn the_raw_decision_corrects_the_small_sample_bias() {
        // Bytes uniform over `k` values have an entropy of log2(k) bits: 240 values (7.907)
        // save less than 1/64 (threshold 7.875) and go Raw; 224 values (7.807) do not. The
        // plug-in estimate of the 4 KiB sample alone (~7.865 for 240) would code them.
        let mut random = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = move || random() >> 24;
        let mut block =
            |k: u64| -> Vec<u8> { (0..128 << 10).map(|_| (next() % k) as u8).collect() };
        assert!(looks_incompressible(&block(256)));
        assert!(looks_incompressible(&block(240)));
        assert!(!looks_incompressible(&block(224)));
        assert!(
            !looks_incompressible(&block(240)[..60 << 10]),
            "below 64 KiB nothing is sampled"
        );
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
