//! Snapshot reader: opens the trailer and index and checks the stored header against the index
//! (LMC §4's container); [`decode`] decodes one tensor or the whole original file, verifying
//! every checksum and (for deltas) the base.
//!
//! Allocation is bounded by the input: the index is read only after its length is checked against
//! the file size, and a frame is decoded into at most [`crate::format::FRAME_BYTES`] of memory;
//! LMC frames larger than [`STREAM_WINDOW`] are decoded, checksummed and handed over one window at
//! a time, so they need only their compressed payload and one window.
//!
//! Smaller frames are decoded on the ordered pipeline ([`crate::pipeline`], issue 16): every
//! thread of the pool reads and decodes frames (small tensors' frames grouped up to one LMC
//! frame's bytes) into a ring of reused buffers, while the calling thread checksums and hands
//! them over in file order, decoding too whenever the next frame is not ready. Errors still come
//! in file order. `bitlens --threads 2 decompress big-bf16.bls -o /dev/null` (1.09 GB): 164 → 123
//! ms (1.95× one thread; batches of one frame per thread before gave 1.44×).

use crate::error::SnapshotError;
use crate::format::{self, BaseRef, Entry, FLAG_DELTA, FLAG_LOSSY, TRAILER_LEN};
use crate::pipeline::GrowBuf;
use bitlens_tensors::{Header, ReadAt};

mod decode;

pub use decode::Decoding;

/// A byte source the reader can use: [`ReadAt`], and `Sync` when frames decode in parallel.
#[cfg(feature = "parallel")]
pub trait Source: ReadAt + Sync {}
#[cfg(feature = "parallel")]
impl<T: ReadAt + Sync + ?Sized> Source for T {}
/// A byte source the reader can use: [`ReadAt`], and `Sync` when frames decode in parallel.
#[cfg(not(feature = "parallel"))]
pub trait Source: ReadAt {}
#[cfg(not(feature = "parallel"))]
impl<T: ReadAt + ?Sized> Source for T {}

/// The base checkpoint of a delta snapshot: a safetensors source and its parsed header.
pub struct BaseSource<'a> {
    /// The base file.
    pub src: &'a dyn Source,
    /// Its header.
    pub header: &'a Header,
}

impl BaseSource<'_> {
    /// The reference a delta snapshot records for this base.
    pub fn reference(&self) -> BaseRef {
        let mut prefix = (self.header.header_len).to_le_bytes().to_vec();
        prefix.extend_from_slice(&self.header.raw);
        BaseRef {
            header_hash: crate::checksum(&prefix),
            file_size: self.header.file_size,
        }
    }
}

/// An opened snapshot.
pub struct SnapshotReader<R: Source> {
    pub(super) src: R,
    /// Format flags (lossy, delta).
    pub flags: u32,
    /// The original file's first `8 + N` bytes.
    pub prefix: Vec<u8>,
    /// The original file's header, parsed from `prefix`.
    pub header: Header,
    /// The base this delta was made against.
    pub base: Option<BaseRef>,
    /// One entry per tensor, in the original order (version 3: one per piece, in file order).
    pub entries: Vec<Entry>,
    /// Version 3 (a file of another format than safetensors): its size and format. `prefix` is
    /// then this description and `header` the piece header ([`crate::layout::piece_header`]).
    pub original: Option<Original>,
    /// Version 4: the annex (snapshot-wide data of a codec, [`crate::inshrink::Annex`]).
    pub annex: Option<Vec<u8>>,
    /// xxh3-64 of the index (from the trailer, verified): identifies the snapshot's contents
    /// (every tensor's checksum and frame extents), e.g. as the base of an Inshrinkerator chain.
    pub index_checksum: u64,
}

/// The original file of a version 3 snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Original {
    /// Its size.
    pub size: u64,
    /// Its format's name (`GGUF v3`, `PyTorch zip`, `NumPy .npz`, …).
    pub kind: String,
}

/// Reads `len` bytes at `offset` into a new buffer, after checking that they lie inside the
/// source: allocation never exceeds the source's size.
pub(super) fn read_vec<R: ReadAt + ?Sized>(
    src: &R,
    what: &'static str,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, SnapshotError> {
    check_span(src, what, offset, len)?;
    let mut buf = vec![0; len as usize];
    src.read_exact_at(offset, &mut buf)?;
    Ok(buf)
}

/// An error unless `len` bytes at `offset` lie inside `src`.
fn check_span<R: ReadAt + ?Sized>(
    src: &R,
    what: &'static str,
    offset: u64,
    len: u64,
) -> Result<(), SnapshotError> {
    let size = src.size();
    if offset.checked_add(len).is_none_or(|e| e > size) {
        return Err(SnapshotError::Truncated {
            what,
            offset,
            end: offset.saturating_add(len),
            size,
        });
    }
    Ok(())
}

/// The `len` bytes at `offset` of `src`, after checking that they lie inside it: in place where
/// the source holds them in memory (a mapped file, [`ReadAt::bytes_at`]), else read into `buf`
/// (a buffer that only grows, [`GrowBuf`]).
pub(super) fn bytes_or_read<'a, R: ReadAt + ?Sized>(
    src: &'a R,
    what: &'static str,
    offset: u64,
    len: u64,
    buf: &'a mut GrowBuf,
) -> Result<&'a [u8], SnapshotError> {
    check_span(src, what, offset, len)?;
    if let Some(b) = src.bytes_at(offset, len as usize) {
        return Ok(b);
    }
    src.read_exact_at(offset, buf.ready(len as usize))?;
    Ok(buf.bytes())
}

/// The little-endian `u32` at `at` of a buffer read whole (`at + 4` ≤ its length; 0 past it).
fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..)
        .and_then(<[u8]>::first_chunk)
        .map_or(0, |&a| u32::from_le_bytes(a))
}

/// The little-endian `u64` at `at` of a buffer read whole (`at + 8` ≤ its length; 0 past it).
fn u64_at(b: &[u8], at: usize) -> u64 {
    b.get(at..)
        .and_then(<[u8]>::first_chunk)
        .map_or(0, |&a| u64::from_le_bytes(a))
}

impl<R: Source> SnapshotReader<R> {
    /// Opens a snapshot: checks magic, version and trailer, reads and validates the index and the
    /// stored safetensors header.
    pub fn open(src: R) -> Result<Self, SnapshotError> {
        let size = src.size();
        let fixed = read_vec(&src, "preamble", 0, 24.min(size))?;
        if fixed.len() < 8 || fixed[..8] != format::MAGIC {
            return Err(SnapshotError::BadMagic {
                offset: 0,
                found: fixed[..fixed.len().min(8)].to_vec(),
            });
        }
        if fixed.len() < 24 {
            return Err(SnapshotError::Truncated {
                what: "preamble",
                offset: 0,
                end: 24,
                size,
            });
        }
        let version = u32_at(&fixed, 8);
        if ![
            format::VERSION_1,
            format::VERSION,
            format::VERSION_3,
            format::VERSION_4,
        ]
        .contains(&version)
        {
            return Err(SnapshotError::UnsupportedVersion {
                version,
                supported: format::VERSION_4,
            });
        }
        let flags = u32_at(&fixed, 12);
        let prefix_len = u64_at(&fixed, 16);
        if size < TRAILER_LEN {
            return Err(SnapshotError::Truncated {
                what: "trailer",
                offset: 0,
                end: TRAILER_LEN,
                size,
            });
        }
        let trailer = read_vec(&src, "trailer", size - TRAILER_LEN, TRAILER_LEN)?;
        if trailer[24..] != format::END_MAGIC {
            return Err(SnapshotError::BadMagic {
                offset: size - 8,
                found: trailer[24..].to_vec(),
            });
        }
        let (index_offset, index_len, index_sum) = (
            u64_at(&trailer, 0),
            u64_at(&trailer, 8),
            u64_at(&trailer, 16),
        );
        let index_end = index_offset.checked_add(index_len);
        if index_end != Some(size - TRAILER_LEN) {
            return Err(SnapshotError::Truncated {
                what: "index (per trailer)",
                offset: index_offset,
                end: index_offset.saturating_add(index_len),
                size: size - TRAILER_LEN,
            });
        }
        if version == format::VERSION_3 && !(8..=format::MAX_DESCRIPTION).contains(&prefix_len) {
            return Err(SnapshotError::HeaderMismatch {
                reason: format!(
                    "description of the original file is {prefix_len} bytes (8..={})",
                    format::MAX_DESCRIPTION
                ),
            });
        }
        let prefix = read_vec(&src, "stored safetensors header", 24, prefix_len)?;
        let mut frames_start = 24 + prefix_len;
        if version >= format::VERSION {
            let sum = read_vec(&src, "stored header checksum", frames_start, 8)?;
            frames_start += 8;
            let (expected, actual) = (u64_at(&sum, 0), crate::checksum(&prefix));
            if expected != actual {
                return Err(SnapshotError::PrefixChecksum { expected, actual });
            }
        }
        let base = if flags & FLAG_DELTA != 0 {
            let b = read_vec(&src, "base reference", frames_start, 16)?;
            frames_start += 16;
            Some(BaseRef {
                header_hash: u64_at(&b, 0),
                file_size: u64_at(&b, 8),
            })
        } else {
            None
        };
        let annex = if version == format::VERSION_4 {
            let len = read_vec(&src, "annex length", frames_start, 4)?;
            let len = u64::from(u32_at(&len, 0));
            if len > format::MAX_ANNEX {
                return Err(SnapshotError::HeaderMismatch {
                    reason: format!("annex of {len} bytes (at most {})", format::MAX_ANNEX),
                });
            }
            let annex = read_vec(&src, "annex", frames_start + 4, len)?;
            let sum = read_vec(&src, "annex checksum", frames_start + 4 + len, 8)?;
            frames_start += 12 + len;
            let (expected, actual) = (u64_at(&sum, 0), crate::checksum(&annex));
            if expected != actual {
                return Err(SnapshotError::AnnexChecksum { expected, actual });
            }
            Some(annex)
        } else {
            None
        };
        if frames_start > index_offset {
            return Err(SnapshotError::Truncated {
                what: "frames (index starts before the preamble ends)",
                offset: frames_start,
                end: frames_start,
                size: index_offset,
            });
        }
        let index = read_vec(&src, "index", index_offset, index_len)?;
        let actual = crate::checksum(&index);
        if actual != index_sum {
            return Err(SnapshotError::IndexChecksum {
                expected: index_sum,
                actual,
            });
        }
        let entries = format::read_index(&index, (frames_start, index_offset), version)?;
        let (header, original) = if version == format::VERSION_3 {
            let (header, original) = pieces_header(&prefix, &entries, base.is_some())?;
            (header, Some(original))
        } else {
            (safetensors_header(&prefix, &entries, base.is_some())?, None)
        };
        Ok(SnapshotReader {
            src,
            flags,
            prefix,
            header,
            base,
            entries,
            original,
            annex,
            index_checksum: index_sum,
        })
    }

    /// The stored payload of frame `frame` of entry `tensor` (for codecs decoded outside the
    /// generic path, [`crate::inshrink`]).
    pub fn frame_payload(&self, tensor: usize, frame: usize) -> Result<Vec<u8>, SnapshotError> {
        let f = self
            .entries
            .get(tensor)
            .and_then(|e| e.frames.get(frame))
            .ok_or_else(|| SnapshotError::Misuse(format!("no frame {frame} of entry #{tensor}")))?;
        read_vec(&self.src, "frame", f.offset, f.stored_len)
    }

    /// True when some tensor was stored lossily.
    pub fn is_lossy(&self) -> bool {
        self.flags & FLAG_LOSSY != 0
    }

    /// Size of the original safetensors file.
    pub fn original_size(&self) -> u64 {
        self.header.file_size
    }

    /// The index of the tensor with this name.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.name == name)
    }

    /// Checks that `base` is the checkpoint the delta was made against (header hash and size), or
    /// that no base is needed.
    pub fn check_base(&self, base: Option<&BaseSource>) -> Result<(), SnapshotError> {
        match (self.base, base) {
            (None, _) => Ok(()),
            (Some(want), None) => Err(SnapshotError::BaseRequired {
                base_header_hash: want.header_hash,
            }),
            (Some(want), Some(b)) => {
                let got = b.reference();
                if got != want {
                    return Err(SnapshotError::WrongBase {
                        reason: format!(
                            "the snapshot was made against a {}-byte file with header hash {:016x}, the given base is {} bytes with header hash {:016x}",
                            want.file_size, want.header_hash, got.file_size, got.header_hash
                        ),
                    });
                }
                Ok(())
            }
        }
    }
}

/// The piece header and description of a version 3 snapshot, checked against its index: the
/// pieces tile the original file (their lengths add up to its size), names are unique, deltas
/// have a base.
fn pieces_header(
    prefix: &[u8],
    entries: &[Entry],
    has_base: bool,
) -> Result<(Header, Original), SnapshotError> {
    let original_size = u64_at(prefix, 0);
    let kind = std::str::from_utf8(&prefix[8..])
        .map_err(|_| SnapshotError::HeaderMismatch {
            reason: "the original format's name is not UTF-8".into(),
        })?
        .to_owned();
    let table: Vec<_> = entries
        .iter()
        .map(|e| {
            let info = e.piece.clone().expect("version 3 entries have pieces");
            (e.name.clone(), info, e.raw_len)
        })
        .collect();
    // The pieces tile the original file: lengths add up to its size, names are unique.
    let header = crate::layout::piece_header(&table, original_size)?;
    if let Some(e) = entries.iter().find(|e| e.delta && !has_base) {
        return Err(SnapshotError::HeaderMismatch {
            reason: format!("entry `{}` is a delta but the snapshot has no base", e.name),
        });
    }
    Ok((
        header,
        Original {
            size: original_size,
            kind,
        },
    ))
}

/// The stored safetensors header of a version 1 or 2 snapshot, checked against its index.
fn safetensors_header(
    prefix: &[u8],
    entries: &[Entry],
    has_base: bool,
) -> Result<Header, SnapshotError> {
    let prefix_len = prefix.len() as u64;
    let data_len = entries
        .iter()
        .try_fold(0u64, |acc, e| acc.checked_add(e.raw_len))
        .ok_or_else(|| SnapshotError::HeaderMismatch {
            reason: "tensor lengths overflow".into(),
        })?;
    let header = Header::parse(prefix, prefix_len.saturating_add(data_len))?;
    if header.data_start() != prefix_len {
        return Err(SnapshotError::HeaderMismatch {
            reason: format!(
                "stored prefix is {prefix_len} bytes but its header ends at {}",
                header.data_start()
            ),
        });
    }
    if header.tensors.len() != entries.len() {
        return Err(SnapshotError::HeaderMismatch {
            reason: format!(
                "header lists {} tensors, index {}",
                header.tensors.len(),
                entries.len()
            ),
        });
    }
    for (t, e) in header.tensors.iter().zip(entries) {
        if t.name != e.name || t.byte_len() != e.raw_len || e.delta && !has_base {
            return Err(SnapshotError::HeaderMismatch {
                reason: format!(
                    "index tensor `{}` does not match header tensor `{}`",
                    e.name, t.name
                ),
            });
        }
    }
    Ok(header)
}
