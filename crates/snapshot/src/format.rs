//! The byte layout of a snapshot (all integers little-endian; docs/FORMAT.md is the full spec).
//!
//! ```text
//! PREAMBLE  magic "BITLENS\0" (8) | version u32 = 2 | flags u32 (bit 0 lossy, bit 1 delta)
//!           | prefix_len u64 | prefix (the original file's first 8 + N bytes, verbatim)
//!           | prefix_checksum u64 (xxh3-64 of the prefix; absent in version 1)
//!           | if delta: base_header_hash u64 | base_file_size u64
//!           | version 4 only: annex_len u32 | annex | annex_checksum u64 (xxh3-64 of the annex)
//! FRAMES    every tensor's frame payloads, tensor by tensor, frame by frame
//! INDEX     tensor_count u32, then per tensor (in the original offset order):
//!             name_len u32 | name (UTF-8) | codec u8 | params_len u16 | params
//!             | delta u8 (0 none, 1 XOR with the base tensor of the same name)
//!             | raw_len u64 | checksum u64 (xxh3-64 of the original bytes)
//!             | base_checksum u64 (xxh3-64 of the base tensor; 0 without delta)
//!             | frame_count u32 | per frame: offset u64 | stored_len u64 | raw_len u64
//!             | lossy codecs only: values u64 | mse f64 | max_abs f64 | max_rel f64 | mean_rel f64
//! TRAILER   index_offset u64 | index_len u64 | index_checksum u64 (xxh3-64) | magic "BLSNAPIX"
//! ```
//! A frame covers at most [`FRAME_BYTES`] of a tensor; its payload is the codec's self-contained
//! stream. The writer never seeks; a reader starts from the 32-byte trailer.

use crate::codec::Codec;
use crate::cursor::ByteCursor;
use crate::error::SnapshotError;
use crate::layout::{PieceInfo, PieceKind, MAX_DIMS, MAX_TYPE_LEN};

/// Magic at the start of a snapshot.
pub const MAGIC: [u8; 8] = *b"BITLENS\0";
/// Magic at the very end of a snapshot.
pub const END_MAGIC: [u8; 8] = *b"BLSNAPIX";
/// The format version this build writes (and reads, with [`VERSION_1`]).
pub const VERSION: u32 = 2;
/// The version of snapshots of files in other formats than safetensors (GGUF, PyTorch, NumPy):
/// the prefix is a description of the original file, index entries carry a piece description
/// ([`crate::layout`]). Safetensors files are still written as version 2.
pub const VERSION_3: u32 = 3;
/// Version 2 plus an annex in the preamble: data a codec keeps for the whole snapshot (the
/// Inshrinkerator plan, chain link and search report, [`crate::inshrink::Annex`]). Written only
/// when there is an annex; everything else is read as version 2.
pub const VERSION_4: u32 = 4;
/// Largest annex.
pub const MAX_ANNEX: u64 = 1 << 24;
/// Longest description of a version 3 snapshot's original file (size + format name).
pub const MAX_DESCRIPTION: u64 = 4096;
/// The first version, still read: its preamble has no checksum of the stored header, so a
/// corrupt metadata byte there could go unnoticed (version 2 adds `prefix_checksum`).
pub const VERSION_1: u32 = 1;
/// Flag: at least one tensor was stored lossily.
pub const FLAG_LOSSY: u32 = 1;
/// Flag: the snapshot is a delta against a base checkpoint.
pub const FLAG_DELTA: u32 = 2;
/// Size of the trailer.
pub const TRAILER_LEN: u64 = 32;
/// Largest frame. A tensor is encoded in frames of [`frame_bytes`] (this many for every codec but
/// LMC; the last one shorter): fixed per codec, so the output never depends on the thread count.
pub const FRAME_BYTES: usize = 64 << 20;

/// Frame length of LMC tensors written by this build (the last frame of a tensor shorter): one
/// PLMC segment (`bitlens_codecs::plmc::DEFAULT_SEGMENT_BYTES`), so a frame's bytes are those of
/// the segment it would be in a larger frame, plus a 32-byte stream header and a 24-byte index
/// record (0.005 %). Not a rule of the format (readers take any frame up to [`FRAME_BYTES`]; files
/// written before 2026-11-24 have 64 MiB LMC frames): a frame this size and its payload stay in a
/// 2 MiB L2 cache while they are read, checksummed, coded and written, and buffers of one frame
/// are reused from frame to frame, so a whole file touches a few MiB of fresh memory instead of a
/// frame's payload plus a window (issue 16: first-touch page faults cost ~1.6 µs per 4 KiB here).
pub const LMC_FRAME_BYTES: usize = 1 << 20;

/// The frame length the writer uses for a tensor coded with `codec`: [`LMC_FRAME_BYTES`] for
/// LMC, [`FRAME_BYTES`] for every other codec (whose per-frame tables would cost ratio).
pub fn frame_bytes(codec: &Codec) -> usize {
    match codec {
        Codec::Lmc { .. } => LMC_FRAME_BYTES,
        _ => FRAME_BYTES,
    }
}

/// Window in which the reader decodes, checksums and hands over LMC frames larger than it (the
/// 64 MiB frames of files written before [`LMC_FRAME_BYTES`]; not part of the format: any window
/// gives the same bytes). A whole number of PLMC segments for every element width; 16 segments
/// keep every thread of a pool busy while bounding memory at a window of output plus one frame's
/// compressed payload.
pub const STREAM_WINDOW: usize = 16 << 20;
/// Smallest possible index entry (empty name, no params, no frames).
const MIN_ENTRY_LEN: u64 = 4 + 1 + 2 + 1 + 8 + 8 + 8 + 4;
/// Size of one frame record in the index.
const FRAME_RECORD_LEN: u64 = 24;

/// The base checkpoint a delta snapshot was made against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseRef {
    /// xxh3-64 of the base file's first 8 + N bytes (its safetensors header).
    pub header_hash: u64,
    /// Size of the base file.
    pub file_size: u64,
}

/// One frame of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Snapshot offset of the payload.
    pub offset: u64,
    /// Payload length in the snapshot.
    pub stored_len: u64,
    /// Length of the original bytes it decodes to.
    pub raw_len: u64,
}

impl Frame {
    /// Where its payload ends in the snapshot.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.stored_len)
    }
}

/// How far a lossily stored tensor is from the original, as [`crate::ErrorStats`] measures it
/// (the index stores one per lossy tensor; the type is the reports').
pub use bitlens_report::ErrorReport;

/// The index entry of one tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Tensor name.
    pub name: String,
    /// Its codec.
    pub codec: Codec,
    /// True when the frames hold the XOR with the base tensor.
    pub delta: bool,
    /// Original byte length.
    pub raw_len: u64,
    /// xxh3-64 of the original bytes.
    pub checksum: u64,
    /// xxh3-64 of the base tensor's bytes (0 without delta).
    pub base_checksum: u64,
    /// Its frames in order.
    pub frames: Vec<Frame>,
    /// Error against the original, for lossy codecs.
    pub error: Option<ErrorReport>,
    /// What part of the original file the entry is (version 3 only; `None` in a safetensors
    /// snapshot, whose entries are all tensors).
    pub piece: Option<PieceInfo>,
}

impl Entry {
    /// Bytes the tensor occupies in the snapshot.
    pub fn stored_len(&self) -> u64 {
        self.frames.iter().map(|f| f.stored_len).sum()
    }
}

/// Serializes the preamble of a version 2 (safetensors) or 3 (any format) snapshot.
pub fn write_preamble(
    version: u32,
    prefix: &[u8],
    flags: u32,
    base: Option<BaseRef>,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(prefix.len() as u64).to_le_bytes());
    out.extend_from_slice(prefix);
    out.extend_from_slice(&crate::checksum(prefix).to_le_bytes());
    if let Some(b) = base {
        out.extend_from_slice(&b.header_hash.to_le_bytes());
        out.extend_from_slice(&b.file_size.to_le_bytes());
    }
}

/// Appends the annex of a version 4 preamble: `annex_len u32 | annex | annex_checksum u64`.
pub fn write_annex(annex: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(annex.len() as u32).to_le_bytes());
    out.extend_from_slice(annex);
    out.extend_from_slice(&crate::checksum(annex).to_le_bytes());
}

/// Serializes the index.
pub fn write_index(entries: &[Entry], out: &mut Vec<u8>) {
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for e in entries {
        out.extend_from_slice(&(e.name.len() as u32).to_le_bytes());
        out.extend_from_slice(e.name.as_bytes());
        out.push(e.codec.id());
        let params = e.codec.params();
        out.extend_from_slice(&(params.len() as u16).to_le_bytes());
        out.extend_from_slice(&params);
        out.push(u8::from(e.delta));
        out.extend_from_slice(&e.raw_len.to_le_bytes());
        out.extend_from_slice(&e.checksum.to_le_bytes());
        out.extend_from_slice(&e.base_checksum.to_le_bytes());
        if let Some(info) = &e.piece {
            crate::layout::write_info(info, out);
        }
        out.extend_from_slice(&(e.frames.len() as u32).to_le_bytes());
        for f in &e.frames {
            out.extend_from_slice(&f.offset.to_le_bytes());
            out.extend_from_slice(&f.stored_len.to_le_bytes());
            out.extend_from_slice(&f.raw_len.to_le_bytes());
        }
        if e.codec.is_lossy() {
            let r = e.error.unwrap_or_default();
            out.extend_from_slice(&r.values.to_le_bytes());
            for v in [r.mse, r.max_abs, r.max_rel, r.mean_rel] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
}

/// Serializes the trailer.
pub fn write_trailer(index_offset: u64, index: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&index_offset.to_le_bytes());
    out.extend_from_slice(&(index.len() as u64).to_le_bytes());
    out.extend_from_slice(&crate::checksum(index).to_le_bytes());
    out.extend_from_slice(&END_MAGIC);
}

/// Reads a piece description (`kind u8 | type_len u8 | type | ndim u8 | dims u64 × ndim`).
fn read_info(c: &mut IndexCursor, name: &str) -> Result<PieceInfo, SnapshotError> {
    let kind_byte = c.u8("piece kind")?;
    let kind = PieceKind::from_u8(kind_byte)
        .ok_or_else(|| corrupt(c.pos, format!("entry `{name}`: piece kind {kind_byte}")))?;
    let ty_len = c.u8("element type length")? as usize;
    if ty_len > MAX_TYPE_LEN {
        return Err(corrupt(
            c.pos,
            format!("entry `{name}`: element type of {ty_len} bytes (at most {MAX_TYPE_LEN})"),
        ));
    }
    let ty = std::str::from_utf8(c.take(ty_len, "element type")?)
        .map_err(|_| corrupt(c.pos, format!("entry `{name}`: element type is not UTF-8")))?
        .to_owned();
    let ndim = c.u8("dimension count")? as usize;
    if ndim > MAX_DIMS {
        return Err(corrupt(
            c.pos,
            format!("entry `{name}`: {ndim} dimensions (at most {MAX_DIMS})"),
        ));
    }
    let mut shape = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        shape.push(c.u64("dimension")?);
    }
    if kind != PieceKind::Tensor && (!ty.is_empty() || !shape.is_empty()) {
        return Err(corrupt(
            c.pos,
            format!(
                "entry `{name}`: a {} piece has an element type or shape",
                kind.name()
            ),
        ));
    }
    Ok(PieceInfo { kind, ty, shape })
}

/// The index parser's cursor: a field that runs past the end is [`SnapshotError::IndexCorrupt`].
type IndexCursor<'a> = ByteCursor<'a, SnapshotError>;

/// Index corruption at `offset`, for `reason`.
fn corrupt(offset: usize, reason: impl Into<String>) -> SnapshotError {
    SnapshotError::IndexCorrupt {
        offset: offset as u64,
        reason: reason.into(),
    }
}

/// A field of the index that runs past its end.
fn index_short(what: &'static str, offset: usize) -> SnapshotError {
    corrupt(offset, format!("{what} runs past the end of the index"))
}

/// Parses the index of a snapshot of format `version` (version 3 entries carry a piece
/// description). Frame extents must lie inside `frames_area` (the snapshot's frames section);
/// every count is checked against the bytes left, so no allocation exceeds the index size.
pub fn read_index(
    bytes: &[u8],
    frames_area: (u64, u64),
    version: u32,
) -> Result<Vec<Entry>, SnapshotError> {
    let mut c = IndexCursor::new(bytes, index_short);
    let count = c.u32("tensor count")? as u64;
    if count > bytes.len() as u64 / MIN_ENTRY_LEN {
        return Err(corrupt(
            c.pos,
            format!("{count} tensors cannot fit in {} index bytes", bytes.len()),
        ));
    }
    let mut entries = Vec::with_capacity(count as usize);
    let mut next_offset = frames_area.0;
    for _ in 0..count {
        let name_len = c.u32("name length")? as usize;
        let name = std::str::from_utf8(c.take(name_len, "tensor name")?)
            .map_err(|_| corrupt(c.pos, "tensor name is not UTF-8"))?
            .to_owned();
        let id = c.u8("codec id")?;
        let params_len = c.u16("codec parameter length")? as usize;
        let params = c.take(params_len, "codec parameters")?;
        let codec = Codec::from_parts(&name, id, params)?;
        let delta = match c.u8("delta flag")? {
            0 => false,
            1 => true,
            other => {
                return Err(corrupt(
                    c.pos,
                    format!("tensor `{name}`: delta flag {other}"),
                ))
            }
        };
        let raw_len = c.u64("raw length")?;
        let checksum = c.u64("checksum")?;
        let base_checksum = c.u64("base checksum")?;
        let piece = if version == VERSION_3 {
            Some(read_info(&mut c, &name)?)
        } else {
            None
        };
        let frame_count = c.u32("frame count")? as u64;
        if frame_count > c.remaining() as u64 / FRAME_RECORD_LEN {
            return Err(corrupt(
                c.pos,
                format!("tensor `{name}`: {frame_count} frames do not fit"),
            ));
        }
        let mut frames = Vec::with_capacity(frame_count as usize);
        let mut covered = 0u64;
        for i in 0..frame_count {
            let f = Frame {
                offset: c.u64("frame offset")?,
                stored_len: c.u64("frame length")?,
                raw_len: c.u64("frame raw length")?,
            };
            let end = f.offset.checked_add(f.stored_len);
            if f.offset != next_offset || end.is_none_or(|e| e > frames_area.1) {
                return Err(corrupt(c.pos, format!(
                    "tensor `{name}` frame {i}: payload {}+{} is not where the previous frame ended ({next_offset}) or leaves the frames area",
                    f.offset, f.stored_len
                )));
            }
            if f.raw_len == 0 || f.raw_len > FRAME_BYTES as u64 {
                return Err(corrupt(
                    c.pos,
                    format!(
                        "tensor `{name}` frame {i}: raw length {} outside 1..={FRAME_BYTES}",
                        f.raw_len
                    ),
                ));
            }
            next_offset = end.expect("checked");
            covered += f.raw_len;
            frames.push(f);
        }
        let error = if codec.is_lossy() {
            let values = c.u64("error report")?;
            let mut f = [0f64; 4];
            for v in &mut f {
                *v = f64::from_bits(c.u64("error report")?);
            }
            Some(ErrorReport {
                values,
                mse: f[0],
                max_abs: f[1],
                max_rel: f[2],
                mean_rel: f[3],
            })
        } else {
            None
        };
        if covered != raw_len {
            return Err(corrupt(
                c.pos,
                format!(
                    "tensor `{name}`: frames cover {covered} bytes but the tensor has {raw_len}"
                ),
            ));
        }
        entries.push(Entry {
            name,
            codec,
            delta,
            raw_len,
            checksum,
            base_checksum,
            frames,
            error,
            piece,
        });
    }
    if c.pos != bytes.len() {
        return Err(corrupt(
            c.pos,
            format!("{} trailing bytes", bytes.len() - c.pos),
        ));
    }
    if next_offset != frames_area.1 {
        return Err(corrupt(
            c.pos,
            format!(
                "frames end at {next_offset} but the frames area ends at {}",
                frames_area.1
            ),
        ));
    }
    Ok(entries)
}
