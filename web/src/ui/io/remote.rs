//! Reading remote files from the page with `fetch` and `Range` requests: a probe of the first 8
//! bytes (the file size comes from its `Content-Range`), then the header (`bytes=0-(8+N-1)`,
//! [`read_prefix`]), so a checkpoint's tensor table needs two small requests per file. Every answer is judged by
//! [`bitlens_remote::check`] / [`bitlens_remote::check_body`]; transient failures are retried
//! with [`bitlens_remote::backoff_ms`]; a `fetch` that fails before any answer says it was a
//! network failure or a CORS refusal ([`RangeError::no_answer`]: the browser tells them apart to
//! nobody), and a body cut off after the answer says the connection broke ([`RangeError::Dropped`],
//! retried like a 5xx). Requests carry
//! cookies only when `credentials` is on. A file whose server ignores `Range` may be read whole
//! ([`download`]) when it is small, and only when the visitor asks. A small document next to a
//! file (its sidecar) is read with one plain `GET`, capped in size ([`get_document`]).
//!
//! The requests are gloo-net's and the back-off is a gloo-timers sleep. A body is taken as an
//! `ArrayBuffer` (or a `Blob`, for [`download`]) from the answer's `web_sys::Response`, which
//! gloo-net has no method for: its length is checked before it is copied into wasm memory.

use crate::ui::io::blob::js_error_text;
use bitlens_remote::{backoff_ms, check, check_body, Head, RangeError, RemoteError, TRIES};
use bitlens_tensors::{Header, HeaderError};
use gloo_net::http::{Request, RequestBuilder, Response};
use js_sys::{ArrayBuffer, Uint8Array};
use std::time::Duration;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Blob, RequestCredentials, RequestMode};

/// Why a remote file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The server's answers (after the retries).
    #[error("{}{}", .0.error, tries(.0.tries))]
    Remote(RemoteError),
    /// The bytes are not a valid safetensors header.
    #[error("{0}")]
    Header(#[from] HeaderError),
}

impl FetchError {
    /// For a server that ignores `Range` on a file of at most `SMALL_FILE` bytes: reading it whole
    /// may be offered.
    pub fn small_enough(&self) -> bool {
        matches!(self, FetchError::Remote(e) if e.error.small_enough())
    }
}

fn tries(n: u32) -> String {
    if n > 1 {
        format!(" (after {n} tries)")
    } else {
        String::new()
    }
}

/// The first bytes of a remote file and its size.
pub struct Probe {
    /// Size of the whole file (from `Content-Range`).
    pub size: u64,
    /// Its first 8 bytes.
    pub first8: [u8; 8],
}

/// A `GET` of `url`: CORS, cookies only when asked, a `Range` header when given, aborted through
/// `abort`.
fn request(
    url: &str,
    credentials: bool,
    range: Option<&str>,
    abort: &AbortController,
) -> RequestBuilder {
    let request = Request::get(url)
        .mode(RequestMode::Cors)
        .credentials(if credentials {
            RequestCredentials::Include
        } else {
            RequestCredentials::Omit
        })
        .abort_signal(Some(&abort.signal()));
    match range {
        Some(r) => request.header("Range", r),
        None => request,
    }
}

/// Sends `request`; a failure before any answer is [`RangeError::no_answer`].
async fn send(request: RequestBuilder) -> Result<Response, RangeError> {
    request
        .send()
        .await
        .map_err(|e| RangeError::no_answer(&net_error_text(&e)))
}

/// A gloo-net error as text: a JavaScript error's message, as [`js_error_text`] gives it.
pub fn net_error_text(e: &gloo_net::Error) -> String {
    match e {
        gloo_net::Error::JsError(e) => e.message.clone(),
        other => other.to_string(),
    }
}

/// One attempt at `len` bytes at `start`: the bytes and the file size the server reported.
async fn attempt(
    url: &str,
    start: u64,
    len: u64,
    size: Option<u64>,
    credentials: bool,
) -> Result<(Vec<u8>, u64), RangeError> {
    let abort = AbortController::new().map_err(|e| RangeError::Network {
        message: js_error_text(&e),
    })?;
    let range = format!("bytes={start}-{}", start + len.max(1) - 1);
    let resp = send(request(url, credentials, Some(&range), &abort)).await?;
    let headers = resp.headers();
    let head = Head::read(resp.status(), |name| headers.get(name));
    let answer = head.answer();
    let total = match check(&answer, start, len, size) {
        Ok(total) => total,
        Err(e) => {
            // Never read the body of a refused answer (it may be a whole multi-GB file).
            abort.abort();
            return Err(e);
        }
    };
    let body = web_sys::Response::from(resp)
        .array_buffer()
        .map_err(|e| RangeError::Network {
            message: js_error_text(&e),
        })?;
    let body: ArrayBuffer = JsFuture::from(body)
        .await
        .map_err(|e| RangeError::Dropped {
            start,
            want: len,
            message: js_error_text(&e),
        })?
        .unchecked_into();
    check_body(start, u64::from(body.byte_length()), len)?;
    Ok((Uint8Array::new(&body).to_vec(), total))
}

/// Reads `len` bytes (≥ 1) at `start` of `url`, retrying transient failures; `size`: the probed
/// file size (None for the probe). Returns the bytes and the file size.
pub async fn read(
    url: &str,
    start: u64,
    len: u64,
    size: Option<u64>,
    credentials: bool,
) -> Result<(Vec<u8>, u64), RemoteError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt(url, start, len, size, credentials).await {
            Ok(got) => return Ok(got),
            Err(error) if error.transient() && tries < TRIES => {
                gloo_timers::future::sleep(Duration::from_millis(backoff_ms(tries))).await
            }
            Err(error) => {
                return Err(RemoteError {
                    url: url.to_owned(),
                    error,
                    tries,
                })
            }
        }
    }
}

/// The first 8 bytes of `url` and its size.
pub async fn probe(url: &str, credentials: bool) -> Result<Probe, FetchError> {
    let (bytes, size) = read(url, 0, 8, None, credentials)
        .await
        .map_err(FetchError::Remote)?;
    let first8 = bytes
        .as_slice()
        .try_into()
        .map_err(|_| HeaderError::FileTooSmall { file_size: size })?;
    Ok(Probe { size, first8 })
}

/// The `8 + N` header bytes of a probed safetensors file (one more request).
pub async fn read_prefix(
    url: &str,
    probe: &Probe,
    credentials: bool,
) -> Result<Vec<u8>, FetchError> {
    let needed = Header::needed_prefix(probe.first8, probe.size)?;
    let (prefix, _) = read(url, 0, needed, Some(probe.size), credentials)
        .await
        .map_err(FetchError::Remote)?;
    Ok(prefix)
}

/// The small document at `url` (a sidecar), read with one plain `GET`: `None` for a 404; why not
/// for another status, a failed `fetch`, or a document over `max` bytes (refused by its
/// `Content-Length` before its body is read, else by its length).
pub async fn get_document(
    url: &str,
    credentials: bool,
    max: u64,
) -> Result<Option<Vec<u8>>, String> {
    let abort = AbortController::new().map_err(|e| js_error_text(&e))?;
    let resp = send(request(url, credentials, None, &abort))
        .await
        .map_err(|e| e.to_string())?;
    if resp.status() == 404 {
        abort.abort();
        return Ok(None);
    }
    let too_large = |len: u64| format!("{len} bytes, over the limit of {max}");
    if !resp.ok() {
        abort.abort();
        let code = resp.status();
        return Err(RangeError::Status { code }.to_string());
    }
    let declared = resp.headers().get("Content-Length");
    if let Some(len) = declared.and_then(|v| v.trim().parse::<u64>().ok()) {
        if len > max {
            abort.abort();
            return Err(too_large(len));
        }
    }
    let body = web_sys::Response::from(resp)
        .array_buffer()
        .map_err(|e| js_error_text(&e))?;
    let body: ArrayBuffer = JsFuture::from(body)
        .await
        .map_err(|e| js_error_text(&e))?
        .unchecked_into();
    let len = u64::from(body.byte_length());
    if len > max {
        return Err(too_large(len));
    }
    Ok(Some(Uint8Array::new(&body).to_vec()))
}

/// A small file read whole (no `Range`), for a server that ignores `Range`, when the visitor asks.
pub async fn download(url: &str, credentials: bool) -> Result<Blob, String> {
    let abort = AbortController::new().map_err(|e| js_error_text(&e))?;
    let resp = send(request(url, credentials, None, &abort))
        .await
        .map_err(|e| format!("{url}: {e}"))?;
    if !resp.ok() {
        return Err(format!(
            "{url}: {}",
            RangeError::Status {
                code: resp.status()
            }
        ));
    }
    body_blob(url, resp).await
}

/// The whole body of `resp`, the answer from `url`, as a `Blob` (errors name the URL).
pub async fn body_blob(url: &str, resp: Response) -> Result<Blob, String> {
    let blob = web_sys::Response::from(resp)
        .blob()
        .map_err(|e| js_error_text(&e))?;
    JsFuture::from(blob)
        .await
        .map_err(|e| format!("{url}: {}", js_error_text(&e)))?
        .dyn_into()
        .map_err(|_| format!("{url}: not a blob"))
}
