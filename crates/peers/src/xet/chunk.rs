//! One stored chunk as the hub writes it into a xorb (xet-core
//! `xet_core_structures/src/xorb_object/xorb_chunk_format.rs`, `XorbChunkHeader` and
//! `serialize_chunk`; the schemes in `xet_core_structures/src/xorb_object/compression_scheme.rs`).
//!
//! An 8-byte header — version (0), compressed length (3 bytes, little-endian), scheme (0 None,
//! 1 LZ4, 2 BG4-LZ4), uncompressed length (3 bytes, little-endian) — then the payload:
//! - LZ4: the chunk as one LZ4 frame (`lz4_flex::frame::FrameEncoder` with its default frame
//!   settings, as the hub calls it);
//! - BG4-LZ4: the chunk's four byte groups ([`super::bg4`]) as one LZ4 frame;
//! - None: the chunk as it is. The hub stores a chunk this way whenever its compressed payload
//!   is not shorter than the chunk itself.

use super::bg4;
use super::chunker::MAX_CHUNK;
use super::Bg4Lz4Error;
use std::io::{Read, Write};

/// The length of a chunk header.
pub const HEADER_LEN: usize = 8;

/// How one chunk is stored (the header's scheme byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Stored as it is.
    None = 0,
    /// One LZ4 frame of the chunk.
    Lz4 = 1,
    /// One LZ4 frame of the chunk's four byte groups.
    Bg4Lz4 = 2,
}

impl Scheme {
    /// The scheme of a header's byte, if it names one a stored chunk may carry.
    pub fn from_byte(b: u8) -> Option<Scheme> {
        match b {
            0 => Some(Scheme::None),
            1 => Some(Scheme::Lz4),
            2 => Some(Scheme::Bg4Lz4),
            _ => None,
        }
    }
}

/// A parsed chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// How the payload is stored.
    pub scheme: Scheme,
    /// Payload bytes after the header.
    pub compressed: usize,
    /// Bytes of the chunk.
    pub uncompressed: usize,
}

impl Header {
    /// The 8 bytes of this header.
    pub fn to_bytes(self) -> [u8; HEADER_LEN] {
        let c = (self.compressed as u32).to_le_bytes();
        let u = (self.uncompressed as u32).to_le_bytes();
        [0, c[0], c[1], c[2], self.scheme as u8, u[0], u[1], u[2]]
    }

    /// Parses and checks a header as the hub's reader does: version 0, a known scheme, an
    /// uncompressed length of at most [`MAX_CHUNK`] and a compressed one of at most twice that.
    pub fn parse(b: [u8; HEADER_LEN]) -> Result<Header, Bg4Lz4Error> {
        if b[0] != 0 {
            return Err(Bg4Lz4Error::Version(b[0]));
        }
        let scheme = Scheme::from_byte(b[4]).ok_or(Bg4Lz4Error::Scheme(b[4]))?;
        let compressed = u32::from_le_bytes([b[1], b[2], b[3], 0]) as usize;
        let uncompressed = u32::from_le_bytes([b[5], b[6], b[7], 0]) as usize;
        if uncompressed > MAX_CHUNK || compressed > 2 * MAX_CHUNK {
            return Err(Bg4Lz4Error::Length {
                compressed,
                uncompressed,
            });
        }
        Ok(Header {
            scheme,
            compressed,
            uncompressed,
        })
    }
}

/// Appends `data` as one LZ4 frame to `out`, with the encoder's default frame settings.
fn frame_into(data: &[u8], out: &mut Vec<u8>) -> Result<(), Bg4Lz4Error> {
    let mut enc = lz4_flex::frame::FrameEncoder::new(out);
    enc.write_all(data)?;
    enc.finish().map_err(std::io::Error::from)?;
    Ok(())
}

/// Appends `chunk` (at most [`MAX_CHUNK`] bytes) to `out`, header and payload, compressed with
/// `scheme` — or stored as it is if that is not shorter. `scratch` holds the byte groups.
pub fn write(
    chunk: &[u8],
    scheme: Scheme,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<Scheme, Bg4Lz4Error> {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_LEN]);
    let body = out.len();
    match scheme {
        Scheme::None => {}
        Scheme::Lz4 => frame_into(chunk, out)?,
        Scheme::Bg4Lz4 => {
            scratch.resize(chunk.len(), 0);
            bg4::split(chunk, scratch);
            frame_into(scratch, out)?;
        }
    }
    let mut stored = scheme;
    if scheme == Scheme::None || out.len() - body >= chunk.len() {
        stored = Scheme::None;
        out.truncate(body);
        out.extend_from_slice(chunk);
    }
    let header = Header {
        scheme: stored,
        compressed: out.len() - body,
        uncompressed: chunk.len(),
    };
    out[start..body].copy_from_slice(&header.to_bytes());
    Ok(stored)
}

/// Decodes one LZ4 frame that must hold exactly `out.len()` bytes into `out`.
fn unframe(payload: &[u8], out: &mut [u8]) -> Result<(), Bg4Lz4Error> {
    let mut dec = lz4_flex::frame::FrameDecoder::new(payload);
    dec.read_exact(out)
        .map_err(|e| Bg4Lz4Error::Lz4(e.to_string()))?;
    let mut extra = [0u8; 1];
    match dec.read(&mut extra) {
        Ok(0) => Ok(()),
        Ok(_) => Err(Bg4Lz4Error::Lz4(
            "the frame holds more than its chunk".into(),
        )),
        Err(e) => Err(Bg4Lz4Error::Lz4(e.to_string())),
    }
}

/// Restores one chunk of `header` from its `payload` into `out` (`header.uncompressed` bytes);
/// `scratch` holds the byte groups.
pub fn read(
    header: Header,
    payload: &[u8],
    out: &mut [u8],
    scratch: &mut Vec<u8>,
) -> Result<(), Bg4Lz4Error> {
    match header.scheme {
        Scheme::None if payload.len() == out.len() => out.copy_from_slice(payload),
        Scheme::None => {
            return Err(Bg4Lz4Error::Length {
                compressed: payload.len(),
                uncompressed: out.len(),
            })
        }
        Scheme::Lz4 => unframe(payload, out)?,
        Scheme::Bg4Lz4 => {
            scratch.resize(out.len(), 0);
            unframe(payload, scratch)?;
            bg4::regroup(scratch, out);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_laid_out_as_published() {
        let h = Header {
            scheme: Scheme::Bg4Lz4,
            compressed: 0x01_0203,
            uncompressed: 0x02_0000,
        };
        assert_eq!(h.to_bytes(), [0, 3, 2, 1, 2, 0, 0, 2]);
        assert_eq!(Header::parse(h.to_bytes()).unwrap(), h);
        assert!(matches!(
            Header::parse([1, 0, 0, 0, 0, 0, 0, 0]),
            Err(Bg4Lz4Error::Version(1))
        ));
        // 99, the hub's `Auto`, is never stored.
        assert!(matches!(
            Header::parse([0, 0, 0, 0, 99, 0, 0, 0]),
            Err(Bg4Lz4Error::Scheme(99))
        ));
        assert!(matches!(
            Header::parse([0, 0, 0, 0, 1, 1, 0, 2]),
            Err(Bg4Lz4Error::Length { .. })
        ));
    }

    /// A chunk LZ4 cannot shrink is stored as it is, whatever scheme was asked for.
    #[test]
    fn incompressible_chunks_are_stored() {
        let data = bitlens_test_support::rng::bytes(7, 4096);
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        let stored = write(&data, Scheme::Bg4Lz4, &mut out, &mut scratch).unwrap();
        assert_eq!(stored, Scheme::None);
        assert_eq!(out.len(), HEADER_LEN + data.len());
        assert_eq!(out[HEADER_LEN..], data[..]);
        let zeros = [0u8; 4096];
        out.clear();
        assert_eq!(
            write(&zeros, Scheme::Lz4, &mut out, &mut scratch).unwrap(),
            Scheme::Lz4
        );
        // The payload is an LZ4 frame: its magic number first.
        assert_eq!(out[HEADER_LEN..HEADER_LEN + 4], [0x04, 0x22, 0x4d, 0x18]);
    }
}
