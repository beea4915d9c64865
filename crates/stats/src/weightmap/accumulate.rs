//! Folding a window's samples into its cells ([`CellAccumulator`]). Rows come in order; each
//! row's run of samples goes, lane by lane, into per-column slots of the current cell row (one
//! loop per statistic over zipped slices, which the compiler vectorizes), and when the cell row
//! is complete the columns are folded into its cells, `block_cols` at a time. So the cost per
//! lane does not depend on the block size. Windows too wide for per-column slots fold each run of
//! a row into its cell directly. A run holding NaN or ±Inf takes a slower path that leaves them
//! out of the sums and extremes.

use super::grid::{Grid, Window};
use super::tile::{Cells, Tile};
use super::Layer;

/// Widest window (in columns) folded through per-column slots.
const MAX_COLUMN_SLOTS: u64 = 1 << 20;

/// Per slot (a cell, or a column of the current cell row): Σ finite samples, smallest and
/// largest finite sample, zeros, finite samples, lanes.
struct Slots {
    sum: Vec<f64>,
    min: Vec<f32>,
    max: Vec<f32>,
    zeros: Vec<u32>,
    finite: Vec<u32>,
    lanes: Vec<u32>,
}

impl Slots {
    /// `n` empty slots.
    fn new(n: usize) -> Slots {
        Slots {
            sum: vec![0.0; n],
            min: vec![f32::INFINITY; n],
            max: vec![f32::NEG_INFINITY; n],
            zeros: vec![0; n],
            finite: vec![0; n],
            lanes: vec![0; n],
        }
    }

    /// Empties every slot.
    fn clear(&mut self) {
        self.sum.fill(0.0);
        self.min.fill(f32::INFINITY);
        self.max.fill(f32::NEG_INFINITY);
        self.zeros.fill(0);
        self.finite.fill(0);
        self.lanes.fill(0);
    }

    /// Folds sample `i` of `run` into slot `at + i` (`unchanged[i]`: counts as a zero instead).
    fn each(&mut self, at: usize, run: &[f32], unchanged: Option<&[bool]>) {
        let slots = at..at + run.len();
        if all_finite(run) {
            for (sum, &s) in self.sum[slots.clone()].iter_mut().zip(run) {
                *sum += f64::from(s);
            }
            for (lo, &s) in self.min[slots.clone()].iter_mut().zip(run) {
                *lo = if s < *lo { s } else { *lo };
            }
            for (hi, &s) in self.max[slots.clone()].iter_mut().zip(run) {
                *hi = if s > *hi { s } else { *hi };
            }
            for n in &mut self.finite[slots.clone()] {
                *n += 1;
            }
        } else {
            for (i, &s) in run.iter().enumerate() {
                if s.is_finite() {
                    self.sum[at + i] += f64::from(s);
                    self.min[at + i] = self.min[at + i].min(s);
                    self.max[at + i] = self.max[at + i].max(s);
                    self.finite[at + i] += 1;
                }
            }
        }
        match unchanged {
            Some(u) => {
                for (z, &b) in self.zeros[slots.clone()].iter_mut().zip(u) {
                    *z += u32::from(b);
                }
            }
            None => {
                for (z, &s) in self.zeros[slots.clone()].iter_mut().zip(run) {
                    *z += u32::from(s == 0.0);
                }
            }
        }
        for n in &mut self.lanes[slots] {
            *n += 1;
        }
    }

    /// Folds `rows` rows of `width` samples, row `k` at `samples[k * stride..]`, into slots
    /// `at..at + width` (column `j` into slot `at + j`), as [`Slots::each`] on each row would.
    /// Columns are folded [`LANES`] at a time over every row in registers, so each slot is loaded
    /// and stored once for all the rows, not once per row; columns holding NaN or ±Inf are folded
    /// again row by row by [`Slots::each`], which leaves those out.
    fn rows(&mut self, at: usize, samples: &[f32], stride: usize, width: usize, rows: usize) {
        let whole = width / LANES * LANES;
        for j in (0..whole).step_by(LANES) {
            let mut sum = [0.0f64; LANES];
            let mut lo = [f32::INFINITY; LANES];
            let mut hi = [f32::NEG_INFINITY; LANES];
            let mut zeros = [0u32; LANES];
            let mut finite = [true; LANES];
            for k in 0..rows {
                let x: &[f32; LANES] = samples[k * stride + j..][..LANES]
                    .try_into()
                    .expect("LANES samples");
                for i in 0..LANES {
                    sum[i] += f64::from(x[i]);
                    lo[i] = if x[i] < lo[i] { x[i] } else { lo[i] };
                    hi[i] = if x[i] > hi[i] { x[i] } else { hi[i] };
                    zeros[i] += u32::from(x[i] == 0.0);
                    finite[i] &= x[i].abs() < f32::INFINITY;
                }
            }
            if finite.contains(&false) {
                for k in 0..rows {
                    self.each(at + j, &samples[k * stride + j..][..LANES], None);
                }
                continue;
            }
            let slots = at + j..at + j + LANES;
            for (d, v) in self.sum[slots.clone()].iter_mut().zip(sum) {
                *d += v;
            }
            for (d, v) in self.min[slots.clone()].iter_mut().zip(lo) {
                *d = d.min(v);
            }
            for (d, v) in self.max[slots.clone()].iter_mut().zip(hi) {
                *d = d.max(v);
            }
            for (d, v) in self.zeros[slots.clone()].iter_mut().zip(zeros) {
                *d += v;
            }
            for f in &mut self.finite[slots.clone()] {
                *f += rows as u32;
            }
            for l in &mut self.lanes[slots] {
                *l += rows as u32;
            }
        }
        if whole < width {
            for k in 0..rows {
                self.each(
                    at + whole,
                    &samples[k * stride + whole..k * stride + width],
                    None,
                );
            }
        }
    }

    /// Folds every sample of `run` into slot `at`.
    fn all(&mut self, at: usize, run: &[f32], unchanged: Option<&[bool]>) {
        let (sum, lo, hi, finite) = if all_finite(run) {
            let mut sums = [0.0f64; 4];
            let mut quads = run.chunks_exact(4);
            for q in &mut quads {
                for j in 0..4 {
                    sums[j] += f64::from(q[j]);
                }
            }
            let rest: f64 = quads.remainder().iter().map(|&s| f64::from(s)).sum();
            let lo = run
                .iter()
                .fold(f32::INFINITY, |a, &s| if s < a { s } else { a });
            let hi = run
                .iter()
                .fold(f32::NEG_INFINITY, |a, &s| if s > a { s } else { a });
            let sum = (sums[0] + sums[1]) + (sums[2] + sums[3]) + rest;
            (sum, lo, hi, run.len() as u32)
        } else {
            let finite = run.iter().filter(|s| s.is_finite());
            (
                finite.clone().map(|&s| f64::from(s)).sum(),
                finite.clone().fold(f32::INFINITY, |a, &s| a.min(s)),
                finite.clone().fold(f32::NEG_INFINITY, |a, &s| a.max(s)),
                finite.count() as u32,
            )
        };
        let zeros: u32 = match unchanged {
            Some(u) => u.iter().map(|&b| u32::from(b)).sum(),
            None => run.iter().map(|&s| u32::from(s == 0.0)).sum(),
        };
        self.sum[at] += sum;
        self.min[at] = self.min[at].min(lo);
        self.max[at] = self.max[at].max(hi);
        self.finite[at] += finite;
        self.zeros[at] += zeros;
        self.lanes[at] += run.len() as u32;
    }

    /// Folds `other`'s slots into these, `group` consecutive ones into each slot from `at` on
    /// (the last group may be shorter): one pass per statistic.
    fn merge_groups(&mut self, at: usize, other: &Slots, group: usize) {
        let n = other.sum.len().div_ceil(group);
        let to = at..at + n;
        for (d, g) in self.sum[to.clone()].iter_mut().zip(other.sum.chunks(group)) {
            *d += g.iter().sum::<f64>();
        }
        for (d, g) in self.min[to.clone()].iter_mut().zip(other.min.chunks(group)) {
            *d = g.iter().fold(*d, |a, &s| a.min(s));
        }
        for (d, g) in self.max[to.clone()].iter_mut().zip(other.max.chunks(group)) {
            *d = g.iter().fold(*d, |a, &s| a.max(s));
        }
        for (d, g) in self.zeros[to.clone()]
            .iter_mut()
            .zip(other.zeros.chunks(group))
        {
            *d += g.iter().sum::<u32>();
        }
        for (d, g) in self.finite[to.clone()]
            .iter_mut()
            .zip(other.finite.chunks(group))
        {
            *d += g.iter().sum::<u32>();
        }
        for (d, g) in self.lanes[to].iter_mut().zip(other.lanes.chunks(group)) {
            *d += g.iter().sum::<u32>();
        }
    }
}

/// Columns [`Slots::rows`] folds at once (registers of sums, extremes and zero counts).
const LANES: usize = 8;

/// True when no sample of `run` is NaN or infinite (one pass the compiler vectorizes).
fn all_finite(run: &[f32]) -> bool {
    run.iter()
        .fold(true, |ok, s| ok & (s.abs() < f32::INFINITY))
}

/// Folds spans of samples into the cells of a window.
pub(crate) struct CellAccumulator {
    grid: Grid,
    window: Window,
    cell_cols: usize,
    cells: Slots,
    /// Per-column slots of the cell row being filled, and that cell row (None: runs go to their
    /// cells directly).
    columns: Option<(Slots, Option<u64>)>,
}

impl CellAccumulator {
    /// Empty cells of `window` (already checked against `grid` and the cell budget).
    pub(crate) fn new(grid: Grid, window: Window) -> Self {
        let by_column = window.block_cols > 1 && window.cols <= MAX_COLUMN_SLOTS;
        CellAccumulator {
            grid,
            window,
            cell_cols: window.cell_cols() as usize,
            cells: Slots::new(window.cells() as usize),
            columns: by_column.then(|| (Slots::new(window.cols as usize), None)),
        }
    }

    /// Folds `samples`, the samples of lanes `first..`, into the cells, those of lanes in
    /// `[start, end)` only. `unchanged[i]` (when given) says lane `first + i` did not change,
    /// and counts as a "zero" instead of the sample being zero. Rows come in increasing order.
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
            if c == 0 && unchanged.is_none() {
                let rows = self.whole_rows(r, (hi - l) / cols);
                if rows > 1 {
                    let i0 = (l + w.col0 - first) as usize;
                    self.add_rows(r - w.row0, &samples[i0..], rows as usize);
                    l += rows * cols;
                    continue;
                }
            }
            let stop = hi.min((r + 1) * cols);
            if r >= w.row0 && r < w.row0 + w.rows {
                let c_lo = c.max(w.col0);
                let c_hi = (c + (stop - l)).min(w.col0 + w.cols);
                if c_lo < c_hi {
                    let i0 = (r * cols + c_lo - first) as usize;
                    let i1 = i0 + (c_hi - c_lo) as usize;
                    let flags = unchanged.map(|u| &u[i0..i1]);
                    self.add_row(r - w.row0, c_lo - w.col0, &samples[i0..i1], flags);
                }
            }
            l = stop;
        }
    }

    /// How many of `available` whole grid rows from row `r` on lie in the window and in the cell
    /// row of `r` (0 when `r` is outside the window).
    fn whole_rows(&self, r: u64, available: u64) -> u64 {
        let w = self.window;
        if r < w.row0 || r >= w.row0 + w.rows {
            return 0;
        }
        // Saturating: a cell taller than the grid (any `block_rows` up to u64::MAX is valid) ends
        // past the window, which the `min` cuts.
        let cell_end = ((r - w.row0) / w.block_rows + 1)
            .saturating_mul(w.block_rows)
            .saturating_add(w.row0);
        available.min(cell_end.min(w.row0 + w.rows) - r)
    }

    /// Folds `rows` window rows from row `row` on, all in one cell row, each the window's
    /// columns at `samples[k * grid columns..]`.
    fn add_rows(&mut self, row: u64, samples: &[f32], rows: usize) {
        let (stride, width) = (self.grid.cols as usize, self.window.cols as usize);
        let cell_row = row / self.window.block_rows;
        if self.window.block_cols == 1 {
            let at = cell_row as usize * self.cell_cols;
            self.cells.rows(at, samples, stride, width, rows);
            return;
        }
        if self.columns.is_none() {
            for k in 0..rows {
                self.add_row(row + k as u64, 0, &samples[k * stride..][..width], None);
            }
            return;
        }
        if let Some((_, current)) = &self.columns {
            if *current != Some(cell_row) {
                self.flush();
            }
        }
        if let Some((columns, current)) = &mut self.columns {
            *current = Some(cell_row);
            columns.rows(0, samples, stride, width, rows);
        }
    }

    /// Folds one run of row `row` of the window, from its column `col`.
    fn add_row(&mut self, row: u64, col: u64, run: &[f32], unchanged: Option<&[bool]>) {
        let cell_row = row / self.window.block_rows;
        let row_cells = cell_row as usize * self.cell_cols;
        let bc = self.window.block_cols as usize;
        if bc == 1 {
            self.cells.each(row_cells + col as usize, run, unchanged);
            return;
        }
        if let Some((_, current)) = &self.columns {
            if *current != Some(cell_row) {
                self.flush();
                if let Some((_, current)) = &mut self.columns {
                    *current = Some(cell_row);
                }
            }
        }
        if let Some((columns, _)) = &mut self.columns {
            columns.each(col as usize, run, unchanged);
            return;
        }
        // Too wide for column slots: each run of a cell into the cell.
        let first_cell = row_cells + col as usize / bc;
        let head = (bc - (col as usize % bc)).min(run.len());
        let flags = |a: usize, b: usize| unchanged.map(|u| &u[a..b]);
        self.cells.all(first_cell, &run[..head], flags(0, head));
        for (k, piece) in run[head..].chunks(bc).enumerate() {
            let at = head + k * bc;
            self.cells
                .all(first_cell + 1 + k, piece, flags(at, at + piece.len()));
        }
    }

    /// Folds the column slots of the current cell row into its cells and empties them.
    fn flush(&mut self) {
        let Some((columns, Some(cell_row))) = &mut self.columns else {
            return;
        };
        let row_cells = *cell_row as usize * self.cell_cols;
        self.cells
            .merge_groups(row_cells, columns, self.window.block_cols as usize);
        columns.clear();
    }

    /// The tile of the folded samples.
    pub(crate) fn finish(mut self, layer: Layer, bytes_read: u64) -> Tile {
        self.flush();
        let c = &self.cells;
        let nan_unless = |ok: bool, v: f32| if ok { v } else { f32::NAN };
        let finite = |i: usize| c.finite[i] > 0;
        let n = c.sum.len();
        Tile {
            grid: self.grid,
            window: self.window,
            layer,
            mean: Cells(
                (0..n)
                    .map(|i| nan_unless(finite(i), (c.sum[i] / f64::from(c.finite[i])) as f32))
                    .collect(),
            ),
            min: Cells((0..n).map(|i| nan_unless(finite(i), c.min[i])).collect()),
            max: Cells((0..n).map(|i| nan_unless(finite(i), c.max[i])).collect()),
            zeros: Cells(
                (0..n)
                    .map(|i| nan_unless(c.lanes[i] > 0, c.zeros[i] as f32 / c.lanes[i] as f32))
                    .collect(),
            ),
            finite: Cells(c.finite.iter().map(|&v| v as f32).collect()),
            lanes: Cells(c.lanes.iter().map(|&v| v as f32).collect()),
            bytes_read,
        }
    }
}
