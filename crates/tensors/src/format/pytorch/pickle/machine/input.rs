//! Reading an opcode's argument from the pickle's bytes: fixed-size little-endian integers,
//! lengths checked against the bytes that remain, UTF-8 strings and `\n`-terminated lines.

use super::{Machine, R};
use crate::format::pytorch::pickle::PickleError;

impl<'a> Machine<'a> {
    pub(super) fn at(&self) -> u64 {
        self.op_at as u64
    }

    pub(super) fn take(&mut self, n: usize) -> R<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(PickleError::Truncated {
                offset: self.buf.len() as u64,
            });
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub(super) fn array<const N: usize>(&mut self) -> R<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    pub(super) fn u8(&mut self) -> R<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u32(&mut self) -> R<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> R<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// A length from the pickle, as `usize` (too large for this machine means truncated: the
    /// bytes cannot be there).
    pub(super) fn len_u64(&mut self, n: u64) -> R<usize> {
        usize::try_from(n).map_err(|_| PickleError::Truncated {
            offset: self.buf.len() as u64,
        })
    }

    pub(super) fn utf8(&self, bytes: &[u8]) -> R<String> {
        String::from_utf8(bytes.to_vec()).map_err(|_| PickleError::BadUtf8 { offset: self.at() })
    }

    /// A `\n`-terminated line (for `GLOBAL`).
    pub(super) fn line(&mut self) -> R<String> {
        let rest = &self.buf[self.pos..];
        let Some(n) = rest.iter().position(|&b| b == b'\n') else {
            return Err(PickleError::Truncated {
                offset: self.buf.len() as u64,
            });
        };
        let s = self.utf8(&rest[..n])?;
        self.pos += n + 1;
        Ok(s)
    }
}
