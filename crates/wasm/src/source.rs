//! Files read synchronously, as the core's [`ReadAt`]: [`JsSource`] over a JavaScript function
//! `read(offset, length) -> Uint8Array` (the codec worker's read-ahead helper in `web/worker.js`,
//! or a test's closure) or over a `Blob` with `FileReaderSync` (workers only), reading ahead
//! [`READ_AHEAD`] bytes at a time; [`read_blob`], one range of a `Blob` in one read; and
//! [`FileSource`], a job's file whether the person gave it (a `Blob`) or named it by URL
//! ([`HttpSource`]).
//!
//! `FileReaderSync` stays as web-sys gives it: gloo-file reads only asynchronously (`FileReader`),
//! and the core's [`ReadAt`] is synchronous.

use crate::convert::to_u64;
use crate::error::{js_text, Failure};
use crate::http_source::HttpSource;
use bitlens_protocol::js::Js;
use bitlens_protocol::FileRef;
use bitlens_tensors::{Header, ReadAt, SourceError};
use js_sys::{Function, Uint8Array};
use std::cell::{Cell, RefCell};
use wasm_bindgen::prelude::*;
use web_sys::{Blob, FileReaderSync};

/// Bytes the source reads from the browser at a time. Every read is a round trip to the browser's
/// file backend with a fixed cost: measured with `FileReaderSync` in headless Chromium on a 45 MB
/// file, 4 MiB reads ran at ≈0.5 GB/s, 16 MiB at ≈0.7 GB/s and 64 MiB at ≈0.9–1.0 GB/s. The core
/// reads a checkpoint front to back in pieces of a few KiB (small tensors) to 16 MiB (its LMC
/// window), so the source reads ahead in pieces of this size and serves those reads from them.
pub const READ_AHEAD: usize = 32 << 20;

/// [`READ_AHEAD`], for JavaScript: the size of the windows [`JsSource`] asks for (the worker's
/// read-ahead thread fills slots of this size).
#[wasm_bindgen(js_name = readAheadBytes)]
pub fn read_ahead_bytes() -> usize {
    READ_AHEAD
}

/// Where a [`JsSource`] gets its bytes.
enum Fetch {
    /// A JavaScript `read(offset, length) -> Uint8Array`.
    Function(Function),
    /// A `Blob`, read with `FileReaderSync`.
    Blob(Blob, FileReaderSync),
}

/// A [`ReadAt`] over JavaScript bytes, reading ahead [`READ_AHEAD`] bytes at a time. The read-ahead
/// window stays a JavaScript array (the browser's own buffer): bytes are copied once, from it into
/// the core's buffer in wasm memory, and the window does not add to the module's memory. An array
/// is used only until the next fetch (the worker's read-ahead thread relies on that: it refills a
/// slot only then).
pub struct JsSource {
    fetch: Fetch,
    size: u64,
    /// Start offset and bytes of the read-ahead window.
    window: RefCell<(u64, Option<Uint8Array>)>,
    /// Bytes fetched from the browser so far.
    fetched: Cell<u64>,
    /// Bytes read ahead at a time ([`READ_AHEAD`] unless set by [`JsSource::read_ahead`]).
    read_ahead: usize,
}

impl JsSource {
    /// A source of `size` bytes read through `read`.
    pub fn new(read: Function, size: f64) -> Result<JsSource, Failure> {
        Ok(JsSource::with(
            Fetch::Function(read),
            to_u64(size, "file size")?,
        ))
    }

    /// A source over a `Blob`, read with `FileReaderSync` (in a worker).
    pub fn from_blob(blob: Blob) -> Result<JsSource, Failure> {
        let reader = FileReaderSync::new().map_err(|e| Failure::js(&e))?;
        let size = to_u64(blob.size(), "file size")?;
        Ok(JsSource::with(Fetch::Blob(blob, reader), size))
    }

    fn with(fetch: Fetch, size: u64) -> JsSource {
        JsSource {
            fetch,
            size,
            window: RefCell::new((0, None)),
            fetched: Cell::new(0),
            read_ahead: READ_AHEAD,
        }
    }

    /// The same source reading ahead `bytes` at a time instead (0: every read exactly as asked).
    pub fn read_ahead(self, bytes: usize) -> JsSource {
        JsSource {
            read_ahead: bytes,
            ..self
        }
    }

    /// Bytes fetched from the browser so far (read-ahead windows included).
    pub fn fetched(&self) -> u64 {
        self.fetched.get()
    }

    /// `len` bytes at `offset` with one read.
    fn fetch(&self, offset: u64, len: usize) -> Result<Uint8Array, SourceError> {
        let got = match &self.fetch {
            Fetch::Function(read) => read
                .call2(
                    &JsValue::NULL,
                    &JsValue::from_f64(offset as f64),
                    &JsValue::from_f64(len as f64),
                )
                .map_err(|e| backend(offset, len, js_text(&e)))?
                .dyn_into::<Uint8Array>()
                .map_err(|_| backend(offset, len, "read did not return bytes".into()))?,
            Fetch::Blob(blob, reader) => {
                blob_range(blob, reader, offset, len).map_err(|f| backend(offset, len, f.0))?
            }
        };
        if got.length() as usize != len {
            return Err(backend(offset, len, format!("got {} bytes", got.length())));
        }
        self.fetched.set(self.fetched.get() + len as u64);
        Ok(got)
    }

    /// Reads and validates the safetensors header of the file.
    pub fn header(&self) -> Result<Header, Failure> {
        let mut first8 = [0u8; 8];
        self.read_exact_at(0, &mut first8)?;
        let needed = Header::needed_prefix(first8, self.size)?;
        let mut prefix = vec![0u8; needed as usize];
        self.read_exact_at(0, &mut prefix)?;
        Ok(Header::parse(&prefix, self.size)?)
    }
}

fn backend(offset: u64, len: usize, what: String) -> SourceError {
    SourceError::Backend {
        offset,
        len: len as u64,
        source: std::io::Error::other(what),
    }
}

/// `[offset, offset + len)` of a blob, read synchronously.
fn blob_range(
    blob: &Blob,
    reader: &FileReaderSync,
    offset: u64,
    len: usize,
) -> Result<Uint8Array, Failure> {
    let part = blob
        .slice_with_f64_and_f64(offset as f64, (offset + len as u64) as f64)
        .map_err(|e| Failure::js(&e))?;
    let buf = reader
        .read_as_array_buffer(&part)
        .map_err(|e| Failure::js(&e))?;
    Ok(Uint8Array::new(&buf))
}

/// `len` bytes at `offset` of a blob, in one synchronous read (in a worker).
pub fn read_blob(blob: &Blob, offset: u64, len: usize) -> Result<Vec<u8>, Failure> {
    let reader = FileReaderSync::new().map_err(|e| Failure::js(&e))?;
    let got = blob_range(blob, &reader, offset, len)?;
    if got.length() as usize != len {
        return Err(Failure(format!(
            "the browser gave {} of {len} bytes at byte {offset}",
            got.length()
        )));
    }
    Ok(got.to_vec())
}

impl ReadAt for JsSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        bitlens_tensors::source::check_bounds(offset, buf.len(), self.size)?;
        let mut w = self.window.borrow_mut();
        let (mut pos, mut done) = (offset, 0);
        while done < buf.len() {
            let want = buf.len() - done;
            let inside = w.1.as_ref().and_then(|arr| {
                let end = w.0 + arr.length() as u64;
                (pos >= w.0 && pos < end).then(|| (arr, (pos - w.0) as u32, end))
            });
            let n = match inside {
                // Served (in part) from the window.
                Some((arr, at, end)) => {
                    let n = want.min((end - pos) as usize);
                    arr.subarray(at, at + n as u32)
                        .copy_to(&mut buf[done..done + n]);
                    n
                }
                // A fetch invalidates the window: the JavaScript side may reuse its memory.
                None => {
                    w.1 = None;
                    if want >= self.read_ahead {
                        // Larger than a window: straight into the buffer.
                        self.fetch(pos, want)?.copy_to(&mut buf[done..]);
                        want
                    } else {
                        let len = (self.size - pos).min(self.read_ahead as u64) as usize;
                        *w = (pos, Some(self.fetch(pos, len)?));
                        continue;
                    }
                }
            };
            pos += n as u64;
            done += n;
        }
        Ok(())
    }
}

/// A job's file as one [`ReadAt`]: a `Blob` (read with `FileReaderSync`) or a URL (read by range).
pub enum FileSource {
    /// A file the person gave the page.
    Blob(JsSource),
    /// A remote file.
    Url(HttpSource),
}

impl FileSource {
    /// Opens a file reference of a request.
    pub fn open(file: FileRef<Js>) -> Result<FileSource, Failure> {
        Ok(match file {
            FileRef::Blob(b) => FileSource::Blob(JsSource::from_blob(
                b.0.dyn_into()
                    .map_err(|v| Failure(format!("expected a Blob, got {v:?}")))?,
            )?),
            FileRef::Url(remote) => FileSource::Url(HttpSource::new(&remote)?),
        })
    }

    /// A local file read ahead `bytes` at a time instead of [`READ_AHEAD`] (a URL is read by
    /// exact ranges already): small for a reader's many small reads, 0 for windows read once.
    pub fn read_ahead(self, bytes: usize) -> FileSource {
        match self {
            FileSource::Blob(s) => FileSource::Blob(s.read_ahead(bytes)),
            url => url,
        }
    }

    /// Bytes fetched so far (for a URL: transferred).
    pub fn fetched(&self) -> u64 {
        match self {
            FileSource::Blob(s) => s.fetched(),
            FileSource::Url(s) => s.fetched(),
        }
    }

    /// `error` about this file: for a URL, prefixed with it (a local file's errors are shown
    /// next to its name already).
    pub fn named(&self, error: impl std::fmt::Display) -> Failure {
        match self {
            FileSource::Blob(_) => Failure(error.to_string()),
            FileSource::Url(s) => Failure(format!("{}: {error}", s.url())),
        }
    }
}

impl ReadAt for FileSource {
    fn size(&self) -> u64 {
        match self {
            FileSource::Blob(s) => s.size(),
            FileSource::Url(s) => s.size(),
        }
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        match self {
            FileSource::Blob(s) => s.read_exact_at(offset, buf),
            FileSource::Url(s) => s.read_exact_at(offset, buf),
        }
    }
}
