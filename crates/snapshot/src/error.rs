//! Why a snapshot could not be written or read.

use bitlens_codecs::DecodeError;
use bitlens_tensors::{HeaderError, SourceError};

/// Why one frame's payload did not decode: the error of its codec.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// An error of the codecs of `bitlens-codecs` (LMC, NeuZip, BitSnap).
    #[error(transparent)]
    Codec(#[from] DecodeError),
    /// An error of an Inshrinkerator tensor stream.
    #[error(transparent)]
    Inshrink(#[from] bitlens_inshrink::DecodeError),
}

/// Errors of the snapshot container. Positions are byte offsets in the snapshot file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The file does not start (or end) with the snapshot magic.
    #[error("not a bitlens snapshot: bad magic {found:02x?} at offset {offset}")]
    BadMagic {
        /// Where the magic was expected.
        offset: u64,
        /// What was found.
        found: Vec<u8>,
    },
    /// The format version is newer than this build understands.
    #[error(
        "snapshot format version {version} is not supported (this build reads version {supported})"
    )]
    UnsupportedVersion {
        /// Version in the file.
        version: u32,
        /// Version this build reads.
        supported: u32,
    },
    /// The file ends before a structure it declares.
    #[error("snapshot truncated: {what} needs bytes {offset}..{end} but the file has {size}")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Start of the structure.
        offset: u64,
        /// End of the structure.
        end: u64,
        /// Size of the file.
        size: u64,
    },
    /// The index's checksum does not match its bytes.
    #[error("snapshot index corrupt: checksum {actual:016x} != recorded {expected:016x}")]
    IndexChecksum {
        /// Recorded checksum.
        expected: u64,
        /// Checksum of the bytes found.
        actual: u64,
    },
    /// The index is malformed.
    #[error("snapshot index corrupt at index byte {offset}: {reason}")]
    IndexCorrupt {
        /// Offset within the index.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A tensor uses a codec id this build does not know.
    #[error("tensor `{tensor}`: unknown codec id {id}")]
    UnknownCodec {
        /// Tensor name.
        tensor: String,
        /// The codec id.
        id: u8,
    },
    /// A tensor's codec parameters are invalid.
    #[error("tensor `{tensor}`: invalid codec parameters: {reason}")]
    BadCodecParams {
        /// Tensor name.
        tensor: String,
        /// What is wrong.
        reason: String,
    },
    /// A frame's payload failed to decode.
    #[error("tensor `{tensor}`, frame {frame} (snapshot offset {offset}) does not decode")]
    Frame {
        /// Tensor name.
        tensor: String,
        /// Frame number within the tensor.
        frame: usize,
        /// Snapshot offset of the frame.
        offset: u64,
        /// The codec's error.
        #[source]
        source: FrameError,
    },
    /// A decoded tensor does not have the checksum recorded for its original bytes.
    #[error("tensor `{tensor}`: checksum mismatch, decoded {actual:016x} but the original was {expected:016x}")]
    ChecksumMismatch {
        /// Tensor name.
        tensor: String,
        /// Recorded checksum.
        expected: u64,
        /// Checksum of the decoded bytes.
        actual: u64,
    },
    /// The stored safetensors header (the original file's first bytes) does not match its
    /// checksum (format version 2 and later).
    #[error(
        "stored safetensors header corrupt: checksum {actual:016x} != recorded {expected:016x}"
    )]
    PrefixChecksum {
        /// Recorded checksum.
        expected: u64,
        /// Checksum of the bytes found.
        actual: u64,
    },
    /// The annex of a version 4 snapshot does not match its checksum.
    #[error("snapshot annex corrupt: checksum {actual:016x} != recorded {expected:016x}")]
    AnnexChecksum {
        /// Recorded checksum.
        expected: u64,
        /// Checksum of the bytes found.
        actual: u64,
    },
    /// The stored safetensors header does not describe the tensors in the index.
    #[error("stored safetensors header does not match the index: {reason}")]
    HeaderMismatch {
        /// What differs.
        reason: String,
    },
    /// The stored safetensors header is invalid.
    #[error("stored safetensors header: {0}")]
    StoredHeader(#[from] HeaderError),
    /// The snapshot is a delta and no base was given.
    #[error("snapshot is a delta against a base checkpoint (header hash {base_header_hash:016x}); pass the base")]
    BaseRequired {
        /// The base's header hash recorded in the snapshot.
        base_header_hash: u64,
    },
    /// The given base is not the one the delta was made against.
    #[error("wrong base: {reason}")]
    WrongBase {
        /// What differs.
        reason: String,
    },
    /// No tensor of this name is in the snapshot.
    #[error("no tensor `{name}` in the snapshot")]
    NoTensor {
        /// The name asked for.
        name: String,
    },
    /// A one-tensor file was asked for a piece that is not a tensor of a plain dtype.
    #[error("`{name}` cannot be written as a safetensors tensor: it is {what}")]
    NotPlainTensor {
        /// The name asked for.
        name: String,
        /// What it is.
        what: String,
    },
    /// The writer was used inconsistently (a bug in the caller).
    #[error("snapshot writer misuse: {0}")]
    Misuse(String),
    /// Reading the snapshot or the base failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Writing the output failed.
    #[error("write failed: {0}")]
    Io(#[from] std::io::Error),
}
