//! A platform-neutral random-access byte source, reading a range of it in windows, and a source
//! that keeps what was read through it ([`Retaining`]).
//!
//! Backends live at the edges: the CLI implements [`ReadAt`] for files, the web app for `Blob`s
//! and HTTP range requests. Offsets are `u64` so 5–10 GB shards work on wasm32 too.

use crate::format::safetensors::header::HeaderError;
use std::collections::BTreeMap;
use std::sync::Mutex;

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

    /// The bytes at `offset..offset + len` where the source already holds them in memory (a
    /// slice, a memory-mapped file), so a reader can use them in place instead of copying them
    /// into a buffer of its own; `None` when it does not, or when the range is not inside it
    /// (then [`ReadAt::read_exact_at`] reads them, or reports why not).
    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let _ = (offset, len);
        None
    }

    /// Says that a pass reading the source in order is done with every byte before `end`: a
    /// source that lent its bytes from a memory map ([`ReadAt::bytes_at`]) lets the whole pages
    /// among them go from the process (they stay in the system's page cache), so the pass's
    /// resident memory stays bounded by what it holds at once, not the file's size. A hint:
    /// reading those bytes again still works.
    fn done_before(&self, end: u64) {
        let _ = end;
    }
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

    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        self.get(start..start.checked_add(len)?)
    }
}

impl ReadAt for Vec<u8> {
    fn size(&self) -> u64 {
        self.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.as_slice().read_exact_at(offset, buf)
    }

    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.as_slice().bytes_at(offset, len)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn size(&self) -> u64 {
        (**self).size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        (**self).read_exact_at(offset, buf)
    }

    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        (**self).bytes_at(offset, len)
    }

    fn done_before(&self, end: u64) {
        (**self).done_before(end)
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

/// The first bytes of a file of known size, as a source (the page holds a header it read): reads
/// inside them succeed, reads past them fail.
pub struct Prefix<'a> {
    /// The file's first bytes.
    pub bytes: &'a [u8],
    /// The whole file's size.
    pub size: u64,
}

impl ReadAt for Prefix<'_> {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        check_bounds(offset, buf.len(), self.size)?;
        self.bytes
            .read_exact_at(offset, buf)
            .map_err(|_| SourceError::Backend {
                offset,
                len: buf.len() as u64,
                source: std::io::Error::other(format!(
                    "only the first {} bytes were read",
                    self.bytes.len()
                )),
            })
    }
}

/// Bytes a [`Retaining`] source keeps at most by default (a safetensors header is at most
/// 100 MB; a GGUF header with a large vocabulary a few MB).
pub const RETAIN_BYTES: usize = 128 << 20;

/// A source that keeps the bytes read through it (up to a budget), so reading them again costs no
/// read of the inner source: a reader reads a file's header, then the header's bytes are hashed
/// (a sidecar's fingerprint) without a second request for them. Reads of bytes not kept go to the
/// inner source (only the parts not kept); once the budget is spent, new bytes are passed on
/// without being kept.
pub struct Retaining<R> {
    inner: R,
    kept: Mutex<Kept>,
}

/// The pieces a [`Retaining`] source kept, by offset.
struct Kept {
    pieces: BTreeMap<u64, Vec<u8>>,
    bytes: usize,
    budget: usize,
}

impl Kept {
    /// Copies the kept bytes at `pos` into the front of `buf`: how many it copied (0: `pos` is not
    /// kept).
    fn copy(&self, pos: u64, buf: &mut [u8]) -> usize {
        for (&start, piece) in self.pieces.range(..=pos).rev() {
            let at = (pos - start) as usize;
            if at < piece.len() {
                let n = (piece.len() - at).min(buf.len());
                buf[..n].copy_from_slice(&piece[at..at + n]);
                return n;
            }
        }
        0
    }

    /// The first kept offset after `pos`.
    fn next_after(&self, pos: u64) -> Option<u64> {
        self.pieces.range(pos + 1..).next().map(|(&s, _)| s)
    }

    /// Keeps `bytes` read at `pos`, within the budget.
    fn keep(&mut self, pos: u64, bytes: &[u8]) {
        if !bytes.is_empty() && self.bytes + bytes.len() <= self.budget {
            self.bytes += bytes.len();
            self.pieces.insert(pos, bytes.to_vec());
        }
    }
}

impl<R: ReadAt> Retaining<R> {
    /// `inner`, keeping up to [`RETAIN_BYTES`] of what is read through it.
    pub fn new(inner: R) -> Self {
        Self::with_budget(inner, RETAIN_BYTES)
    }

    /// `inner`, keeping up to `budget` bytes of what is read through it.
    pub fn with_budget(inner: R, budget: usize) -> Self {
        Retaining {
            inner,
            kept: Mutex::new(Kept {
                pieces: BTreeMap::new(),
                bytes: 0,
                budget,
            }),
        }
    }

    /// The inner source.
    pub fn inner(&self) -> &R {
        &self.inner
    }
}

impl<R: ReadAt> ReadAt for Retaining<R> {
    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        check_bounds(offset, buf.len(), self.size())?;
        let mut done = 0;
        while done < buf.len() {
            let pos = offset + done as u64;
            let (copied, next) = {
                let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
                (kept.copy(pos, &mut buf[done..]), kept.next_after(pos))
            };
            if copied > 0 {
                done += copied;
                continue;
            }
            // A gap: read it up to the next kept piece.
            let left = (buf.len() - done) as u64;
            let n = next.map_or(left, |s| (s - pos).min(left)) as usize;
            let gap = &mut buf[done..done + n];
            self.inner.read_exact_at(pos, gap)?;
            self.kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .keep(pos, gap);
            done += n;
        }
        Ok(())
    }
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
    fn slices_lend_their_bytes_in_place_only_inside_them() {
        let data = vec![1u8, 2, 3];
        assert_eq!(data.bytes_at(1, 2), Some(&[2u8, 3][..]));
        assert_eq!(data.bytes_at(3, 0), Some(&[][..]));
        assert_eq!(data.bytes_at(2, 2), None);
        assert_eq!(data.bytes_at(u64::MAX, 1), None);
        assert_eq!(data.bytes_at(1, usize::MAX), None);
        // Through a reference, and not from a source that keeps nothing in memory.
        fn first_byte<R: ReadAt>(r: R) -> Option<u8> {
            r.bytes_at(0, 1).map(|b| b[0])
        }
        assert_eq!(first_byte(&data[..]), Some(1));
        struct Remote;
        impl ReadAt for Remote {
            fn size(&self) -> u64 {
                8
            }
            fn read_exact_at(&self, _: u64, _: &mut [u8]) -> Result<(), SourceError> {
                Ok(())
            }
        }
        assert_eq!(Remote.bytes_at(0, 1), None);
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
