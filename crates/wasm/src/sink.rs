//! [`ChunkSink`]: the output of a compression or decompression, handed on in chunks of at most
//! [`CHUNK_BYTES`] (the worker writes each to its output file in the origin private file system,
//! or posts it to the page, which folds them into a `Blob`), so an output file is never whole in
//! wasm memory. Small writes are gathered into chunks; a large one (a frame) is handed on as it
//! is.

use std::io::Write;

/// Output bytes gathered before they are handed on. Small enough that a chunk is still in cache
/// when it is written out: measured in headless Chromium, 1 MiB writes to an origin-private file
/// took 15.0 / 21.1 ms for a 45 / 91 MB output against 18.4 / 24.9 ms for 8 MiB
/// (tests/e2e/bench-page-io.mjs, fastest of 5).
pub const CHUNK_BYTES: usize = 1 << 20;

/// A [`Write`] that hands chunks of at most [`CHUNK_BYTES`] to `emit`, counting the bytes.
pub struct ChunkSink<F: FnMut(&[u8]) -> std::io::Result<()>> {
    emit: F,
    buf: Vec<u8>,
    written: u64,
}

impl<F: FnMut(&[u8]) -> std::io::Result<()>> ChunkSink<F> {
    /// A sink handing its chunks to `emit`.
    pub fn new(emit: F) -> Self {
        ChunkSink {
            emit,
            buf: Vec::with_capacity(CHUNK_BYTES),
            written: 0,
        }
    }

    /// Bytes handed on so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    fn emit(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        (self.emit)(&self.buf)?;
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

impl<F: FnMut(&[u8]) -> std::io::Result<()>> Write for ChunkSink<F> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if data.len() >= CHUNK_BYTES / 2 {
            // A frame's bytes: handed on in place, after what was gathered (copying them into
            // the chunk cost the page's worker ~2 ms per 26 MB).
            self.emit()?;
            for part in data.chunks(CHUNK_BYTES) {
                (self.emit)(part)?;
                self.written += part.len() as u64;
            }
            return Ok(data.len());
        }
        let mut rest = data;
        while !rest.is_empty() {
            let n = rest.len().min(CHUNK_BYTES - self.buf.len());
            self.buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if self.buf.len() == CHUNK_BYTES {
                self.emit()?;
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.emit()
    }
}
