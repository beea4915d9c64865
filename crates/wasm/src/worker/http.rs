//! Reading `[start, end)` of a remote file in windows with `fetch` and `Range` requests
//! ([`HttpWindows`]): the next windows are already requested while the current one is processed
//! ([`AHEAD`] in flight per reader, and the pool runs at most `hardwareConcurrency` workers, so the
//! requests in flight stay bounded), every answer is judged by [`bitlens_remote::check`] /
//! [`bitlens_remote::check_body`], transient failures (5xx, network, a short body) are retried
//! [`TRIES`] times with [`backoff_ms`], and dropping the reader (the task ends, fails or is
//! cancelled) aborts what is still in flight through its `AbortController`. Credentials (cookies)
//! go with the requests only when the [`RemoteFile`] says so.

use crate::error::{js_text, Failure};
use bitlens_protocol::RemoteFile;
use bitlens_remote::{backoff_ms, check, check_body, Head, RangeError, RemoteError, TRIES};
use js_sys::{Array, ArrayBuffer, Promise, Uint8Array};
use std::collections::VecDeque;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, Headers, RequestCredentials, RequestInit, RequestMode, Response,
    WorkerGlobalScope,
};

/// Windows requested ahead of the one being processed, per reader (the current one included).
pub const AHEAD: usize = 2;

/// What a `fetch` that failed before any answer means in a browser.
pub const NETWORK_MESSAGE: &str = "the browser could not read the URL: the server sent no CORS \
     headers allowing this page (Access-Control-Allow-Origin) or is unreachable";

/// One window on its way: its bytes in the file and the promise of `[Response, ArrayBuffer|null]`.
struct Pending {
    start: u64,
    len: u64,
    answer: Promise,
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
    pub fn new(file: RemoteFile, start: u64, end: u64, window: usize) -> Result<Self, Failure> {
        let mut w = HttpWindows {
            file,
            next: start,
            end,
            window: window.max(1) as u64,
            pending: VecDeque::with_capacity(AHEAD),
            abort: AbortController::new().ok(),
        };
        w.fill()?;
        Ok(w)
    }

    /// Requests windows until [`AHEAD`] are in flight or the range is all requested.
    fn fill(&mut self) -> Result<(), Failure> {
        while self.pending.len() < AHEAD && self.next < self.end {
            let len = self.window.min(self.end - self.next);
            let answer = self.request(self.next, len)?;
            self.pending.push_back(Pending {
                start: self.next,
                len,
                answer,
            });
            self.next += len;
        }
        Ok(())
    }

    /// Starts `GET` with `Range: bytes=start-(start+len-1)`; the promise resolves to the response
    /// and, for a 206, its whole body (so the body streams in while the worker computes).
    fn request(&self, start: u64, len: u64) -> Result<Promise, Failure> {
        let signal = self.abort.as_ref().map(AbortController::signal);
        let fetched = fetch_range(&self.file, start, len, signal.as_ref())?;
        let with_body = Closure::once_into_js(move |resp: JsValue| -> JsValue {
            let Ok(r) = resp.dyn_into::<Response>() else {
                return Promise::reject(&"fetch gave no Response".into()).into();
            };
            if r.status() != 206 {
                return Array::of2(&r, &JsValue::NULL).into();
            }
            match r.array_buffer() {
                Ok(body) => {
                    let pair = Closure::once_into_js(move |buf: JsValue| -> JsValue {
                        Array::of2(&r, &buf).into()
                    });
                    chain(&body, "then", &pair).into()
                }
                Err(e) => Promise::reject(&e).into(),
            }
        });
        Ok(chain(&fetched, "then", &with_body))
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
        self.fill()?;
        let mut answer = p.answer;
        let mut tries = 1;
        loop {
            match judge(JsFuture::from(answer).await, &self.file, p.start, p.len) {
                Ok(body) => {
                    body.copy_to(out);
                    return Ok(());
                }
                Err(error) if error.transient() && tries < TRIES => {
                    sleep(backoff_ms(tries)).await?;
                    tries += 1;
                    answer = self.request(p.start, p.len)?;
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
        // Stop whatever is still in flight: nothing will read it, so its rejection (AbortError) is
        // caught here rather than reported as unhandled.
        for p in self.pending.drain(..) {
            let _caught = chain(&p.answer, "catch", &Closure::once_into_js(|_: JsValue| {}));
        }
        if let Some(a) = self.abort.take() {
            a.abort();
        }
    }
}

/// `promise.then(callback)` or `promise.catch(callback)` (`method`) for a callback made by
/// `Closure::once_into_js` (the promise it returns rejects when the call itself fails).
fn chain(promise: &Promise, method: &str, callback: &JsValue) -> Promise {
    js_sys::Reflect::get(promise, &method.into())
        .and_then(|f| f.dyn_into::<js_sys::Function>())
        .and_then(|f| f.call1(promise, callback))
        .map_or_else(|e| Promise::reject(&e), JsCast::unchecked_into)
}

/// Starts a `fetch` of `len` bytes at `start` of `file` (CORS, credentials only when the file
/// says so).
pub fn fetch_range(
    file: &RemoteFile,
    start: u64,
    len: u64,
    signal: Option<&web_sys::AbortSignal>,
) -> Result<Promise, Failure> {
    let headers = Headers::new().map_err(|e| Failure::js(&e))?;
    let last = start + len.max(1) - 1;
    headers
        .set("Range", &format!("bytes={start}-{last}"))
        .map_err(|e| Failure::js(&e))?;
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(RequestMode::Cors);
    init.set_credentials(if file.credentials {
        RequestCredentials::Include
    } else {
        RequestCredentials::Omit
    });
    init.set_headers(&headers);
    init.set_signal(signal);
    // `fetch` of whatever global this runs in (a worker; also a window or node in tests).
    let scope: WorkerGlobalScope = js_sys::global().unchecked_into();
    Ok(scope.fetch_with_str_and_init(&file.url, &init))
}

/// Judges the settled `[Response, body]` of a request for `len` bytes at `start`: the body when
/// the answer is the bytes asked for.
fn judge(
    settled: Result<JsValue, JsValue>,
    file: &RemoteFile,
    start: u64,
    len: u64,
) -> Result<Uint8Array, RangeError> {
    let pair: Array = settled.map_err(network)?.unchecked_into();
    let resp: Response = pair.get(0).unchecked_into();
    let headers = resp.headers();
    let head = Head::read(resp.status(), |name| headers.get(name).ok().flatten());
    let answer = head.answer();
    check(&answer, start, len, Some(file.size))?;
    let body: ArrayBuffer = pair.get(1).dyn_into().map_err(|_| RangeError::ShortBody {
        start,
        got: 0,
        want: len,
    })?;
    check_body(start, u64::from(body.byte_length()), len)?;
    Ok(Uint8Array::new(&body))
}

/// A rejected `fetch` as a [`RangeError::Network`] (a CORS refusal and an unreachable server look
/// the same to the page), or the abort it was.
fn network(e: JsValue) -> RangeError {
    let name = js_sys::Reflect::get(&e, &"name".into())
        .ok()
        .and_then(|n| n.as_string());
    let message = if name.as_deref() == Some("AbortError") {
        "the request was cancelled".to_owned()
    } else {
        format!("{NETWORK_MESSAGE} ({})", js_text(&e))
    };
    RangeError::Network { message }
}

/// Waits `ms` milliseconds (`setTimeout` of whatever global this runs in).
async fn sleep(ms: u64) -> Result<(), Failure> {
    let global = js_sys::global();
    let set_timeout: js_sys::Function = js_sys::Reflect::get(&global, &"setTimeout".into())
        .and_then(JsCast::dyn_into)
        .map_err(|e| Failure::js(&e))?;
    let mut failed = None;
    let wait = Promise::new(&mut |resolve, _| {
        if let Err(e) = set_timeout.call2(&global, &resolve, &JsValue::from(ms as f64)) {
            failed = Some(e);
        }
    });
    if let Some(e) = failed {
        return Err(Failure::js(&e));
    }
    JsFuture::from(wait)
        .await
        .map(|_| ())
        .map_err(|e| Failure::js(&e))
}
