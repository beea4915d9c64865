//! What every reader produces: a [`Layout`] — a file's tensors ([`Entry`]: name, [`ElementType`],
//! shape, where its bytes are as a [`Data`]) and its file-level metadata ([`MetaValue`]s) — the
//! one description of a checkpoint that statistics, diffs, the page and the snapshot container
//! consume, whatever the format.

use super::Format;
use crate::Dtype;
use serde::{Deserialize, Serialize};

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
