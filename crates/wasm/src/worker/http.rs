//! Reading `[start, end)` of a remote file in windows with `fetch` and `Range` requests
//! ([`HttpWindows`]): the next windows are already requested while the current one is processed
//! ([`AHEAD`] in flight per reader, and the pool runs at most `hardwareConcurrency` workers, so the
//! requests in flight stay bounded), every answer is judged by [`bitlens_remote::check`] /
//! [`bitlens_remote::check_body`], transient failures (5xx, network, a short body, a connection
//! dropped mid-body) are retried
//! [`TRIES`] times with [`backoff_ms`], and dropping the reader (the task ends, fails or is
//! cancelled) aborts what is still in flight through its `AbortController`. Credentials (cookies)
//! go with the requests only when the [`RemoteFile`] says so.
//!
//! The requests are gloo-net's ([`range_request`]) and the back-off is a gloo-timers sleep. A
//! window's request and the read of its body run as a task of their own ([`spawn_now`]), so the
//! body streams in while the worker computes; the task is polled once where it is made, because
//! gloo-net's `send` is a future that sends nothing until it is polled and the windows ahead must
//! be requested at once, not at the worker's next pause. A body is kept as an `ArrayBuffer` (in
//! JavaScript memory, checked, then copied once into the caller's window) rather than gloo-net's
//! `binary()`, which would copy every window into wasm memory before it is checked.

use crate::error::{js_text, Failure};
use bitlens_protocol::RemoteFile;
use bitlens_remote::{backoff_ms, check, check_body, Head, RangeError, RemoteError, TRIES};
use futures_util::future::{FutureExt, RemoteHandle};
use gloo_net::http::{Request, RequestBuilder};
use js_sys::{ArrayBuffer, Uint8Array};
use std::collections::VecDeque;
use std::future::Future;
use std::task::{Context, Waker};
use std::time::Duration;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, AbortSignal, RequestCredentials, RequestMode};

/// Windows requested ahead of the one being processed, per reader (the current one included).
pub const AHEAD: usize = 2;

/// What the server answered to a window's request: its status and headers, and for a 206 its
/// whole body.
struct Answer {
    head: Head,
    body: Option<ArrayBuffer>,
}

/// One window on its way: its bytes in the file and the task requesting them.
struct Pending {
    start: u64,
    len: u64,
    answer: RemoteHandle<Result<Answer, RangeError>>,
}

/// Consecutive windows of a byte range of a remote file.
pub struct HttpWindows {
    file: RemoteFile,
    /// Next byte to request.
    next: u64,
    end: u64,
    window: u64,
    pending: VecDeque<Pending>,
    abort: Option<AbortController>,
}

impl HttpWindows {
    /// Windows of `[start, end)` of `file`, of at most `window` bytes; the first [`AHEAD`] are
    /// requested at once.
    pub fn new(file: RemoteFile, start: u64, end: u64, window: usize) -> Self {
        let mut w = HttpWindows {
            file,
            next: start,
            end,
            window: window.max(1) as u64,
            pending: VecDeque::with_capacity(AHEAD),
            abort: AbortController::new().ok(),
        };
        w.fill();
        w
    }

    /// Requests windows until [`AHEAD`] are in flight or the range is all requested.
    fn fill(&mut self) {
        while self.pending.len() < AHEAD && self.next < self.end {
            let len = self.window.min(self.end - self.next);
            let answer = self.request(self.next, len);
            self.pending.push_back(Pending {
                start: self.next,
                len,
                answer,
            });
            self.next += len;
        }
    }

    /// Sends `GET` with `Range: bytes=start-(start+len-1)` now; the task reads the answer and,
    /// for a 206, its whole body.
    fn request(&self, start: u64, len: u64) -> RemoteHandle<Result<Answer, RangeError>> {
        let signal = self.abort.as_ref().map(AbortController::signal);
        let request = range_request(&self.file, start, len, signal.as_ref());
        spawn_now(fetch_window(request, start, len))
    }

    /// Fills `out` with the next `out.len()` bytes (the window size, or what is left of the range).
    pub async fn next(&mut self, out: &mut [u8]) -> Result<(), Failure> {
        let Some(p) = self.pending.pop_front() else {
            return Err(Failure::new("read past the end of the requested range"));
        };
        if p.len != out.len() as u64 {
            return Err(Failure(format!(
                "window of {} bytes asked where {} were requested",
                out.len(),
                p.len
            )));
        }
        // Keep the pipeline full while this window arrives.
        self.fill();
        let mut answer = p.answer;
        let mut tries = 1;
        loop {
            match answer
                .await
                .and_then(|a| judge(a, &self.file, p.start, p.len))
            {
                Ok(body) => {
                    body.copy_to(out);
                    return Ok(());
                }
                Err(error) if error.transient() && tries < TRIES => {
                    gloo_timers::future::sleep(Duration::from_millis(backoff_ms(tries))).await;
                    tries += 1;
                    answer = self.request(p.start, p.len);
                }
                Err(error) => {
                    let e = RemoteError {
                        url: self.file.url.clone(),
                        error,
                        tries,
                    };
                    return Err(Failure(e.to_string()));
                }
            }
        }
    }
}

impl Drop for HttpWindows {
    fn drop(&mut self) {
        // Nothing will read what is still in flight: dropping a task's handle ends the task, and
        // the abort stops its request.
        self.pending.clear();
        if let Some(a) = self.abort.take() {
            a.abort();
        }
    }
}

/// Runs `task` on the worker's event loop and returns the handle to its result (dropping the
/// handle ends the task). The task is polled once here, so that what it starts (a `fetch`)
/// starts now rather than when the caller next awaits something that is not ready.
fn spawn_now<T: 'static>(task: impl Future<Output = T> + 'static) -> RemoteHandle<T> {
    let (task, handle) = task.remote_handle();
    let mut task = Box::pin(task);
    // A no-op waker is enough for this first poll: the spawned task polls it again with its own.
    let started = task.as_mut().poll(&mut Context::from_waker(Waker::noop()));
    if started.is_pending() {
        wasm_bindgen_futures::spawn_local(task);
    }
    handle
}

/// `Range: bytes=start-(start+len-1)` (`len` ≥ 1; 0 asks for the byte at `start`).
pub fn range_header(start: u64, len: u64) -> String {
    format!("bytes={start}-{}", start + len.max(1) - 1)
}

/// A `GET` of `len` bytes at `start` of `file`: CORS, credentials only when the file says so,
/// aborted through `signal`.
fn range_request(
    file: &RemoteFile,
    start: u64,
    len: u64,
    signal: Option<&AbortSignal>,
) -> RequestBuilder {
    Request::get(&file.url)
        .mode(RequestMode::Cors)
        .credentials(if file.credentials {
            RequestCredentials::Include
        } else {
            RequestCredentials::Omit
        })
        .header("Range", &range_header(start, len))
        .abort_signal(signal)
}

/// Sends `request` for `len` bytes at `start` (from whatever global this runs in: a worker; also
/// node in tests) and reads the answer's head and, for a 206, its body.
async fn fetch_window(request: RequestBuilder, start: u64, len: u64) -> Result<Answer, RangeError> {
    let response = request.send().await.map_err(send_failed)?;
    let headers = response.headers();
    let head = Head::read(response.status(), |name| headers.get(name));
    if head.status != 206 {
        return Ok(Answer { head, body: None });
    }
    let response = web_sys::Response::from(response);
    let body = response
        .array_buffer()
        .map_err(|e| body_failed(&e, start, len))?;
    let body = JsFuture::from(body)
        .await
        .map_err(|e| body_failed(&e, start, len))?;
    Ok(Answer {
        head,
        body: body.dyn_into().ok(),
    })
}

/// Judges the answer to a request for `len` bytes at `start`: the body when it is the bytes
/// asked for.
fn judge(
    answer: Answer,
    file: &RemoteFile,
    start: u64,
    len: u64,
) -> Result<Uint8Array, RangeError> {
    check(&answer.head.answer(), start, len, Some(file.size))?;
    let body = answer.body.ok_or(RangeError::ShortBody {
        start,
        got: 0,
        want: len,
    })?;
    check_body(start, u64::from(body.byte_length()), len)?;
    Ok(Uint8Array::new(&body))
}

/// The abort of a request (the task ended or was cancelled), by the JavaScript error's `name`.
fn cancelled(name: &str) -> Option<RangeError> {
    (name == "AbortError").then(|| RangeError::Network {
        message: "the request was cancelled".to_owned(),
    })
}

/// A `fetch` that failed before any answer: a network failure or a CORS refusal, which look the
/// same to the page ([`RangeError::no_answer`]), or the abort it was.
fn send_failed(e: gloo_net::Error) -> RangeError {
    match e {
        gloo_net::Error::JsError(e) => {
            cancelled(&e.name).unwrap_or_else(|| RangeError::no_answer(&e.message))
        }
        other => RangeError::no_answer(&other.to_string()),
    }
}

/// A body of `len` bytes at `start` that could not be read to its end: the server had answered,
/// so the connection broke ([`RangeError::Dropped`]), or the read was aborted.
fn body_failed(e: &JsValue, start: u64, len: u64) -> RangeError {
    let name = js_sys::Reflect::get(e, &"name".into())
        .ok()
        .and_then(|n| n.as_string())
        .unwrap_or_default();
    cancelled(&name).unwrap_or_else(|| RangeError::Dropped {
        start,
        want: len,
        message: js_text(e),
    })
}
