//! Reading byte ranges of a `Blob` (a `File` is one) with `Blob.slice` and gloo-file's reader, so
//! only the bytes asked for are ever loaded; and building a Blob from chunks as they arrive
//! ([`BlobBuilder`]), with `web_sys::Blob` itself: gloo-file makes a Blob from one piece, and a
//! Blob of many (the Blobs already folded, the chunks since) is what keeps the chunks out of
//! JavaScript memory.

use bitlens_tensors::{Header, HeaderError};
use gloo_file::FileReadError;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::Blob;

/// Why a header could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The browser failed to read the file (moved, deleted, permission).
    #[error("the browser could not read the file: {0}")]
    Browser(String),
    /// The header is invalid.
    #[error("{0}")]
    Header(#[from] HeaderError),
}

/// A JavaScript error value as text.
pub fn js_error_text(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| e.as_string())
        .unwrap_or_else(|| format!("{e:?}"))
}

/// Reads `[start, end)` of a blob.
pub async fn read_range(blob: &Blob, start: u64, end: u64) -> Result<Vec<u8>, ReadError> {
    let part = gloo_file::Blob::from(blob.clone()).slice(start, end);
    gloo_file::futures::read_as_bytes(&part)
        .await
        .map_err(|e| ReadError::Browser(read_error_text(e)))
}

/// The browser's reason a read failed (the `DOMException`'s message, as [`js_error_text`] gives
/// it).
fn read_error_text(e: FileReadError) -> String {
    match e {
        FileReadError::NotFound(m) | FileReadError::NotReadable(m) | FileReadError::Security(m) => {
            m
        }
        aborted @ FileReadError::AbortedEarly => aborted.to_string(),
    }
}

/// Size of a blob in bytes.
pub fn size(blob: &Blob) -> u64 {
    blob.size() as u64
}

/// Reads and validates a safetensors header with two small reads: the 8-byte length, then the
/// `8 + N` header bytes. The data section is never touched.
pub async fn read_header(blob: &Blob) -> Result<Header, ReadError> {
    let file_size = size(blob);
    if file_size < 8 {
        return Err(HeaderError::FileTooSmall { file_size }.into());
    }
    let first = read_range(blob, 0, 8).await?;
    let first8: [u8; 8] = first
        .as_slice()
        .try_into()
        .map_err(|_| ReadError::Browser("short read of the first 8 bytes".into()))?;
    let needed = Header::needed_prefix(first8, file_size)?;
    let prefix = read_range(blob, 0, needed).await?;
    Ok(Header::parse(&prefix, file_size)?)
}

/// Output bytes gathered before they are folded into the Blob being built.
const FOLD_BYTES: u64 = 64 << 20;

/// Builds a `Blob` from chunks as they arrive (a worker's output, transferred to the page; or one
/// `File` the worker wrote to the origin private file system), folding
/// every [`FOLD_BYTES`] into a Blob so the chunks do not pile up in JavaScript memory: the browser
/// keeps large Blobs in its blob store (on disk when they are big), and a Blob made of Blobs does
/// not copy them.
#[derive(Default)]
pub struct BlobBuilder {
    folded: Option<Blob>,
    parts: Vec<JsValue>,
    pending: u64,
    bytes: u64,
}

impl BlobBuilder {
    /// Adds the next chunk (an `ArrayBuffer` or typed array).
    pub fn push(&mut self, chunk: JsValue, len: u64) -> Result<(), ReadError> {
        // A Blob chunk (a File the worker wrote) holds no JavaScript memory: nothing to fold.
        if !chunk.is_instance_of::<Blob>() {
            self.pending += len;
        }
        self.parts.push(chunk);
        self.bytes += len;
        if self.pending >= FOLD_BYTES {
            self.fold()?;
        }
        Ok(())
    }

    /// Bytes pushed so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn fold(&mut self) -> Result<(), ReadError> {
        let seq = js_sys::Array::new();
        if let Some(b) = self.folded.take() {
            seq.push(&b);
        }
        for p in self.parts.drain(..) {
            seq.push(&p);
        }
        self.pending = 0;
        let blob = Blob::new_with_buffer_source_sequence(&seq)
            .map_err(|e| ReadError::Browser(js_error_text(&e)))?;
        self.folded = Some(blob);
        Ok(())
    }

    /// The Blob of every chunk pushed (a single `Blob` chunk — a `File` the worker wrote — as it
    /// is).
    pub fn finish(mut self) -> Result<Blob, ReadError> {
        if let (None, [only]) = (&self.folded, self.parts.as_slice()) {
            if let Some(blob) = only.dyn_ref::<Blob>() {
                return Ok(blob.clone());
            }
        }
        self.fold()?;
        Ok(self.folded.take().expect("fold sets it"))
    }
}
