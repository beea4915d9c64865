//! A forward reader over a [`ReadAt`] source for GGUF's header: it fetches the file in windows
//! that start at 64 KiB and double with each fetch (up to 8 MiB), so a header of thousands of
//! small key/values (a tokenizer) costs a handful of reads — few round trips on a remote source
//! — and it never asks for more than the bytes left in the file.

use super::GgufError;
use crate::source::ReadAt;

/// The first window fetched from the source.
const FIRST_WINDOW: u64 = 64 << 10;
/// The largest window (a longer field is fetched whole).
const MAX_WINDOW: u64 = 8 << 20;

/// A position in a source and the window of bytes last fetched.
pub(super) struct Cursor<'a> {
    src: &'a dyn ReadAt,
    size: u64,
    pos: u64,
    buf: Vec<u8>,
    buf_start: u64,
    window: u64,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(src: &'a dyn ReadAt) -> Self {
        Cursor {
            src,
            size: src.size(),
            pos: 0,
            buf: Vec::new(),
            buf_start: 0,
            window: FIRST_WINDOW,
        }
    }

    /// The current offset.
    pub(super) fn pos(&self) -> u64 {
        self.pos
    }

    /// Bytes between the current offset and the end of the file.
    pub(super) fn left(&self) -> u64 {
        self.size - self.pos
    }

    /// The next `n` bytes (`what` names them in the error when the file ends first).
    pub(super) fn take(&mut self, n: u64, what: &'static str) -> Result<&[u8], GgufError> {
        if n > self.left() {
            return Err(GgufError::Truncated {
                offset: self.pos,
                needed: n,
                what,
            });
        }
        let buf_end = self.buf_start + self.buf.len() as u64;
        if self.pos < self.buf_start || self.pos + n > buf_end {
            // `n` ≤ the bytes left, so the window is bounded by the file size.
            let len = n.max(self.window).min(self.left()) as usize;
            self.window = (self.window * 2).min(MAX_WINDOW);
            self.buf.clear();
            self.buf.resize(len, 0);
            self.src.read_exact_at(self.pos, &mut self.buf)?;
            self.buf_start = self.pos;
        }
        let start = (self.pos - self.buf_start) as usize;
        self.pos += n;
        Ok(&self.buf[start..start + n as usize])
    }

    /// The next `N` bytes as an array.
    pub(super) fn array<const N: usize>(
        &mut self,
        what: &'static str,
    ) -> Result<[u8; N], GgufError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N as u64, what)?);
        Ok(out)
    }

    pub(super) fn u32(&mut self, what: &'static str) -> Result<u32, GgufError> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub(super) fn u64(&mut self, what: &'static str) -> Result<u64, GgufError> {
        self.array(what).map(u64::from_le_bytes)
    }
}
