//! [`Failure`]: the error of the wasm layer — a message, the core's typed error as text. The
//! exported functions throw it to JavaScript as an `Error`; the worker's job loop posts it to the
//! page in a `Failed` event.

use wasm_bindgen::prelude::*;

/// Why an operation failed, as the message the user reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub String);

impl Failure {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Failure(message.into())
    }

    /// A thrown JavaScript value (an `Error`'s message, a string, or its debug form).
    pub fn js(e: &JsValue) -> Self {
        Failure(js_text(e))
    }
}

impl<E: std::error::Error> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure(e.to_string())
    }
}

impl From<Failure> for JsError {
    fn from(f: Failure) -> Self {
        JsError::new(&f.0)
    }
}

/// Text of a thrown JavaScript value.
pub fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| e.dyn_ref::<js_sys::Error>().map(|e| e.message().into()))
        .unwrap_or_else(|| format!("{e:?}"))
}
