//! The page's pool of Web Workers (`worker.js`, each with its own instance of the `bitlens-wasm`
//! module), shared by every app instance on the page (the app, or several `<bitlens-view>`
//! elements): one set of at most `hardwareConcurrency` workers, however many views.
//!
//! Each app holds a [`Pool`], its handle on the shared one. Tasks of every handle wait in one queue
//! and are handed to whichever worker is free, one at a time, so the load balances itself. Task ids
//! are unique on the page ([`crate::ui::jobs`] gives them), and each worker's events go to the
//! handle whose task it runs. Cancelling terminates the workers running
//! that handle's tasks (the only way to stop a worker in the middle of a window) and drops its
//! queued tasks; the other handles' tasks go on, and fresh workers start on the next submit. Each
//! worker holds one read window (4 MiB) and one accumulator, so memory does not grow with the file
//! size.

use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::{Event, Request};
use bitlens_protocol::{Batch, JobResult, WorkerEvent};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use yew::Callback;

/// The worker script, one of the app's files (see [`crate::ui::assets`]), in its statistics role:
/// it warms its statistics kernels up when it starts (`crates/wasm/src/worker/warm.rs`).
const WORKER_URL: &str = "worker.js?role=stats";

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
    /// What worker `worker` reported about its task `id`, as the pool's event.
    fn of(worker: usize, id: u32, event: Event) -> PoolEvent {
        match event {
            WorkerEvent::Update { batch, .. } => PoolEvent::Update { task: id, batch },
            WorkerEvent::Done {
                memory,
                result: JobResult::Items(batch),
                ..
            } => PoolEvent::Done {
                worker,
                task: id,
                batch,
                memory,
            },
            WorkerEvent::Failed { task, message } => PoolEvent::Failed {
                worker,
                task: task.map(|_| id),
                message,
            },
            other => PoolEvent::Failed {
                worker,
                task: other.task().map(|_| id),
                message: "the worker answered a statistics task with a codec job's event".into(),
            },
        }
    }
}

/// A task the shared pool holds: whose it is, and its id (unique on the page: see
/// [`crate::ui::jobs::Jobs`]; echoed in the worker's events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Owned {
    /// The handle that submitted it.
    owner: u32,
    /// Its id.
    id: u32,
}

struct Slot {
    worker: WorkerHandle,
    busy: Option<Owned>,
}

/// The workers, the queue and the handles of the page.
struct Shared {
    /// Workers by a stable index (the `worker` of [`PoolEvent`]s).
    slots: BTreeMap<usize, Slot>,
    next_slot: usize,
    queue: VecDeque<(Owned, Request)>,
    size: usize,
    /// Where each handle's events go.
    handles: HashMap<u32, Callback<PoolEvent>>,
    next_handle: u32,
}

thread_local! {
    static SHARED: RefCell<Shared> = RefCell::new(Shared::new());
}

impl Shared {
    fn new() -> Self {
        let cores = web_sys::window()
            .map(|w| w.navigator().hardware_concurrency() as usize)
            .unwrap_or(2);
        Shared {
            slots: BTreeMap::new(),
            next_slot: 0,
            queue: VecDeque::new(),
            size: cores.clamp(1, MAX_WORKERS),
            handles: HashMap::new(),
            next_handle: 1,
        }
    }

    fn spawn(&mut self) -> Result<usize, String> {
        let index = self.next_slot;
        let events = Callback::from(move |e: Event| on_event(index, e));
        let worker = WorkerHandle::spawn(WORKER_URL, "worker", events)?;
        self.next_slot += 1;
        self.slots.insert(index, Slot { worker, busy: None });
        Ok(index)
    }

    fn pump(&mut self) -> Result<(), String> {
        while !self.queue.is_empty() {
            let free = match self.slots.iter().find(|(_, s)| s.busy.is_none()) {
                Some((&i, _)) => i,
                None if self.slots.len() < self.size => self.spawn()?,
                None => break,
            };
            let Some((task, request)) = self.queue.pop_front() else {
                break;
            };
            if let Some(slot) = self.slots.get_mut(&free) {
                slot.worker.post(&request)?;
                slot.busy = Some(task);
            }
        }
        Ok(())
    }

    /// Drops `owner`'s queued tasks and terminates the workers running its tasks.
    fn cancel(&mut self, owner: u32) {
        self.queue.retain(|(t, _)| t.owner != owner);
        self.slots
            .retain(|_, s| s.busy.is_none_or(|t| t.owner != owner));
    }

    /// Where worker `slot`'s event goes: its task's handle and the event in the handle's ids.
    fn route(&mut self, slot: usize, event: Event) -> Option<(Callback<PoolEvent>, PoolEvent)> {
        let busy = self.slots.get(&slot)?.busy;
        let Some(task) = busy else {
            // An idle worker has nothing to report; if it died, forget it.
            if event.task().is_none() {
                self.slots.remove(&slot);
            }
            return None;
        };
        if event.task().is_some_and(|t| t != task.id) {
            return None; // not about the task it runs now
        }
        let to = self.handles.get(&task.owner)?.clone();
        Some((to, PoolEvent::of(slot, task.id, event)))
    }
}

/// A worker reported: hand the event to the handle whose task it runs (outside the borrow, since
/// the handle's app may call back into the pool at once).
fn on_event(slot: usize, event: Event) {
    if let Some((to, event)) = SHARED.with(|s| s.borrow_mut().route(slot, event)) {
        to.emit(event);
    }
}

/// Number of workers running on the page, over every app instance.
pub fn workers() -> usize {
    SHARED.with(|s| s.borrow().slots.len())
}

/// An app instance's handle on the page's shared worker pool.
pub struct Pool {
    id: u32,
}

impl Pool {
    /// A handle whose tasks' events go to `events`. The page runs `hardwareConcurrency` workers
    /// (at most [`MAX_WORKERS`]) for all handles together.
    pub fn new(events: Callback<PoolEvent>) -> Self {
        SHARED.with(|s| {
            let mut s = s.borrow_mut();
            let id = s.next_handle;
            s.next_handle += 1;
            s.handles.insert(id, events);
            Pool { id }
        })
    }

    /// Starts the page's workers now, up to the pool's size, so the first tasks do not wait for
    /// them to load their module (a worker takes a few hundred milliseconds; the app calls this
    /// when files are given, while their headers are read).
    pub fn warm(&self) -> Result<(), String> {
        SHARED.with(|s| {
            let mut s = s.borrow_mut();
            while s.slots.len() < s.size {
                s.spawn()?;
            }
            Ok(())
        })
    }

    /// Number of workers the page runs at most.
    pub fn size(&self) -> usize {
        SHARED.with(|s| s.borrow().size)
    }

    /// True while any of this handle's tasks is queued or running.
    pub fn busy(&self) -> bool {
        SHARED.with(|s| {
            let s = s.borrow();
            s.queue.iter().any(|(t, _)| t.owner == self.id)
                || s.slots
                    .values()
                    .any(|w| w.busy.is_some_and(|t| t.owner == self.id))
        })
    }

    /// Queues a task and starts it if a worker is free.
    pub fn submit(&mut self, task: Task) -> Result<(), String> {
        SHARED.with(|s| {
            let mut s = s.borrow_mut();
            let owned = Owned {
                owner: self.id,
                id: task.id,
            };
            s.queue.push_back((owned, task.request));
            s.pump()
        })
    }

    /// Marks a worker running this handle's task free (after `Done` or `Failed`) and hands it the
    /// next task.
    pub fn finished(&mut self, worker: usize) -> Result<(), String> {
        SHARED.with(|s| {
            let mut s = s.borrow_mut();
            if let Some(w) = s.slots.get_mut(&worker) {
                if w.busy.is_some_and(|t| t.owner == self.id) {
                    w.busy = None;
                }
            }
            s.pump()
        })
    }

    /// Stops the workers running this handle's tasks now and drops its queued tasks; other
    /// handles' tasks go on (and may take the freed places).
    pub fn cancel(&mut self) {
        SHARED.with(|s| {
            let mut s = s.borrow_mut();
            s.cancel(self.id);
            // A failure to start a worker here is the queued tasks' owners' to see: it recurs on
            // their next submit or finish.
            let _ = s.pump();
        });
    }

    /// This handle's task a worker is running, if any.
    pub fn running(&self, worker: usize) -> Option<u32> {
        SHARED.with(|s| {
            s.borrow()
                .slots
                .get(&worker)
                .and_then(|w| w.busy)
                .filter(|t| t.owner == self.id)
                .map(|t| t.id)
        })
    }
}

impl Drop for Pool {
    /// An unmounted app's tasks stop; the last handle gone stops every worker.
    fn drop(&mut self) {
        SHARED.with(|s| {
            let mut s = s.borrow_mut();
            s.cancel(self.id);
            s.handles.remove(&self.id);
            if s.handles.is_empty() {
                s.slots.clear();
                s.queue.clear();
            } else {
                let _ = s.pump();
            }
        });
    }
}
