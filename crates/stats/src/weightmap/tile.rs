//! What a weight map computes for a [`Window`]: per cell, the mean, minimum and maximum of its
//! lanes' samples, the fraction of zeros (for [`Layer::Changes`]: of unchanged lanes), and how
//! many lanes and finite samples it holds ([`Tile`]); and the accumulator that folds spans of
//! samples into the cells.
//!
//! The per-cell figures are [`Cells`]: `f32`s that cross a worker boundary as one byte string
//! (serde `bytes`, a `Uint8Array` in JavaScript), not as a list of numbers.

use super::grid::{Grid, Window};
use super::Layer;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One `f32` per cell, row-major over the window's cells; NaN where a cell has no finite sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cells(pub Vec<f32>);

impl Serialize for Cells {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.0.iter().flat_map(|v| v.to_le_bytes()).collect();
        s.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for Cells {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Cells, D::Error> {
        d.deserialize_byte_buf(CellsVisitor)
    }
}

/// Reads [`Cells`] from a byte string (or a sequence of bytes, as JSON gives it).
struct CellsVisitor;

impl CellsVisitor {
    fn cells<E: de::Error>(bytes: &[u8]) -> Result<Cells, E> {
        if !bytes.len().is_multiple_of(4) {
            return Err(E::invalid_length(bytes.len(), &"a multiple of 4 bytes"));
        }
        Ok(Cells(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ))
    }
}

impl<'de> Visitor<'de> for CellsVisitor {
    type Value = Cells;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("little-endian f32 values as bytes")
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Cells, E> {
        Self::cells(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Cells, E> {
        Self::cells(&v)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Cells, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        Self::cells(&bytes)
    }
}

/// A window of a tensor's weight map: one cell per block of lanes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tile {
    /// The tensor's grid.
    pub grid: Grid,
    /// The region and block size the cells cover.
    pub window: Window,
    /// What each lane contributed.
    pub layer: Layer,
    /// Mean of each cell's finite samples.
    pub mean: Cells,
    /// Smallest finite sample of each cell.
    pub min: Cells,
    /// Largest finite sample of each cell.
    pub max: Cells,
    /// Fraction of each cell's lanes whose sample is zero ([`Layer::Changes`]: lanes whose bits
    /// did not change).
    pub zeros: Cells,
    /// Finite samples per cell (NaN and ±Inf are left out of mean, min and max).
    pub finite: Cells,
    /// Lanes per cell (fewer at the region's edges and past a wrapped vector's end).
    pub lanes: Cells,
    /// Bytes read to compute it (both tensors' for [`Layer::Changes`]).
    pub bytes_read: u64,
}

/// Folds spans of samples into the cells of a window.
pub(crate) struct CellAccumulator {
    grid: Grid,
    window: Window,
    cell_cols: usize,
    sum: Vec<f64>,
    min: Vec<f32>,
    max: Vec<f32>,
    zeros: Vec<u32>,
    finite: Vec<u32>,
    lanes: Vec<u32>,
}

impl CellAccumulator {
    /// Empty cells of `window` (already checked against `grid` and the cell budget).
    pub(crate) fn new(grid: Grid, window: Window) -> Self {
        let n = window.cells() as usize;
        CellAccumulator {
            grid,
            window,
            cell_cols: window.cell_cols() as usize,
            sum: vec![0.0; n],
            min: vec![f32::INFINITY; n],
            max: vec![f32::NEG_INFINITY; n],
            zeros: vec![0; n],
            finite: vec![0; n],
            lanes: vec![0; n],
        }
    }

    /// Folds `samples`, the samples of lanes `first..`, into the cells, those of lanes in
    /// `[start, end)` only. `unchanged[i]` (when given) says lane `first + i` did not change,
    /// and counts as a "zero" instead of the sample being zero.
    pub(crate) fn add(
        &mut self,
        first: u64,
        samples: &[f32],
        (start, end): (u64, u64),
        unchanged: Option<&[bool]>,
    ) {
        let (cols, w) = (self.grid.cols, self.window);
        let hi = end.min(first + samples.len() as u64);
        let mut l = start.max(first);
        while l < hi {
            let (r, c) = (l / cols, l % cols);
            let stop = hi.min((r + 1) * cols);
            if r >= w.row0 && r < w.row0 + w.rows {
                let c_lo = c.max(w.col0);
                let c_hi = (c + (stop - l)).min(w.col0 + w.cols);
                let row_cells = ((r - w.row0) / w.block_rows) as usize * self.cell_cols;
                let mut cc = c_lo;
                while cc < c_hi {
                    let cell_col = (cc - w.col0) / w.block_cols;
                    let cell_end = c_hi.min(w.col0 + (cell_col + 1) * w.block_cols);
                    let i0 = (r * cols + cc - first) as usize;
                    let i1 = i0 + (cell_end - cc) as usize;
                    let flags = unchanged.map(|u| &u[i0..i1]);
                    self.fold(row_cells + cell_col as usize, &samples[i0..i1], flags);
                    cc = cell_end;
                }
            }
            l = stop;
        }
    }

    /// Folds one cell's run of samples.
    fn fold(&mut self, cell: usize, run: &[f32], unchanged: Option<&[bool]>) {
        let (mut sum, mut lo, mut hi, mut finite) = (0.0f64, self.min[cell], self.max[cell], 0u32);
        for &s in run {
            if s.is_finite() {
                sum += f64::from(s);
                lo = lo.min(s);
                hi = hi.max(s);
                finite += 1;
            }
        }
        let zeros = match unchanged {
            Some(u) => u.iter().filter(|&&b| b).count(),
            None => run.iter().filter(|&&s| s == 0.0).count(),
        };
        self.sum[cell] += sum;
        self.min[cell] = lo;
        self.max[cell] = hi;
        self.finite[cell] += finite;
        self.zeros[cell] += zeros as u32;
        self.lanes[cell] += run.len() as u32;
    }

    /// The tile of the folded samples.
    pub(crate) fn finish(self, layer: Layer, bytes_read: u64) -> Tile {
        let nan_unless = |ok: bool, v: f32| if ok { v } else { f32::NAN };
        let finite = |i: usize| self.finite[i] > 0;
        let n = self.sum.len();
        Tile {
            grid: self.grid,
            window: self.window,
            layer,
            mean: Cells(
                (0..n)
                    .map(|i| {
                        nan_unless(finite(i), (self.sum[i] / f64::from(self.finite[i])) as f32)
                    })
                    .collect(),
            ),
            min: Cells((0..n).map(|i| nan_unless(finite(i), self.min[i])).collect()),
            max: Cells((0..n).map(|i| nan_unless(finite(i), self.max[i])).collect()),
            zeros: Cells(
                (0..n)
                    .map(|i| {
                        let lanes = self.lanes[i];
                        nan_unless(lanes > 0, self.zeros[i] as f32 / lanes as f32)
                    })
                    .collect(),
            ),
            finite: Cells(self.finite.iter().map(|&v| v as f32).collect()),
            lanes: Cells(self.lanes.iter().map(|&v| v as f32).collect()),
            bytes_read,
        }
    }
}
