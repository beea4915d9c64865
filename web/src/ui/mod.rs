//! The browser side of the app (wasm32 only).
//!
//! - [`app`]: the root component: state, messages, layout.
//! - [`io`]: reading `Blob`s, collecting dropped / picked files, fetching the demo.
//! - [`loader`]: files → parsed headers → checkpoints, with one error per bad file.
//! - [`pool`]: the Web Worker pool that runs the statistics.
//! - [`codec`]: the codec worker (compress, decompress, codec comparison), one job at a time.
//! - [`jobs`]: turning missing statistics into worker tasks and worker results into state.
//! - [`views`]: summary, tensor table, tensor detail, compare, and the page chrome.
//! - [`charts`]: SVG chart components.
//! - [`shared`]: cheap, pointer-compared props.

pub mod app;
pub mod charts;
pub mod codec;
pub mod io;
pub mod jobs;
pub mod loader;
pub mod pool;
pub mod shared;
pub mod views;
