//! PyTorch checkpoints (`torch.save`), read without executing anything: the zip format (torch ≥
//! 1.6: `<dir>/data.pkl` plus one stored member `<dir>/data/<key>` per storage) and the legacy
//! format (`_use_new_zipfile_serialization=False`: five pickles and the raw storages back to back).
//!
//! Both follow `torch/serialization.py` (`_save` / `_legacy_save`, `_load` / `_legacy_load`): the
//! object pickle is read by the restricted unpickler ([`pickle`]) with the allow-list
//! [`ALLOWED_GLOBALS`]; its persistent ids `('storage', storage_type, key, location, numel)` name
//! the storages, `torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, …)` the
//! tensors (module `objects`). Where each storage's bytes are is told by the container (modules
//! `zipped`, `legacy`); nothing of the data is read. Nested dicts and lists (state dicts, optimizer
//! states, `{"model": …, "optimizer": …}`) become dotted names; the other leaves become metadata.

mod legacy;
mod objects;
pub mod pickle;
mod zipped;

use crate::format::zip::ZipError;
use crate::format::Layout;
use crate::source::{ReadAt, SourceError};
use pickle::PickleError;

pub use legacy::{pickles_end, read_legacy};
pub use objects::{BUDGET_PER_BYTE, BUDGET_SLACK, MAX_DEPTH};
pub use zipped::{read_zip, read_zip_with};

/// The globals a PyTorch pickle may name: tensor and parameter rebuild functions, the storage
/// types, `OrderedDict`, the dtypes (`_rebuild_tensor_v3`'s argument for float8 and unsigned
/// types, or saved as values) and the tensor classes
/// `_rebuild_from_type_v2` names. They are recorded, never imported or called.
pub const ALLOWED_GLOBALS: &[&str] = &[
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch._tensor._rebuild_from_type_v2",
    "torch.Tensor",
    "torch.nn.parameter.Parameter",
    "collections.OrderedDict",
    "torch.FloatStorage",
    "torch.HalfStorage",
    "torch.BFloat16Storage",
    "torch.DoubleStorage",
    "torch.IntStorage",
    "torch.LongStorage",
    "torch.ShortStorage",
    "torch.CharStorage",
    "torch.ByteStorage",
    "torch.BoolStorage",
    "torch.ComplexFloatStorage",
    "torch.UntypedStorage",
    "torch.storage.UntypedStorage",
    "torch.float32",
    "torch.float16",
    "torch.bfloat16",
    "torch.float64",
    "torch.int64",
    "torch.int32",
    "torch.int16",
    "torch.int8",
    "torch.uint8",
    "torch.bool",
    "torch.complex64",
    "torch.uint16",
    "torch.uint32",
    "torch.uint64",
    "torch.float8_e4m3fn",
    "torch.float8_e5m2",
    "torch.float8_e4m3fnuz",
    "torch.float8_e5m2fnuz",
    "torch.float8_e8m0fnu",
];

/// Whether a pickle global (`module.name`) is in [`ALLOWED_GLOBALS`].
pub fn allowed(global: &str) -> bool {
    ALLOWED_GLOBALS.contains(&global)
}

/// Why a PyTorch checkpoint was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TorchError {
    /// Reading the source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The zip container is malformed.
    #[error(transparent)]
    Zip(#[from] ZipError),
    /// A pickle is malformed or names a forbidden global.
    #[error("{part} (pickle starting at byte {at}): {source}")]
    Pickle {
        /// Which pickle (`archive/data.pkl`, `main pickle`, …).
        part: String,
        /// Where it starts (in the file for legacy pickles, in the member for zip ones).
        at: u64,
        /// What is wrong.
        #[source]
        source: PickleError,
    },
    /// A zip without a `*/data.pkl` member (a `.npz`, or not a checkpoint).
    #[error("zip has no `data.pkl` member: not a PyTorch checkpoint")]
    NotPyTorch,
    /// More than one `*/data.pkl` member.
    #[error("zip has several `data.pkl` members (`{first}`, `{second}`)")]
    SeveralPickles {
        /// The first.
        first: String,
        /// The second.
        second: String,
    },
    /// The checkpoint was written on a big-endian machine.
    #[error("{what}: big-endian checkpoints are not supported")]
    BigEndian {
        /// Where that was said.
        what: String,
    },
    /// A legacy file's header pickles are not torch's.
    #[error("legacy header: {what}")]
    BadLegacyHeader {
        /// What is wrong.
        what: String,
    },
    /// A persistent id that is not `('storage', type, key, location, numel[, view])`.
    #[error("bad persistent id at `{path}`: {what}")]
    BadPersistentId {
        /// The dotted name of the object using it.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// A storage type outside the supported set.
    #[error("`{path}`: unsupported storage type `{ty}`")]
    UnknownStorageType {
        /// The dotted name of the tensor.
        path: String,
        /// The global.
        ty: String,
    },
    /// A tensor rebuild call with arguments of the wrong shape.
    #[error("tensor `{path}`: {what}")]
    BadTensor {
        /// Its dotted name.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// A call of an allowed global that is no tensor (e.g. `torch.Tensor(...)` by itself).
    #[error("`{path}`: a call of `{func}` is not a tensor this reader knows")]
    UnsupportedObject {
        /// Its dotted name.
        path: String,
        /// The callable.
        func: String,
    },
    /// A dict key that is not a string, number, bool or None.
    #[error("`{path}`: dict key is not a string, number, bool or None")]
    BadKey {
        /// The dotted name of the dict.
        path: String,
    },
    /// Two leaves flatten to the same dotted name.
    #[error("two entries flatten to the same name `{name}`")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// The object tree contains itself.
    #[error("`{path}`: the object tree refers to itself (recursive pickle)")]
    Recursive {
        /// Where the cycle closes.
        path: String,
    },
    /// Containers nested deeper than [`MAX_DEPTH`].
    #[error("`{path}`: containers nested deeper than {max}")]
    TooDeep {
        /// Where the limit was hit.
        path: String,
        /// The limit.
        max: usize,
    },
    /// Flattening the tree costs more than its budget (visits plus the bytes of names and
    /// values, [`BUDGET_PER_BYTE`] × the pickle's length): shared subtrees blowing up.
    #[error(
        "the object tree expands beyond {limit} items and bytes (a budget of 4 per pickle byte)"
    )]
    TooManyItems {
        /// The limit.
        limit: usize,
    },
    /// The same storage key named with two dtypes or sizes.
    #[error("storage `{key}` is named with different types or sizes")]
    StorageConflict {
        /// The key.
        key: String,
    },
    /// A storage's data is missing (its zip member, or its place in a legacy file).
    #[error("storage `{key}`: {what}")]
    StorageMissing {
        /// The key.
        key: String,
        /// Which member or key list.
        what: String,
    },
    /// A storage member is compressed (torch stores them; offsets into deflated data cannot be
    /// given as ranges).
    #[error("storage member `{member}` is compressed; torch writes storages stored")]
    CompressedStorage {
        /// The member.
        member: String,
    },
    /// A storage's bytes are fewer than its element count needs, or run past the file.
    #[error("storage `{key}`: needs {needed} bytes, has {available}")]
    StorageTooSmall {
        /// The key.
        key: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes there.
        available: u64,
    },
    /// A legacy storage's 8-byte element count disagrees with its persistent id.
    #[error("legacy storage `{key}` at byte {offset}: header says {found} elements, the pickle {expected}")]
    StorageHeaderMismatch {
        /// The key.
        key: String,
        /// Offset of the header.
        offset: u64,
        /// Elements the persistent id gives.
        expected: u64,
        /// Elements the header gives.
        found: u64,
    },
    /// A tensor's view (offset, sizes, strides) reaches past its storage.
    #[error("tensor `{name}`: its view reaches element {needed} of storage `{key}`, which has {available}")]
    ViewOutOfBounds {
        /// The tensor.
        name: String,
        /// Its storage.
        key: String,
        /// Elements the view needs.
        needed: u128,
        /// Elements the storage has.
        available: u64,
    },
}

/// Reads a PyTorch checkpoint of either format, told by its first bytes (`PK` is the zip format).
pub fn read(src: &dyn ReadAt) -> Result<Layout, TorchError> {
    let mut first = [0u8; 2];
    if src.size() >= 2 {
        src.read_exact_at(0, &mut first)?;
    }
    if &first == b"PK" {
        let archive = crate::format::zip::Archive::open(src)?;
        read_zip(src, &archive)
    } else {
        read_legacy(src)
    }
}
