//! Huffman explained on one block, for the `huffman` lesson: LMC paper §4.2 (block-adaptive
//! canonical Huffman, one codebook per block) on a block of one byte group (§4 byte grouping),
//! measured against the order-0 entropy bound of §4.1.
//!
//! Every figure comes from the codec's own functions, never a copy of them: the histogram
//! ([`histogram`]), the lengths the LMC encoder gives a leaf under its length limit
//! ([`leaf_lengths`], the same call the encoder makes), the canonical codes ([`encode_codes`]),
//! the code-length table ([`write_table`]), the run tokens ([`rle`]), and the block as the real
//! LMC encoder writes it ([`lmc::encode`]), read back to show what it chose (Raw, Run, Huffman,
//! Huffman with runs, split into leaves).
//! [`explain_block`] then accounts for every byte of that output from the explanation's own
//! arithmetic (bits = Σ count · length per quarter stream, rounded up to bytes, plus the kind
//! byte, the table and the four size fields), and reports both: the tests check they are equal.
//!
//! Beside it: the code's tree ([`tree`]: the most frequent symbols, the rest folded into "others"
//! nodes), what the length limit costs against the unlimited optimal Huffman code, the exact
//! cost of the run variant where the block qualifies for it, and, over a whole byte group,
//! [`compare_tables`] (in `tables`): one global table against a table per block.

use bitlens_codecs::byte_group::Transform;
use bitlens_codecs::huffman::{build_lengths, code_cost_bits, histogram, write_table};
use bitlens_codecs::huffman::{MAX_CODE_LEN, MAX_RUN_SYMBOLS};
use bitlens_codecs::lesson_exports::huffman::{
    encode_codes, get_leb128, put_leb128, quarters, read_table, unlimited_lengths,
};
use bitlens_codecs::lesson_exports::lmc::{leaf_lengths, nibble_pairs};
use bitlens_codecs::lesson_exports::rans::read_block;
use bitlens_codecs::lmc::{
    self, Params, Width, KIND_HUFFMAN, KIND_HUFFMAN_RUNS, KIND_NIBBLE_PAIRS, KIND_RANS, KIND_RAW,
    KIND_RUN, KIND_SPLIT, MAX_BLOCK_LOG2,
};
use bitlens_codecs::rans::LANES;
use bitlens_codecs::rle::{self, Token};
use bitlens_stats::entropy::cost_bits;

mod tables;
mod tree;
pub use tables::{compare_tables, group_bytes, TableComparison, TableCosts};
pub use tree::{tree, NodeKind, TreeNode};

/// Why a block cannot be explained.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    /// The block is empty.
    #[error("the block is empty")]
    Empty,
    /// The block is longer than the largest LMC block.
    #[error("a block of {len} bytes is longer than the largest LMC block ({max} bytes)")]
    TooLong {
        /// The block's length.
        len: usize,
        /// The largest block.
        max: usize,
    },
    /// The code-length limit is outside the encoder's range.
    #[error("code-length limit {0} is outside 9..=12")]
    Limit(u32),
    /// The block size of [`compare_tables`] is not an LMC block size.
    #[error("block size 2^{0} is outside 2^12..=2^20")]
    BlockSize(u8),
    /// The byte group does not exist.
    #[error("byte group {group} of {width}-byte elements does not exist")]
    Group {
        /// The group asked for.
        group: usize,
        /// The element width.
        width: usize,
    },
    /// The encoder's output could not be read back (a bug: it is checked by the tests).
    #[error("the encoder's block could not be read back: {0}")]
    Unreadable(&'static str),
}

/// One symbol's canonical code.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SymbolCode {
    /// The symbol: a byte, or `256 + k` for run-length bucket `k` (see [`rle`]).
    pub symbol: u16,
    /// How often it occurs.
    pub count: u32,
    /// Its code length in bits.
    pub length: u8,
    /// Its code, most significant (first written) bit first.
    pub code: u32,
    /// The code as text, first bit first (`"0110"`).
    pub bits: String,
}

/// A canonical code for a histogram.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Code {
    /// The symbols with a code, in canonical order (shorter codes first, then by symbol).
    pub symbols: Vec<SymbolCode>,
    /// The longest code length.
    pub longest: u32,
    /// Σ count · length: the bits the symbols cost.
    pub code_bits: u64,
    /// Bytes of the code-length table stored in the block.
    pub table_bytes: usize,
}

/// The optimal Huffman code without a length limit, for comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Unlimited {
    /// Its longest code.
    pub longest: u32,
    /// Σ count · length.
    pub code_bits: u64,
}

/// The exact cost of the Huffman-with-runs variant of a block (see [`rle`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunCost {
    /// The run value: the block's most frequent byte.
    pub run_value: u8,
    /// Its share of the block.
    pub share: f64,
    /// Run symbols declared (`256 + k` for `k < nrun`).
    pub nrun: usize,
    /// Runs coded.
    pub runs: u64,
    /// Other bytes coded as literals.
    pub literals: u64,
    /// The code over bytes and run symbols (its `code_bits` exclude the extra bits).
    pub code: Code,
    /// The raw extra bits after the run symbols.
    pub extra_bits: u64,
    /// The whole block's size in this variant.
    pub bytes: usize,
}

/// How a leaf of the encoder's block is coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeafKind {
    /// Stored verbatim.
    Raw,
    /// One value repeated.
    Run,
    /// Canonical Huffman over bytes.
    Huffman,
    /// Canonical Huffman over bytes and run symbols.
    HuffmanRuns,
    /// A rANS block (skewed bytes, where a Huffman code's one bit per byte is too much).
    Rans,
    /// Canonical Huffman over nibble pairs (the high nibbles of two bytes as one symbol), the
    /// low nibbles stored: bytes with four bits a code cannot shrink.
    NibblePairs,
}

/// One leaf of the block the encoder wrote (a block is one leaf unless it was split).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Leaf {
    /// Where it starts in the block.
    pub offset: usize,
    /// Its length.
    pub len: usize,
    /// How it is coded.
    pub kind: LeafKind,
    /// Huffman leaves: the code it uses (read from the encoder's table; over the nibble pairs
    /// for a nibble-pairs leaf).
    pub code: Option<Code>,
    /// Bits of its four streams: Σ count · length (+ run extra bits), per quarter; rANS: the
    /// 16-bit words of each lane.
    pub stream_bits: [u64; 4],
    /// The same rounded up to bytes (each stream ends on a byte).
    pub stream_bytes: [usize; 4],
    /// Bytes of the kind byte and, for runs, `run_value` and `nrun`; rANS: and its table of
    /// (symbol, frequency); nibble pairs: and the turn.
    pub header_bytes: usize,
    /// Bytes stored as they are, beside any code: a raw leaf's bytes, a nibble-pairs leaf's low
    /// nibbles; 0 for the others.
    pub stored_bytes: usize,
    /// Bytes of the four LEB128 stream sizes; rANS: the lanes' word counts and start states.
    pub size_bytes: usize,
    /// The leaf's size by this arithmetic.
    pub explained_bytes: usize,
    /// The leaf's size in the encoder's output.
    pub coded_bytes: usize,
}

/// What the real LMC encoder wrote for the block.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct EncoderBlock {
    /// Its leaves in order.
    pub leaves: Vec<Leaf>,
    /// Kind bytes of the splits.
    pub split_bytes: usize,
    /// The block's size by the explanation's arithmetic: Σ leaf sizes + split bytes.
    pub explained_bytes: usize,
    /// The block's size in the encoder's output.
    pub coded_bytes: usize,
}

/// One block explained.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BlockExplanation {
    /// Bytes in the block.
    pub len: usize,
    /// The code-length limit.
    pub limit: u32,
    /// Count of every byte value (256 entries).
    pub histogram: Vec<u32>,
    /// Byte values present.
    pub distinct: usize,
    /// The Shannon bound of an order-0 code: Σ count · log2(len / count) bits.
    pub entropy_bits: f64,
    /// The code the encoder gives the whole block as one plain Huffman leaf.
    pub code: Code,
    /// The optimal code without the length limit: `code.code_bits − unlimited.code_bits` is
    /// what the limit costs.
    pub unlimited: Unlimited,
    /// The code tree, root first (see [`TreeNode`]).
    pub tree: Vec<TreeNode>,
    /// The block's exact size as one plain Huffman leaf.
    pub plain_bytes: usize,
    /// Its size stored Raw (kind byte + bytes).
    pub raw_bytes: usize,
    /// The run variant, when the most frequent byte covers at least
    /// [`rle::RUN_TRY_SHARE`] of the block (the encoder only tries it then).
    pub runs: Option<RunCost>,
    /// What the encoder wrote.
    pub encoder: EncoderBlock,
}

/// Explains `block` under code-length limit `limit` (9..=12; the default is
/// [`bitlens_codecs::huffman::DEFAULT_CODE_LIMIT`]), with a code tree of the `top` most frequent
/// symbols.
pub fn explain_block(
    block: &[u8],
    limit: u32,
    top: usize,
) -> Result<BlockExplanation, ExplainError> {
    check(block.len(), limit)?;
    let hist = histogram(block);
    let len = block.len();
    let code = plain_code(&hist, limit);
    let unl = unlimited_lengths(&hist);
    let unlimited = Unlimited {
        longest: unl.iter().copied().max().unwrap_or(0),
        code_bits: hist
            .iter()
            .zip(&unl)
            .map(|(&c, &l)| u64::from(c) * u64::from(l))
            .sum(),
    };
    let lengths = lengths_of(&code, 256);
    let plain_bytes = huffman_leaf(block, &lengths, None).explained_bytes;
    let encoder = encoder_block(block, limit)?;
    Ok(BlockExplanation {
        len,
        limit,
        histogram: hist.to_vec(),
        distinct: hist.iter().filter(|&&c| c > 0).count(),
        entropy_bits: cost_bits(&hist),
        tree: tree(&code, top),
        code,
        unlimited,
        plain_bytes,
        raw_bytes: 1 + len,
        runs: run_cost(block, &hist, limit),
        encoder,
    })
}

fn check(len: usize, limit: u32) -> Result<(), ExplainError> {
    let max = 1 << MAX_BLOCK_LOG2;
    if len == 0 {
        return Err(ExplainError::Empty);
    }
    if len > max {
        return Err(ExplainError::TooLong { len, max });
    }
    if !(9..=MAX_CODE_LEN).contains(&limit) {
        return Err(ExplainError::Limit(limit));
    }
    Ok(())
}

/// The code the LMC encoder gives a plain Huffman leaf with byte histogram `hist` (the lengths
/// of the encoder's own [`leaf_lengths`]), with its table size.
pub fn plain_code(hist: &[u32; 256], limit: u32) -> Code {
    let (lengths, _) = leaf_lengths(hist, limit);
    code_of(hist, &lengths)
}

/// The canonical code of `lengths` for the symbol counts `hist`.
fn code_of(hist: &[u32], lengths: &[u8]) -> Code {
    let mut packed = vec![0u32; lengths.len()];
    encode_codes(lengths, &mut packed);
    let mut symbols: Vec<SymbolCode> = packed
        .iter()
        .enumerate()
        .filter(|&(_, &p)| p & 15 != 0)
        .map(|(s, &p)| {
            let length = (p & 15) as u8;
            // Codes are stored bit-reversed for LSB-first output; turn them back.
            let code = (p >> 4).reverse_bits() >> (32 - u32::from(length));
            SymbolCode {
                symbol: s as u16,
                count: hist[s],
                length,
                code,
                bits: format!("{code:0width$b}", width = usize::from(length)),
            }
        })
        .collect();
    symbols.sort_by_key(|s| (s.length, s.symbol));
    let mut table = Vec::new();
    write_table(lengths, &mut table);
    Code {
        longest: symbols
            .iter()
            .map(|s| u32::from(s.length))
            .max()
            .unwrap_or(0),
        code_bits: code_cost_bits(hist, lengths),
        table_bytes: table.len(),
        symbols,
    }
}

/// The code lengths of `code` for an alphabet of `n` symbols.
fn lengths_of(code: &Code, n: usize) -> Vec<u8> {
    let mut lengths = vec![0u8; n];
    for s in &code.symbols {
        lengths[usize::from(s.symbol)] = s.length;
    }
    lengths
}

/// The exact cost of the run variant of `block`, if the encoder would try it.
fn run_cost(block: &[u8], hist: &[u32; 256], limit: u32) -> Option<RunCost> {
    let (value, &max) = hist
        .iter()
        .enumerate()
        .max_by_key(|&(i, &f)| (f, std::cmp::Reverse(i)))?;
    let share = f64::from(max) / block.len() as f64;
    if share < rle::RUN_TRY_SHARE || max as usize == block.len() {
        return None;
    }
    let mut freqs = vec![0u32; 256 + MAX_RUN_SYMBOLS];
    let (nrun, extra_bits) = rle::run_histogram(block, value as u8, &mut freqs);
    let freqs = &freqs[..256 + nrun];
    let mut lengths = vec![0u8; freqs.len()];
    build_lengths(freqs, limit, &mut lengths);
    let leaf = huffman_leaf(block, &lengths, Some(value as u8));
    Some(RunCost {
        run_value: value as u8,
        share,
        nrun,
        runs: freqs[256..].iter().map(|&c| u64::from(c)).sum(),
        literals: freqs[..256].iter().map(|&c| u64::from(c)).sum(),
        code: code_of(freqs, &lengths),
        extra_bits,
        bytes: leaf.explained_bytes,
    })
}

/// A Huffman leaf's size by the explanation's arithmetic: per quarter stream, the bits of its
/// symbols' codes (and of the run extra bits), rounded up to bytes; plus kind byte (and run
/// header), table and LEB128 sizes. `coded_bytes` is left 0.
fn huffman_leaf(block: &[u8], lengths: &[u8], run_value: Option<u8>) -> Leaf {
    let mut stream_bits = [0u64; 4];
    let mut at = 0;
    for (bits, q) in stream_bits.iter_mut().zip(quarters(block.len())) {
        let quarter = &block[at..at + q];
        at += q;
        *bits = match run_value {
            None => quarter
                .iter()
                .map(|&b| u64::from(lengths[b as usize]))
                .sum(),
            Some(v) => {
                let mut sum = 0u64;
                rle::for_each_token(quarter, v, |t| {
                    sum += match t {
                        Token::Literal(b) => u64::from(lengths[b as usize]),
                        Token::Run { k, .. } => {
                            u64::from(lengths[256 + usize::from(k)]) + u64::from(k)
                        }
                    }
                });
                sum
            }
        };
    }
    let stream_bytes = stream_bits.map(|b| b.div_ceil(8) as usize);
    let size_bytes = stream_bytes.iter().map(|&n| leb_len(n)).sum();
    let counts = match run_value {
        None => histogram(block).to_vec(),
        Some(v) => {
            let mut f = vec![0u32; 256 + MAX_RUN_SYMBOLS];
            rle::run_histogram(block, v, &mut f);
            f.truncate(lengths.len());
            f
        }
    };
    let code = code_of(&counts, lengths);
    let header_bytes = if run_value.is_some() { 3 } else { 1 };
    Leaf {
        offset: 0,
        len: block.len(),
        kind: if run_value.is_some() {
            LeafKind::HuffmanRuns
        } else {
            LeafKind::Huffman
        },
        explained_bytes: header_bytes
            + code.table_bytes
            + size_bytes
            + stream_bytes.iter().sum::<usize>(),
        code: Some(code),
        stream_bits,
        stream_bytes,
        header_bytes,
        stored_bytes: 0,
        size_bytes,
        coded_bytes: 0,
    }
}

/// Bytes of the LEB128 encoding of `n`.
fn leb_len(n: usize) -> usize {
    let mut out = Vec::new();
    put_leb128(n as u32, &mut out);
    out.len()
}

/// The block as the real encoder writes it (alone, as an ungrouped LMC stream: a block is coded
/// the same wherever it is), read back leaf by leaf and explained.
fn encoder_block(block: &[u8], limit: u32) -> Result<EncoderBlock, ExplainError> {
    let params = Params {
        width: Width::W1,
        transform: Transform::None,
        block_log2: MAX_BLOCK_LOG2,
        code_limit: limit as u8,
    };
    let stream = lmc::encode(block, &params);
    // The layout byte, then the one block.
    let data = stream
        .get(1..)
        .ok_or(ExplainError::Unreadable("empty stream"))?;
    let mut leaves = Vec::new();
    let mut split_bytes = 0;
    let used = read_leaf(data, block, 0, &mut leaves, &mut split_bytes)?;
    if used != data.len() {
        return Err(ExplainError::Unreadable("bytes after the block"));
    }
    Ok(EncoderBlock {
        explained_bytes: leaves.iter().map(|l| l.explained_bytes).sum::<usize>() + split_bytes,
        coded_bytes: used,
        leaves,
        split_bytes,
    })
}

/// Reads the coded block at the start of `data` that codes `block` (at `offset` in the whole
/// block), appending its leaves; returns the bytes it occupies.
fn read_leaf(
    data: &[u8],
    block: &[u8],
    offset: usize,
    leaves: &mut Vec<Leaf>,
    split_bytes: &mut usize,
) -> Result<usize, ExplainError> {
    let bad = ExplainError::Unreadable;
    let &kind = data.first().ok_or(bad("truncated"))?;
    let simple = |kind, header: usize, stored: usize| Leaf {
        offset,
        len: block.len(),
        kind,
        code: None,
        stream_bits: [0; 4],
        stream_bytes: [0; 4],
        header_bytes: header,
        stored_bytes: stored,
        size_bytes: 0,
        explained_bytes: header + stored,
        coded_bytes: header + stored,
    };
    let (leaf, used) = match kind {
        KIND_RAW => (simple(LeafKind::Raw, 1, block.len()), 1 + block.len()),
        KIND_RUN => (simple(LeafKind::Run, 2, 0), 2),
        KIND_SPLIT => {
            *split_bytes += 1;
            let (a, b) = block.split_at(block.len() / 2);
            let first = 1 + read_leaf(&data[1..], a, offset, leaves, split_bytes)?;
            let rest = data.get(first..).ok_or(bad("truncated split"))?;
            let second = read_leaf(rest, b, offset + a.len(), leaves, split_bytes)?;
            return Ok(first + second);
        }
        KIND_HUFFMAN | KIND_HUFFMAN_RUNS => {
            let runs = kind == KIND_HUFFMAN_RUNS;
            let (run_value, nsym, mut pos) = if runs {
                let v = *data.get(1).ok_or(bad("truncated"))?;
                let nrun = usize::from(*data.get(2).ok_or(bad("truncated"))?);
                (Some(v), 256 + nrun, 3)
            } else {
                (None, 256, 1)
            };
            let mut lengths = vec![0u8; nsym];
            pos +=
                read_table(data.get(pos..).ok_or(bad("truncated"))?, &mut lengths).map_err(bad)?;
            let mut streams = 0usize;
            for _ in 0..4 {
                streams += get_leb128(data, &mut pos).ok_or(bad("bad stream size"))? as usize;
            }
            let mut leaf = huffman_leaf(block, &lengths, run_value);
            leaf.offset = offset;
            leaf.coded_bytes = pos + streams;
            (leaf, pos + streams)
        }
        KIND_NIBBLE_PAIRS => {
            let turn = *data.get(1).ok_or(bad("truncated"))?;
            if turn > 7 {
                return Err(bad("bad nibble turn"));
            }
            let mut pos = 2;
            let mut lengths = vec![0u8; 256];
            pos +=
                read_table(data.get(pos..).ok_or(bad("truncated"))?, &mut lengths).map_err(bad)?;
            let mut streams = 0usize;
            for _ in 0..4 {
                streams += get_leb128(data, &mut pos).ok_or(bad("bad stream size"))? as usize;
            }
            let lows = block.len() - block.len() / 2;
            let mut leaf = huffman_leaf(&nibble_pairs(block, turn), &lengths, None);
            leaf.kind = LeafKind::NibblePairs;
            leaf.offset = offset;
            leaf.len = block.len();
            leaf.header_bytes += 1;
            leaf.stored_bytes = lows;
            leaf.explained_bytes += 1 + lows;
            leaf.coded_bytes = pos + streams + lows;
            (leaf, pos + streams + lows)
        }
        KIND_RANS => {
            let body = data.get(1..).ok_or(bad("truncated"))?;
            let rans = read_block(body, block.len(), offset)
                .map_err(|_| bad("bad rANS block"))?
                .ok_or(bad("empty rANS block"))?;
            let words = rans.lane_words.map(<[u8]>::len);
            let lanes = 8 * LANES;
            let leaf = Leaf {
                offset,
                len: block.len(),
                kind: LeafKind::Rans,
                code: None,
                stream_bits: words.map(|b| 8 * b as u64),
                stream_bytes: words,
                header_bytes: 1 + rans.len - lanes - words.iter().sum::<usize>(),
                stored_bytes: 0,
                size_bytes: lanes,
                explained_bytes: 1 + rans.len,
                coded_bytes: 1 + rans.len,
            };
            (leaf, 1 + rans.len)
        }
        _ => return Err(bad("unknown block kind")),
    };
    leaves.push(leaf);
    Ok(used)
}

#[cfg(test)]
mod tests;
