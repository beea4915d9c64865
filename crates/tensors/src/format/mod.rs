//! The format layer: every checkpoint format bitlens reads is turned into one [`Layout`] — its
//! tensors (name, element type, shape, where their bytes are) and its file-level metadata — by a
//! reader chosen from the file's first bytes ([`detect`]), never from its name. Statistics, diffs,
//! the page and the snapshot container consume layouts only.
//!
//! Readers read only what describes the tensors (a header, a zip's central directory and a
//! pickle, a GGUF's key/values and tensor infos), never a pass over the data, and every count,
//! size and offset they take from the file is checked against the file's size before it is used,
//! so a hostile file costs at most what its own size justifies.
//!
//! The readers, one module each: [`safetensors`] (the existing [`crate::header`]), [`gguf`],
//! [`pytorch`] (zip and legacy pickle, over [`pickle`] and [`zip`]), [`numpy`] ([`npy`] and
//! [`npz`]).
//! [`open`] detects the format and runs its reader.

pub mod bytes;
pub mod coalesce;
pub mod gguf;
pub mod safetensors;

use crate::{Dtype, ReadAt, SourceError};
use serde::{Deserialize, Serialize};

pub mod numpy;
pub mod pytorch;
pub mod zip;

pub use numpy::{npy, npz};
pub use pytorch::pickle;

/// The container formats, as detected from their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// safetensors: an 8-byte little-endian header length, then a JSON header (`{`).
    Safetensors,
    /// GGUF (llama.cpp): magic `GGUF`.
    Gguf,
    /// A zip archive (`PK\x03\x04`): a PyTorch checkpoint (`*/data.pkl`) or a NumPy `.npz`; which
    /// one is told by its members.
    Zip,
    /// PyTorch's legacy format: a pickle (protocol 2: `\x80\x02`) starting with torch's magic number.
    PyTorchLegacy,
    /// NumPy `.npy`: magic `\x93NUMPY`.
    Npy,
}

/// Bytes [`detect`] needs at most.
pub const DETECT_BYTES: usize = 16;

/// The format of a file from its first bytes (up to [`DETECT_BYTES`]) and its size; `None` when no
/// reader knows it.
pub fn detect(first: &[u8], file_size: u64) -> Option<Format> {
    if first.starts_with(b"GGUF") {
        return Some(Format::Gguf);
    }
    if first.starts_with(b"PK\x03\x04") || first.starts_with(b"PK\x05\x06") {
        return Some(Format::Zip);
    }
    if first.starts_with(b"\x93NUMPY") {
        return Some(Format::Npy);
    }
    if first.starts_with(b"\x80\x02") || first.starts_with(b"\x80\x03") {
        return Some(Format::PyTorchLegacy);
    }
    // safetensors: a header length that fits the file, then `{`.
    if let (Some(len), Some(&b'{')) = (first.first_chunk::<8>(), first.get(8)) {
        let n = u64::from_le_bytes(*len);
        if n >= 2 && n <= file_size.saturating_sub(8) {
            return Some(Format::Safetensors);
        }
    }
    None
}

/// Why a file could not be read as a checkpoint: its format is unknown, or its reader refused it.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// No reader knows the first bytes.
    #[error("not a checkpoint bitlens reads (safetensors, GGUF, PyTorch .pt/.bin, NumPy .npy/.npz): it starts with {first}")]
    Unknown {
        /// The first bytes, in hex.
        first: String,
    },
    /// Reading the source failed, or a safetensors header is invalid.
    #[error(transparent)]
    Safetensors(#[from] SourceError),
    /// A GGUF file broke a rule.
    #[error("GGUF: {0}")]
    Gguf(#[from] gguf::GgufError),
    /// A PyTorch checkpoint broke a rule (or ran into a forbidden global).
    #[error("PyTorch: {0}")]
    Torch(#[from] pytorch::TorchError),
    /// A zip archive broke a rule.
    #[error("zip: {0}")]
    Zip(#[from] zip::ZipError),
    /// A `.npy` file broke a rule.
    #[error("NumPy .npy: {0}")]
    Npy(#[from] npy::NpyError),
    /// A `.npz` archive broke a rule.
    #[error("NumPy .npz: {0}")]
    Npz(#[from] npz::NpzError),
}

/// Reads any supported checkpoint file as a [`Layout`]: detects the format from its first
/// [`DETECT_BYTES`] and runs that reader; a zip is an `.npz` when its members are `.npy` files,
/// else a PyTorch checkpoint. Every zip member's local header is checked ([`zip::Locate::Verify`]).
pub fn open(src: &dyn ReadAt) -> Result<Layout, FormatError> {
    open_with(src, zip::Locate::Verify)
}

/// [`open`], finding PyTorch zip storages as `locate` says: [`zip::Locate::Predict`] reads the
/// table of a PyTorch zip in a few reads whatever its tensor count (for remote files, where each
/// read is a request).
pub fn open_with(src: &dyn ReadAt, locate: zip::Locate) -> Result<Layout, FormatError> {
    let size = src.size();
    let mut first = [0u8; DETECT_BYTES];
    let first = &mut first[..(size.min(DETECT_BYTES as u64) as usize)];
    src.read_exact_at(0, first)?;
    match detect(first, size) {
        Some(Format::Safetensors) => Ok(safetensors::read(src)?),
        Some(Format::Gguf) => Ok(gguf::read(src)?),
        Some(Format::Npy) => Ok(npy::read(src)?),
        Some(Format::PyTorchLegacy) => Ok(pytorch::read(src)?),
        Some(Format::Zip) => {
            let archive = zip::Archive::open(src)?;
            if npz::is_npz(&archive) {
                Ok(npz::read_archive(src, &archive)?)
            } else {
                Ok(pytorch::read_zip_with(src, &archive, locate)?)
            }
        }
        None => Err(FormatError::Unknown {
            first: first.iter().map(|b| format!("{b:02x}")).collect(),
        }),
    }
}

/// A ggml tensor type by its GGUF id (`GGML_TYPE_*`): block-quantized types (Q4_0, Q4_K, IQ2_XXS,
/// TQ1_0, MXFP4, …) as well as F32/F16/BF16. The `gguf` module knows each id's name, block size
/// and bytes per block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GgmlType(pub u32);

/// The element type of a tensor: a plain dtype (one value per element, the safetensors set), or a
/// ggml block type (elements stored in blocks of several values with their scales).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ElementType {
    /// One value per element.
    Dtype(Dtype),
    /// A ggml block type.
    Ggml(GgmlType),
}

/// Where a tensor's bytes are in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Data {
    /// `len` bytes at `offset`, in the element order of the shape (row-major, contiguous).
    Range {
        /// Absolute offset in the file.
        offset: u64,
        /// Byte length.
        len: u64,
    },
    /// A raw-deflate stream (a deflated zip member, `.npz`) of `compressed` bytes at `offset`
    /// that inflates to `len` bytes; the tensor's bytes start `skip` bytes into the inflated
    /// stream (after the member's `.npy` header).
    Deflated {
        /// Absolute offset of the compressed stream.
        offset: u64,
        /// Compressed length.
        compressed: u64,
        /// Inflated bytes before the tensor's (an `.npy` header).
        skip: u64,
        /// The tensor's byte length.
        len: u64,
    },
    /// A view into a storage (PyTorch): elements at `storage_offset + Σ index·stride` (in
    /// elements) of the storage whose bytes are `len` bytes at `offset`. Contiguous views are
    /// given as [`Data::Range`] instead.
    Strided {
        /// Absolute offset of the storage's bytes.
        offset: u64,
        /// The storage's byte length.
        len: u64,
        /// First element of the view in the storage.
        storage_offset: u64,
        /// Stride of each dimension, in elements.
        strides: Vec<u64>,
    },
}

/// One tensor of a [`Layout`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its name (nested containers flattened to dotted names, e.g. `optimizer.state.0.exp_avg`).
    pub name: String,
    /// Its element type.
    pub ty: ElementType,
    /// Its shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// Where its bytes are.
    pub data: Data,
}

/// A file-level metadata value (GGUF key/values of every type, safetensors `__metadata__`
/// strings, NumPy/PyTorch facts such as `fortran_order`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MetaValue {
    /// A boolean.
    Bool(bool),
    /// An unsigned integer.
    UInt(u64),
    /// A signed integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<MetaValue>),
}

/// What a reader found in a file: its tensors in file order and its metadata in file order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    /// The format (for zips, after looking at the members: [`Format::Zip`] is kept).
    pub format: Format,
    /// A finer name of the format for people: `safetensors`, `GGUF v3`, `PyTorch zip`,
    /// `PyTorch legacy`, `NumPy .npy v1.0`, `NumPy .npz`.
    pub kind: String,
    /// The file size.
    pub file_size: u64,
    /// The tensors.
    pub entries: Vec<Entry>,
    /// The metadata, in file order.
    pub metadata: Vec<(String, MetaValue)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        assert_eq!(detect(b"GGUF\x03\0\0\0", 100), Some(Format::Gguf));
        assert_eq!(detect(b"PK\x03\x04rest", 100), Some(Format::Zip));
        assert_eq!(detect(b"\x93NUMPY\x01\0", 100), Some(Format::Npy));
        assert_eq!(
            detect(b"\x80\x02\x8a\x0a", 100),
            Some(Format::PyTorchLegacy)
        );
        let mut st = 10u64.to_le_bytes().to_vec();
        st.push(b'{');
        assert_eq!(detect(&st, 18), Some(Format::Safetensors));
        assert_eq!(detect(&st, 17), None, "header longer than the file");
        assert_eq!(detect(b"hello world", 100), None);
        assert_eq!(detect(b"", 0), None);
    }
}
