//! One Web Worker of the page (`worker.js`, its own instance of the `bitlens-wasm` module), spoken
//! to in the protocol's types: [`WorkerHandle::post`] sends a
//! [`WorkerRequest`](bitlens_protocol::WorkerRequest), and every message back arrives decoded as a
//! [`WorkerEvent`](bitlens_protocol::WorkerEvent). The statistics pool and the codec worker both
//! start theirs here, from the app's files ([`crate::ui::assets`]: the page's, or the embed script's
//! origin through a same-origin shim). A worker that crashes, or sends what cannot be read, reports
//! `Failed { task: None }`: it will not answer again. Dropping the handle terminates the worker
//! and removes its listeners (gloo-events).

use crate::ui::assets;
use crate::ui::io::blob::js_error_text;
use bitlens_protocol::js::{from_js, to_js, Event, Request};
use gloo_events::EventListener;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};
use yew::Callback;

/// A running worker and its event listeners (kept as long as it).
pub struct WorkerHandle {
    worker: Worker,
    /// What the page calls it in messages (`worker`, `codec worker`).
    name: &'static str,
    _on_message: EventListener,
    _on_error: EventListener,
}

impl WorkerHandle {
    /// Starts the module worker of the app's file `script` (`worker.js`, `worker.js?role=codec`;
    /// see [`assets::start_worker`]), reporting to `events`.
    pub fn spawn(
        script: &str,
        name: &'static str,
        events: Callback<Event>,
    ) -> Result<Self, String> {
        let worker = assets::start_worker(script).map_err(|e| e.to_string())?;
        let on_event = events.clone();
        let on_message = EventListener::new(&worker, "message", move |e| {
            let data = e.unchecked_ref::<MessageEvent>().data();
            on_event.emit(from_js(data).unwrap_or_else(|e| Event::Failed {
                task: None,
                message: format!("unreadable message from the {name}: {e}"),
            }));
        });
        let on_error = EventListener::new(&worker, "error", move |e| {
            events.emit(Event::Failed {
                task: None,
                message: format!(
                    "{name} crashed: {}",
                    e.unchecked_ref::<ErrorEvent>().message()
                ),
            });
        });
        Ok(WorkerHandle {
            worker,
            name,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Sends a request.
    pub fn post(&self, request: &Request) -> Result<(), String> {
        let name = self.name;
        let message = to_js(request).map_err(|e| format!("cannot encode a request: {e}"))?;
        self.worker
            .post_message(&message)
            .map_err(|e| format!("cannot post to the {name}: {}", js_error_text(&e)))
    }
}

impl Drop for WorkerHandle {
    fn drop(&mut self) {
        self.worker.terminate();
    }
}
