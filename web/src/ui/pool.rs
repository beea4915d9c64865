//! A pool of Web Workers (`worker.js`, each with its own instance of the `bitlens-wasm` module).
//!
//! Tasks wait in a queue and are handed to whichever worker is free, one at a time, so the load
//! balances itself. Cancelling terminates every worker at once (the only way to stop a worker in
//! the middle of a window) and drops the queue; fresh workers are started on the next submit.
//! Each worker holds one read window (4 MiB) and one accumulator, so memory does not grow with the
//! file size.

use js_sys::{Array, Reflect};
use std::collections::VecDeque;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{ErrorEvent, MessageEvent, Worker, WorkerOptions, WorkerType};
use yew::Callback;

/// URL of the worker script, relative to the page.
const WORKER_URL: &str = "worker.js";

/// Most workers started (the page's own thread stays free for the UI).
const MAX_WORKERS: usize = 8;

/// A task for a worker: its id and the message that describes it.
pub struct Task {
    /// Task id, echoed in every message about it.
    pub id: u32,
    /// The message posted to the worker (see `worker.js`).
    pub message: JsValue,
}

/// What the workers report.
#[derive(Debug)]
pub enum PoolEvent {
    /// Progress and finished items of a running task.
    Update {
        /// Task id.
        task: u32,
        /// Bytes read since the last report.
        bytes: u64,
        /// `(item, JSON result)` of finished items.
        results: Vec<(usize, String)>,
    },
    /// A task finished (its last progress and results included).
    Done {
        /// Worker index.
        worker: usize,
        /// Task id.
        task: u32,
        /// Bytes read since the last report.
        bytes: u64,
        /// `(item, JSON result)` of finished items.
        results: Vec<(usize, String)>,
        /// The worker's wasm memory size in bytes.
        memory: u64,
    },
    /// A task failed.
    Failed {
        /// Worker index.
        worker: usize,
        /// Task id, if known.
        task: Option<u32>,
        /// What went wrong.
        message: String,
    },
}

struct Slot {
    worker: Worker,
    busy: Option<u32>,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(ErrorEvent)>,
}

/// The worker pool.
pub struct Pool {
    slots: Vec<Slot>,
    queue: VecDeque<Task>,
    size: usize,
    events: Callback<PoolEvent>,
}

fn results_of(data: &JsValue) -> Vec<(usize, String)> {
    let Ok(list) = Reflect::get(data, &"results".into()) else {
        return Vec::new();
    };
    Array::from(&list)
        .iter()
        .filter_map(|r| {
            let item = Reflect::get(&r, &"item".into()).ok()?.as_f64()? as usize;
            let json = Reflect::get(&r, &"json".into()).ok()?.as_string()?;
            Some((item, json))
        })
        .collect()
}

fn number(data: &JsValue, key: &str) -> f64 {
    Reflect::get(data, &key.into())
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(0.0)
}

fn decode(worker: usize, data: &JsValue) -> PoolEvent {
    let kind = Reflect::get(data, &"type".into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_default();
    let task = number(data, "task") as u32;
    let bytes = number(data, "bytes") as u64;
    match kind.as_str() {
        "update" => PoolEvent::Update {
            task,
            bytes,
            results: results_of(data),
        },
        "done" => PoolEvent::Done {
            worker,
            task,
            bytes,
            results: results_of(data),
            memory: number(data, "memory") as u64,
        },
        _ => PoolEvent::Failed {
            worker,
            task: Some(task),
            message: Reflect::get(data, &"message".into())
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_else(|| "unknown worker error".into()),
        },
    }
}

impl Pool {
    /// A pool of `hardwareConcurrency` workers (at most [`MAX_WORKERS`]) reporting to `events`.
    pub fn new(events: Callback<PoolEvent>) -> Self {
        let cores = web_sys::window()
            .map(|w| w.navigator().hardware_concurrency() as usize)
            .unwrap_or(2);
        Pool {
            slots: Vec::new(),
            queue: VecDeque::new(),
            size: cores.clamp(1, MAX_WORKERS),
            events,
        }
    }

    /// Number of workers the pool runs at most.
    pub fn size(&self) -> usize {
        self.size
    }

    /// True while any task is queued or running.
    pub fn busy(&self) -> bool {
        !self.queue.is_empty() || self.slots.iter().any(|s| s.busy.is_some())
    }

    /// Queues a task and starts it if a worker is free.
    pub fn submit(&mut self, task: Task) -> Result<(), String> {
        self.queue.push_back(task);
        self.pump()
    }

    /// Marks a worker free (after `Done` or `Failed`) and hands it the next task.
    pub fn finished(&mut self, worker: usize) -> Result<(), String> {
        if let Some(s) = self.slots.get_mut(worker) {
            s.busy = None;
        }
        self.pump()
    }

    /// Stops every worker now and drops the queue.
    pub fn cancel(&mut self) {
        for s in self.slots.drain(..) {
            s.worker.terminate();
        }
        self.queue.clear();
    }

    fn spawn(&mut self) -> Result<(), String> {
        let index = self.slots.len();
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Module);
        let worker = Worker::new_with_options(WORKER_URL, &options)
            .map_err(|e| format!("cannot start a worker: {e:?}"))?;
        let events = self.events.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            events.emit(decode(index, &e.data()));
        });
        let events = self.events.clone();
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
            events.emit(PoolEvent::Failed {
                worker: index,
                task: None,
                message: format!("worker crashed: {}", e.message()),
            });
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        self.slots.push(Slot {
            worker,
            busy: None,
            _on_message: on_message,
            _on_error: on_error,
        });
        Ok(())
    }

    fn pump(&mut self) -> Result<(), String> {
        while !self.queue.is_empty() {
            let free = match self.slots.iter().position(|s| s.busy.is_none()) {
                Some(i) => i,
                None if self.slots.len() < self.size => {
                    self.spawn()?;
                    self.slots.len() - 1
                }
                None => break,
            };
            let task = self.queue.pop_front().expect("queue is not empty");
            self.slots[free]
                .worker
                .post_message(&task.message)
                .map_err(|e| format!("cannot post to a worker: {e:?}"))?;
            self.slots[free].busy = Some(task.id);
        }
        Ok(())
    }

    /// The task a worker is running, if any.
    pub fn running(&self, worker: usize) -> Option<u32> {
        self.slots.get(worker).and_then(|s| s.busy)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.cancel();
    }
}
