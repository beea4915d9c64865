//! The Values view's workers: up to one per core (at most [`MAX_WORKERS`]). A map window is cut
//! into bands of cell rows, one per worker ([`crate::model::weightmap::bands`]), computed at
//! once and stacked back into one tile when the last band comes ([`MapJob`]); exact lanes (the
//! hover, the table) go to the first worker.
//!
//! A worker takes a few hundred milliseconds to start (its script and module), longer than a
//! small map takes to compute, so the app has a set started ahead ([`prewarm`]: once a
//! checkpoint's statistics are done, and when it leaves Values, whose view stops its workers);
//! a view adopts them and routes their events to itself.

use crate::model::weightmap::bands::{split, stack};
use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::{Event, Js, Request};
use bitlens_protocol::FileRef;
use bitlens_stats::weightmap::{Layer, Tile, Window};
use bitlens_tensors::format::Entry;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use yew::Callback;

/// Most workers a map uses.
pub const MAX_WORKERS: usize = 4;

/// Where a map worker's events go: the view using it, or nowhere while it waits to be adopted.
type Route = Rc<RefCell<Option<Callback<Event>>>>;

/// A map worker and where its events go.
struct Routed {
    handle: WorkerHandle,
    route: Route,
    /// It crashed (or its module failed to load) while no view was listening.
    dead: Rc<Cell<bool>>,
}

impl Routed {
    /// Starts a map worker whose events go to `to` (None: nowhere until adopted; a crash
    /// meanwhile marks it dead, so no view adopts a worker that will never answer).
    fn spawn(to: Option<Callback<Event>>) -> Result<Routed, String> {
        let route: Route = Rc::new(RefCell::new(to));
        let dead = Rc::new(Cell::new(false));
        let (forward, died) = (route.clone(), dead.clone());
        let handle = WorkerHandle::spawn(
            "worker.js",
            "map worker",
            Callback::from(move |e: Event| {
                let to = forward.borrow().clone();
                match to {
                    Some(to) => to.emit(e),
                    None => died.set(died.get() || matches!(e, Event::Failed { task: None, .. })),
                }
            }),
        )?;
        Ok(Routed {
            handle,
            route,
            dead,
        })
    }
}

thread_local! {
    /// Map workers started ahead of a view that needs them.
    static SPARE: RefCell<Vec<Routed>> = const { RefCell::new(Vec::new()) };
}

/// How many workers a map uses here: one per core, at most [`MAX_WORKERS`].
fn workers_here() -> usize {
    let cores = web_sys::window().map_or(1.0, |w| w.navigator().hardware_concurrency());
    (cores as usize).clamp(1, MAX_WORKERS)
}

/// Starts the map's workers ahead of a view that needs them, unless they are already waiting
/// (a failure to start one is left for the view to report when it starts its own).
pub fn prewarm() {
    SPARE.with(|spare| {
        let mut spare = spare.borrow_mut();
        while spare.len() < workers_here() {
            match Routed::spawn(None) {
                Ok(w) => spare.push(w),
                Err(_) => break,
            }
        }
    });
}

/// What a map request reads: the tensor (and for the changes layer the one it changed to).
pub struct Source {
    /// The file holding the tensor.
    pub file: FileRef<Js>,
    /// The tensor.
    pub entry: Entry,
    /// The changes layer's second tensor.
    pub other: Option<(FileRef<Js>, Entry)>,
}

/// A window being computed in bands.
pub struct MapJob {
    /// The window.
    pub window: Window,
    /// When it was asked for (`performance.now()`).
    pub started: f64,
    /// The longest a band took in its worker (seconds, as the worker reported).
    pub worker_seconds: f64,
    tasks: Vec<u32>,
    parts: Vec<Option<Tile>>,
}

impl MapJob {
    /// True when `task` is one of its bands.
    pub fn owns(&self, task: u32) -> bool {
        self.tasks.contains(&task)
    }

    /// Takes band `task`'s tile (`seconds` in its worker); once every band came, the whole
    /// window's tile.
    pub fn take(&mut self, task: u32, tile: Tile, seconds: f64) -> Option<Tile> {
        let i = self.tasks.iter().position(|&t| t == task)?;
        self.worker_seconds = self.worker_seconds.max(seconds);
        self.parts[i] = Some(tile);
        if self.parts.iter().all(Option::is_some) {
            stack(self.parts.iter_mut().filter_map(Option::take).collect())
        } else {
            None
        }
    }
}

/// The view's workers.
pub struct MapWorkers {
    handles: Vec<Routed>,
    size: usize,
    next_task: u32,
    events: Callback<Event>,
}

impl MapWorkers {
    /// Workers reporting to `events`: as many as the machine has cores, at most [`MAX_WORKERS`].
    pub fn new(events: Callback<Event>) -> MapWorkers {
        MapWorkers {
            handles: Vec::new(),
            size: workers_here(),
            next_task: 0,
            events,
        }
    }

    /// Has every worker ready: the ones started ahead ([`prewarm`]), else new ones (a worker
    /// takes a moment to load its module: better while the view is being laid out than on the
    /// first map).
    pub fn warm(&mut self) -> Result<(), String> {
        while self.handles.len() < self.size {
            let spare = SPARE.with(|s| {
                let mut s = s.borrow_mut();
                s.retain(|w| !w.dead.get());
                s.pop()
            });
            let w = match spare {
                Some(w) => {
                    *w.route.borrow_mut() = Some(self.events.clone());
                    w
                }
                None => Routed::spawn(Some(self.events.clone()))?,
            };
            self.handles.push(w);
        }
        Ok(())
    }

    /// Posts `request` to worker `i`, starting the workers up to it.
    fn post(&mut self, i: usize, request: &Request) -> Result<(), String> {
        while self.handles.len() <= i {
            let w = Routed::spawn(Some(self.events.clone()))?;
            self.handles.push(w);
        }
        self.handles[i].handle.post(request)
    }

    /// The next task id.
    fn task(&mut self) -> u32 {
        self.next_task += 1;
        self.next_task
    }

    /// Asks for `window` of `source` for `layer`, in bands.
    pub fn map(
        &mut self,
        source: &Source,
        window: Window,
        layer: Layer,
        started: f64,
    ) -> Result<MapJob, String> {
        let bands = split(&window, self.size);
        let mut tasks = Vec::with_capacity(bands.len());
        for (i, band) in bands.into_iter().enumerate() {
            let task = self.task();
            self.post(
                i,
                &Request::WeightMap {
                    task,
                    file: source.file.clone(),
                    entry: source.entry.clone(),
                    other: source.other.clone(),
                    window: band,
                    layer,
                },
            )?;
            tasks.push(task);
        }
        Ok(MapJob {
            window,
            started,
            worker_seconds: 0.0,
            parts: tasks.iter().map(|_| None).collect(),
            tasks,
        })
    }

    /// Asks for lanes `start..start + count` of `entry` in `file`; returns the task id.
    pub fn lanes(
        &mut self,
        file: FileRef<Js>,
        entry: Entry,
        start: u64,
        count: u64,
    ) -> Result<u32, String> {
        let task = self.task();
        self.post(
            0,
            &Request::Elements {
                task,
                file,
                entry,
                start,
                count,
            },
        )?;
        Ok(task)
    }

    /// Forgets the workers (one crashed: it will not answer again); the next request starts
    /// new ones.
    pub fn crashed(&mut self) {
        self.handles.clear();
    }
}
