//! Where a job's events go — [`Post`]: the page ([`ToPage`], the worker's `postMessage`) or, in
//! tests, a list — and how often progress goes there ([`FLUSH_MS`]).

use crate::convert::now;
use crate::error::Failure;
use bitlens_protocol::js::{to_js, Event};
use js_sys::Array;
use wasm_bindgen::prelude::*;
use web_sys::DedicatedWorkerGlobalScope;

/// Least milliseconds between two progress reports of a job.
pub const FLUSH_MS: f64 = 100.0;

/// A receiver of a job's events.
pub trait Post {
    /// Sends an event; `transfer`: an `ArrayBuffer` the event carries, moved rather than copied.
    fn post(&self, event: &Event, transfer: Option<&JsValue>) -> Result<(), Failure>;
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
