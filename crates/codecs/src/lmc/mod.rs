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
//! 5 rANS             kind, then one rANS block of the block's bytes (crate::rans; FORMAT.md §7)
//! 6 Nibble pairs     kind, turn u8 (0..=7), then the Huffman body (as kind 2) of the block's
//!                    len/2 nibble pairs, then its len − len/2 bytes of low nibbles (below)
//! ```
//! Kind 6 turns each byte right by `turn` bits (`c = b.rotate_right(turn)`); with `h = len/2`,
//! turned bytes `c[i]` and `c[h + i]` give the pair `(c[i] >> 4) | (c[h + i] & 0xF0)` and the
//! lows `(c[i] & 0x0F) | (c[h + i] << 4)`; an odd block's last turned byte is the last byte of the
//! lows, whole. A turn over 7 is [`DecodeError::BadHeader`] `nibble turn`.
//! Any other kind byte is [`DecodeError::BadBlockKind`].
//!
//! ## Encoder choices per block
//! Run if the block is one value; else the cheapest of Raw, Huffman and (when the most frequent
//! byte covers ≥ 80 % of the block, [`crate::rle::RUN_TRY_SHARE`]) Huffman + runs, comparing exact
//! code costs plus table and size fields. Raw costs one byte per block, so incompressible input
//! grows by 1 / B (0.0015 % at 64 KiB) plus the PLMC header and segment table.
//!
//! A block whose most frequent byte covers ≥ 50 % of it is also costed as rANS (kind 5), and
//! coded so when that is at least 1/32 smaller than the cheapest of the others. A Huffman code
//! spends at least one bit on that byte, where its information is under one bit: the high-byte
//! blocks of a dense XOR delta between training steps (71 % zeros, 0.5 bits each) come out 8–10 %
//! smaller. rANS decodes one byte per step, where a multi-symbol Huffman table decodes several,
//! so the 1/32 keeps it to blocks where the bytes saved are worth the decode time: at 1/64 the
//! deltas' blocks of 55 % zeros (2 % saved) join, and the bf16 delta decodes half as fast
//! (BENCHMARKS.md, "rANS blocks for skewed bytes"). Weights and optimizer moments have no
//! such blocks: their streams are unchanged.
//!
//! A block coded with plain Huffman at 6 bits a byte or more is also costed as nibble pairs
//! (kind 6) when, at the turn that leaves its high nibbles the least entropy, that entropy plus
//! 4 bits is under the plain code's bits per byte, and coded so when that costs at most 1/512
//! more (a flat code is left as it is: it decodes several bytes a step already). The low nibbles
//! of such a block are all but uniform, so a code gains nothing on them, and the pairs decode at
//! one symbol per two bytes. The sign-rotated low bytes of an XOR delta between training steps
//! (the sign's bit under 7 mantissa bits, 7.3 bits per byte; turn 1) are coded so: the delta
//! files of the benchmark set decompress 12–14 % faster, at sizes within 0.01 % (BENCHMARKS.md,
//! "Nibble pairs").
//!
//! Before that, a block of ≥ 32 KiB may be split (kind 4) into halves or quarters of ≥ 16 KiB
//! when the estimated cost (order-0 entropy + a table estimate, from the quarter histograms
//! that the single histogram pass produces anyway) saves at least 1/128 of the bytes split (512
//! of a 64 KiB block): a block that straddles two tensors or a change of statistics then gets
//! two codebooks. This is the paper's block adaptivity taken one step further. The share weighs
//! decode time: every leaf's code table costs the decoder as much as decoding 10–16 KiB, and
//! with splits made for any 8 bytes the digits MLP's Adam moments decompressed 9–12 % slower
//! (BENCHMARKS.md, "Splits that pay for their tables").
//!
//! And before anything, a block of ≥ 64 KiB whose *sample* (4 KiB of it: 1/16 of a 64 KiB
//! block, 1/32 of a 128 KiB one) has an order-0 entropy within 1/64 of 8 bits (bias-corrected,
//! see `sample_says_raw`) is stored Raw without a full histogram or a code: the
//! low mantissa bytes of weights, which Huffman would shrink by ~0.3 % at the price of a table
//! and a slow decode. When the optimal code needs 12-bit codes, the encoder also builds the
//! 11-bit-limited one and keeps it if it costs at most 1/1024 more: the decoder's tables are then
//! half the size. Likewise a *flat* code (every used byte, padded with unused ones to `2^l`,
//! coded in `l` ≤ 7 bits) is kept when it costs at most 1/64 more than the optimal one: its table
//! is smaller and the decoder reads it without a chain of shifts (the low bytes of Adam's second
//! moment: 7 bits over 128 even values). These choices change ratios by less than 0.0001 on
//! real weights and leave every byte decodable by any decoder of this format.
//!
//! ## Choices (measured in BENCHMARKS.md, "History of the LMC format choices")
//! - **Block size B = 64 KiB** per group stream: the best ratio on bf16, fp16 and fp32 of 16, 32,
//!   64 and 128 KiB (smaller blocks pay more tables, larger ones adapt less).
//! - **B = 128 KiB for 2-byte elements** ([`default_block_log2`]): the same ratio as 64 KiB, and
//!   faster to code (half the tables to build and read).
//! - **Code-length limit 12 bits** (the format maximum): 11 bits would cost fp16 0.0006 of ratio;
//!   blocks whose longest code has at most 11 bits still get the decoder's faster 11-bit tables.
//! - **Sign rotation** ([`crate::byte_group::Transform`]) on by default: every float type
//!   compresses better with it (bf16 ratio 0.670 → 0.665).

// Where the code is: `encode` (the block choices and the row-by-row layout), `estimate` (the
// §4.1 entropy estimates the encoder decides by), `decode` (the decoder), `nibbles` (kind 6's
// nibble pairs).
mod decode;
mod encode;
mod estimate;
mod nibbles;

use crate::byte_group::Transform;
use crate::error::DecodeError;
use crate::huffman;
pub(crate) use decode::Decoder;
#[cfg(feature = "lesson-exports")]
pub(crate) use encode::leaf_lengths;
pub(crate) use encode::Encoder;
#[cfg(feature = "lesson-exports")]
pub(crate) use nibbles::split as nibble_split;

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
/// Block kind byte: one rANS block ([`crate::rans`]) of the block's bytes, for skewed blocks
/// where a Huffman code's 1-bit floor on the most frequent byte costs more than rANS decoding.
pub const KIND_RANS: u8 = 5;
/// Block kind byte: the high nibbles of each two bytes Huffman-coded as one symbol, the low
/// nibbles stored (see the module docs), for bytes whose low nibble is near uniform.
pub const KIND_NIBBLE_PAIRS: u8 = 6;
/// A split block's halves must be at least this long (bounds the decoder's recursion).
pub const MIN_SPLIT_HALF: usize = 4096;
/// The encoder splits blocks into at most four leaves of at least this many bytes.
const SPLIT_LEAF: usize = 16 << 10;

/// Default block size per group stream, as log2 (64 KiB), for every width but 2.
pub(crate) const DEFAULT_BLOCK_LOG2: u8 = 16;

/// The default block size for `width`, as log2: 128 KiB for 2-byte elements, else
/// 64 KiB (see "Block size" in the module docs).
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

/// Cache lines of the next block row the coder requests per 64 flushes and per byte group (a
/// coded group of `n` bytes takes about `n / 256` such steps, a row `w · n / 64` lines); see
/// [`huffman::Prefetch`].
const PREFETCH_LINES: usize = 4;

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
