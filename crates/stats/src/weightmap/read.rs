//! Reading the lanes a [`Window`] covers: the lane spans to visit (the region's rows in one
//! stretch when the columns it skips are few, else row by row, so a zoomed-in map of a wide
//! matrix reads only its columns), cut into pieces of whole units of about [`PIECE`] bytes, and
//! read from the tensor's byte range at their offsets — or, for a tensor that is not a plain
//! byte range (a deflated `.npz` member, a PyTorch view), streamed in element order up to them.

use super::grid::{Grid, Window};
use super::lanes::Unit;
use super::MapError;
use bitlens_tensors::format::bytes::Reader;
use bitlens_tensors::format::{Data, Entry};
use bitlens_tensors::ReadAt;

/// Bytes per read, about. A browser's read has a fixed cost: `FileReaderSync` in headless
/// Chromium read 4 MiB pieces at about 0.5 GB/s and 16 MiB ones at about 0.7 GB/s
/// (`bitlens_wasm::source::READ_AHEAD`); the samples are made a stretch at a time, so a larger
/// piece costs only its bytes.
pub(crate) const PIECE: usize = 16 << 20;

/// Skipped bytes between two rows' spans below which a local file's rows are read as one
/// stretch: one read of a browser `Blob` costs about as much as reading this many bytes more.
pub const LOCAL_GAP: u64 = 256 << 10;

/// The same for a file read by HTTP range requests, where a request's round trip costs more.
pub const REMOTE_GAP: u64 = 4 << 20;

/// The lane spans `[start, end)` covering `window` of `grid`, in increasing order, each of at
/// most about [`PIECE`] bytes and, but for the last, whole units. Rows are read in one stretch
/// when they skip at most `gap` bytes between them, or when the tensor is not `seekable` (not a
/// plain byte range: everything up to the region is streamed anyway).
pub(crate) fn spans(
    grid: Grid,
    window: &Window,
    unit: Unit,
    seekable: bool,
    gap: u64,
) -> Vec<(u64, u64)> {
    if window.rows == 0 || window.cols == 0 {
        return Vec::new();
    }
    let lane_bytes = (unit.bytes() as u64).div_ceil(unit.lanes() as u64).max(1);
    let skipped = (grid.cols - window.cols) * lane_bytes;
    let first = window.row0 * grid.cols + window.col0;
    let stretches: Vec<(u64, u64)> = if skipped <= gap || !seekable {
        let last = (window.row0 + window.rows - 1) * grid.cols + window.col0 + window.cols;
        vec![(first, last.min(grid.lanes))]
    } else {
        (window.row0..window.row0 + window.rows)
            .map(|r| {
                let s = r * grid.cols + window.col0;
                (s.min(grid.lanes), (s + window.cols).min(grid.lanes))
            })
            .collect()
    };
    let lanes = unit.lanes() as u64;
    let per_piece = (PIECE as u64 / lane_bytes / lanes * lanes).max(lanes);
    let mut out = Vec::new();
    for (mut s, e) in stretches {
        while s < e {
            // Up to a unit boundary, so the next piece starts with a whole unit.
            let n = (e - s).min(per_piece - s % lanes);
            out.push((s, s + n));
            s += n;
        }
    }
    out
}

/// Reads the whole units holding lanes `[start, end)` of one tensor.
pub(crate) struct LaneReader<'a> {
    unit: Unit,
    kind: Kind<'a>,
}

/// Where the units come from.
enum Kind<'a> {
    /// A plain byte range at this offset: each piece read where it is.
    At(&'a dyn ReadAt, u64),
    /// Streamed in element order: the reader and the next unit it gives.
    Stream(Box<Reader<'a>>, u64),
}

impl<'a> LaneReader<'a> {
    /// True when pieces are read where they are (a plain byte range), not streamed.
    pub(crate) fn seekable(&self) -> bool {
        matches!(self.kind, Kind::At(..))
    }

    /// A reader of `entry`'s units from `src`.
    pub(crate) fn new(src: &'a dyn ReadAt, entry: &Entry, unit: Unit) -> Result<Self, MapError> {
        let kind = match entry.data {
            Data::Range { offset, len } => {
                let end = offset.checked_add(len);
                if end.is_none_or(|e| e > src.size()) {
                    return Err(MapError::PastEnd {
                        offset,
                        len,
                        size: src.size(),
                    });
                }
                Kind::At(src, offset)
            }
            _ => Kind::Stream(Box::new(Reader::new(src, entry, PIECE)?), 0),
        };
        Ok(LaneReader { unit, kind })
    }

    /// Fills `buf` with the whole units holding lanes `[start, end)` (spans asked in increasing
    /// order); returns the first lane the bytes hold.
    pub(crate) fn read(
        &mut self,
        start: u64,
        end: u64,
        buf: &mut Vec<u8>,
    ) -> Result<u64, MapError> {
        let lanes = self.unit.lanes() as u64;
        let size = self.unit.bytes() as u64;
        let (u0, u1) = (start / lanes, end.div_ceil(lanes));
        buf.clear();
        buf.resize(((u1 - u0) * size) as usize, 0);
        match &mut self.kind {
            Kind::At(src, offset) => src.read_exact_at(*offset + u0 * size, buf)?,
            Kind::Stream(reader, next) => {
                if u0 < *next {
                    return Err(MapError::Backwards);
                }
                let mut skip = (u0 - *next) * size;
                let mut scratch = vec![0u8; (skip.min(PIECE as u64)) as usize];
                while skip > 0 {
                    let n = (skip as usize).min(scratch.len());
                    if reader.read(&mut scratch[..n])? < n {
                        return Err(MapError::ShortTensor);
                    }
                    skip -= n as u64;
                }
                if reader.read(buf)? < buf.len() {
                    return Err(MapError::ShortTensor);
                }
                *next = u1;
            }
        }
        Ok(u0 * lanes)
    }
}
