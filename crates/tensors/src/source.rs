//! A platform-neutral random-access byte source, and reading a range of it in windows.
//!
//! Backends live at the edges: the CLI implements [`ReadAt`] for files, the web app for `Blob`s
//! and HTTP range requests. Offsets are `u64` so 5–10 GB shards work on wasm32 too.

use crate::format::safetensors::header::HeaderError;

/// Why a read from a [`ReadAt`] source failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The requested range runs past the end of the source.
    #[error("read of {len} bytes at offset {offset} runs past the end ({size} bytes)")]
    OutOfBounds {
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len: u64,
        /// Size of the source.
        size: u64,
    },
    /// The backend failed (I/O error, network error, ...).
    #[error("read of {len} bytes at offset {offset} failed: {source}")]
    Backend {
        /// Requested offset.
        offset: u64,
        /// Requested length.
        len: u64,
        /// The backend's error.
        #[source]
        source: std::io::Error,
    },
    /// The source's header is invalid.
    #[error(transparent)]
    Header(#[from] HeaderError),
}

/// Random-access reads from a byte source of known size.
pub trait ReadAt {
    /// Total size in bytes.
    fn size(&self) -> u64;

    /// Fills `buf` with the bytes at `offset..offset + buf.len()`.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError>;
}

/// Checks that `offset + len` lies within a source of `size` bytes.
pub fn check_bounds(offset: u64, len: usize, size: u64) -> Result<(), SourceError> {
    let len = len as u64;
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(()),
        _ => Err(SourceError::OutOfBounds { offset, len, size }),
    }
}

impl ReadAt for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        check_bounds(offset, buf.len(), self.size())?;
        let start = offset as usize;
        buf.copy_from_slice(&self[start..start + buf.len()]);
        Ok(())
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.as_slice().read_exact_at(offset, buf)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        (**self).read_exact_at(offset, buf)
    }
}

/// Visits `[start, end)` of a source in windows of at most `window` bytes, reusing one buffer, so a
/// tensor of any size is processed with `window` bytes of memory.
pub fn for_each_window<R, F, E>(
    src: &R,
    start: u64,
    end: u64,
    window: usize,
    mut f: F,
) -> Result<(), E>
where
    R: ReadAt + ?Sized,
    F: FnMut(&[u8]) -> Result<(), E>,
    E: From<SourceError>,
{
    let window = window.max(1) as u64;
    let mut buf = vec![0u8; window.min(end.saturating_sub(start)) as usize];
    let mut pos = start;
    while pos < end {
        let n = (end - pos).min(window) as usize;
        src.read_exact_at(pos, &mut buf[..n])?;
        f(&buf[..n])?;
        pos += n as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_reject_reads_past_the_end() {
        let data = vec![1u8, 2, 3];
        let mut buf = [0u8; 2];
        data.read_exact_at(1, &mut buf).unwrap();
        assert_eq!(buf, [2, 3]);
        assert!(matches!(
            data.read_exact_at(2, &mut buf),
            Err(SourceError::OutOfBounds {
                offset: 2,
                len: 2,
                size: 3
            })
        ));
        assert!(matches!(
            data.read_exact_at(u64::MAX, &mut buf),
            Err(SourceError::OutOfBounds { .. })
        ));
    }

    #[test]
    fn windows_cover_the_range_exactly() {
        let data: Vec<u8> = (0..=255).collect();
        let mut seen = Vec::new();
        let mut sizes = Vec::new();
        for_each_window::<_, _, SourceError>(&data, 10, 110, 32, |w| {
            sizes.push(w.len());
            seen.extend_from_slice(w);
            Ok(())
        })
        .unwrap();
        assert_eq!(sizes, [32, 32, 32, 4]);
        assert_eq!(seen, (10..110).map(|x| x as u8).collect::<Vec<_>>());
    }
}
