//! The thin wasm-bindgen API over bitlens' core crates.
//!
//! It holds no logic of its own: every function converts JavaScript arguments, calls
//! `bitlens-tensors` / `bitlens-stats` / `bitlens-snapshot`, and returns the result as JSON text (the same serde structs
//! the CLI prints with `--json`) or a `JsError` whose message is the core crate's typed error.
//! The web app's Web Workers (`web/worker.js`) stream `Blob` windows into [`StatsAccumulator`] and
//! [`FlipsAccumulator`]; an embed can use [`parse_header`] on its own.
//!
//! - [`header`]: header length probe and header parsing.
//! - [`stats`]: one tensor's statistics, fed in windows.
//! - [`flips`]: bit flips between two checkpoints of one tensor, fed in windows.
//! - [`snapshot`]: compress a safetensors file into a snapshot, read and decompress snapshots, and
//!   time one codec (or a pure-Rust peer: lz4_flex, miniz_oxide deflate, ruzstd) on one tensor,
//!   streaming through JavaScript read / chunk callbacks.
//! - [`convert`]: JavaScript numbers to `u64` offsets, and memory size.
//! - [`threads`]: which build this is (single-threaded, or wasm threads with feature `threads`)
//!   and its rayon pool.
//!
//! The crate is empty outside `wasm32`, so native workspace builds never compile web dependencies.
#![cfg(target_arch = "wasm32")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod convert;
pub mod flips;
pub mod header;
pub mod snapshot;
pub mod stats;
pub mod threads;

pub use convert::memory_bytes;
pub use flips::FlipsAccumulator;
pub use header::{header_prefix_len, parse_header};
pub use snapshot::{
    codec_roundtrip, compress_snapshot, decompress_snapshot, open_snapshot, peer_codec_roundtrip,
};
pub use stats::StatsAccumulator;
pub use threads::{build_kind, thread_count};
