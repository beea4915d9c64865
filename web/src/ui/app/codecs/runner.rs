//! The codec worker: one dedicated Web Worker (`worker.js?role=codec`, its own `bitlens-wasm`
//! instance) for the codec jobs — compress a checkpoint's files, decompress or open snapshots, time
//! codecs on a tensor. One job runs at a time (the panel keeps it); Cancel terminates the worker
//! (the only way to stop it in the middle of a frame), and the next job starts a fresh one.
//!
//! The worker picks its build itself: the threaded one (PLMC on a rayon pool of workers inside it)
//! when the page is cross-origin isolated and `threads/` was built, else the single-threaded one;
//! it says which in a `Ready` event.

use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::{Event, Request};
use yew::Callback;

/// The codec worker (started on demand) and the ids of its jobs.
pub struct CodecRunner {
    worker: Option<WorkerHandle>,
    events: Callback<Event>,
    next: u32,
}

impl CodecRunner {
    /// A runner reporting to `events`; the worker starts with the first job.
    pub fn new(events: Callback<Event>) -> Self {
        CodecRunner {
            worker: None,
            events,
            next: 1,
        }
    }

    /// Starts the worker now (it loads its module and reports its build), if it is not running.
    pub fn warm(&mut self) -> Result<(), String> {
        self.worker().map(|_| ())
    }

    fn worker(&mut self) -> Result<&WorkerHandle, String> {
        if self.worker.is_none() {
            let events = self.events.clone();
            self.worker = Some(WorkerHandle::spawn(
                "worker.js?role=codec",
                "codec worker",
                events,
            )?);
        }
        self.worker
            .as_ref()
            .ok_or_else(|| "no codec worker".to_owned())
    }

    /// Posts the request `request(id)` for a new job; returns the job's id.
    pub fn start(&mut self, request: impl FnOnce(u32) -> Request) -> Result<u32, String> {
        let id = self.next;
        self.worker()?.post(&request(id))?;
        self.next += 1;
        Ok(id)
    }

    /// Stops the running job now (terminates the worker).
    pub fn cancel(&mut self) {
        self.worker = None;
    }
}
