//! Reading `[start, end)` of a file in windows, asynchronously ([`Windows`]): a `Blob` here
//! ([`BlobWindows`]), a remote file with `Range` requests in [`super::http`]. A `Blob` range is cut
//! with `Blob.slice` and streamed with a BYOB reader into one reused JavaScript buffer, then copied
//! once into wasm memory: measured in headless Chromium on a 1 GB file, this reads at ~1.7 GB/s,
//! while `await blob.slice(a, b).arrayBuffer()` per 4 MiB window (one IPC round trip and a fresh
//! buffer each) reads at ~0.5 GB/s. Browsers without BYOB streams get the per-window slices.
//!
//! Both stay as web-sys gives them: gloo-file reads a whole `Blob` through a `FileReader` into a
//! fresh buffer, with neither streams nor reads into a buffer of the caller's.

use super::http::HttpWindows;
use super::to_blob;
use crate::error::Failure;
use bitlens_protocol::js::Js;
use bitlens_protocol::FileRef;
use js_sys::{ArrayBuffer, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, ReadableStreamByobReader, ReadableStreamReadResult};

/// The window for reading `file` when `Blob`s are read in windows of `window` bytes: a remote
/// file's are twice as large (at most [`bitlens_remote::MAX_REQUEST`]): measured in headless
/// Chromium on localhost, two workers fetching 8 MiB ranges (two in flight each) received ≈265
/// MB/s, 4 MiB ranges ≈190 MB/s, 16 MiB ≈225 MB/s; three in flight did not help.
pub fn window_for(file: &FileRef<Js>, window: usize) -> usize {
    match file {
        FileRef::Blob(_) => window,
        FileRef::Url(_) => (2 * window)
            .min(bitlens_remote::MAX_REQUEST as usize)
            .max(window),
    }
}

/// Consecutive windows of a byte range of a local or remote file.
pub enum Windows {
    /// A `Blob` the page was given.
    Blob(BlobWindows),
    /// A file on a server.
    Http(HttpWindows),
}

impl Windows {
    /// Windows of `[start, end)` of `file`, of at most `window` bytes (a remote file's first
    /// windows are requested at once).
    pub fn open(file: FileRef<Js>, start: u64, end: u64, window: usize) -> Result<Self, Failure> {
        Ok(match file {
            FileRef::Blob(b) => Windows::Blob(BlobWindows::new(&to_blob(b)?, start, end, window)),
            FileRef::Url(remote) => Windows::Http(HttpWindows::new(remote, start, end, window)),
        })
    }

    /// Fills `out` with the next `out.len()` bytes (the window size, or what is left).
    pub async fn next(&mut self, out: &mut [u8]) -> Result<(), Failure> {
        match self {
            Windows::Blob(w) => w.next(out).await,
            Windows::Http(w) => w.next(out).await,
        }
    }
}

/// Consecutive windows of a byte range of a `Blob`.
pub struct BlobWindows {
    blob: Blob,
    pos: u64,
    /// The end of the range.
    end: u64,
    /// The buffer the BYOB reader fills (handed back to it, and back from it, on every read).
    buf: ArrayBuffer,
    reader: Option<ReadableStreamByobReader>,
}

impl BlobWindows {
    /// Windows of `[start, end)` of `blob`, of at most `window` bytes.
    pub fn new(blob: &Blob, start: u64, end: u64, window: usize) -> Self {
        let len = (end - start).min(window as u64).max(1);
        let reader = blob
            .slice_with_f64_and_f64(start as f64, end as f64)
            .ok()
            .and_then(|part| ReadableStreamByobReader::new(&part.stream()).ok());
        BlobWindows {
            blob: blob.clone(),
            pos: start,
            end,
            buf: ArrayBuffer::new(len as u32),
            reader,
        }
    }

    /// Fills `out` with the next `out.len()` bytes (at most the window size).
    pub async fn next(&mut self, out: &mut [u8]) -> Result<(), Failure> {
        let n = out.len() as u32;
        match &self.reader {
            None => {
                let end = self.pos + n as u64;
                let part = self
                    .blob
                    .slice_with_f64_and_f64(self.pos as f64, end as f64)
                    .map_err(|e| Failure::js(&e))?;
                let buf = JsFuture::from(part.array_buffer())
                    .await
                    .map_err(|e| Failure::js(&e))?;
                let got = Uint8Array::new(&buf);
                if got.length() != n {
                    return Err(self.ended_early(got.length()));
                }
                got.copy_to(out);
            }
            Some(reader) => {
                let mut filled = 0;
                while filled < n {
                    let view =
                        Uint8Array::new_with_byte_offset_and_length(&self.buf, filled, n - filled);
                    let result: ReadableStreamReadResult =
                        JsFuture::from(reader.read_with_array_buffer_view(&view))
                            .await
                            .map_err(|e| Failure::js(&e))?
                            .unchecked_into();
                    let value = result.get_value().dyn_into::<Uint8Array>().ok();
                    if let Some(v) = &value {
                        self.buf = v.buffer();
                    }
                    match value {
                        Some(v) if result.get_done() != Some(true) => filled += v.length(),
                        _ => return Err(self.ended_early(filled)),
                    }
                }
                Uint8Array::new_with_byte_offset_and_length(&self.buf, 0, n).copy_to(out);
            }
        }
        self.pos += n as u64;
        Ok(())
    }

    fn ended_early(&self, got: u32) -> Failure {
        Failure(format!(
            "file ended early at byte {}",
            self.pos + got as u64
        ))
    }
}

impl Drop for BlobWindows {
    /// Stops a stream not read to its end (cancelling one that was costs the worker ~1 ms).
    fn drop(&mut self) {
        if self.pos >= self.end {
            return;
        }
        if let Some(reader) = self.reader.take() {
            // Stop the stream; nothing waits for it (a failure to cancel changes nothing).
            let cancelled = JsFuture::from(reader.cancel());
            wasm_bindgen_futures::spawn_local(async move {
                let _ = cancelled.await;
            });
        }
    }
}
