//! A remote file read synchronously, as the core's [`ReadAt`]: [`HttpSource`] sends one
//! synchronous `XMLHttpRequest` per range (allowed in a dedicated worker, with
//! `responseType = "arraybuffer"` and a `Range` header), judges every answer by the shared rules of
//! [`bitlens_remote`] (`check` on status / `Content-Range` / `Content-Length`, `check_body` on the
//! bytes), retries transient failures with [`backoff_ms`], and never asks for more than
//! [`MAX_REQUEST`] bytes at once.
//!
//! It fetches exactly what the core asks for, except that a small read (under [`SMALL_READ`]) is
//! widened to a window of that size; the last [`WINDOWS`] windows are kept for the next reads:
//! opening a snapshot (preamble and stored header at the start, trailer and index at the end, read
//! alternately) then takes two requests, and decoding one tensor fetches its frames and nothing
//! else. [`HttpSource::fetched`] counts the bytes transferred.
//!
//! The synchronous backoff sleeps with `Atomics.wait` when the worker has `SharedArrayBuffer`
//! (cross-origin isolated pages); otherwise it busy-waits on `performance.now()`: retrying at once
//! would hammer a server that just answered 503, and the waits are short (200 ms then 400 ms for
//! [`TRIES`] = 3) and happen on the codec worker's own thread, never the page's.
//!
//! The request and the wait stay as web-sys and js-sys give them: gloo-net sends only with
//! `fetch` and gloo-timers waits only asynchronously, and the core's [`ReadAt`] is synchronous.

use crate::convert::now;
use crate::error::{js_text, Failure};
use crate::worker::http::range_header;
use bitlens_protocol::RemoteFile;
use bitlens_remote::{
    backoff_ms, check, check_body, check_url, requests, Head, RangeError, RemoteError, MAX_REQUEST,
    TRIES,
};
use bitlens_tensors::{ReadAt, SourceError};
use js_sys::{ArrayBuffer, Atomics, Int32Array, Reflect, SharedArrayBuffer, Uint8Array};
use std::cell::{Cell, RefCell};
use wasm_bindgen::prelude::*;
use web_sys::{XmlHttpRequest, XmlHttpRequestResponseType};

/// Reads shorter than this are widened to a window of this many bytes (kept for the next reads).
pub const SMALL_READ: usize = 64 << 10;

/// Windows of small reads kept (the start and the end of a snapshot).
pub const WINDOWS: usize = 2;

/// A remote file of known size, read with synchronous `Range` requests (in a worker).
pub struct HttpSource {
    url: String,
    size: u64,
    credentials: bool,
    /// Start offset and bytes of the windows of the last small reads, the latest first.
    windows: RefCell<Vec<(u64, Vec<u8>)>>,
    /// Bytes transferred so far.
    fetched: Cell<u64>,
}

impl HttpSource {
    /// A source over `file` (its URL checked: `http`/`https`, no credentials in it).
    pub fn new(file: &RemoteFile) -> Result<HttpSource, Failure> {
        check_url(&file.url).map_err(|e| Failure(format!("{}: {e}", file.url)))?;
        Ok(HttpSource {
            url: file.url.clone(),
            size: file.size,
            credentials: file.credentials,
            windows: RefCell::new(Vec::with_capacity(WINDOWS + 1)),
            fetched: Cell::new(0),
        })
    }

    /// Bytes transferred so far (every successful answer's body).
    pub fn fetched(&self) -> u64 {
        self.fetched.get()
    }

    /// The URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Fills `buf` with the bytes at `start`, in requests of at most [`MAX_REQUEST`] bytes.
    fn get(&self, start: u64, buf: &mut [u8]) -> Result<(), RemoteError> {
        let end = start + buf.len() as u64;
        for (at, len) in requests(start, end, MAX_REQUEST) {
            let from = (at - start) as usize;
            self.retried(at, &mut buf[from..from + len as usize])?;
        }
        Ok(())
    }

    /// One request, retried on transient failures.
    fn retried(&self, start: u64, out: &mut [u8]) -> Result<(), RemoteError> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.request(start, out) {
                Ok(()) => {
                    self.fetched.set(self.fetched.get() + out.len() as u64);
                    return Ok(());
                }
                Err(e) if e.transient() && tries < TRIES => sleep_ms(backoff_ms(tries)),
                Err(error) => {
                    return Err(RemoteError {
                        url: self.url.clone(),
                        error,
                        tries,
                    })
                }
            }
        }
    }

    /// One synchronous request for `out.len()` (≥ 1) bytes at `start`, judged by the shared rules.
    fn request(&self, start: u64, out: &mut [u8]) -> Result<(), RangeError> {
        let len = out.len() as u64;
        let network = |what: String| RangeError::Network { message: what };
        let xhr = XmlHttpRequest::new().map_err(|e| network(js_text(&e)))?;
        xhr.open_with_async("GET", &self.url, false)
            .map_err(|e| network(js_text(&e)))?;
        xhr.set_with_credentials(self.credentials);
        xhr.set_response_type(XmlHttpRequestResponseType::Arraybuffer);
        xhr.set_request_header("Range", &range_header(start, len))
            .map_err(|e| network(js_text(&e)))?;
        // A synchronous request that fails, before or during its body, throws or ends with
        // status 0: the page cannot tell a network failure from a CORS refusal.
        if let Err(e) = xhr.send() {
            return Err(RangeError::no_answer(&js_text(&e)));
        }
        let status = xhr.status().map_err(|e| network(js_text(&e)))?;
        if status == 0 {
            return Err(RangeError::no_answer(""));
        }
        let head = Head::read(status, |name| xhr.get_response_header(name).ok().flatten());
        check(&head.answer(), start, len, Some(self.size))?;
        let body = xhr
            .response()
            .ok()
            .and_then(|r| r.dyn_into::<ArrayBuffer>().ok())
            .map(|b| Uint8Array::new(&b))
            .ok_or_else(|| network("the answer had no body".into()))?;
        check_body(start, body.length() as u64, len)?;
        body.copy_to(out);
        Ok(())
    }
}

/// Waits `ms` milliseconds on this (worker) thread.
fn sleep_ms(ms: u64) {
    let shared =
        Reflect::has(&js_sys::global(), &JsValue::from_str("SharedArrayBuffer")).unwrap_or(false);
    if shared {
        let cell = Int32Array::new(&SharedArrayBuffer::new(4));
        if Atomics::wait_with_timeout(&cell, 0, 0, ms as f64).is_ok() {
            return;
        }
    }
    let until = now() + ms as f64;
    while now() < until {}
}

fn backend(offset: u64, len: usize, e: RemoteError) -> SourceError {
    SourceError::Backend {
        offset,
        len: len as u64,
        source: std::io::Error::other(e.to_string()),
    }
}

impl ReadAt for HttpSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        bitlens_tensors::source::check_bounds(offset, buf.len(), self.size)?;
        if buf.is_empty() {
            return Ok(());
        }
        let mut windows = self.windows.borrow_mut();
        let end = offset + buf.len() as u64;
        let held = windows
            .iter()
            .find(|(start, bytes)| offset >= *start && end <= start + bytes.len() as u64);
        if let Some((start, bytes)) = held {
            let at = (offset - start) as usize;
            buf.copy_from_slice(&bytes[at..at + buf.len()]);
            return Ok(());
        }
        if buf.len() >= SMALL_READ {
            return self
                .get(offset, buf)
                .map_err(|e| backend(offset, buf.len(), e));
        }
        // A small read: a window of SMALL_READ bytes holding it, kept inside the file (a read
        // near the end takes the bytes before it: a snapshot's index sits before its trailer).
        let width = (SMALL_READ as u64).min(self.size);
        let start = offset.min(self.size - width);
        let mut bytes = vec![0u8; width as usize];
        self.get(start, &mut bytes)
            .map_err(|e| backend(offset, buf.len(), e))?;
        let at = (offset - start) as usize;
        buf.copy_from_slice(&bytes[at..at + buf.len()]);
        windows.insert(0, (start, bytes));
        windows.truncate(WINDOWS);
        Ok(())
    }
}
