//! Canonical, length-limited Huffman coding of one block, LMC paper §4.2 ("a new Huffman codebook
//! for each block ... encoded in the compressed stream, similar to RFC 1951").
//!
//! ## Alphabet
//! Plain blocks code bytes (symbols 0..=255). Blocks with runs ([`crate::rle`]) add `nrun`
//! run symbols `256 + k` (`k < nrun`), each followed by `k` raw extra bits (see [`crate::rle`]).
//!
//! ## Code lengths
//! Optimal lengths come from the in-place Moffat–Katajainen algorithm; if the longest exceeds
//! the limit they are clamped and the Kraft sum is repaired (lengthen the least frequent,
//! deepest symbols; then shorten the most frequent ones while the code stays prefix-free).
//! Every code written is *complete* (Kraft sum exactly 1; a lone symbol gets a zero-frequency
//! partner), and the decoder rejects any table that is not: with a complete code every table
//! slot is a valid symbol, so the fast loops never meet an invalid entry.
//! The format allows lengths up to [`MAX_CODE_LEN`] = 12; the encoder's limit is a parameter
//! (default [`DEFAULT_CODE_LIMIT`] = 12, chosen by measurement, see [`crate::lmc`]).
//!
//! Codes are canonical (RFC 1951 §3.2.2 order: shorter first, then by symbol), written
//! bit-reversed so that the decoder can index its table with the low bits of an LSB-first
//! bit buffer: the code's first (most significant) bit is the first bit written.
//!
//! All bit fields here are LSB-first: a field of `k` bits holding `v` puts bit 0 of `v` into the
//! lowest free bit of the current byte, and a new byte starts when 8 bits are used. Extra bits
//! (of CL symbols 13..=15 and of run symbols) follow their code immediately.
//!
//! ## Block body layout (after the kind byte, and after `run_value`, `nrun` for run blocks)
//! ```text
//! code-length table, bit-packed LSB-first, zero-padded to a byte boundary:
//!     16 × 3 bits   lengths (0..=7) of the code-length code (CL) for CL symbols 0..=15, in
//!                   symbol order; the CL code is canonical like the main code and must be
//!                   complete
//!     CL-coded sequence of the nsym code lengths (nsym = 256 + nrun), symbol 0 first:
//!         CL 0..=12  the length itself
//!         CL 13      repeat the previous length 3..=6 times   (2 extra bits, + 3)
//!         CL 14      3..=10 zero lengths                      (3 extra bits, + 3)
//!         CL 15      11..=138 zero lengths                    (7 extra bits, + 11)
//! 4 × LEB128 u32    byte sizes s0, s1, s2, s3 of the four bit streams
//! s0 + s1 + s2 + s3 bytes: the four streams, back to back
//! ```
//! A table is rejected ([`DecodeError::InvalidCodeTable`]) if the CL code or the main code is
//! not complete (over- or under-subscribed), if CL 13 comes first, or if a run of lengths goes
//! past `nsym`. Lengths above 12 cannot be expressed.
//! The block's `n` bytes are cut into quarters `[q, q, q, n - 3q]` with `q = n / 4`; stream `j`
//! codes quarter `j` (runs never cross a quarter boundary). Each stream is LSB-first: a code's
//! bits go to the lowest free bits of the current byte; the last byte is zero-padded. A stream
//! must decode to exactly its quarter and end inside its last byte, else
//! [`DecodeError::CorruptBitstream`].

// Where the code is. The format: `histogram` (symbol counts), `lengths` (length-limited canonical
// codes), `table` (the code-length table), `bitio` (LSB-first bit streams, LEB128 sizes). The
// encoder: `encode` (block bodies), `encode_kernels` (its hot loops) and `encode_stride` (flat codes
// of evenly spaced symbols, by arithmetic). The decoder: `lookup`
// (lookup tables), `decode` (block bodies), `decode_kernels` (its hot loops) and `decode_stride`
// (flat codes of evenly spaced symbols, by arithmetic), with `stride` holding what the two
// stride coders share. `prefetch`
// serves both.
pub(crate) mod bitio;
mod decode;
mod decode_kernels;
mod decode_stride;
mod encode;
mod encode_kernels;
mod encode_stride;
mod histogram;
pub(crate) mod lengths;
mod lookup;
mod prefetch;
mod stride;
pub(crate) mod table;

#[cfg(doc)]
use crate::error::DecodeError;
pub(crate) use decode::decode_runs;
pub use decode::{decode_plain, DecodeScratch};
pub(crate) use encode::encode_runs;
pub use encode::{encode_plain, EncodeScratch};
pub use histogram::histogram;
pub(crate) use histogram::{histograms4, Histograms4};
pub use lengths::{build_lengths, code_cost_bits};
pub(crate) use lookup::FLAT_MAX_LEN;
pub(crate) use prefetch::Prefetch;
pub use table::write_table;

/// Longest code length the format allows.
pub const MAX_CODE_LEN: u32 = 12;
/// The encoder's default code-length limit (see the measurement in [`crate::lmc`]).
pub const DEFAULT_CODE_LIMIT: u32 = 12;
/// Most run symbols a block may declare (`k` ≤ 20: runs up to 2^21 − 1 bytes).
pub const MAX_RUN_SYMBOLS: usize = 21;
/// Size of the largest alphabet (bytes + run symbols).
pub const MAX_SYMBOLS: usize = 256 + MAX_RUN_SYMBOLS;

/// Symbols of the code-length code (CL 0..=15).
const CL_SYMBOLS: usize = 16;
/// Longest code of the code-length code (its lengths are 3-bit fields).
const CL_LIMIT: u32 = 7;
/// Slots of the largest decoding table (one per [`MAX_CODE_LEN`]-bit index).
const TABLE_SIZE: usize = 1 << MAX_CODE_LEN;

/// The lengths of the four quarters a block of `n` bytes is cut into (one bit stream each).
pub(crate) fn quarters(n: usize) -> [usize; 4] {
    let q = n / 4;
    [q, q, q, n - 3 * q]
}
