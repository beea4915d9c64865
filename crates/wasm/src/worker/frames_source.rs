//! [`FramesAhead`]: a snapshot as the decompress job reads it — its frames, front to back, through a
//! read-ahead source, and every other byte (preamble, stored header, annex, index, trailer: the few
//! reads of `SnapshotReader::open`, docs/FORMAT.md §1) with exact reads. Opened through a read-ahead
//! source alone, each jump of the opening (offset 0, the trailer, back to the stored header, the
//! index) fetched a whole window (32 MiB) of frames that the decoding then fetched again.

use crate::source::JsSource;
use bitlens_snapshot::SnapshotReader;
use bitlens_tensors::{ReadAt, SourceError};

/// A snapshot file whose frame section `[start, end)` is read through `frames` and the rest
/// through `exact`.
pub struct FramesAhead {
    exact: JsSource,
    frames: JsSource,
    start: u64,
    end: u64,
}

impl FramesAhead {
    /// The snapshot behind `exact` (a source reading exactly what is asked), whose frames are read
    /// through `frames` (the same file, read ahead): opens it once through `exact` to find where
    /// its frames lie.
    pub fn new(exact: JsSource, frames: JsSource) -> Result<Self, bitlens_snapshot::SnapshotError> {
        let (start, end) = {
            let reader = SnapshotReader::open(&exact)?;
            let all = reader.entries.iter().flat_map(|e| &e.frames);
            let start = all.clone().map(|f| f.offset).min().unwrap_or(0);
            let end = all.map(|f| f.offset + f.stored_len).max().unwrap_or(0);
            (start, end)
        };
        Ok(FramesAhead {
            exact,
            frames,
            start,
            end,
        })
    }
}

impl ReadAt for FramesAhead {
    fn size(&self) -> u64 {
        self.exact.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let end = offset.saturating_add(buf.len() as u64);
        if offset >= self.start && end <= self.end {
            self.frames.read_exact_at(offset, buf)
        } else {
            self.exact.read_exact_at(offset, buf)
        }
    }
}
