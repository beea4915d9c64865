//! PLMC, the parallel form of LMC (LMC paper §4.3), as a self-describing, versioned stream.
//!
//! The input is cut into **fixed-size segments** of `segment_bytes` (default 1 MiB, a multiple of
//! the element width; only the last segment is shorter). Each segment is an independent LMC
//! stream ([`crate::lmc`]). Unlike the paper (one segment per thread), the segment size never
//! depends on the thread count, so the output bytes are identical for any number of threads, and
//! any segment can be decoded on its own.
//!
//! ## Stream layout (version 1; all integers little-endian)
//! ```text
//! offset  size  field
//!  0      4     magic "BLMC" (42 4C 4D 43)
//!  4      1     version = 1
//!  5      1     width: element size in bytes, 1 | 2 | 4 | 8
//!  6      1     transform: 0 = none, 1 = sign rotation (crate::byte_group); 0 when width = 1
//!  7      1     block_log2: LMC block size per group stream = 2^block_log2, 12..=20
//!  8      8     total_len u64: length of the original data
//! 16      4     segment_bytes u32: size of every segment but the last; a multiple of width,
//!               1..=2^30
//! 20      4     segment_count u32 = ceil(total_len / segment_bytes) (0 when total_len = 0)
//! 24      8×c   segment table, per segment i:
//!                 compressed_len u32    bytes of segment i's LMC stream
//!                 uncompressed_len u32  = segment_bytes, or the remainder for the last segment
//! 24+8c   …     the LMC streams of segments 0..c, back to back; the stream ends exactly after
//!               the last one
//! ```
//! Segment `i` decodes to bytes `[i × segment_bytes, i × segment_bytes + uncompressed_len_i)` of
//! the original. Its LMC stream starts at `24 + 8c + Σ_{j<i} compressed_len_j`.
//!
//! ## Decoder guarantees
//! The decoder checks every header field and table entry before touching payloads, never panics,
//! always terminates in time linear in input + output, and allocates at most the output (which
//! the caller sizes: [`decode()`] first checks that the declared length equals `expected_len` and
//! that the stream could decode to that many bytes at all, [`DecodeError::TooLarge`]) plus one
//! block row (`width × block size`) of scratch per thread. A segment table entry whose
//! uncompressed length could not come from its compressed length is rejected too.
//!
//! ## Streaming
//! [`StreamEncoder`] builds a stream from its input given in pieces of whole segments and
//! [`StreamDecoder`] decodes one a window of whole segments at a time, so a large input or output
//! never has to be in memory at once (the snapshot container streams its large LMC frames this
//! way). The bytes are the same as those of [`encode()`] / [`decode()`].

// Where the code is: `header` (the fixed header and segment table, written and checked),
// `encode` (the stream encoder; its parallel paths in `encode/parallel.rs`), `decode` (the
// segment decoder and the window-by-window stream decoder).
mod decode;
mod encode;
mod header;

use crate::byte_group::Transform;
use crate::error::DecodeError;
use crate::lmc::Width;
use decode::decode_checked;
pub use decode::StreamDecoder;
pub use encode::StreamEncoder;
use header::check_len;
pub use header::{read_header, StreamInfo};

/// The four magic bytes that start a PLMC stream.
pub const MAGIC: [u8; 4] = *b"BLMC";
/// Format version written by this encoder.
pub const VERSION: u8 = 1;
/// Length of the fixed header, before the segment table.
pub const HEADER_LEN: usize = 24;
/// Bytes per segment table entry.
pub const SEGMENT_ENTRY_LEN: usize = 8;
/// Default segment size (1 MiB of input). Segments are the unit of parallelism: on the 45 MB
/// bf16 test file, 2-thread decompression speed-up was 1.83× with 4 MiB segments (11 segments,
/// 6 vs 5 per thread) and 1.94× with 1 MiB (44 segments); the 8-byte table entry per segment
/// costs 0.0008 %, and each group of a 1 MiB segment is a whole number of default blocks for every
/// width (1 MiB / w: 16 blocks of 64 KiB for w = 1, 4 of 128 KiB for w = 2, 4 and 2 of 64 KiB for
/// w = 4 and 8), so no block is cut short and the ratio does not change.
pub const DEFAULT_SEGMENT_BYTES: usize = 1 << 20;
/// Largest segment size (1 GiB).
pub const MAX_SEGMENT_BYTES: usize = 1 << 30;

/// Encoder options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Input bytes per segment (rounded down to a multiple of the width, clamped to
    /// `width..=MAX_SEGMENT_BYTES`). Part of the format: it changes the output.
    pub segment_bytes: usize,
    /// LMC block size per group stream in bytes (rounded down to a power of two, clamped to
    /// 4 KiB..=1 MiB); `None` = the default for the width ([`crate::lmc::default_block_log2`]:
    /// 128 KiB for 2-byte elements, 64 KiB otherwise). Part of the format.
    pub block_bytes: Option<usize>,
    /// Bit transform before grouping. Part of the format.
    pub transform: Transform,
    /// Longest Huffman code the encoder may use (9..=12). Changes the output.
    pub code_limit: u8,
    /// Worker threads: `None` = the current rayon pool (the global one, or the pool whose
    /// `install` we run in; best for repeated calls), `Some(1)` = the calling thread only,
    /// `Some(n)` = a new pool of `n` threads for this call. Never changes the output. Ignored
    /// without feature `parallel`.
    ///
    /// Parallel encoding keeps up to 64 MiB of segment buffers for the next call, and every
    /// thread that encoded or decoded keeps one block row of scratch (≤ w × block size), and
    /// every thread that encoded a block with few distinct bytes its pair tables (768 KiB).
    pub threads: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            block_bytes: None,
            transform: Transform::SignRotate,
            code_limit: crate::huffman::DEFAULT_CODE_LIMIT as u8,
            threads: None,
        }
    }
}

/// Compresses `data` (elements of `width` bytes; a trailing partial element is fine) into a PLMC
/// stream. Never fails; output depends only on `data`, `width` and the format fields of `opts`.
pub fn encode(data: &[u8], width: Width, opts: &Options) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(data, width, opts, &mut out);
    out
}

/// [`encode()`] into a caller-owned buffer: `out` is cleared and receives the stream, reusing its
/// capacity (repeated calls then touch no fresh memory).
pub fn encode_into(data: &[u8], width: Width, opts: &Options, out: &mut Vec<u8>) {
    let mut enc = StreamEncoder::new(data.len() as u64, width, opts, out);
    enc.push(data);
    enc.finish();
}

/// Decompresses a PLMC stream whose original length must be `expected_len`.
///
/// Checks the header (and that the stream could produce `expected_len` bytes) before allocating.
pub fn decode(stream: &[u8], expected_len: usize) -> Result<Vec<u8>, DecodeError> {
    decode_with_threads(stream, expected_len, None)
}

/// [`decode()`] with an explicit thread count (see [`Options::threads`]).
pub(crate) fn decode_with_threads(
    stream: &[u8],
    expected_len: usize,
    threads: Option<usize>,
) -> Result<Vec<u8>, DecodeError> {
    let info = read_header(stream)?;
    check_len(stream, &info, expected_len)?;
    let mut out = vec![0u8; expected_len];
    decode_checked(stream, &info, &mut out, threads)?;
    Ok(out)
}

/// Checks a PLMC stream's header and that it could decode to `expected_len` bytes at all
/// ([`DecodeError::TooLarge`] otherwise), without decoding: what a caller sizing its own output
/// buffer must call first.
pub fn check(stream: &[u8], expected_len: usize) -> Result<StreamInfo, DecodeError> {
    let info = read_header(stream)?;
    check_len(stream, &info, expected_len)?;
    Ok(info)
}

/// Decompresses a PLMC stream into `out`, whose length must be the original length.
pub fn decode_into(stream: &[u8], out: &mut [u8]) -> Result<(), DecodeError> {
    decode_into_with_threads(stream, out, None)
}

/// [`decode_into`] with an explicit thread count (see [`Options::threads`]).
pub fn decode_into_with_threads(
    stream: &[u8],
    out: &mut [u8],
    threads: Option<usize>,
) -> Result<(), DecodeError> {
    let info = read_header(stream)?;
    check_len(stream, &info, out.len())?;
    decode_checked(stream, &info, out, threads)
}

/// Runs `f` with this thread's value of `cache` (an LMC encoder or decoder, whose scratch buffers
/// then survive between calls), or with a fresh one if `f` is already using it further up.
fn with_cached<T: Default + 'static, R>(
    cache: &'static std::thread::LocalKey<std::cell::RefCell<T>>,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    cache.with(|c| match c.try_borrow_mut() {
        Ok(mut c) => f(&mut c),
        Err(_) => f(&mut T::default()),
    })
}
