//! A weight map folded from pieces of the tensor's bytes that its caller reads ([`MapFold`]):
//! the plan of what to read ([`MapFold::pieces`], each a [`Piece`]) and the fold of each piece,
//! a stretch of [`STRETCH_LANES`] lanes at a time so the samples stay in cache. The synchronous
//! [`super::weight_map`] reads the pieces itself; a browser worker streams them
//! asynchronously, reading the next while it folds this one.

use super::accumulate::CellAccumulator;
use super::grid::{Grid, Window};
use super::lanes::{Sampler, Unit};
use super::read::spans;
use super::tile::Tile;
use super::{grid_of, Layer, MapError, MAX_CELLS};
use bitlens_tensors::format::Entry;

/// Lanes made into samples and folded at a time (about 64 KiB of `f32`s, which stay in cache
/// between the two).
pub(crate) const STRETCH_LANES: usize = 16 << 10;

/// One read a map needs: the whole units holding lanes `[start, end)`, which are bytes
/// `[offset, offset + len)` of the tensor's bytes (of both tensors, for [`Layer::Changes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// First lane folded.
    pub start: u64,
    /// End lane folded.
    pub end: u64,
    /// Offset of the piece's first unit in the tensor's bytes.
    pub offset: u64,
    /// Bytes of the piece (whole units).
    pub len: u64,
}

/// The cells of one window being folded from its pieces.
pub struct MapFold {
    grid: Grid,
    window: Window,
    layer: Layer,
    unit: Unit,
    cells: CellAccumulator,
    sampler: Sampler,
    /// Bytes of a stretch (whole units).
    stretch: usize,
    samples: Vec<f32>,
    other_samples: Vec<f32>,
    patterns: (Vec<u64>, Vec<u64>),
    unchanged: Vec<bool>,
    bytes_read: u64,
}

impl MapFold {
    /// The fold of `window` of `entry` for `layer`; [`Layer::Changes`] needs `other`, the same
    /// tensor in the checkpoint it changed to (same element type and shape).
    pub fn new(
        entry: &Entry,
        other: Option<&Entry>,
        window: &Window,
        layer: Layer,
    ) -> Result<MapFold, MapError> {
        MapFold::with_stretch(entry, other, window, layer, STRETCH_LANES)
    }

    /// [`MapFold::new`], folding `stretch_lanes` lanes at a time (whole units).
    pub(crate) fn with_stretch(
        entry: &Entry,
        other: Option<&Entry>,
        window: &Window,
        layer: Layer,
        stretch_lanes: usize,
    ) -> Result<MapFold, MapError> {
        let (unit, lanes_per_element) = Unit::of(entry.ty)?;
        unit.check(layer)?;
        let grid = grid_of(entry, lanes_per_element)?;
        window.check(grid, MAX_CELLS)?;
        match (layer, other) {
            (Layer::Changes, Some(b)) if b.ty != entry.ty || b.shape != entry.shape => {
                return Err(MapError::Pair(format!(
                    "{} is {:?} {:?} in one checkpoint and {:?} {:?} in the other",
                    entry.name, entry.ty, entry.shape, b.ty, b.shape
                )))
            }
            (Layer::Changes, None) => {
                return Err(MapError::Pair(
                    "the changes layer needs the tensor in a second checkpoint".into(),
                ))
            }
            _ => {}
        }
        Ok(MapFold {
            grid,
            window: *window,
            layer,
            unit,
            cells: CellAccumulator::new(grid, *window),
            sampler: Sampler::new(unit, layer),
            stretch: (stretch_lanes / unit.lanes()).max(1) * unit.bytes(),
            samples: Vec::new(),
            other_samples: Vec::new(),
            patterns: (Vec::new(), Vec::new()),
            unchanged: Vec::new(),
            bytes_read: 0,
        })
    }

    /// True when the fold needs the tensor in a second checkpoint too.
    pub fn pairs(&self) -> bool {
        self.layer == Layer::Changes
    }

    /// The pieces to read, in increasing order, each of about [`super::read::PIECE`] bytes at
    /// most: the window's rows in one stretch when they skip at most `gap` bytes between them
    /// or the tensor is not `seekable` (not a plain byte range), else row by row.
    pub fn pieces(&self, seekable: bool, gap: u64) -> Vec<Piece> {
        let (lanes, size) = (self.unit.lanes() as u64, self.unit.bytes() as u64);
        spans(self.grid, &self.window, self.unit, seekable, gap)
            .into_iter()
            .map(|(start, end)| {
                let (u0, u1) = (start / lanes, end.div_ceil(lanes));
                Piece {
                    start,
                    end,
                    offset: u0 * size,
                    len: (u1 - u0) * size,
                }
            })
            .collect()
    }

    /// Folds `piece`, given its bytes in the tensor (`a`) and, for [`Layer::Changes`], in the
    /// tensor it changed to (`b`, as long).
    pub fn fold(&mut self, piece: &Piece, a: &[u8], b: Option<&[u8]>) -> Result<(), MapError> {
        let (lanes, size) = (self.unit.lanes(), self.unit.bytes());
        if a.len() as u64 != piece.len || b.is_some_and(|b| b.len() != a.len()) {
            return Err(MapError::ShortTensor);
        }
        self.bytes_read += (a.len() + b.map_or(0, <[u8]>::len)) as u64;
        let first = piece.offset / size as u64 * lanes as u64;
        let span = (piece.start, piece.end);
        for (k, bytes_a) in a.chunks(self.stretch).enumerate() {
            let lane0 = first + (k * self.stretch / size * lanes) as u64;
            self.samples.clear();
            let Some(b) = b else {
                self.sampler.samples(bytes_a, &mut self.samples, None)?;
                self.cells.add(lane0, &self.samples, span, None);
                continue;
            };
            let bytes_b = &b[k * self.stretch..k * self.stretch + bytes_a.len()];
            let (pat_a, pat_b) = &mut self.patterns;
            self.other_samples.clear();
            self.sampler
                .samples(bytes_a, &mut self.samples, Some(pat_a))?;
            self.sampler
                .samples(bytes_b, &mut self.other_samples, Some(pat_b))?;
            self.unchanged.clear();
            if pat_a.is_empty() {
                // ggml blocks: compare the dequantized values' bits.
                self.unchanged.extend(
                    self.samples
                        .iter()
                        .zip(&self.other_samples)
                        .map(|(x, y)| x.to_bits() == y.to_bits()),
                );
            } else {
                self.unchanged
                    .extend(pat_a.iter().zip(pat_b.iter()).map(|(x, y)| x == y));
            }
            for (x, y) in self.samples.iter_mut().zip(&self.other_samples) {
                *x = y - *x;
            }
            self.cells
                .add(lane0, &self.samples, span, Some(&self.unchanged));
        }
        Ok(())
    }

    /// The tile of everything folded.
    pub fn finish(self) -> Tile {
        self.cells.finish(self.layer, self.bytes_read)
    }
}
