//! The job loop of the page's Web Workers: `web/worker.js` loads this module and hands it every
//! message of the page ([`run_job`]); this module reads the [`WorkerRequest`](bitlens_protocol::WorkerRequest),
//! runs it and posts its [`WorkerEvent`](bitlens_protocol::WorkerEvent)s back (see
//! [`bitlens_protocol::message`] for the sequence of events of each kind of job).
//!
//! - [`items`]: statistics and flips tasks (the page's statistics pool), streamed from `Blob`s or
//!   remote files in windows; the layout of a GGUF / PyTorch / NumPy file and the statistics of
//!   its tensors that are not plain byte ranges (and the differences of pairs of them), read
//!   synchronously.
//! - [`jobs`]: the codec worker's jobs: compress, decompress, snapshot index (of a file or a URL),
//!   one tensor of a snapshot, codec comparison; [`frames_source`]: the decompress job's reads of
//!   a snapshot (frames read ahead or as a stream, the rest exactly); [`streamed`]: a file read as
//!   a stream while the codec works on what has arrived (the compress job's input, a snapshot's
//!   frames).
//! - [`windows`]: reading a file range in windows, asynchronously; [`http`]: the same for a remote
//!   file, with `Range` requests.
//! - [`lesson`]: the lessons' computations kept out of the page's module (the lossy lesson's
//!   survey of the lossy codecs, and its non-uniform bins, `bitlens_inshrink`).
//! - [`warm`]: the statistics kernels run on a little synthetic data when a statistics worker
//!   starts ([`warm_up`]), so the browser's optimizing compiles come before the first task.
//! - [`weightmap`]: a weight map's cells for a window of one tensor, and a few of its values
//!   exactly, read from those bytes only.
//! - [`opfs`]: a compress / decompress job's output file in the origin private file system.
//! - [`post`]: where events go ([`post::Post`]: the page, or a test's list) and how often.

pub mod frames_source;
pub mod http;
pub mod items;
pub mod jobs;
pub mod lesson;
pub mod opfs;
pub mod post;
pub mod streamed;
pub mod warm;
pub mod weightmap;
pub mod windows;

use crate::convert::{memory_bytes, now};
use crate::error::Failure;
use crate::threads::build;
use bitlens_protocol::js::{from_js, Event, Js, Request};
use bitlens_protocol::{JobResult, WorkerRequest};
use js_sys::Function;
use post::{Post, ToPage};
use wasm_bindgen::prelude::*;
use web_sys::{Blob, FileSystemDirectoryHandle};

/// Bytes per `Blob` read of the statistics tasks.
pub const WINDOW: usize = 4 << 20;

/// Runs one request of the page (a `WorkerRequest` as posted) and posts its events to the page.
/// `ahead(blob)`, where the worker could start its read-ahead thread, gives the synchronous
/// `read(offset, length)` the codec jobs read their input files with (else they read with
/// `FileReaderSync` on this thread). `output`, where the browser has sync access handles to the
/// origin private file system: the page's directory there, which compress / decompress jobs write
/// their output files to (else they post them in chunks).
#[wasm_bindgen(js_name = runJob)]
pub async fn run_job(
    message: JsValue,
    ahead: Option<Function>,
    output: Option<FileSystemDirectoryHandle>,
) {
    let helpers = Helpers {
        ahead: ahead.as_ref(),
        output: output.as_ref(),
    };
    match ToPage::new() {
        Ok(page) => run(message, helpers, &page, WINDOW).await,
        // Not in a worker: there is no page to answer.
        Err(e) => web_sys::console::error_1(&JsValue::from_str(&e.0)),
    }
}

/// Runs the statistics kernels on a little synthetic data of every element type (see [`warm`]);
/// returns how many types ran. `web/worker.js` calls it when a statistics worker starts.
#[wasm_bindgen(js_name = warmUp)]
pub fn warm_up() -> usize {
    warm::warm_up()
}

/// Compresses and decompresses a little synthetic data with LMC (see [`warm`]); returns whether
/// it round-tripped. `web/worker.js` calls it when the codec worker starts.
#[wasm_bindgen(js_name = warmUpCodec)]
pub fn warm_up_codec() -> bool {
    warm::warm_up_codec()
}

/// Tells the page which build of the module this worker runs (and `reason`: why this build and
/// pool size), once the module is ready (the codec worker, before its first job).
#[wasm_bindgen(js_name = announceReady)]
pub fn announce_ready(reason: Option<String>) {
    match ToPage::new() {
        Ok(page) => {
            if let Err(e) = page.post(&Event::Ready(build(reason)), None) {
                web_sys::console::error_1(&JsValue::from_str(&e.0));
            }
        }
        Err(e) => web_sys::console::error_1(&JsValue::from_str(&e.0)),
    }
}

/// What `web/worker.js` gives the codec jobs (see [`run_job`]); the default has neither.
#[derive(Clone, Copy, Default)]
pub struct Helpers<'a> {
    /// `ahead(blob)`: a synchronous `read(offset, length)` of `blob` that reads ahead on another
    /// thread.
    pub ahead: Option<&'a Function>,
    /// The directory compress / decompress jobs write their output files to.
    pub output: Option<&'a FileSystemDirectoryHandle>,
}

/// [`run_job`] with any [`Post`] and statistics windows of `window` bytes: runs the request and
/// posts its events, ending with `Done` or `Failed`.
pub async fn run(message: JsValue, helpers: Helpers<'_>, out: &dyn Post, window: usize) {
    let request: Request = match from_js(message) {
        Ok(r) => r,
        Err(e) => {
            let message = format!("the worker could not read the request: {e}");
            return report(
                out,
                Event::Failed {
                    task: None,
                    message,
                },
            );
        }
    };
    let task = request.task();
    let started = now();
    let event = match dispatch(request, helpers, out, window).await {
        Ok(result) => Event::Done {
            task,
            seconds: (now() - started) / 1e3,
            memory: memory_bytes() as u64,
            result,
        },
        Err(f) => Event::Failed {
            task: Some(task),
            message: f.0,
        },
    };
    report(out, event);
}

/// Posts the last event of a request; when even that fails, says so (the page must not wait for an
/// answer that never comes), else logs it.
fn report(out: &dyn Post, event: Event) {
    // A weight map's cells and a task's last items are byte strings: moved, not copied.
    let posted = if matches!(
        event,
        Event::Done {
            result: JobResult::WeightMap(_) | JobResult::Items(_),
            ..
        }
    ) {
        out.post_moving_bytes(&event)
    } else {
        out.post(&event, None)
    };
    if let Err(e) = posted {
        let failed = Event::Failed {
            task: event.task(),
            message: format!("the worker could not send its answer: {}", e.0),
        };
        if out.post(&failed, None).is_err() {
            web_sys::console::error_1(&JsValue::from_str(&e.0));
        }
    }
}

async fn dispatch(
    request: Request,
    helpers: Helpers<'_>,
    out: &dyn Post,
    window: usize,
) -> Result<JobResult, Failure> {
    let task = request.task();
    let Helpers { ahead, output } = helpers;
    match request {
        WorkerRequest::Stats { file, spans, .. } => {
            items::stats(task, file, &spans, out, window).await
        }
        WorkerRequest::Flips { spans, .. } => items::flips(task, spans, out, window).await,
        WorkerRequest::Compress { files, options, .. } => {
            jobs::compress(task, files, &options, ahead, output, out).await
        }
        WorkerRequest::Decompress { files, total, .. } => {
            jobs::decompress(task, files, total, ahead, output, out).await
        }
        WorkerRequest::SnapshotInfo { file, .. } => jobs::info(file),
        WorkerRequest::DecodeTensor {
            file, tensor, base, ..
        } => jobs::decode_tensor(task, file, &tensor, base, out),
        WorkerRequest::Roundtrip {
            blob,
            offset,
            bytes,
            dtype,
            codecs,
            ..
        } => jobs::roundtrip(task, &to_blob(blob)?, offset, bytes, dtype, &codecs, out),
        WorkerRequest::Describe { file, .. } => items::describe(file),
        WorkerRequest::EntryStats { file, entries, .. } => {
            items::entry_stats(task, file, &entries, out, window)
        }
        WorkerRequest::EntryFlips { pairs, .. } => items::entry_flips(task, pairs, out, window),
        WorkerRequest::RoundtripEntry {
            file,
            entry,
            codecs,
            ..
        } => jobs::roundtrip_entry(task, file, &entry, &codecs, out),
        WorkerRequest::InshrinkBins {
            file,
            offset,
            bytes,
            dtype,
            balance,
            ..
        } => lesson::inshrink_bins(file, offset, bytes, dtype, balance),
        WorkerRequest::LossySurvey {
            file,
            offset,
            bytes,
            dtype,
            ..
        } => lesson::lossy_survey(file, offset, bytes, dtype),
        WorkerRequest::WeightMap {
            file,
            entry,
            other,
            window,
            layer,
            ..
        } => weightmap::weight_map(file, &entry, other, &window, layer).await,
        WorkerRequest::Elements {
            file,
            entry,
            start,
            count,
            ..
        } => weightmap::elements(file, &entry, start, count),
    }
}

/// The `Blob` a message carries.
pub fn to_blob(value: Js) -> Result<Blob, Failure> {
    value
        .0
        .dyn_into()
        .map_err(|v| Failure(format!("expected a Blob, got {v:?}")))
}
