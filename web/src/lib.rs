//! The bitlens browser app.
//!
//! Checkpoints are opened from the page (drag and drop, a file picker or a directory picker) and
//! never leave it: headers are read with two small `Blob.slice` reads and shown at once, then Web
//! Workers (`worker.js`, each running the `bitlens-wasm` module) stream the data in windows through
//! the same statistics code the CLI uses.
//!
//! - [`model`]: data and logic without browser dependencies (host-testable).
//! - `ui` (wasm32 only): the Yew components, views, charts, file reading and worker pool.
//! - `embed` (wasm32 only): the mount API of the `<bitlens-view>` element.
#![forbid(unsafe_code)]

#[cfg(target_arch = "wasm32")]
pub mod embed;
pub mod model;

#[cfg(target_arch = "wasm32")]
pub mod ui;

/// Mounts the app on the page's `<body>`, unless the embed loaded the module (it mounts views
/// itself, see [`embed`]).
#[cfg(target_arch = "wasm32")]
pub fn start() {
    if !embed::embedded() {
        yew::Renderer::<ui::app::App>::with_props(yew::props!(ui::app::AppProps {})).render();
    }
}
