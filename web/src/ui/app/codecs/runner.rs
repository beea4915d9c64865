//! The codec worker: one dedicated Web Worker (`worker.js?role=codec`, its own `bitlens-wasm`
//! instance) for the codec jobs — compress a checkpoint's files, decompress or open snapshots, time
//! codecs on a tensor. One job runs at a time (the panel keeps it); Cancel terminates the worker
//! (the only way to stop it in the middle of a frame), and the next job starts a fresh one.
//!
//! The worker picks its build itself (`chooseBuild` in web/worker.js: the threaded one, PLMC on a
//! rayon pool of workers inside it, only where the page is cross-origin isolated, `threads/` was
//! built and the machine has the cores for it; else the single-threaded one) and says which and
//! why in a `Ready` event. The page's `?codec-threads=N&codec-read-ahead=B` (tests and
//! benchmarks) are passed on as `&threads=N&read-ahead=B`, which override that choice.
//!
//! The page's output session: compress / decompress outputs are written by the worker into the
//! directory `bitlens-output/<session>` of the origin private file system (web/worker.js), and
//! this page holds the Web Lock `bitlens-output/<session>` while it lives, so that directory
//! outlives codec workers and is removed by a later page once this one is gone. The lock's
//! callback is a `Closure` handed to `navigator.locks.request`: gloo has no Web Locks.

use crate::ui::worker::WorkerHandle;
use bitlens_protocol::js::{Event, Request};
use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::FileSystemDirectoryHandle;
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
            let mut script = "worker.js?role=codec".to_owned();
            if let Some(s) = SESSION.with(|s| s.clone()) {
                script.push_str(&format!("&session={s}"));
            }
            // A choice forced by the page's URL (tests and benchmarks).
            script.push_str(&crate::ui::io::location::codec_worker_query());
            self.worker = Some(WorkerHandle::spawn(&script, "codec worker", events)?);
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

thread_local! {
    /// This page's output session (None: no Web Locks here).
    static SESSION: Option<String> = output_session();
}

/// A new output session: a random name whose Web Lock this page takes and keeps (the lock is let go
/// when the page goes away); None where there are no Web Locks.
fn output_session() -> Option<String> {
    let locks = Reflect::get(&web_sys::window()?.navigator(), &"locks".into()).ok()?;
    let request: Function = Reflect::get(&locks, &"request".into())
        .ok()?
        .dyn_into()
        .ok()?;
    let random = || (js_sys::Math::random() * 2f64.powi(52)) as u64;
    let session = format!("{:x}{:x}", random(), random());
    // Held until the page goes: the callback's promise never settles.
    let hold = Closure::once_into_js(|_lock: JsValue| Promise::new(&mut |_, _| {}));
    let name = JsValue::from_str(&format!("{OUTPUT_DIR}/{session}"));
    request.call2(&locks, &name, &hold).ok()?;
    Some(session)
}

/// The directory of the origin private file system that holds every page's output directory.
const OUTPUT_DIR: &str = "bitlens-output";

/// Removes the file `name` from this page's output directory (a download the page let go of);
/// nothing waits for it, and a file that cannot be removed goes with the directory, later.
pub fn remove_output(name: &str) {
    let (Some(session), Some(window)) = (SESSION.with(|s| s.clone()), web_sys::window()) else {
        return;
    };
    let storage = window.navigator().storage();
    let name = name.to_owned();
    wasm_bindgen_futures::spawn_local(async move {
        let dir = |p: js_sys::Promise| async {
            JsFuture::from(p)
                .await
                .map(|d| d.unchecked_into::<FileSystemDirectoryHandle>())
        };
        let removed = async {
            let root = dir(storage.get_directory()).await?;
            let all = dir(root.get_directory_handle(OUTPUT_DIR)).await?;
            let ours = dir(all.get_directory_handle(&session)).await?;
            JsFuture::from(ours.remove_entry(&name)).await
        };
        let _ = removed.await;
    });
}
