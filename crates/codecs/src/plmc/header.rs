//! The fixed header and the segment table of a PLMC stream (LMC paper §4.3: "segment count and
//! compressed sizes in the codestream metadata"): written by the encoder, and checked field by
//! field, with every length bound, before a decoder touches a payload.

use super::{HEADER_LEN, MAGIC, MAX_SEGMENT_BYTES, SEGMENT_ENTRY_LEN, VERSION};
use crate::byte_group::Transform;
use crate::error::DecodeError;
use crate::lmc::{self, Params, Width};

/// What a PLMC header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamInfo {
    /// LMC parameters shared by all segments.
    pub params: Params,
    /// Original length in bytes.
    pub total_len: u64,
    /// Size of every segment but the last.
    pub segment_bytes: u32,
    /// Number of segments.
    pub segment_count: u32,
}

impl StreamInfo {
    /// Offset of the first segment payload.
    pub fn payload_offset(&self) -> u64 {
        HEADER_LEN as u64 + self.segment_count as u64 * SEGMENT_ENTRY_LEN as u64
    }
}

/// The fixed header and the segment table of a stream of `total_len` bytes cut into segments of
/// `seg` bytes, every compressed length 0 (the encoder patches each in once its segment is coded).
pub(super) fn header_bytes(params: &Params, total_len: u64, seg: usize) -> Vec<u8> {
    let count = total_len.div_ceil(seg as u64) as usize;
    let mut head = Vec::with_capacity(HEADER_LEN + SEGMENT_ENTRY_LEN * count);
    head.extend_from_slice(&MAGIC);
    head.push(VERSION);
    head.push(params.width.bytes() as u8);
    head.push(params.transform.to_byte());
    head.push(params.block_log2);
    head.extend_from_slice(&total_len.to_le_bytes());
    head.extend_from_slice(&(seg as u32).to_le_bytes());
    head.extend_from_slice(&(count as u32).to_le_bytes());
    for i in 0..count as u64 {
        let ulen = (total_len - i * seg as u64).min(seg as u64) as u32;
        head.extend_from_slice(&[0; 4]); // compressed length, patched in by the encoder
        head.extend_from_slice(&ulen.to_le_bytes());
    }
    head
}

fn read_u32(stream: &[u8], off: usize) -> Result<u32, DecodeError> {
    read_array(stream, off).map(u32::from_le_bytes)
}

/// The `N` bytes of `stream` at `off`.
fn read_array<const N: usize>(stream: &[u8], off: usize) -> Result<[u8; N], DecodeError> {
    stream
        .get(off..)
        .and_then(<[u8]>::first_chunk::<N>)
        .copied()
        .ok_or(DecodeError::Truncated {
            offset: off as u64,
            needed: N as u64,
            available: stream.len().saturating_sub(off) as u64,
        })
}

/// Parses and validates the fixed header of a PLMC stream (not the segment table).
pub fn read_header(stream: &[u8]) -> Result<StreamInfo, DecodeError> {
    if let Some(&found) = stream.first_chunk::<4>() {
        if found != MAGIC {
            return Err(DecodeError::BadMagic { found });
        }
    }
    if stream.len() < HEADER_LEN {
        return Err(DecodeError::Truncated {
            offset: 0,
            needed: HEADER_LEN as u64,
            available: stream.len() as u64,
        });
    }
    if stream[4] != VERSION {
        return Err(DecodeError::UnsupportedVersion { version: stream[4] });
    }
    let bad = |offset: u64, field: &'static str, value: u64| DecodeError::BadHeader {
        offset,
        field,
        value,
    };
    let width = Width::from_bytes(stream[5] as usize).ok_or(bad(5, "width", stream[5] as u64))?;
    let transform = Transform::from_byte(stream[6]).ok_or(bad(6, "transform", stream[6] as u64))?;
    let block_log2 = stream[7];
    if !(lmc::MIN_BLOCK_LOG2..=lmc::MAX_BLOCK_LOG2).contains(&block_log2) {
        return Err(bad(7, "block_log2", block_log2 as u64));
    }
    let total_len = u64::from_le_bytes(read_array(stream, 8)?);
    let segment_bytes = read_u32(stream, 16)?;
    let segment_count = read_u32(stream, 20)?;
    let w = width.bytes() as u32;
    if segment_bytes == 0 || segment_bytes as usize > MAX_SEGMENT_BYTES || segment_bytes % w != 0 {
        return Err(bad(16, "segment_bytes", segment_bytes as u64));
    }
    if total_len.div_ceil(segment_bytes as u64) != segment_count as u64 {
        return Err(bad(20, "segment_count", segment_count as u64));
    }
    Ok(StreamInfo {
        params: Params {
            width,
            transform,
            block_log2,
            code_limit: crate::huffman::MAX_CODE_LEN as u8,
        },
        total_len,
        segment_bytes,
        segment_count,
    })
}

/// The most bytes a `stream_len`-byte stream with blocks of `2^block_log2` could decode to
/// (every block costs at least two bytes).
fn max_decoded_len(stream_len: usize, block_log2: u8) -> u64 {
    (stream_len as u64 / 2).saturating_mul(1u64 << block_log2) + 8
}

/// One validated segment: payload range in the stream and output length.
pub(super) struct Segment {
    pub(super) payload: std::ops::Range<usize>,
    pub(super) out_len: usize,
}

pub(super) fn read_segments(stream: &[u8], info: &StreamInfo) -> Result<Vec<Segment>, DecodeError> {
    let count = info.segment_count as usize;
    let table_end = HEADER_LEN as u64 + count as u64 * SEGMENT_ENTRY_LEN as u64;
    if table_end > stream.len() as u64 {
        return Err(DecodeError::Truncated {
            offset: HEADER_LEN as u64,
            needed: table_end - HEADER_LEN as u64,
            available: (stream.len() - HEADER_LEN) as u64,
        });
    }
    let mut segs = Vec::with_capacity(count);
    let mut pos = table_end as usize;
    for i in 0..count {
        let entry = HEADER_LEN + i * SEGMENT_ENTRY_LEN;
        let clen = read_u32(stream, entry)? as usize;
        let ulen = read_u32(stream, entry + 4)? as u64;
        let expect = if i + 1 < count {
            info.segment_bytes as u64
        } else {
            info.total_len - (count as u64 - 1) * info.segment_bytes as u64
        };
        if ulen != expect {
            return Err(DecodeError::SegmentOutOfBounds {
                segment: i as u64,
                offset: entry as u64 + 4,
                len: ulen,
                stream_len: stream.len() as u64,
                reason: "uncompressed length differs from the fixed segment size",
            });
        }
        if clen > stream.len() - pos {
            return Err(DecodeError::SegmentOutOfBounds {
                segment: i as u64,
                offset: pos as u64,
                len: clen as u64,
                stream_len: stream.len() as u64,
                reason: "compressed payload runs past the end of the stream",
            });
        }
        if ulen > max_decoded_len(clen, info.params.block_log2) {
            return Err(DecodeError::SegmentOutOfBounds {
                segment: i as u64,
                offset: pos as u64,
                len: ulen,
                stream_len: stream.len() as u64,
                reason: "payload too small for its uncompressed length",
            });
        }
        segs.push(Segment {
            payload: pos..pos + clen,
            out_len: ulen as usize,
        });
        pos += clen;
    }
    if pos != stream.len() {
        return Err(DecodeError::TrailingBytes {
            offset: pos as u64,
            count: (stream.len() - pos) as u64,
        });
    }
    Ok(segs)
}

pub(super) fn check_len(
    stream: &[u8],
    info: &StreamInfo,
    expected: usize,
) -> Result<(), DecodeError> {
    if info.total_len != expected as u64 {
        return Err(DecodeError::LengthMismatch {
            expected: expected as u64,
            actual: info.total_len,
        });
    }
    let bound = max_decoded_len(stream.len(), info.params.block_log2);
    if info.total_len > bound {
        return Err(DecodeError::TooLarge {
            declared: info.total_len,
            bound,
            stream_len: stream.len() as u64,
        });
    }
    Ok(())
}
