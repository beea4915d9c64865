//! Run handling, LMC paper §4 ("Byte-Grouping and RLE") and §4.2 ("if the entire block consists
//! of one byte value repeated, it is encoded as a pair").
//!
//! Two mechanisms:
//! 1. **Whole-block runs** ([`single_value`]): a block that is one byte value repeated is stored
//!    as a Run block `(value)`; its count is the block length, which the decoder already knows.
//! 2. **Runs inside Huffman blocks** (an addition to the paper, needed for sparse deltas): plain
//!    Huffman cannot code a byte in less than 1 bit, yet the XOR of two checkpoints where ~95 %
//!    of elements are unchanged is mostly zero bytes. A Huffman-with-runs block names one
//!    `run_value` (the block's most frequent byte) and extends the alphabet with run symbols
//!    `256 + k`: a maximal run of `L ≥ 1` bytes equal to `run_value` (never crossing a quarter
//!    boundary, see [`crate::huffman`]) is coded as symbol `256 + k` with `k = ⌊log2 L⌋`,
//!    followed by `k` raw extra bits (LSB-first) holding `L − 2^k` (deflate-style length
//!    buckets); a run that would pass the end of its quarter is a
//!    [`crate::DecodeError::CorruptBitstream`]. The
//!    `run_value` byte itself is never coded as a literal in such a block. The encoder builds this
//!    variant only when the most frequent byte covers at least [`RUN_TRY_SHARE`] of the block
//!    and keeps it only when its exact cost is lower than the plain Huffman block.
//!
//! On sparse deltas run symbols get below plain Huffman's 1 bit/byte floor, and LMC (with the
//! ungrouped layout, [`crate::lmc::LAYOUT_BYTES`]) beats zstd -3 on the MiniLM weights with 5 %
//! of the elements changed; the run variant is never chosen on the weights themselves (measured
//! in BENCHMARKS.md, "History of the LMC format choices").

/// The most frequent byte must cover at least this share of a block before the run variant is
/// tried (below it runs are short and the plain code is already close to entropy). 0.8, not the
/// 0.5 it was: counting the runs of a block (`run_histogram`) was 30 % of compressing an XOR
/// delta of a training run, whose high bytes are 50–80 % zero, and the run variant was never
/// kept there; raising the share left every LMC delta of `bench_delta.py` (1–95 % of MiniLM's
/// elements changed) and of the digits MLP's steps 0 → 100 byte for byte the same size and
/// compressed those deltas 2.4–3× faster (BENCHMARKS.md, issue 28).
pub const RUN_TRY_SHARE: f64 = 0.8;

/// If `block` is non-empty and is one byte value repeated, returns that value.
pub fn single_value(block: &[u8]) -> Option<u8> {
    let (&first, _) = block.split_first()?;
    let word = u64::from_ne_bytes([first; 8]);
    let (chunks, rest) = block.as_chunks::<8>();
    let all =
        chunks.iter().all(|c| u64::from_ne_bytes(*c) == word) && rest.iter().all(|&b| b == first);
    all.then_some(first)
}

/// One coded unit of a Huffman-with-runs block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// A byte other than the run value.
    Literal(u8),
    /// A maximal run of `2^k + extra` run-value bytes (`extra < 2^k`).
    Run {
        /// Length bucket: the symbol is `256 + k`.
        k: u8,
        /// Raw extra bits (`k` of them).
        extra: u32,
    },
}

/// Length of the run of `v` starting at `q[i]`.
#[inline]
fn run_len(q: &[u8], i: usize, v: u8) -> usize {
    let word = u64::from_ne_bytes([v; 8]);
    let mut j = i;
    let (chunks, _) = q[i..].as_chunks::<8>();
    for c in chunks {
        let x = u64::from_le_bytes(*c) ^ word;
        if x != 0 {
            return j - i + (x.trailing_zeros() / 8) as usize;
        }
        j += 8;
    }
    while j < q.len() && q[j] == v {
        j += 1;
    }
    j - i
}

/// Calls `f` with the tokens of `q` (one quarter of a block) in order.
#[inline]
pub fn for_each_token(q: &[u8], run_value: u8, mut f: impl FnMut(Token)) {
    let mut i = 0;
    while i < q.len() {
        let b = q[i];
        if b == run_value {
            let l = run_len(q, i, run_value);
            let k = usize::BITS - 1 - l.leading_zeros();
            f(Token::Run {
                k: k as u8,
                extra: (l - (1usize << k)) as u32,
            });
            i += l;
        } else {
            f(Token::Literal(b));
            i += 1;
        }
    }
}

/// Token statistics of `block` for the run variant with `run_value`: fills `freqs`
/// (`256 + MAX_RUN_SYMBOLS` entries) and returns `(nrun, extra_bits)` where `nrun` is one more
/// than the largest `k` used (at least 1).
pub fn run_histogram(block: &[u8], run_value: u8, freqs: &mut [u32]) -> (usize, u64) {
    freqs.iter_mut().for_each(|f| *f = 0);
    let q = block.len() / 4;
    let bounds = [0, q, 2 * q, 3 * q, block.len()];
    let mut extra_bits = 0u64;
    let mut max_k = 0usize;
    for w in bounds.windows(2) {
        for_each_token(&block[w[0]..w[1]], run_value, |t| match t {
            Token::Literal(b) => freqs[b as usize] += 1,
            Token::Run { k, .. } => {
                freqs[256 + k as usize] += 1;
                extra_bits += k as u64;
                max_k = max_k.max(k as usize);
            }
        });
    }
    (max_k + 1, extra_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_value_detects_constant_blocks() {
        assert_eq!(single_value(&[]), None);
        assert_eq!(single_value(&[9; 1]), Some(9));
        assert_eq!(single_value(&[9; 100]), Some(9));
        let mut v = vec![9u8; 100];
        v[99] = 8;
        assert_eq!(single_value(&v), None);
        v[99] = 9;
        v[3] = 0;
        assert_eq!(single_value(&v), None);
    }

    #[test]
    fn tokens_cover_input() {
        let q = [0u8, 0, 0, 5, 0, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut toks = Vec::new();
        for_each_token(&q, 0, |t| toks.push(t));
        assert_eq!(
            toks,
            vec![
                Token::Run { k: 1, extra: 1 },
                Token::Literal(5),
                Token::Run { k: 0, extra: 0 },
                Token::Literal(7),
                Token::Literal(7),
                Token::Run { k: 3, extra: 4 },
                Token::Literal(1),
            ]
        );
    }

    #[test]
    fn run_len_handles_long_runs() {
        let mut q = vec![4u8; 1000];
        q[777] = 1;
        assert_eq!(run_len(&q, 0, 4), 777);
        assert_eq!(run_len(&q, 778, 4), 222);
    }
}
