//! Remote files over HTTP(S) as [`ReadAt`] sources: every read is a `Range` request.
//!
//! A URL is probed once per run with `Range: bytes=0-7` (the answer gives the size and the first 8
//! bytes, so a safetensors header then takes one more request). Every answer must be `206` with a
//! `Content-Range` equal to the request and the probed size; a `200` means the server ignores
//! `Range` and is refused (unless `--download-small` and the file is at most [`SMALL_FILE`]
//! bytes: then the probe's own body is the file, read once), so a multi-GB file is never
//! downloaded whole by accident. When the probe's answer has a strong `ETag`, later requests carry
//! it in `If-Range`: a file replaced between two requests answers `200`, refused as
//! [`RangeError::Changed`] instead of mixing bytes of two versions. 5xx answers and network
//! errors are retried [`TRIES`] times with backoff; at most [`IN_FLIGHT`] requests run at once.
//! A small document next to a file (a sidecar) is read with one plain `GET` ([`get_document`]),
//! capped in size. No cookies or credentials are sent; only `http` and `https` URLs are accepted. The client is
//! ureq with rustls (ring): pure Rust apart from ring's C, builds offline here, and https works
//! with the bundled webpki roots.

use crate::error::{RemoteReadError, Result};
use bitlens_tensors::{source::check_bounds, ReadAt, SourceError};
use std::collections::HashMap;
use std::io::Read;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

pub use bitlens_remote::SMALL_FILE;
use bitlens_remote::{Head, RangeError, RemoteError, IN_FLIGHT, MAX_REQUEST, TRIES};

/// Whether a 200 answer for a small file may be read whole (`--download-small`).
static DOWNLOAD_SMALL: OnceLock<bool> = OnceLock::new();

/// Allows reading files of at most [`SMALL_FILE`] bytes whole when their server ignores `Range`.
pub fn allow_small_downloads(allow: bool) {
    let _ = DOWNLOAD_SMALL.set(allow);
}

/// What a probe found: the size, the first bytes (or the whole body of a small file whose server
/// ignores `Range`), and the file's strong entity tag, if the server sent one.
#[derive(Clone)]
struct Probe {
    size: u64,
    head: Vec<u8>,
    whole: bool,
    etag: Option<String>,
}

/// A remote file read with range requests.
pub struct HttpSource {
    url: String,
    probe: Probe,
}

fn agent() -> &'static ureq::Agent {
    static AGENT: OnceLock<ureq::Agent> = OnceLock::new();
    AGENT.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_recv_response(Some(Duration::from_secs(30)))
            .timeout_recv_body(Some(Duration::from_secs(120)))
            .user_agent(concat!("bitlens/", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent()
    })
}

/// A counting semaphore bounding the requests in flight.
struct Slots {
    used: Mutex<usize>,
    freed: Condvar,
}

static SLOTS: Slots = Slots {
    used: Mutex::new(0),
    freed: Condvar::new(),
};

/// Holds one request slot until dropped.
struct Slot;

impl Slot {
    fn take() -> Slot {
        let mut used = SLOTS.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used >= IN_FLIGHT {
            used = SLOTS.freed.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += 1;
        Slot
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut used = SLOTS.used.lock().unwrap_or_else(|e| e.into_inner());
        *used -= 1;
        SLOTS.freed.notify_one();
    }
}

/// The hint added to a refusal of a server that ignores `Range`.
fn ignores_range_hint(e: &RangeError) -> &'static str {
    match e {
        RangeError::IgnoresRange { .. } if e.small_enough() => {
            "; the file is small: pass --download-small to read it whole"
        }
        RangeError::IgnoresRange { .. } => "; bitlens never downloads a large file whole",
        _ => "",
    }
}

/// Sends `GET url` for bytes `[start, end]` (with `If-Range: etag` when given); returns the head
/// and the response, whose body is still to be read.
fn send(
    url: &str,
    start: u64,
    end: u64,
    etag: Option<&str>,
) -> Result<(Head, ureq::http::Response<ureq::Body>), RangeError> {
    let mut request = agent()
        .get(url)
        .header("Range", format!("bytes={start}-{end}"))
        .header("Accept-Encoding", "identity");
    if let Some(tag) = etag {
        request = request.header("If-Range", tag);
    }
    let response = request.call().map_err(|e| RangeError::Network {
        message: format!("request failed: {e}"),
    })?;
    let head = Head::read(response.status().as_u16(), |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    });
    Ok((head, response))
}

/// Reads the body of bytes `[start, start + buf.len())` into `buf`, checking its length.
fn read_body(
    response: &mut ureq::http::Response<ureq::Body>,
    start: u64,
    buf: &mut [u8],
) -> Result<(), RangeError> {
    let mut reader = response.body_mut().as_reader();
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(RangeError::Dropped {
                    start,
                    want: buf.len() as u64,
                    message: format!("after {got} bytes: {e}"),
                })
            }
        }
    }
    let mut extra = [0u8; 1];
    let more = matches!(reader.read(&mut extra), Ok(n) if n > 0);
    bitlens_remote::check_body(start, got as u64 + u64::from(more), buf.len() as u64)
}

/// Sends one `Range` request for `[start, start + buf.len())` of a probed file (`size`, `etag`)
/// and fills `buf`.
fn range_once(
    url: &str,
    start: u64,
    buf: &mut [u8],
    size: u64,
    etag: Option<&str>,
) -> Result<(), RangeError> {
    let want = buf.len() as u64;
    let _slot = Slot::take();
    let (head, mut response) = send(url, start, start + want - 1, etag)?;
    if let (Some(tag), 200) = (etag, head.status) {
        return Err(RangeError::Changed { etag: tag.into() });
    }
    bitlens_remote::check(&head.answer(), start, want, Some(size))?;
    read_body(&mut response, start, buf)
}

/// The probe: `Range: bytes=0-7`, giving the size, the first bytes and the ETag. A server that
/// ignores `Range` on a small file gives the whole file in this one answer, kept when
/// `--download-small` allows it (and not read at all otherwise).
fn probe_once(url: &str) -> Result<Probe, RangeError> {
    let _slot = Slot::take();
    let (head, mut response) = send(url, 0, 7, None)?;
    match bitlens_remote::check(&head.answer(), 0, 8, None) {
        Ok(size) => {
            let mut first = [0u8; 8];
            read_body(&mut response, 0, &mut first)?;
            Ok(Probe {
                size,
                head: first.to_vec(),
                whole: false,
                etag: head.etag,
            })
        }
        Err(e) if e.small_enough() && DOWNLOAD_SMALL.get().copied().unwrap_or(false) => {
            let body = response
                .body_mut()
                .with_config()
                .limit(SMALL_FILE)
                .read_to_vec()
                .map_err(|e| RangeError::Network {
                    message: format!("cannot read the whole file: {e}"),
                })?;
            bitlens_remote::check_body(0, body.len() as u64, head.content_length.unwrap_or(0))?;
            Ok(Probe {
                size: body.len() as u64,
                head: body,
                whole: true,
                etag: None,
            })
        }
        Err(e) => Err(e),
    }
}

/// `attempt` with retries and backoff on transient failures.
fn retried<T>(
    url: &str,
    mut attempt: impl FnMut() -> Result<T, RangeError>,
) -> Result<T, RemoteError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match attempt() {
            Ok(v) => return Ok(v),
            Err(e) if e.transient() && tries < TRIES => {
                std::thread::sleep(Duration::from_millis(bitlens_remote::backoff_ms(tries)));
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

/// What one `GET` of a small document (a sidecar) gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Document {
    /// The server has none (HTTP 404).
    Missing,
    /// Its bytes.
    Body(Vec<u8>),
    /// It is larger than the limit (the length the server declared, or the limit + 1 when the
    /// body ran past it); its body was not read (further).
    TooLarge {
        /// Its length, as far as known.
        len: u64,
    },
}

/// One attempt at a document of at most `max` bytes.
fn get_once(url: &str, max: u64) -> Result<Document, RangeError> {
    let _slot = Slot::take();
    let mut response = agent()
        .get(url)
        .header("Accept-Encoding", "identity")
        .call()
        .map_err(|e| RangeError::Network {
            message: format!("request failed: {e}"),
        })?;
    match response.status().as_u16() {
        404 => return Ok(Document::Missing),
        200..=299 => {}
        code => return Err(RangeError::Status { code }),
    }
    let declared = response
        .headers()
        .get("Content-Length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(len) = declared.filter(|&n| n > max) {
        return Ok(Document::TooLarge { len });
    }
    match response
        .body_mut()
        .with_config()
        .limit(max.saturating_add(1))
        .read_to_vec()
    {
        Ok(body) if body.len() as u64 > max => Ok(Document::TooLarge {
            len: body.len() as u64,
        }),
        Ok(body) => Ok(Document::Body(body)),
        Err(ureq::Error::BodyExceedsLimit(_)) => Ok(Document::TooLarge {
            len: max.saturating_add(1),
        }),
        Err(e) => Err(RangeError::Network {
            message: format!("cannot read the body: {e}"),
        }),
    }
}

/// Reads the small document at `url` (a sidecar) with one plain `GET` (no `Range`; retried on
/// transient failures), refusing one of more than `max` bytes without reading it whole.
pub fn get_document(url: &str, max: u64) -> Result<Document> {
    bitlens_remote::check_url(url)?;
    Ok(retried(url, || get_once(url, max)).map_err(|e| std::io::Error::other(failure(e)))?)
}

/// A [`RemoteError`] as the CLI says it (with the `--download-small` hint where it applies).
fn failure(error: RemoteError) -> RemoteReadError {
    let hint = ignores_range_hint(&error.error);
    RemoteReadError { error, hint }
}

/// The probes of this run, by URL.
static PROBES: Mutex<Option<HashMap<String, Probe>>> = Mutex::new(None);

/// Starts a new run: the next open of every URL probes it again. A process that runs many
/// commands (the Python package: each call is a run) calls this first, so a file replaced on its
/// server between two calls is seen with its new size and entity tag.
pub fn forget_probes() {
    *PROBES.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

impl HttpSource {
    /// Opens a URL: probes its size with `Range: bytes=0-7` (once per run and URL).
    pub fn open(url: &str) -> Result<HttpSource> {
        bitlens_remote::check_url(url)?;
        let cached = PROBES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(HashMap::new)
            .get(url)
            .cloned();
        let probe = match cached {
            Some(p) => p,
            None => {
                // A file shorter than 8 bytes (416, or a shorter range) is refused here too: it
                // cannot be a valid input.
                let probe = retried(url, || probe_once(url))
                    .map_err(|e| std::io::Error::other(failure(e)))?;
                PROBES
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(HashMap::new)
                    .insert(url.to_owned(), probe.clone());
                probe
            }
        };
        Ok(HttpSource {
            url: url.to_owned(),
            probe,
        })
    }

    /// Reads the whole file (for a shard index, already checked to be small).
    pub fn read_all(&self) -> Result<Vec<u8>, SourceError> {
        let mut buf = vec![0u8; self.probe.size as usize];
        self.read_exact_at(0, &mut buf)?;
        Ok(buf)
    }
}

impl ReadAt for HttpSource {
    fn size(&self) -> u64 {
        self.probe.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        check_bounds(offset, buf.len(), self.probe.size)?;
        let head = &self.probe.head;
        if self.probe.whole || offset + buf.len() as u64 <= head.len() as u64 {
            let start = offset as usize;
            buf.copy_from_slice(&head[start..start + buf.len()]);
            return Ok(());
        }
        let mut pos = offset;
        for chunk in buf.chunks_mut(MAX_REQUEST as usize) {
            let (size, etag) = (self.probe.size, self.probe.etag.as_deref());
            retried(&self.url, || range_once(&self.url, pos, chunk, size, etag)).map_err(|e| {
                SourceError::Backend {
                    offset: pos,
                    len: chunk.len() as u64,
                    source: std::io::Error::other(failure(e)),
                }
            })?;
            pos += chunk.len() as u64;
        }
        Ok(())
    }
}
