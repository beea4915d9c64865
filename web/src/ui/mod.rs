//! The browser side of the app (wasm32 only).
//!
//! - [`app`]: the root component: state, messages, layout; and the codec panel ([`app::codecs`]:
//!   its own state and messages, and the codec worker).
//! - [`assets`]: where the app's files are (the page's or the embed script's base) and starting
//!   workers from them.
//! - [`io`]: reading `Blob`s and remote files, collecting dropped / picked files, fetching the demo.
//! - [`loader`]: files and URLs → parsed headers → checkpoints, with one error per bad file.
//! - [`worker`]: one Web Worker, spoken to in the typed messages of `bitlens-protocol`.
//! - [`pool`]: the Web Worker pool that runs the statistics.
//! - [`jobs`]: turning missing statistics into worker tasks and worker results into state.
//! - [`views`]: summary, tensor table, tensor detail, compare, and the page chrome.
//! - [`charts`]: SVG chart components.
//! - [`events`]: what the app tells its host (load, select, error) and its `inspect()` report.
//! - [`shared`]: cheap, pointer-compared props.

pub mod app;
pub mod assets;
pub mod charts;
pub mod events;
pub mod io;
pub mod jobs;
pub mod loader;
pub mod pool;
pub mod shared;
pub mod views;
pub mod worker;
