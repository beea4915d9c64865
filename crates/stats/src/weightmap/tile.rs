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
                if c_lo < c_hi {
                    let row_cells = ((r - w.row0) / w.block_rows) as usize * self.cell_cols;
                    let i0 = (r * cols + c_lo - first) as usize;
                    let i1 = i0 + (c_hi - c_lo) as usize;
                    let flags = unchanged.map(|u| &u[i0..i1]);
                    self.add_row(row_cells, c_lo - w.col0, &samples[i0..i1], flags);
                }
            }
            l = stop;
        }
    }

    /// Folds one row's run of samples starting at column `col` of the window into the cells of
    /// the cell row starting at cell `row_cells`.
    fn add_row(&mut self, row_cells: usize, col: u64, run: &[f32], unchanged: Option<&[bool]>) {
        let bc = self.window.block_cols as usize;
        let first_cell = row_cells + (col / self.window.block_cols) as usize;
        if bc == 1 && unchanged.is_none() {
            // One lane per cell: fold each lane straight into its cell (zipped slices, so the
            // loop has no bounds checks).
            let end = first_cell + run.len();
            let cells = self.sum[first_cell..end]
                .iter_mut()
                .zip(&mut self.min[first_cell..end])
                .zip(&mut self.max[first_cell..end])
                .zip(&mut self.finite[first_cell..end])
                .zip(&mut self.zeros[first_cell..end])
                .zip(&mut self.lanes[first_cell..end]);
            for (&s, (((((sum, lo), hi), finite), zeros), lanes)) in run.iter().zip(cells) {
                let fin = s.is_finite();
                *sum += if fin { f64::from(s) } else { 0.0 };
                *lo = lo.min(if fin { s } else { f32::INFINITY });
                *hi = hi.max(if fin { s } else { f32::NEG_INFINITY });
                *finite += u32::from(fin);
                *zeros += u32::from(s == 0.0);
                *lanes += 1;
            }
            return;
        }
        // The first cell may start mid-block; the others start at block boundaries.
        let head = (bc - (col as usize % bc)).min(run.len());
        let flags = |a: usize, b: usize| unchanged.map(|u| &u[a..b]);
        self.fold(first_cell, &run[..head], flags(0, head));
        for (k, piece) in run[head..].chunks(bc).enumerate() {
            let at = head + k * bc;
            self.fold(first_cell + 1 + k, piece, flags(at, at + piece.len()));
        }
    }

    /// Folds one cell's run of samples: four lanes at a time into four partial sums, minima and
    /// maxima (independent chains the processor overlaps), then the rest.
    #[inline]
    fn fold(&mut self, cell: usize, run: &[f32], unchanged: Option<&[bool]>) {
        let mut sum = [0.0f64; 4];
        let mut lo = [f32::INFINITY; 4];
        let mut hi = [f32::NEG_INFINITY; 4];
        let (mut finite, mut zeros) = (0u32, 0u32);
        let mut quads = run.chunks_exact(4);
        for q in &mut quads {
            for j in 0..4 {
                let s = q[j];
                let fin = s.is_finite();
                sum[j] += if fin { f64::from(s) } else { 0.0 };
                lo[j] = lo[j].min(if fin { s } else { f32::INFINITY });
                hi[j] = hi[j].max(if fin { s } else { f32::NEG_INFINITY });
                finite += u32::from(fin);
                zeros += u32::from(s == 0.0);
            }
        }
        for &s in quads.remainder() {
            let fin = s.is_finite();
            sum[0] += if fin { f64::from(s) } else { 0.0 };
            lo[0] = lo[0].min(if fin { s } else { f32::INFINITY });
            hi[0] = hi[0].max(if fin { s } else { f32::NEG_INFINITY });
            finite += u32::from(fin);
            zeros += u32::from(s == 0.0);
        }
        if let Some(u) = unchanged {
            zeros = u.iter().map(|&b| u32::from(b)).sum();
        }
        self.sum[cell] += (sum[0] + sum[1]) + (sum[2] + sum[3]);
        self.min[cell] = self.min[cell].min(lo[0].min(lo[1]).min(lo[2].min(lo[3])));
        self.max[cell] = self.max[cell].max(hi[0].max(hi[1]).max(hi[2].max(hi[3])));
        self.finite[cell] += finite;
        self.zeros[cell] += zeros;
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
