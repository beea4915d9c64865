//! A pool of Web Workers (`worker.js`, each with its own instance of the `bitlens-wasm` module).
//!
//! Tasks wait in a queue and are handed to whichever worker is free, one at a time, so the load
//! balances itself. Cancelling terminates every worker at once (the only way to stop a worker in
//! the middle of a window) and drops the queue; fresh workers are started on the next submit.
//! Each worker holds one read window (4 MiB) and one accumulator, so memory does not grow with the
//! file size.

use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::{Event, Request};
use bitlens_protocol::{Batch, JobResult, WorkerEvent};
use std::collections::VecDeque;
use yew::Callback;

/// URL of the worker script, relative to the page.
const WORKER_URL: &str = "worker.js";

/// Most workers started (the page's own thread stays free for the UI).
const MAX_WORKERS: usize = 8;

/// A task for a worker: its id and the request that describes it.
pub struct Task {
    /// Task id, echoed in every event about it.
    pub id: u32,
    /// The request posted to the worker.
    pub request: Request,
}

/// What the workers report.
#[derive(Debug)]
pub enum PoolEvent {
    /// Progress and finished items of a running task.
    Update {
        /// Task id.
        task: u32,
        /// Bytes read and items finished since the last report.
        batch: Batch,
    },
    /// A task finished (its last progress and results included).
    Done {
        /// Worker index.
        worker: usize,
        /// Task id.
        task: u32,
        /// Bytes read and items finished since the last report.
        batch: Batch,
        /// The worker's wasm memory size in bytes.
        memory: u64,
    },
    /// A task failed, or the worker itself (`task: None`).
    Failed {
        /// Worker index.
        worker: usize,
        /// Task id, if known.
        task: Option<u32>,
        /// What went wrong.
        message: String,
    },
}

impl PoolEvent {
    /// What worker `worker` reported, as the pool's event.
    fn of(worker: usize, event: Event) -> PoolEvent {
        match event {
            WorkerEvent::Update { task, batch } => PoolEvent::Update { task, batch },
            WorkerEvent::Done {
                task,
                memory,
                result: JobResult::Items(batch),
                ..
            } => PoolEvent::Done {
                worker,
                task,
                batch,
                memory,
            },
            WorkerEvent::Failed { task, message } => PoolEvent::Failed {
                worker,
                task,
                message,
            },
            other => PoolEvent::Failed {
                worker,
                task: other.task(),
                message: "the worker answered a statistics task with a codec job's event".into(),
            },
        }
    }
}

struct Slot {
    worker: WorkerHandle,
    busy: Option<u32>,
}

/// The worker pool.
pub struct Pool {
    slots: Vec<Slot>,
    queue: VecDeque<Task>,
    size: usize,
    events: Callback<PoolEvent>,
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
        self.slots.clear();
        self.queue.clear();
    }

    fn spawn(&mut self) -> Result<(), String> {
        let index = self.slots.len();
        let events = self.events.reform(move |e| PoolEvent::of(index, e));
        let worker = WorkerHandle::spawn(WORKER_URL, "worker", events)?;
        self.slots.push(Slot { worker, busy: None });
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
            let Some(task) = self.queue.pop_front() else {
                break;
            };
            self.slots[free].worker.post(&task.request)?;
            self.slots[free].busy = Some(task.id);
        }
        Ok(())
    }

    /// The task a worker is running, if any.
    pub fn running(&self, worker: usize) -> Option<u32> {
        self.slots.get(worker).and_then(|s| s.busy)
    }
}
