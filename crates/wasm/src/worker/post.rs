//! Where a job's events go — [`Post`]: the page ([`ToPage`], the worker's `postMessage`) or, in
//! tests, a list — and how often progress goes there ([`FLUSH_MS`]).

use crate::convert::now;
use crate::error::Failure;
use bitlens_protocol::js::{to_js, Event};
use js_sys::{Array, Object, Uint8Array};
use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

/// Least milliseconds between two progress reports of a job.
pub const FLUSH_MS: f64 = 100.0;

/// A receiver of a job's events.
pub trait Post {
    /// Sends an event; `transfer`: an `ArrayBuffer` the event carries, moved rather than copied.
    fn post(&self, event: &Event, transfer: Option<&JsValue>) -> Result<(), Failure>;

    /// Sends an event whose byte strings (a weight map's cells: megabytes; a task's finished
    /// items as JSON) are moved to the page rather than copied; the default sends it as
    /// [`Post::post`] does.
    fn post_moving_bytes(&self, event: &Event) -> Result<(), Failure> {
        self.post(event, None)
    }
}

/// The page, through this worker's `postMessage`.
pub struct ToPage(DedicatedWorkerGlobalScope);

impl ToPage {
    /// The page of this worker (fails outside a dedicated worker).
    pub fn new() -> Result<Self, Failure> {
        js_sys::global()
            .dyn_into()
            .map(ToPage)
            .map_err(|_| Failure::new("not running in a dedicated worker"))
    }
}

impl Post for ToPage {
    fn post(&self, event: &Event, transfer: Option<&JsValue>) -> Result<(), Failure> {
        let message = to_js(event)?;
        match transfer {
            Some(t) => self.0.post_message_with_transfer(&message, &Array::of1(t)),
            None => self.0.post_message(&message),
        }
        .map_err(|e| Failure::js(&e))
    }

    fn post_moving_bytes(&self, event: &Event) -> Result<(), Failure> {
        let message = to_js(event)?;
        let buffers = Array::new();
        byte_buffers(&message, &buffers, MAX_DEPTH);
        self.0
            .post_message_with_transfer(&message, &buffers)
            .map_err(|e| Failure::js(&e))
    }
}

/// Deepest nesting of a message searched for byte strings (an event's result's fields).
const MAX_DEPTH: u32 = 6;

/// Appends to `out` the buffer of every `Uint8Array` in `value`, searched through its arrays and
/// objects `depth` levels down. A message's `Uint8Array`s are its serialized byte strings, each a
/// fresh copy out of wasm memory with a buffer of its own, so moving them takes nothing the
/// worker still uses.
fn byte_buffers(value: &JsValue, out: &Array, depth: u32) {
    if let Some(bytes) = value.dyn_ref::<Uint8Array>() {
        out.push(&bytes.buffer());
        return;
    }
    let inner = if depth == 0 {
        return;
    } else if Array::is_array(value) {
        Array::from(value)
    } else if let Some(object) = value.dyn_ref::<Object>() {
        Object::values(object)
    } else {
        return;
    };
    for v in inner.iter() {
        byte_buffers(&v, out, depth - 1);
    }
}

/// True at most once every [`FLUSH_MS`]: when a progress report is due.
pub struct Throttle {
    last: f64,
}

impl Throttle {
    /// A throttle whose first report is due at once (`immediate`) or after [`FLUSH_MS`].
    pub fn new(immediate: bool) -> Self {
        Throttle {
            last: if immediate { f64::NEG_INFINITY } else { now() },
        }
    }

    /// True (and the clock restarts) when [`FLUSH_MS`] have passed since the last report, or when
    /// `force`.
    pub fn due(&mut self, force: bool) -> bool {
        let t = now();
        let due = force || t - self.last >= FLUSH_MS;
        if due {
            self.last = t;
        }
        due
    }
}
