//! Which build of the module this is, and its thread pool.
//!
//! The module is built twice: single-threaded (Trunk, plain wasm32) and, with feature `threads`,
//! with shared memory and atomics (scripts/build-web.sh, nightly `-Z build-std`). The codec worker
//! (`web/worker.js`) loads the threaded build when the page is cross-origin isolated and calls
//! [`init_thread_pool`] (wasm-bindgen-rayon: a rayon pool of Web Workers sharing this module's
//! memory); each frame's PLMC segments then run on that pool. The pool lives inside the codec
//! worker, never on the page's main thread, where a rayon call would busy-wait.
//!
//! The pool's workers are wasm-bindgen-rayon's own: gloo-worker's workers each load a module of
//! their own and exchange messages, where rayon's must share this module's memory.

use bitlens_protocol::{Build, BuildKind};
use wasm_bindgen::prelude::*;

#[cfg(feature = "threads")]
pub use wasm_bindgen_rayon::init_thread_pool;

/// Which build this is.
pub fn kind() -> BuildKind {
    if cfg!(feature = "threads") {
        BuildKind::Threads
    } else {
        BuildKind::Single
    }
}

/// `"threads"` for the threaded build, `"single"` otherwise.
#[wasm_bindgen(js_name = buildKind)]
pub fn build_kind() -> String {
    kind().name().into()
}

/// This build, its threads, and `reason`: why this build and pool size were chosen.
pub fn build(reason: Option<String>) -> Build {
    Build {
        kind: kind(),
        threads: thread_count() as u32,
        reason,
    }
}

/// Threads the codecs run on: the rayon pool's size in the threaded build (call it only after
/// `initThreadPool` has resolved: before that, rayon would try to start its own threads), 1 in
/// the single-threaded build.
#[wasm_bindgen(js_name = threadCount)]
pub fn thread_count() -> usize {
    #[cfg(feature = "threads")]
    {
        rayon::current_num_threads()
    }
    #[cfg(not(feature = "threads"))]
    {
        1
    }
}
