//! Snapshots of files in any format (container version 3): a GGUF, a PyTorch `.pt`/`.bin`, a
//! NumPy `.npy`/`.npz` comes back byte for byte.
//!
//! The original file is cut into **pieces** that tile it in file order ([`pieces`]): the byte
//! ranges of tensor data (a [`Data::Range`] tensor, or a whole PyTorch storage for
//! [`Data::Strided`] views; overlapping ranges — views sharing a storage — are merged into one
//! piece, so no byte is stored twice), the compressed streams of deflated `.npz` members (kept
//! verbatim: re-deflating inflated data cannot reproduce a deflate stream byte for byte), and the
//! gaps between them (headers, metadata, alignment padding, zip local headers and central
//! directory, pickles). Each piece is one entry of the container's index, coded frame by frame
//! like a safetensors tensor; decoding writes the pieces in order.
//!
//! The reader and writer look at the pieces through a **piece header** ([`piece_header`]): a
//! [`Header`] whose tensors are the pieces back to back (plain tensors with their dtype and
//! shape, everything else as `U8 [len]`), so compression, deltas and single-tensor files reuse the
//! safetensors machinery unchanged. [`Shifted`] maps that header's data offsets to the file's.
//! The byte layout is in docs/FORMAT.md, section 1.2.

use crate::error::SnapshotError;
use crate::reader::Source;
use bitlens_tensors::format::{Data, ElementType, Layout};
use bitlens_tensors::{Dtype, Header, ReadAt, SourceError, TensorInfo};

/// What a piece of the original file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PieceKind {
    /// Bytes that are not tensor data (headers, metadata, padding, pickles, zip records).
    Gap = 0,
    /// Tensor data: one tensor's bytes, or a storage shared by several tensors or views.
    Tensor = 1,
    /// The compressed stream of a deflated `.npz` member, verbatim.
    Deflated = 2,
}

impl PieceKind {
    /// The kind for its byte in the index.
    pub fn from_u8(b: u8) -> Option<PieceKind> {
        match b {
            0 => Some(PieceKind::Gap),
            1 => Some(PieceKind::Tensor),
            2 => Some(PieceKind::Deflated),
            _ => None,
        }
    }

    /// Its name for people.
    pub fn name(self) -> &'static str {
        match self {
            PieceKind::Gap => "gap",
            PieceKind::Tensor => "tensor",
            PieceKind::Deflated => "deflated",
        }
    }
}

/// Longest element type name in the index.
pub const MAX_TYPE_LEN: usize = 32;
/// Most dimensions of a piece's shape in the index.
pub const MAX_DIMS: usize = 8;

/// The description of one piece, as the index of a version 3 snapshot records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceInfo {
    /// What it holds.
    pub kind: PieceKind,
    /// The element type's name (`F16`, `Q8_0`, …); empty for gaps, deflated streams and storages
    /// of mixed types.
    pub ty: String,
    /// The shape of a tensor piece (one tensor: its shape; a storage: its element count); empty
    /// otherwise.
    pub shape: Vec<u64>,
}

impl PieceInfo {
    /// The plain dtype of a tensor piece whose shape matches its length, if it has one.
    pub fn dtype(&self, len: u64) -> Option<Dtype> {
        if self.kind != PieceKind::Tensor {
            return None;
        }
        let d: Dtype = self.ty.parse().ok()?;
        let bits = self
            .shape
            .iter()
            .try_fold(u64::from(d.bits()), |acc, &x| acc.checked_mul(x))?;
        (bits == len.checked_mul(8)?).then_some(d)
    }

    /// True for tensor pieces of a ggml block type (quantized).
    pub fn is_quantized(&self) -> bool {
        self.kind == PieceKind::Tensor && !self.ty.is_empty() && self.ty.parse::<Dtype>().is_err()
    }
}

/// One piece of the original file: its description, name and byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Its name: the tensor's (a merged storage: the first tensor's in file order), or `<gap N>`
    /// / the `.npz` member's array name for the others.
    pub name: String,
    /// What it is.
    pub info: PieceInfo,
    /// Its offset in the original file.
    pub offset: u64,
    /// Its length.
    pub len: u64,
}

/// A file of any format as its pieces: the format's name, the file size and the pieces in file
/// order (they tile `0..file_size`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pieces {
    /// The format's name for people ([`Layout::kind`]).
    pub kind: String,
    /// The original file's size.
    pub file_size: u64,
    /// The pieces, in file order.
    pub pieces: Vec<Piece>,
}

fn type_name(ty: &ElementType) -> String {
    match ty {
        ElementType::Dtype(d) => d.to_string(),
        ElementType::Ggml(g) => g
            .name()
            .map_or_else(|| format!("ggml{}", g.0), str::to_owned),
    }
}

/// Cuts a file read as `layout` into pieces (see the module doc). Ranges outside the file are a
/// [`SnapshotError::Misuse`] (the readers never produce them).
pub fn pieces(layout: &Layout) -> Result<Pieces, SnapshotError> {
    // (start, end, name, kind, type, shape) of every range that holds data.
    struct Span {
        start: u64,
        end: u64,
        name: String,
        kind: PieceKind,
        ty: String,
        shape: Vec<u64>,
        merged: bool,
    }
    let mut spans: Vec<Span> = Vec::new();
    for e in &layout.entries {
        let (offset, len, kind, shape, merged) = match &e.data {
            Data::Range { offset, len } => {
                (*offset, *len, PieceKind::Tensor, e.shape.clone(), false)
            }
            Data::Strided { offset, len, .. } => (*offset, *len, PieceKind::Tensor, vec![], true),
            Data::Deflated {
                offset, compressed, ..
            } => (*offset, *compressed, PieceKind::Deflated, vec![], false),
        };
        if len == 0 {
            continue;
        }
        let end = offset
            .checked_add(len)
            .filter(|&end| end <= layout.file_size)
            .ok_or_else(|| {
                SnapshotError::Misuse(format!(
                    "tensor `{}`: bytes {offset}+{len} outside the {}-byte file",
                    e.name, layout.file_size
                ))
            })?;
        let ty = if kind == PieceKind::Tensor {
            type_name(&e.ty)
        } else {
            String::new()
        };
        spans.push(Span {
            start: offset,
            end,
            name: e.name.clone(),
            kind,
            ty,
            shape,
            merged,
        });
    }
    spans.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    // Merge overlapping spans (views sharing a storage) into one.
    let mut merged: Vec<Span> = Vec::new();
    for s in spans {
        match merged.last_mut() {
            Some(m) if s.start < m.end => {
                if s.end > m.end || s.start != m.start || s.ty != m.ty || s.shape != m.shape {
                    m.merged = true;
                }
                m.end = m.end.max(s.end);
                if s.ty != m.ty {
                    m.ty.clear();
                }
                if s.kind == PieceKind::Tensor {
                    m.kind = PieceKind::Tensor;
                }
            }
            _ => merged.push(s),
        }
    }
    let mut out = Vec::with_capacity(merged.len() * 2 + 1);
    let mut pos = 0u64;
    let mut gaps = 0usize;
    let mut gap = |out: &mut Vec<Piece>, from: u64, to: u64| {
        out.push(Piece {
            name: format!("<gap {gaps}>"),
            info: PieceInfo {
                kind: PieceKind::Gap,
                ty: String::new(),
                shape: vec![],
            },
            offset: from,
            len: to - from,
        });
        gaps += 1;
    };
    for s in merged {
        if s.start > pos {
            gap(&mut out, pos, s.start);
        }
        let len = s.end - s.start;
        let mut info = PieceInfo {
            kind: s.kind,
            ty: s.ty,
            shape: s.shape,
        };
        if s.merged {
            // A storage: a 1-D array of its elements when they are of one plain type.
            info.shape = match info.ty.parse::<Dtype>() {
                Ok(d) if (len * 8) % u64::from(d.bits()) == 0 => {
                    vec![len * 8 / u64::from(d.bits())]
                }
                _ => {
                    info.ty.clear();
                    vec![]
                }
            };
        }
        if info.shape.len() > MAX_DIMS {
            info.shape.clear();
            info.ty.clear();
        }
        out.push(Piece {
            name: s.name,
            info,
            offset: s.start,
            len,
        });
        pos = s.end;
    }
    if pos < layout.file_size {
        gap(&mut out, pos, layout.file_size);
    }
    Ok(Pieces {
        kind: layout.kind.clone(),
        file_size: layout.file_size,
        pieces: out,
    })
}

/// The piece table's bytes as the index records it (per piece: `name_len u32 | name | kind u8 |
/// type_len u8 | type | ndim u8 | dims u64 × ndim | len u64`): what a delta's base reference
/// hashes.
pub fn piece_table(pieces: &[(String, PieceInfo, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, info, len) in pieces {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        write_info(info, &mut out);
        out.extend_from_slice(&len.to_le_bytes());
    }
    out
}

/// Serializes a piece's description (`kind u8 | type_len u8 | type | ndim u8 | dims u64 × ndim`).
pub fn write_info(info: &PieceInfo, out: &mut Vec<u8>) {
    out.push(info.kind as u8);
    let ty = &info.ty.as_bytes()[..info.ty.len().min(MAX_TYPE_LEN)];
    out.push(ty.len() as u8);
    out.extend_from_slice(ty);
    let dims = &info.shape[..info.shape.len().min(MAX_DIMS)];
    out.push(dims.len() as u8);
    for d in dims {
        out.extend_from_slice(&d.to_le_bytes());
    }
}

/// The piece header of a version 3 snapshot: its tensors are the pieces back to back (tensor
/// pieces with a plain dtype keep it and their shape, all others are `U8 [len]`), its `raw` is
/// the piece table ([`piece_table`]) and its `file_size` the original file's size. Names must be
/// unique.
pub fn piece_header(
    pieces: &[(String, PieceInfo, u64)],
    file_size: u64,
) -> Result<Header, SnapshotError> {
    let raw = piece_table(pieces);
    let mut tensors = Vec::with_capacity(pieces.len());
    let mut names = std::collections::HashSet::with_capacity(pieces.len());
    let mut pos = 0u64;
    for (name, info, len) in pieces {
        if !names.insert(name.as_str()) {
            return Err(SnapshotError::HeaderMismatch {
                reason: format!("two pieces are named `{name}`"),
            });
        }
        let (dtype, shape) = match info.dtype(*len) {
            Some(d) => (d, info.shape.clone()),
            None => (Dtype::U8, vec![*len]),
        };
        let end = pos
            .checked_add(*len)
            .ok_or_else(|| SnapshotError::HeaderMismatch {
                reason: "piece lengths overflow".into(),
            })?;
        tensors.push(TensorInfo {
            name: name.clone(),
            dtype,
            shape,
            data_offsets: (pos, end),
        });
        pos = end;
    }
    if pos != file_size {
        return Err(SnapshotError::HeaderMismatch {
            reason: format!("pieces cover {pos} bytes but the original file has {file_size}"),
        });
    }
    Ok(Header {
        header_len: raw.len() as u64,
        raw,
        metadata: None,
        tensors,
        file_size,
    })
}

impl Pieces {
    /// `(name, description, length)` of every piece, as [`piece_header`] takes them.
    pub fn table(&self) -> Vec<(String, PieceInfo, u64)> {
        self.pieces
            .iter()
            .map(|p| (p.name.clone(), p.info.clone(), p.len))
            .collect()
    }

    /// The piece header ([`piece_header`]).
    pub fn header(&self) -> Result<Header, SnapshotError> {
        piece_header(&self.table(), self.file_size)
    }
}

/// The original file seen at the piece header's offsets: byte `x` of the file is byte
/// `x + shift` here, with `shift` the header's data start.
pub struct Shifted<'a> {
    /// The original file.
    pub src: &'a dyn Source,
    /// The piece header's data start.
    pub shift: u64,
}

impl ReadAt for Shifted<'_> {
    fn size(&self) -> u64 {
        self.src.size().saturating_add(self.shift)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let at = offset
            .checked_sub(self.shift)
            .ok_or(SourceError::OutOfBounds {
                offset,
                len: buf.len() as u64,
                size: self.size(),
            })?;
        self.src.read_exact_at(at, buf)
    }

    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.src.bytes_at(offset.checked_sub(self.shift)?, len)
    }

    fn done_before(&self, end: u64) {
        self.src.done_before(end.saturating_sub(self.shift))
    }
}
