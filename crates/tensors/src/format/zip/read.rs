//! Reading the records: bounded reads from the source (checked against its size before anything
//! is allocated) and the little-endian fields of the bytes read.

use crate::source::{ReadAt, SourceError};

/// The little-endian `u16` at `at` of `b`.
pub(super) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// The little-endian `u32` at `at` of `b`.
pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The little-endian `u64` at `at` of `b`.
pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

/// `len` bytes at `offset`, refused before allocating when they are not all in the source.
pub(super) fn read_vec(src: &dyn ReadAt, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
    // Checked against the source's size before allocating: `len` is bounded by the input.
    let out_of_bounds = SourceError::OutOfBounds {
        offset,
        len,
        size: src.size(),
    };
    let n = usize::try_from(len).map_err(|_| out_of_bounds)?;
    crate::source::check_bounds(offset, n, src.size())?;
    let mut buf = vec![0u8; n];
    src.read_exact_at(offset, &mut buf)?;
    Ok(buf)
}
