//! Remote files over HTTP(S) as [`ReadAt`] sources: every read is a `Range` request.
//!
//! A URL is probed once per run with `Range: bytes=0-7` (the answer gives the size and the first 8
//! bytes, so a safetensors header then takes one more request). Every answer must be `206` with a
//! `Content-Range` equal to the request and the probed size; a `200` means the server ignores
//! `Range` and is refused (unless `--download-small` and the file is at most [`SMALL_FILE`]
//! bytes), so a multi-GB file is never downloaded whole by accident. 5xx answers and network
//! errors are retried [`TRIES`] times with backoff; at most [`IN_FLIGHT`] requests run at once.
//! No cookies or credentials are sent; only `http` and `https` URLs are accepted. The client is
//! ureq with rustls (ring): pure Rust apart from ring's C, builds offline here, and https works
//! with the bundled webpki roots.

use bitlens_tensors::{source::check_bounds, ReadAt, SourceError};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Duration;

pub use bitlens_remote::SMALL_FILE;
use bitlens_remote::{Answer, RangeError, RemoteError, IN_FLIGHT, MAX_REQUEST, TRIES};

/// Whether a 200 answer for a small file may be read whole (`--download-small`).
static DOWNLOAD_SMALL: OnceLock<bool> = OnceLock::new();

/// Allows reading files of at most [`SMALL_FILE`] bytes whole when their server ignores `Range`.
pub fn allow_small_downloads(allow: bool) {
    let _ = DOWNLOAD_SMALL.set(allow);
}

/// True when `input` names an `http://` or `https://` URL; an error for other `scheme://` forms.
pub fn is_url(input: &Path) -> anyhow::Result<bool> {
    match input.to_str() {
        Some(s) => Ok(bitlens_remote::is_url(s)?),
        None => Ok(false),
    }
}

/// The URL of `name` relative to the URL `base` (a shard next to its index). Names with `..`,
/// a leading `/`, a `://` or a `?`/`#` are refused.
pub fn join(base: &str, name: &str) -> anyhow::Result<String> {
    Ok(bitlens_remote::join(base, name)?)
}

/// What a probe found: the size, and the first bytes (or the whole body of a small file whose
/// server ignores `Range`).
#[derive(Clone)]
struct Probe {
    size: u64,
    head: Vec<u8>,
    whole: bool,
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

/// Sends one `Range` request for `[start, start + buf.len())` and fills `buf`. `size` is the
/// probed size (None while probing). Returns the total size the server reported.
fn range_once(url: &str, start: u64, buf: &mut [u8], size: Option<u64>) -> Result<u64, RangeError> {
    let want = buf.len() as u64;
    let end = start + want - 1;
    let _slot = Slot::take();
    let mut response = agent()
        .get(url)
        .header("Range", format!("bytes={start}-{end}"))
        .header("Accept-Encoding", "identity")
        .call()
        .map_err(|e| RangeError::Network {
            message: format!("request failed: {e}"),
        })?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_range = header("content-range");
    let answer = Answer {
        status: response.status().as_u16(),
        content_range: content_range.as_deref(),
        content_length: header("content-length").and_then(|v| v.trim().parse().ok()),
    };
    let total = bitlens_remote::check(&answer, start, want, size)?;
    let mut reader = response.body_mut().as_reader();
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(RangeError::Network {
                    message: format!("body of bytes {start}-{end} failed after {got} bytes: {e}"),
                })
            }
        }
    }
    let mut extra = [0u8; 1];
    let more = matches!(reader.read(&mut extra), Ok(n) if n > 0);
    bitlens_remote::check_body(start, got as u64 + u64::from(more), want)?;
    Ok(total)
}

/// [`range_once`] with retries and backoff.
fn range(url: &str, start: u64, buf: &mut [u8], size: Option<u64>) -> Result<u64, RemoteError> {
    let mut tries = 0;
    loop {
        tries += 1;
        match range_once(url, start, buf, size) {
            Ok(total) => return Ok(total),
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

/// A [`RemoteError`] as the CLI says it (with the `--download-small` hint where it applies).
fn message(e: &RemoteError) -> String {
    format!("{e}{}", ignores_range_hint(&e.error))
}

/// Reads a small file whole after its server ignored `Range` (`--download-small`).
fn whole(url: &str) -> Result<Probe, String> {
    let _slot = Slot::take();
    let mut response = agent()
        .get(url)
        .call()
        .map_err(|e| format!("{url}: request failed: {e}"))?;
    if response.status().as_u16() != 200 {
        return Err(format!("{url}: HTTP {}", response.status().as_u16()));
    }
    let head = response
        .body_mut()
        .with_config()
        .limit(SMALL_FILE)
        .read_to_vec()
        .map_err(|e| format!("{url}: cannot read the whole file: {e}"))?;
    Ok(Probe {
        size: head.len() as u64,
        head,
        whole: true,
    })
}

impl HttpSource {
    /// Opens a URL: probes its size with `Range: bytes=0-7` (once per run and URL).
    pub fn open(url: &str) -> anyhow::Result<HttpSource> {
        static PROBES: Mutex<Option<HashMap<String, Probe>>> = Mutex::new(None);
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
                let mut head = [0u8; 8];
                let probe = match range(url, 0, &mut head, None) {
                    Ok(size) => Probe {
                        size,
                        head: head.to_vec(),
                        whole: false,
                    },
                    Err(e)
                        if e.error.small_enough()
                            && DOWNLOAD_SMALL.get().copied().unwrap_or(false) =>
                    {
                        whole(url).map_err(anyhow::Error::msg)?
                    }
                    // A file shorter than 8 bytes (416, or a shorter range) is refused here too:
                    // it cannot be a valid input.
                    Err(e) => anyhow::bail!(message(&e)),
                };
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
            range(&self.url, pos, chunk, Some(self.probe.size)).map_err(|e| {
                SourceError::Backend {
                    offset: pos,
                    len: chunk.len() as u64,
                    source: std::io::Error::other(message(&e)),
                }
            })?;
            pos += chunk.len() as u64;
        }
        Ok(())
    }
}
