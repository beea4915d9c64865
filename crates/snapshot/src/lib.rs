//! The bitlens compressed snapshot: one versioned container for every codec.
//!
//! A snapshot holds the original safetensors header bytes verbatim (so decoding reproduces the
//! original file byte for byte, `__metadata__` and tensor order included), then each tensor's
//! compressed frames, then an index with, per tensor, its codec and parameters, its length, an
//! xxh3-64 checksum of its original bytes (verified on decode) and the extents of its frames, so any
//! single tensor decodes without the others. Deltas XOR each tensor with the base checkpoint's
//! tensor of the same name; the snapshot records the base's header hash and each base tensor's
//! checksum, and decoding refuses a different base. Writing and reading are streaming: a tensor is
//! processed in frames of at most [`FRAME_BYTES`] (LMC: [`LMC_FRAME_BYTES`]). The byte layout is
//! specified in docs/FORMAT.md and in [`format`](mod@format).
//!
//! Files of other formats (GGUF, PyTorch, NumPy) are stored as version 3 ([`layout`],
//! [`compress_pieces`]): the file is cut into pieces that tile it — tensor data, deflated `.npz`
//! streams and the bytes between them — each stored like a tensor, so decoding gives the file
//! back byte for byte. Safetensors files are still written as version 2, byte for byte as before.
//!
//! - [`auto`] — `--codec auto`: per tensor the smallest lossless encoding, predicted from a
//!   sample ([`compress_auto`]).
//! - [`chain`] — the manifest of a checkpoint chain (a key, then deltas against the previous
//!   step, per file) and the checks of its snapshots' links.
//! - [`choice`] — the per-tensor codec for a user's codec choice (CLI and page share it).
//! - [`codec`] — the codec ids and parameters, and frame encode / decode.
//! - [`format`](mod@format) — constants and the (de)serialization of the preamble, index and trailer.
//! - [`metrics`] — [`ErrorStats`], the error of lossy values against the originals (the writer's
//!   stored report, `bitlens bench` and the page share it).
//! - [`layout`] — files of other formats (GGUF, PyTorch, NumPy) as pieces that tile the file:
//!   tensor data, deflated streams and the gaps between them (container version 3).
//! - [`compress()`] — a whole safetensors source into a snapshot, streaming (CLI and web share it).
//! - [`writer`] — [`SnapshotWriter`].
//! - [`reader`] — [`SnapshotReader`].
//! - [`inshrink`] — the Inshrinkerator codec (id 5): a searched checkpoint's tensor streams, the
//!   version 4 annex (plan, chain link, search report) and chains of quantization-aware deltas.
//! - [`report`] — what `inspect` says of a snapshot or chain, and `auto`'s choices, in the
//!   report types (`bitlens_report`).
//! - [`single`] — one tensor as a safetensors file of its own (`decompress --tensor`, the page's
//!   preview of a remote snapshot).
#![forbid(unsafe_code)]

pub mod auto;
pub mod chain;
pub mod choice;
pub mod codec;
pub mod compress;
mod cursor;
pub mod error;
pub mod format;
pub mod inshrink;
pub mod layout;
pub mod metrics;
mod pipeline;
pub mod reader;
pub mod report;
pub mod single;
pub mod writer;

pub use auto::{AutoChoice, Candidate, Prediction};
pub use choice::{ChoiceError, CodecChoice, CodecKind};
pub use codec::Codec;
pub use compress::{
    compress, compress_auto, compress_pieces, compress_pieces_auto, encoding, Encoding,
};
pub use error::{FrameError, SnapshotError};
pub use format::{
    frame_bytes, BaseRef, Entry, ErrorReport, Frame, FRAME_BYTES, LMC_FRAME_BYTES, STREAM_WINDOW,
};
pub use layout::{PieceInfo, PieceKind, Pieces};
pub use metrics::{ErrorStats, MetricsError};
pub use reader::{BaseSource, Decoding, Original, SnapshotReader, Source};
pub use single::tensor_file_prefix;
pub use writer::{FrameJob, SnapshotWriter, TensorPlan};

/// xxh3-64 of a byte string: the checksum used throughout the container.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}
