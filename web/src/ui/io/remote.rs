//! Reading remote files from the page with `fetch` and `Range` requests: a probe of the first 8
//! bytes (the file size comes from its `Content-Range`), then the header (`bytes=0-(8+N-1)`), so
//! a checkpoint's tensor table needs two small requests per file. Every answer is judged by
//! [`bitlens_remote::check`] / [`bitlens_remote::check_body`]; transient failures are retried
//! with [`bitlens_remote::backoff_ms`]; a `fetch` that fails before any answer (the browser tells
//! a CORS refusal and an unreachable server apart to nobody) reads as such. Requests carry
//! cookies only when `credentials` is on. A file whose server ignores `Range` may be read whole
//! ([`download`]) when it is small, and only when the visitor asks.

use crate::ui::io::blob::js_error_text;
use bitlens_remote::{backoff_ms, check, check_body, Head, RangeError, RemoteError, TRIES};
use bitlens_tensors::{Header, HeaderError};
use js_sys::{ArrayBuffer, Promise, Uint8Array};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Blob, RequestCredentials, RequestInit, RequestMode, Response};

/// What a failed `fetch` means in a browser.
const NETWORK: &str = "the browser could not read the URL: the server sent no CORS headers \
     allowing this page (Access-Control-Allow-Origin) or is unreachable";

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

/// The request options: CORS, cookies only when asked, a `Range` header, aborted through `abort`.
fn init(
    credentials: bool,
    range: Option<String>,
    abort: &AbortController,
) -> Result<RequestInit, RangeError> {
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_mode(RequestMode::Cors);
    init.set_credentials(if credentials {
        RequestCredentials::Include
    } else {
        RequestCredentials::Omit
    });
    init.set_signal(Some(&abort.signal()));
    if let Some(r) = range {
        let headers = web_sys::Headers::new()
            .and_then(|h| h.set("Range", &r).map(|()| h))
            .map_err(|e| RangeError::Network {
                message: js_error_text(&e),
            })?;
        init.set_headers(&headers);
    }
    Ok(init)
}

/// `fetch(url, init)` on the page.
async fn fetch(url: &str, init: &RequestInit) -> Result<Response, RangeError> {
    let window = web_sys::window().ok_or_else(|| RangeError::Network {
        message: "no window".into(),
    })?;
    JsFuture::from(window.fetch_with_str_and_init(url, init))
        .await
        .map_err(|e| RangeError::Network {
            message: format!("{NETWORK} ({})", js_error_text(&e)),
        })?
        .dyn_into()
        .map_err(|_| RangeError::Network {
            message: "fetch gave no Response".into(),
        })
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
    let resp = fetch(url, &init(credentials, Some(range), &abort)?).await?;
    let headers = resp.headers();
    let head = Head::read(resp.status(), |name| headers.get(name).ok().flatten());
    let answer = head.answer();
    let total = match check(&answer, start, len, size) {
        Ok(total) => total,
        Err(e) => {
            // Never read the body of a refused answer (it may be a whole multi-GB file).
            abort.abort();
            return Err(e);
        }
    };
    let body = resp.array_buffer().map_err(|e| RangeError::Network {
        message: js_error_text(&e),
    })?;
    let body: ArrayBuffer = JsFuture::from(body)
        .await
        .map_err(|e| RangeError::Network {
            message: format!("{NETWORK} ({})", js_error_text(&e)),
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
            Err(error) if error.transient() && tries < TRIES => sleep(backoff_ms(tries)).await,
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

/// The validated safetensors header of a probed file (one more request: the `8 + N` header bytes).
pub async fn read_header(
    url: &str,
    probe: &Probe,
    credentials: bool,
) -> Result<Header, FetchError> {
    let needed = Header::needed_prefix(probe.first8, probe.size)?;
    let (prefix, _) = read(url, 0, needed, Some(probe.size), credentials)
        .await
        .map_err(FetchError::Remote)?;
    Ok(Header::parse(&prefix, probe.size)?)
}

/// A small file read whole (no `Range`), for a server that ignores `Range`, when the visitor asks.
pub async fn download(url: &str, credentials: bool) -> Result<Blob, String> {
    let abort = AbortController::new().map_err(|e| js_error_text(&e))?;
    let resp = async { fetch(url, &init(credentials, None, &abort)?).await }
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
    let blob = resp.blob().map_err(|e| js_error_text(&e))?;
    JsFuture::from(blob)
        .await
        .map_err(|e| format!("{url}: {}", js_error_text(&e)))?
        .dyn_into()
        .map_err(|_| format!("{url}: not a blob"))
}

/// Waits `ms` milliseconds (0: until the browser's next task, after it has drawn and handled
/// input).
pub(crate) async fn sleep(ms: u64) {
    let wait = Promise::new(&mut |resolve, _| {
        let set = web_sys::window()
            .map(|w| w.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms as i32));
        if !matches!(set, Some(Ok(_))) {
            // No timer: go on at once rather than never.
            let _ = resolve.call0(&wasm_bindgen::JsValue::NULL);
        }
    });
    let _ = JsFuture::from(wait).await;
}
