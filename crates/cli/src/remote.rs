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

/// Largest file read whole when its server ignores `Range` (with `--download-small`).
pub const SMALL_FILE: u64 = 64 << 20;
/// Attempts per request (5xx answers and network errors are retried).
const TRIES: u32 = 3;
/// Requests in flight at most, over all remote sources.
const IN_FLIGHT: usize = 6;
/// Largest single range request; longer reads are split.
const MAX_REQUEST: usize = 8 << 20;

/// Whether a 200 answer for a small file may be read whole (`--download-small`).
static DOWNLOAD_SMALL: OnceLock<bool> = OnceLock::new();

/// Allows reading files of at most [`SMALL_FILE`] bytes whole when their server ignores `Range`.
pub fn allow_small_downloads(allow: bool) {
    let _ = DOWNLOAD_SMALL.set(allow);
}

/// True when `input` names an `http://` or `https://` URL; an error for other `scheme://` forms.
pub fn is_url(input: &Path) -> anyhow::Result<bool> {
    let Some(s) = input.to_str() else {
        return Ok(false);
    };
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return Ok(true);
    }
    if let Some((scheme, _)) = s.split_once("://") {
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            anyhow::bail!("{s}: only http and https URLs are supported");
        }
    }
    Ok(false)
}

/// The URL of `name` relative to the URL `base` (a shard next to its index). Names with `..`,
/// a leading `/`, a `://` or a `?`/`#` are refused.
pub fn join(base: &str, name: &str) -> anyhow::Result<String> {
    if name.starts_with('/')
        || name.contains("://")
        || name.split(['/', '\\']).any(|part| part == "..")
        || name.contains(['?', '#'])
    {
        anyhow::bail!("{base}: shard name `{name}` must be a plain relative path");
    }
    let path_end = base.find(['?', '#']).unwrap_or(base.len());
    let dir_end = base[..path_end].rfind('/').map_or(path_end, |i| i + 1);
    Ok(format!("{}{name}", &base[..dir_end]))
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

/// Why one request failed; `retry` for 5xx answers and network errors, `small_whole` when the
/// server ignored `Range` for a file of at most [`SMALL_FILE`] bytes.
struct Failure {
    message: String,
    retry: bool,
    small_whole: bool,
}

fn fail(message: String) -> Failure {
    Failure {
        message,
        retry: false,
        small_whole: false,
    }
}

/// Parses `bytes START-END/TOTAL`.
fn content_range(value: &str) -> Option<(u64, u64, u64)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (start, end) = range.split_once('-')?;
    Some((
        start.trim().parse().ok()?,
        end.trim().parse().ok()?,
        total.trim().parse().ok()?,
    ))
}

/// Sends one `Range` request for `[start, start + buf.len())` and fills `buf`. `size` is the
/// probed size (None while probing). Returns the total size the server reported.
fn range_once(url: &str, start: u64, buf: &mut [u8], size: Option<u64>) -> Result<u64, Failure> {
    let end = start + buf.len() as u64 - 1;
    let _slot = Slot::take();
    let mut response = agent()
        .get(url)
        .header("Range", format!("bytes={start}-{end}"))
        .header("Accept-Encoding", "identity")
        .call()
        .map_err(|e| Failure {
            message: format!("request failed: {e}"),
            retry: true,
            small_whole: false,
        })?;
    let status = response.status();
    if status.as_u16() == 200 {
        let len = response
            .headers()
            .get("content-length")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let small = len.is_some_and(|len| len <= SMALL_FILE);
        return Err(Failure {
            small_whole: small,
            ..fail(match len {
            Some(len) => format!(
                "the server ignores Range requests (it answered 200 with the whole body, {len} bytes){}",
                if len <= SMALL_FILE {
                    "; the file is small: pass --download-small to read it whole"
                } else {
                    "; bitlens never downloads a large file whole"
                }
            ),
            None => "the server ignores Range requests (it answered 200 with the whole body)".into(),
        })
        });
    }
    if status.as_u16() != 206 {
        return Err(Failure {
            message: format!(
                "HTTP {} {}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            )
            .trim_end()
            .to_owned(),
            retry: status.is_server_error(),
            small_whole: false,
        });
    }
    let header = response
        .headers()
        .get("content-range")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let (got_start, got_end, total) = content_range(&header).ok_or_else(|| {
        fail(format!(
            "206 answer without a valid Content-Range (`{header}`)"
        ))
    })?;
    if got_start != start || got_end != end || size.is_some_and(|s| s != total) || end >= total {
        return Err(fail(format!(
            "Content-Range `{header}` does not match the request (bytes {start}-{end} of {})",
            size.map_or_else(|| "the file".to_owned(), |s| format!("{s} bytes"))
        )));
    }
    let mut reader = response.body_mut().as_reader();
    reader.read_exact(buf).map_err(|e| Failure {
        message: format!("body of bytes {start}-{end} ended early: {e}"),
        retry: true,
        small_whole: false,
    })?;
    let mut extra = [0u8; 1];
    if matches!(reader.read(&mut extra), Ok(n) if n > 0) {
        return Err(fail(format!(
            "the server sent more than the {} bytes asked for",
            buf.len()
        )));
    }
    Ok(total)
}

/// [`range_once`] with retries and backoff; the error's message names the URL.
fn range(url: &str, start: u64, buf: &mut [u8], size: Option<u64>) -> Result<u64, Failure> {
    let mut tries = 0;
    loop {
        tries += 1;
        match range_once(url, start, buf, size) {
            Ok(total) => return Ok(total),
            Err(f) if f.retry && tries < TRIES => {
                std::thread::sleep(Duration::from_millis(100 << tries));
            }
            Err(mut f) => {
                let after = if f.retry {
                    format!(" (after {tries} tries)")
                } else {
                    String::new()
                };
                f.message = format!("{url}: {}{after}", f.message);
                return Err(f);
            }
        }
    }
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
        if url.split_once("://").is_some_and(|(_, rest)| {
            rest.split(['/', '?', '#'])
                .next()
                .is_some_and(|a| a.contains('@'))
        }) {
            anyhow::bail!("{url}: credentials in URLs are not supported");
        }
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
                    Err(f) if f.small_whole && DOWNLOAD_SMALL.get().copied().unwrap_or(false) => {
                        whole(url).map_err(anyhow::Error::msg)?
                    }
                    // A file shorter than 8 bytes (416, or a shorter range) is refused here too:
                    // it cannot be a valid input.
                    Err(f) => anyhow::bail!(f.message),
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
        for chunk in buf.chunks_mut(MAX_REQUEST) {
            range(&self.url, pos, chunk, Some(self.probe.size)).map_err(|f| {
                SourceError::Backend {
                    offset: pos,
                    len: chunk.len() as u64,
                    source: std::io::Error::other(f.message),
                }
            })?;
            pos += chunk.len() as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_urls_are_resolved_next_to_the_index() {
        let base = "http://h/m/model.safetensors.index.json?x=1";
        assert_eq!(
            join(base, "a.safetensors").unwrap(),
            "http://h/m/a.safetensors"
        );
        assert_eq!(
            join(base, "d/a.safetensors").unwrap(),
            "http://h/m/d/a.safetensors"
        );
        for bad in ["../a", "/a", "http://e/a", "d/../../a", "a?b"] {
            assert!(join(base, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn content_ranges_parse() {
        assert_eq!(content_range("bytes 0-7/100"), Some((0, 7, 100)));
        assert_eq!(content_range("bytes */100"), None);
        assert_eq!(content_range("0-7/100"), None);
    }

    #[test]
    fn only_http_schemes_are_urls() {
        assert!(is_url(Path::new("https://h/a")).unwrap());
        assert!(!is_url(Path::new("dir/a.safetensors")).unwrap());
        assert!(is_url(Path::new("ftp://h/a")).is_err());
    }
}
