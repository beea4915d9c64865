//! A bounds-checked little-endian reader over a stream, shared by the NeuZip and BitSnap decoders:
//! every read names the offset and the bytes that were missing (a helper, not from a paper).

use crate::error::DecodeError;

/// Reads fields from the front of a byte stream.
pub(crate) struct Cursor<'a> {
    pub data: &'a [u8],
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let s =
            self.data
                .get(self.pos..self.pos.saturating_add(n))
                .ok_or(DecodeError::Truncated {
                    offset: self.pos as u64,
                    needed: n as u64,
                    available: self.data.len().saturating_sub(self.pos) as u64,
                })?;
        self.pos += n;
        Ok(s)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let s = self.take(N)?;
        Ok(std::array::from_fn(|i| s[i]))
    }

    /// The next little-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_le_bytes)
    }

    /// The next little-endian `u64`.
    pub fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_le_bytes)
    }

    /// Fails unless the whole stream was consumed.
    pub fn finish(&self) -> Result<(), DecodeError> {
        if self.pos == self.data.len() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes {
                offset: self.pos as u64,
                count: (self.data.len() - self.pos) as u64,
            })
        }
    }
}
