//! The typed boundary between the bitlens web page and its Web Workers, defined once for both
//! sides: the page (`bitlens-web`) posts a [`WorkerRequest`], the worker (`bitlens-wasm`, driven by
//! `web/worker.js`) answers with [`WorkerEvent`]s.
//!
//! - [`bins`]: the lossy lesson's non-uniform against uniform bins, as the worker measures them.
//! - [`choice`]: the codec choices the page sends (codec family, NeuZip mantissa bits, per-tensor
//!   overrides, the codecs a comparison times).
//! - [`result`]: what the worker's codec jobs return (snapshot entries and sizes, a snapshot's
//!   index, codec round trips on one tensor, one tensor decoded from a snapshot).
//! - [`inshrink`]: the page's Inshrinkerator error budget.
//! - [`message`]: the requests and events themselves; statistics travel as the core's own
//!   [`TensorStats`](bitlens_stats::TensorStats) / [`FlipStats`](bitlens_stats::FlipStats).
//! - `js` (wasm32 only): how messages cross `postMessage` (serde-wasm-bindgen), with JavaScript
//!   values (`Blob`s, `ArrayBuffer`s) carried as themselves.
//!
//! Messages are generic over `J`, the type of the JavaScript values they carry: `js::Js` in the
//! browser; on the host, anything serializable (the tests use strings), so every type here builds
//! and is tested natively.
#![forbid(unsafe_code)]

pub mod bins;
pub mod choice;
pub mod inshrink;
#[cfg(target_arch = "wasm32")]
pub mod js;
pub mod message;
pub mod result;

pub use bins::{BinsFewest, BinsFit, BinsReport, BinsRow};
pub use choice::{Choice, CodecKind, ComparedCodec, CompressOptions, Contender, PeerCodec};
pub use message::{
    Batch, Build, BuildKind, EntryPair, FileDone, FileOutput, FileRef, FlipSpan, JobFile,
    JobResult, RemoteFile, Results, StatsSpan, WorkerEvent, WorkerRequest,
};
pub use result::{
    AutoInfo, Compressed, DecodedTensor, EntryInfo, ErrorReport, Roundtrip, RoundtripRow,
    SnapshotInfo, SnapshotReport,
};
