//! bitlens' core crates in the browser: the job loop of the web app's Web Workers, and a thin
//! wasm-bindgen API for embeds.
//!
//! The web app's workers (`web/worker.js`: it only picks the build, starts the thread pool and the
//! read-ahead helper) hand every message of the page to [`worker::run_job`], which runs the
//! [`WorkerRequest`](bitlens_protocol::WorkerRequest) — statistics, flips, compress, decompress,
//! snapshot index, codec comparison — on `bitlens-tensors` / `bitlens-stats` / `bitlens-snapshot`
//! and posts typed [`WorkerEvent`](bitlens_protocol::WorkerEvent)s back. Errors are the core
//! crates' typed messages.
//!
//! - [`worker`]: the job loop (requests in, events out, `Blob`s read in windows).
//! - [`snapshot`]: compress a safetensors file into a snapshot, read and decompress snapshots, and
//!   time one codec (or a pure-Rust peer: lz4_flex, miniz_oxide deflate, ruzstd, the hub's
//!   bg4-lz4) on one tensor.
//! - [`inshrink`]: Inshrinkerator compression under a per-tensor relative L2 error budget.
//! - [`source`] / [`sink`]: files read synchronously as the core's `ReadAt`, output in chunks;
//!   [`http_source`]: a remote file read the same way, with synchronous `Range` requests.
//! - [`header`], [`stats`], [`flips`]: the embed API — header probing and parsing, one tensor's
//!   statistics and two checkpoints' flips fed in windows, results as the JSON the CLI prints.
//! - [`teach`]: the teaching lessons' computations (float anatomy, Huffman on one block, rANS
//!   step by step), as JSON.
//! - [`convert`]: JavaScript numbers to `u64` offsets, the clock, and memory size.
//! - [`error`]: the crate's error, a message.
//! - [`threads`]: which build this is (single-threaded, or wasm threads with feature `threads`)
//!   and its rayon pool.
//!
//! The crate is empty outside `wasm32`, so native workspace builds never compile web dependencies.
#![cfg(target_arch = "wasm32")]
#![forbid(unsafe_code)]

pub mod convert;
pub mod error;
pub mod flips;
pub mod header;
pub mod http_source;
pub mod inshrink;
pub mod sink;
pub mod snapshot;
pub mod source;
pub mod stats;
pub mod teach;
pub mod threads;
pub mod worker;

pub use convert::memory_bytes;
pub use error::Failure;
pub use flips::FlipsAccumulator;
pub use header::{header_prefix_len, parse_header};
pub use snapshot::{
    codec_roundtrip, compress_snapshot, decompress_snapshot, open_snapshot, peer_codec_roundtrip,
};
pub use source::JsSource;
pub use stats::StatsAccumulator;
pub use threads::{build_kind, thread_count};
