//! The Inshrinkerator codec in the container (paper 002, codec id 5, format version 4): a
//! checkpoint searched and quantized as a whole by `bitlens-inshrink`, written tensor by tensor,
//! and chains of quantization-aware deltas (§6) restored from their first full snapshot.
//!
//! * Each float tensor (f32, f16, bf16) is one [`Quantized`] under the searched plan. Frame `k`
//!   of the tensor (the container's 64 MiB frames, a whole number of elements) holds one
//!   `bitlens_inshrink::stream` of elements `[k·E, (k+1)·E)` (`E` = frame bytes / element width):
//!   the tensor's codebook, the protected values of those elements and their levels — full, or a
//!   delta against the same elements' levels in the previous snapshot of the chain. Other tensors
//!   are LMC (lossless), as with every float-only codec, and so are float tensors the search left
//!   exact: an exact stream would be the raw values plus a header.
//! * The snapshot is container version 4: its preamble carries an [`Annex`] with the plan (what
//!   the next checkpoint's delta-neighbourhood search starts from), how protected values are
//!   stored, the link to the base snapshot when some stream is a delta ([`ChainLink`]: the base's
//!   file name and the xxh3 of its index), and the search report (JSON, informational).
//! * Restoring: [`decode_levels`] decodes a snapshot's levels against its base's levels (themselves
//!   decoded from their base, and so on back to a snapshot without a base), verifying every
//!   tensor's checksum; [`decode_all`] writes the original safetensors file with the restored
//!   values. A snapshot without deltas also decodes through the generic reader ([`decode_full`]).
//!
//! docs/FORMAT.md §1.3 and §8 specify the annex and the stream.
//!
//! - [`annex`]: the version 4 annex ([`Annex`]: plan, protect storage, chain link, search report).
//! - [`write`]: a searched checkpoint's tensors as streams ([`write_snapshot`]).
//! - [`read`]: restoring levels and files through the chain ([`decode_levels`], [`decode_all`]) and
//!   summing up a tensor's streams ([`stream_summary`]).
//! - [`info`]: what `inspect` reports of such a snapshot (`bitlens_report::inshrink`).

mod annex;
mod info;
mod read;
mod write;

pub use annex::{link_to, Annex, AnnexError, ChainLink, ANNEX_MAGIC, ANNEX_VERSION, MAX_NAME};
pub use info::{inshrink_info, read_inshrink_info};
pub use read::{decode_all, decode_full, decode_levels, stream_summary, Levels, StreamSummary};
pub use write::{code_sizes, drop_larger, encode_exact, write_snapshot, CodeSizes, TensorCode};

use crate::error::SnapshotError;
use bitlens_inshrink::stream::{DecodeError, EncodeError};
use thiserror::Error;

/// Why an Inshrinkerator snapshot could not be written or restored.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum InshrinkError {
    /// The container failed.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The annex is malformed.
    #[error(transparent)]
    Annex(#[from] AnnexError),
    /// The snapshot has no Inshrinkerator annex.
    #[error("not an inshrink snapshot (no annex)")]
    NotInshrink,
    /// A tensor could not be encoded.
    #[error("tensor `{tensor}`: {source}")]
    Encode {
        /// The tensor.
        tensor: String,
        /// The encoder's error.
        #[source]
        source: EncodeError,
    },
    /// A tensor stream did not decode.
    #[error("tensor `{tensor}`, frame {frame}: {source}")]
    Stream {
        /// The tensor.
        tensor: String,
        /// Its frame.
        frame: usize,
        /// The stream's error.
        #[source]
        source: DecodeError,
    },
    /// The streams of a tensor's frames disagree (codebook, setting, dtype).
    #[error("tensor `{tensor}`: frame {frame} disagrees with frame 0 ({what})")]
    Frames {
        /// The tensor.
        tensor: String,
        /// The frame.
        frame: usize,
        /// What differs.
        what: &'static str,
    },
    /// The base given for a delta is missing or not the one it was made against.
    #[error("wrong base: {0}")]
    WrongBase(String),
    /// A restored tensor does not have its recorded checksum.
    #[error(
        "tensor `{tensor}`: checksum mismatch, restored {actual:016x}, recorded {expected:016x}"
    )]
    ChecksumMismatch {
        /// The tensor.
        tensor: String,
        /// Recorded.
        expected: u64,
        /// Computed.
        actual: u64,
    },
}

#[cfg(test)]
mod tests;
