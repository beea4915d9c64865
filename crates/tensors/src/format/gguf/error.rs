//! Why a file is not a GGUF file the reader accepts: one [`GgufError`] variant per rule of the
//! reader (see the parent module's doc), each naming where.

use super::meta::{self, ValueType};
use super::MAX_DIMS;
use crate::source::SourceError;

/// Why a file is not a GGUF file this reader accepts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GgufError {
    /// Reading the source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The first four bytes are not `GGUF`.
    #[error("not a GGUF file: magic {found:02x?} instead of \"GGUF\"")]
    BadMagic {
        /// The first bytes.
        found: Vec<u8>,
    },
    /// A big-endian GGUF file.
    #[error("big-endian GGUF (version {version}) is not supported; convert it to little-endian")]
    BigEndian {
        /// The version, byte-swapped.
        version: u32,
    },
    /// A version other than 2 and 3.
    #[error("GGUF version {version} is not supported (only 2 and 3)")]
    UnsupportedVersion {
        /// The version field.
        version: u32,
    },
    /// The file ends inside a field.
    #[error("truncated: {what} at byte {offset} needs {needed} bytes past the end of the file")]
    Truncated {
        /// Where the field starts.
        offset: u64,
        /// Its length.
        needed: u64,
        /// What it is.
        what: &'static str,
    },
    /// The tensor count cannot fit the bytes left (each tensor info takes ≥ 24 bytes) or is
    /// above [`MAX_TENSORS`](super::MAX_TENSORS).
    #[error(
        "{count} tensors claimed at byte {offset}; at most {max} are accepted ({left} bytes left)"
    )]
    TooManyTensors {
        /// Claimed count.
        count: u64,
        /// Offset of the count.
        offset: u64,
        /// Bytes left after the header.
        left: u64,
        /// Most tensor infos they can hold.
        max: u64,
    },
    /// The key/value count cannot fit the bytes left (each key/value takes ≥ 13 bytes).
    #[error(
        "{count} key/values claimed at byte {offset}; the {left} bytes left hold at most {max}"
    )]
    TooManyKeys {
        /// Claimed count.
        count: u64,
        /// Offset of the count.
        offset: u64,
        /// Bytes left after the header.
        left: u64,
        /// Most key/values they can hold.
        max: u64,
    },
    /// A string's length runs past the end of the file (or past [`meta::MAX_STRING`]).
    #[error("string of {len} bytes at byte {offset}: longer than the {limit} bytes allowed there")]
    StringTooLong {
        /// Offset of the length field.
        offset: u64,
        /// Claimed length.
        len: u64,
        /// Bytes left in the file (or the string limit).
        limit: u64,
    },
    /// A key or tensor name is not UTF-8.
    #[error("{what} at byte {offset} is not UTF-8")]
    InvalidUtf8 {
        /// Offset of the string.
        offset: u64,
        /// What it is.
        what: &'static str,
    },
    /// A value type id outside 0..=12.
    #[error("key `{key}`: unknown value type {id} at byte {offset}")]
    UnknownValueType {
        /// The key.
        key: String,
        /// The id.
        id: u32,
        /// Offset of the id.
        offset: u64,
    },
    /// An array's length cannot fit the bytes left.
    #[error(
        "key `{key}`: array at byte {offset} claims {count} elements, more than the file holds"
    )]
    ArrayTooLong {
        /// The key.
        key: String,
        /// Offset of the array's element type.
        offset: u64,
        /// Claimed length.
        count: u64,
    },
    /// Arrays nested deeper than [`meta::MAX_DEPTH`].
    #[error(
        "key `{key}`: arrays nested deeper than {} at byte {offset}",
        meta::MAX_DEPTH
    )]
    NestingTooDeep {
        /// The key.
        key: String,
        /// Offset of the too-deep array.
        offset: u64,
    },
    /// More than [`meta::MAX_VALUES`] metadata values.
    #[error("more than {limit} metadata values")]
    TooManyValues {
        /// The limit.
        limit: u64,
    },
    /// A key appears twice.
    #[error("key `{key}` at byte {offset} appears twice")]
    DuplicateKey {
        /// The key.
        key: String,
        /// Offset of the second one.
        offset: u64,
    },
    /// `general.alignment` is not a u32.
    #[error("`general.alignment` must be a u32, not {ty:?}")]
    AlignmentType {
        /// Its type.
        ty: ValueType,
    },
    /// `general.alignment` is zero or not a power of two.
    #[error("`general.alignment` is {alignment}: not a non-zero power of two")]
    BadAlignment {
        /// Its value.
        alignment: u32,
    },
    /// More dims than `GGML_MAX_DIMS`.
    #[error("tensor `{tensor}` has {n_dims} dims; at most {MAX_DIMS} are allowed")]
    TooManyDims {
        /// The tensor.
        tensor: String,
        /// Its dim count.
        n_dims: u32,
    },
    /// An unknown ggml type id.
    #[error("tensor `{tensor}` has unknown ggml type {id}")]
    UnknownType {
        /// The tensor.
        tensor: String,
        /// The id.
        id: u32,
    },
    /// The first dim is not a multiple of the type's block size.
    #[error("tensor `{tensor}`: first dim {ne0} is not a multiple of {ty}'s block size {block}")]
    NotWholeBlocks {
        /// The tensor.
        tensor: String,
        /// Its type's name.
        ty: &'static str,
        /// `ne[0]`.
        ne0: u64,
        /// Elements per block.
        block: u32,
    },
    /// A dim above `i64::MAX`, or an element count or byte size that overflows.
    #[error("tensor `{tensor}`: dims {dims:?} overflow")]
    SizeOverflow {
        /// The tensor.
        tensor: String,
        /// Its dims, in file order.
        dims: Vec<u64>,
    },
    /// An offset that is not a multiple of the alignment.
    #[error("tensor `{tensor}`: offset {offset} is not a multiple of the alignment {alignment}")]
    Misaligned {
        /// The tensor.
        tensor: String,
        /// Its offset, relative to the data section.
        offset: u64,
        /// The alignment.
        alignment: u32,
    },
    /// A byte range that runs past the end of the file.
    #[error(
        "tensor `{tensor}`: bytes {start}..{end} run past the end of the file ({file_size} bytes)"
    )]
    OutOfFile {
        /// The tensor.
        tensor: String,
        /// Absolute start.
        start: u64,
        /// Absolute end (saturated on overflow).
        end: u64,
        /// File size.
        file_size: u64,
    },
    /// Two tensors share bytes.
    #[error("tensors `{first}` and `{second}` overlap at byte {at}")]
    Overlap {
        /// The tensor that starts first.
        first: String,
        /// The tensor that starts inside it.
        second: String,
        /// Where the second starts.
        at: u64,
    },
    /// A tensor name appears twice.
    #[error("tensor `{tensor}` appears twice")]
    DuplicateTensor {
        /// The name.
        tensor: String,
    },
}
