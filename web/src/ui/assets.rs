//! Where the app's own files (the workers' scripts and modules) are, and how a worker is started
//! from one of them.
//!
//! The app finds them relative to its page (`document.baseURI`). The `<bitlens-view>` element
//! ([`crate::embed`]) finds them relative to its script's URL, which it sets once with
//! [`set_base`] before mounting: the script may come from a CDN whose origin is neither the host
//! page's nor the data's. A page cannot start a Worker from another origin's script, so for such a
//! base [`start_worker`] starts it from a same-origin `blob:` URL holding one line,
//! `import "<absolute script URL>";` — the imported module's `import.meta.url` is then the real
//! URL, from which `web/worker.js` finds its wasm module and its query (`?role=codec`).

use crate::ui::io::blob::js_error_text;
use std::cell::RefCell;
use thiserror::Error;
use wasm_bindgen::JsValue;
use web_sys::{Blob, BlobPropertyBag, Url, Worker, WorkerOptions, WorkerType};

thread_local! {
    /// The base set by the embed, if any.
    static BASE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Why an asset URL could not be made or a worker not be started.
#[derive(Debug, Error)]
pub enum AssetError {
    /// The base or the name does not make a URL.
    #[error("{name}: not a URL relative to {base}: {cause}")]
    BadUrl {
        /// The asset's name.
        name: String,
        /// The base it was resolved against.
        base: String,
        /// The browser's reason.
        cause: String,
    },
    /// The page has no `window` or `document` (not a page).
    #[error("no document to resolve {0} against")]
    NoDocument(String),
    /// The browser refused to start the worker.
    #[error("cannot start a worker from {url}: {cause}")]
    Worker {
        /// The worker script's URL.
        url: String,
        /// The browser's reason.
        cause: String,
    },
}

/// Sets the base against which every asset is resolved (the embed script's URL). The app never
/// calls it: its base is its page.
pub fn set_base(url: &str) {
    BASE.with(|b| *b.borrow_mut() = Some(url.to_owned()));
}

/// The base: what [`set_base`] set, else the page's `document.baseURI`.
fn base() -> Result<String, AssetError> {
    if let Some(b) = BASE.with(|b| b.borrow().clone()) {
        return Ok(b);
    }
    web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.base_uri().ok().flatten())
        .ok_or_else(|| AssetError::NoDocument("the app's files".into()))
}

/// The absolute URL of the app's file `name` (a path relative to the base, query allowed).
pub fn url(name: &str) -> Result<String, AssetError> {
    let base = base()?;
    Url::new_with_base(name, &base)
        .map(|u| u.href())
        .map_err(|e| AssetError::BadUrl {
            name: name.to_owned(),
            base,
            cause: js_error_text(&e),
        })
}

/// The page's origin (`location.origin`), if it has one.
fn page_origin() -> Option<String> {
    web_sys::window().and_then(|w| w.location().origin().ok())
}

/// The origin of an absolute URL.
fn origin_of(url: &str) -> Option<String> {
    Url::new(url).ok().map(|u| u.origin())
}

/// The module a same-origin shim runs to load the module worker at `url` from another origin.
pub fn shim_source(url: &str) -> String {
    // A JSON string is a valid JavaScript string literal (and escapes quotes and newlines).
    let literal = serde_json::to_string(url).unwrap_or_else(|_| format!("\"{url}\""));
    format!("import {literal};\n")
}

/// Starts the module worker at the app's file `name` (e.g. `worker.js?role=codec`): directly when
/// it is on the page's origin, else through a same-origin `blob:` shim that imports it.
pub fn start_worker(name: &str) -> Result<Worker, AssetError> {
    let url = url(name)?;
    let failed = |e: JsValue| AssetError::Worker {
        url: url.clone(),
        cause: js_error_text(&e),
    };
    let options = WorkerOptions::new();
    options.set_type(WorkerType::Module);
    if origin_of(&url).is_some() && origin_of(&url) == page_origin() {
        return Worker::new_with_options(&url, &options).map_err(failed);
    }
    let parts = js_sys::Array::of1(&JsValue::from_str(&shim_source(&url)));
    let bag = BlobPropertyBag::new();
    bag.set_type("text/javascript");
    let blob = Blob::new_with_str_sequence_and_options(&parts, &bag).map_err(failed)?;
    let shim = Url::create_object_url_with_blob(&blob).map_err(failed)?;
    let worker = Worker::new_with_options(&shim, &options).map_err(failed);
    // The worker has read the shim's URL once it starts; a module worker fetches it at once.
    let _ = Url::revoke_object_url(&shim);
    worker
}
