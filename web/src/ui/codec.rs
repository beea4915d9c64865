//! The codec worker: one dedicated Web Worker (`worker.js?role=codec`, its own `bitlens-wasm`
//! instance) for the codec jobs — compress a checkpoint's files, decompress or open snapshots, time
//! codecs on a tensor. One job runs at a time; Cancel terminates the worker (the only way to stop
//! it in the middle of a frame), and the next job starts a fresh one.
//!
//! The worker picks its build itself: the threaded one (PLMC on a rayon pool of workers inside it)
//! when the page is cross-origin isolated and `threads/` was built, else the single-threaded one;
//! it says which in a `ready` message ([`CodecEvent::Ready`]).

use crate::ui::io::blob::js_error_text;
use js_sys::{Object, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{ErrorEvent, MessageEvent, Worker, WorkerOptions, WorkerType};
use yew::Callback;

/// What a codec job is about.
#[derive(Debug, Clone, PartialEq)]
pub enum JobKind {
    /// Compressing a checkpoint's files (one snapshot per file).
    Compress {
        /// Checkpoint id.
        ckpt: u32,
    },
    /// Reading a snapshot's index.
    Info {
        /// Snapshot id.
        snap: u32,
    },
    /// Decompressing snapshots, one after another.
    Decompress {
        /// Snapshot ids, in the order of the job's files.
        snaps: Vec<u32>,
    },
    /// Timing codecs on one tensor.
    Roundtrip {
        /// Checkpoint id.
        ckpt: u32,
        /// Tensor name.
        tensor: String,
    },
}

/// A running job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Job id (echoed by the worker).
    pub id: u32,
    /// What it does.
    pub kind: JobKind,
    /// Units done (bytes, or codecs for round trips).
    pub done: f64,
    /// Units in all.
    pub total: f64,
    /// `performance.now()` at the start.
    pub started: f64,
}

/// Which build of the module the codec worker runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Build {
    /// `threads` (wasm threads, shared memory) or `single`.
    pub kind: String,
    /// Threads the codecs run on.
    pub threads: u32,
    /// Why the single-threaded build was chosen.
    pub reason: Option<String>,
}

/// One file of a compress / decompress job, done (its bytes came as [`CodecEvent::Chunk`]s).
#[derive(Debug)]
pub struct FileDone {
    /// The JSON result (compress: sizes and entries; decompress: the snapshot's index).
    pub json: String,
    /// Seconds the worker spent on it.
    pub seconds: f64,
    /// The worker's wasm memory in bytes afterwards.
    pub memory: f64,
}

/// What the codec worker reports.
#[derive(Debug)]
pub enum CodecEvent {
    /// The worker loaded its module.
    Ready(Build),
    /// The next bytes of file `file` of job `job` (an `ArrayBuffer`, transferred from the worker).
    Chunk {
        /// Job id.
        job: u32,
        /// Index of the file in the job.
        file: usize,
        /// The bytes.
        chunk: JsValue,
        /// Their length.
        len: u64,
    },
    /// File `file` (index into the job's files) of job `job` is done, or failed.
    File {
        /// Job id.
        job: u32,
        /// Index of the file in the job.
        file: usize,
        /// Its output, or the error.
        result: Result<FileDone, String>,
    },
    /// Progress of job `job`.
    Progress {
        /// Job id.
        job: u32,
        /// Units done.
        done: f64,
        /// Units in all.
        total: f64,
    },
    /// Job `job` finished.
    Done {
        /// Job id.
        job: u32,
        /// The JSON result.
        json: String,
        /// Seconds the worker spent.
        seconds: f64,
        /// The worker's wasm memory in bytes at the end (its high-water mark).
        memory: f64,
    },
    /// Job `job` failed (`None`: the worker itself failed).
    Failed {
        /// Job id, if known.
        job: Option<u32>,
        /// The message (the core's typed error).
        message: String,
    },
}

/// A started worker with its event handlers (kept alive as long as the worker).
type Live = (
    Worker,
    Closure<dyn FnMut(MessageEvent)>,
    Closure<dyn FnMut(ErrorEvent)>,
);

/// The codec worker and its current job.
pub struct CodecRunner {
    worker: Option<Live>,
    events: Callback<CodecEvent>,
    next: u32,
    /// The job running, if any.
    pub job: Option<Job>,
}

fn get(data: &JsValue, key: &str) -> JsValue {
    Reflect::get(data, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

fn number(data: &JsValue, key: &str) -> f64 {
    get(data, key).as_f64().unwrap_or(0.0)
}

fn decode(data: &JsValue) -> CodecEvent {
    let job = number(data, "task") as u32;
    match get(data, "type").as_string().as_deref() {
        Some("ready") => CodecEvent::Ready(Build {
            kind: get(data, "build").as_string().unwrap_or_default(),
            threads: number(data, "threads") as u32,
            reason: get(data, "reason").as_string(),
        }),
        Some("chunk") => CodecEvent::Chunk {
            job,
            file: number(data, "file") as usize,
            chunk: get(data, "chunk"),
            len: number(data, "bytes") as u64,
        },
        Some("file") => CodecEvent::File {
            job,
            file: number(data, "file") as usize,
            result: match get(data, "error").as_string() {
                None => Ok(FileDone {
                    json: get(data, "json").as_string().unwrap_or_default(),
                    seconds: number(data, "seconds"),
                    memory: number(data, "memory"),
                }),
                Some(e) => Err(e),
            },
        },
        Some("progress") => CodecEvent::Progress {
            job,
            done: number(data, "done"),
            total: number(data, "total"),
        },
        Some("done") => CodecEvent::Done {
            job,
            json: get(data, "json").as_string().unwrap_or_default(),
            seconds: number(data, "seconds"),
            memory: number(data, "memory"),
        },
        _ => CodecEvent::Failed {
            job: Some(job),
            message: get(data, "message")
                .as_string()
                .unwrap_or_else(|| "unknown worker error".into()),
        },
    }
}

impl CodecRunner {
    /// A runner reporting to `events`; the worker starts with the first job.
    pub fn new(events: Callback<CodecEvent>) -> Self {
        CodecRunner {
            worker: None,
            events,
            next: 1,
            job: None,
        }
    }

    /// True while a job runs.
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Starts the worker now (it loads its module and reports its build), if it is not running.
    pub fn warm(&mut self) -> Result<(), String> {
        self.worker().map(|_| ())
    }

    fn worker(&mut self) -> Result<Worker, String> {
        if let Some((w, _, _)) = &self.worker {
            return Ok(w.clone());
        }
        let options = WorkerOptions::new();
        options.set_type(WorkerType::Module);
        let worker = Worker::new_with_options("worker.js?role=codec", &options)
            .map_err(|e| format!("cannot start a worker: {}", js_error_text(&e)))?;
        let events = self.events.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |e: MessageEvent| {
            events.emit(decode(&e.data()))
        });
        let events = self.events.clone();
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |e: ErrorEvent| {
            events.emit(CodecEvent::Failed {
                job: None,
                message: format!("codec worker crashed: {}", e.message()),
            })
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        self.worker = Some((worker.clone(), on_message, on_error));
        Ok(worker)
    }

    /// Starts a job: `fields` are the message's fields besides `kind` and `task`; `total` the units
    /// expected (for the progress bar).
    pub fn start(
        &mut self,
        kind: JobKind,
        wire_kind: &str,
        fields: &[(&str, JsValue)],
        total: f64,
        now: f64,
    ) -> Result<(), String> {
        if self.busy() {
            return Err("another codec job is running".into());
        }
        let worker = self.worker()?;
        let id = self.next;
        self.next += 1;
        let msg = Object::new();
        let set = |k: &str, v: &JsValue| Reflect::set(&msg, &k.into(), v).map(|_| ());
        set("kind", &wire_kind.into()).map_err(|e| js_error_text(&e))?;
        set("task", &JsValue::from(id)).map_err(|e| js_error_text(&e))?;
        for (k, v) in fields {
            set(k, v).map_err(|e| js_error_text(&e))?;
        }
        worker
            .post_message(&msg)
            .map_err(|e| format!("cannot post to the codec worker: {}", js_error_text(&e)))?;
        self.job = Some(Job {
            id,
            kind,
            done: 0.0,
            total,
            started: now,
        });
        Ok(())
    }

    /// Stops the running job now (terminates the worker).
    pub fn cancel(&mut self) {
        if let Some((w, _, _)) = self.worker.take() {
            w.terminate();
        }
        self.job = None;
    }

    /// The running job, if `event` is about it.
    pub fn current(&self, job: Option<u32>) -> Option<&Job> {
        self.job
            .as_ref()
            .filter(|j| job.is_none_or(|id| id == j.id))
    }
}

impl Drop for CodecRunner {
    fn drop(&mut self) {
        self.cancel();
    }
}
