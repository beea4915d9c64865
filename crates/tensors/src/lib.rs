//! Reading safetensors checkpoints without reading their data.
//!
//! - [`dtype`]: every element type of the safetensors spec and its bit layout.
//! - [`format`]: the format layer: every format's reader turns a file into one [`format::Layout`].
//! - [`header`]: the `8 + N`-byte header, validated with the reference crate's rules plus explicit
//!   rejection of duplicate names; offsets and sizes are `u64` everywhere.
//! - [`index`]: sharded checkpoints (`*.safetensors.index.json`).
//! - [`checkpoint`]: the rules that make parsed headers (and an index) one checkpoint: every shard
//!   present, every indexed tensor in its shard, no tensor name in two files.
//! - [`naming`]: the file names bitlens recognises and gives (checkpoint and snapshot
//!   extensions, a snapshot's name and the file it restores, a delta's base file).
//! - [`pairing`]: two checkpoints' tensors matched by name for a comparison.
//! - [`source`]: the platform-neutral [`ReadAt`] trait that file, HTTP-range and memory backends
//!   implement at the edges (this crate knows nothing about files or URLs).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod checkpoint;
pub mod dtype;
pub mod format;
pub mod header;
pub mod index;
pub mod naming;
pub mod pairing;
pub mod source;

pub use checkpoint::{Checkpoint, CheckpointError, Shard};
pub use dtype::{Dtype, FloatLayout};
pub use header::{Header, HeaderError, TensorInfo, MAX_HEADER_LEN};
pub use index::{IndexError, ShardIndex};
pub use pairing::{pair, Pairing, TensorKey};
pub use source::{read_header, ReadAt, SourceError};
