//! The error types of the codecs: [`DecodeError`] for the decoders of every stream (LMC paper
//! §4.2 / §4.3, NeuZip, BitSnap) and [`SettingsError`] for encoder settings.
//!
//! Decoders treat bad input as normal input: every rejection is a [`DecodeError`] variant that
//! names what was wrong and where. All `offset` fields are absolute byte offsets into the stream
//! handed to the decoder (for [`crate::plmc::decode`], the whole PLMC stream; for
//! [`crate::lmc::decode_into`], the LMC payload plus the `base_offset` the caller passed).
//! Encoders never fail: settings a codec cannot take are refused when they are built, with a
//! [`SettingsError`] that names the setting and its value.

use crate::float::FloatFormat;
use thiserror::Error;

/// Why encoder settings were refused (by the constructor of the settings type, so that an
/// encoder never meets them).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SettingsError {
    /// NeuZip: lossy settings keep 0, 1 or 3 mantissa bits (lossless ones all of them).
    #[error("NeuZip mantissa_bits = {value} for {format:?}: lossy keeps 0, 1 or 3, lossless all of them")]
    MantissaBits {
        /// The float format.
        format: FloatFormat,
        /// The mantissa bits asked for.
        value: u32,
    },
    /// NeuZip: the normalization block of lossy settings is 32, 64, 128, 256 or 512 values.
    #[error("NeuZip norm_block = {value}: must be 32, 64, 128, 256 or 512")]
    NormBlock {
        /// The block size asked for.
        value: usize,
    },
    /// BitSnap quantization: 1..=16 clusters (labels are 4 bits).
    #[error("BitSnap clusters = {value}: must be 1..=16 (labels are 4 bits)")]
    Clusters {
        /// The cluster count asked for.
        value: usize,
    },
}

/// Why a compressed stream was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The stream ended before a field or payload that must be there.
    #[error("stream truncated at offset {offset}: needed {needed} bytes, {available} available")]
    Truncated {
        /// Where the missing field or payload starts.
        offset: u64,
        /// How many bytes were needed from `offset`.
        needed: u64,
        /// How many bytes the stream still had from `offset`.
        available: u64,
    },
    /// The stream does not start with the PLMC magic `BLMC`.
    #[error("bad magic {found:02x?}, expected \"BLMC\"")]
    BadMagic {
        /// The first four bytes found.
        found: [u8; 4],
    },
    /// The format version is not one this decoder knows.
    #[error("unsupported PLMC version {version}")]
    UnsupportedVersion {
        /// The version byte found.
        version: u8,
    },
    /// A header field holds a value the format does not allow.
    #[error("invalid header field `{field}` = {value} at offset {offset}")]
    BadHeader {
        /// Offset of the field.
        offset: u64,
        /// Name of the field (`width`, `transform`, `block_log2`, `segment_bytes`, `segment_count`).
        field: &'static str,
        /// The value found.
        value: u64,
    },
    /// The decoded length differs from what the caller expects (or from what the header says).
    #[error("length mismatch: expected {expected} bytes, stream holds {actual}")]
    LengthMismatch {
        /// The length the caller asked for.
        expected: u64,
        /// The length the stream declares.
        actual: u64,
    },
    /// The declared output is larger than this input could ever decode to, so no buffer is
    /// allocated for it.
    #[error("declared length {declared} exceeds the bound {bound} this {stream_len}-byte stream can justify")]
    TooLarge {
        /// The length declared by header or caller.
        declared: u64,
        /// The most the stream could decode to.
        bound: u64,
        /// The stream length.
        stream_len: u64,
    },
    /// A segment table entry is inconsistent with the header or points outside the stream.
    #[error(
        "segment {segment}: {reason} (offset {offset}, length {len}, stream length {stream_len})"
    )]
    SegmentOutOfBounds {
        /// Index of the segment.
        segment: u64,
        /// Offset the segment (or its table entry) starts at.
        offset: u64,
        /// Compressed or uncompressed length involved, see `reason`.
        len: u64,
        /// Total stream length.
        stream_len: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A block header carries a kind byte that is not Raw (0), Run (1), Huffman (2) or
    /// Huffman-with-runs (3).
    #[error("bad block kind {kind} at offset {offset}")]
    BadBlockKind {
        /// Offset of the kind byte.
        offset: u64,
        /// The kind byte found.
        kind: u8,
    },
    /// A Huffman block's code-length table is malformed (over- or under-subscribed lengths,
    /// lengths over the limit, a bad run count, ...).
    #[error("invalid code table in block at offset {block}: {reason}")]
    InvalidCodeTable {
        /// Offset of the block's kind byte.
        block: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A Huffman bit stream does not decode to exactly its block's bytes.
    #[error("corrupt bit stream {stream} of block at offset {block}: {reason}")]
    CorruptBitstream {
        /// Offset of the block's kind byte.
        block: u64,
        /// Which of the four interleaved streams (0..4).
        stream: u8,
        /// What is wrong.
        reason: &'static str,
    },
    /// A segment payload has bytes left after its last block and tail.
    #[error("{count} unexpected trailing bytes at offset {offset}")]
    TrailingBytes {
        /// Offset of the first unused byte.
        offset: u64,
        /// How many bytes are unused.
        count: u64,
    },
}
