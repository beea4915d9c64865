//! Reading checkpoints of several formats without reading their data: safetensors (with the shard
//! index of sharded checkpoints), GGUF (with the dequantization of the ggml block types), PyTorch
//! zips and legacy pickles (through a bounded pickle machine that never calls anything) and NumPy
//! `.npy` / `.npz` (through a zip reader with bounded inflate) — each read into one
//! [`format::Layout`].
//!
//! - [`format`](mod@format): the readers, one module per format, and what they share: format
//!   detection, the [`format::Layout`] they produce, a tensor's bytes in element order from any
//!   layout ([`format::bytes`]).
//! - [`dtype`]: every element type of the safetensors spec and its bit layout.
//! - [`checkpoint`]: the rules that make several files (and a shard index) one checkpoint: every
//!   shard present, every indexed tensor in its shard, no tensor name in two files.
//! - [`naming`]: the file names bitlens recognises and gives (checkpoint and snapshot
//!   extensions, a snapshot's name and the file it restores, a delta's base file).
//! - [`pairing`]: two checkpoints' tensors matched by name for a comparison.
//! - [`source`]: the platform-neutral [`ReadAt`] trait that file, HTTP-range and memory backends
//!   implement at the edges (this crate knows nothing about files or URLs).
//!
//! The safetensors header and index modules keep their crate-root paths ([`header`], [`index`]).
#![forbid(unsafe_code)]

pub mod checkpoint;
pub mod dtype;
pub mod format;
pub mod naming;
pub mod pairing;
pub mod source;

pub use checkpoint::{Checkpoint, CheckpointError, Shard};
pub use dtype::{Dtype, FloatLayout};
pub use format::safetensors::header::{Header, HeaderError, TensorInfo, MAX_HEADER_LEN};
pub use format::safetensors::index::{IndexError, ShardIndex};
pub use format::safetensors::{header, index, read_header};
pub use pairing::{pair, Pairing, TensorKey};
pub use source::{ReadAt, SourceError};
