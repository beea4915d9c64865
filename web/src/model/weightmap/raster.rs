//! The weight map's pixels: for each pixel of a [`Viewport`], the cells of the finest tile that
//! covers the lanes under it, combined into one value of the [`Quantity`] shown (means weighted
//! by their finite values, zero fractions by their lanes, the largest of the maxima…), so a
//! pixel over several cells shows exactly the aggregate of their union.

use super::viewport::Viewport;
use super::{Aggregate, Quantity};
use bitlens_stats::weightmap::Tile;

/// Cells `[r0, r1) × [c0, c1)` of one tile (by index among the tiles given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cells {
    /// Which tile.
    pub tile: usize,
    /// First cell row.
    pub r0: u64,
    /// End cell row.
    pub r1: u64,
    /// First cell column.
    pub c0: u64,
    /// End cell column.
    pub c1: u64,
}

impl Cells {
    /// The lanes the cells cover: rows `a..b`, columns `c..d` (clipped to the tile's window).
    pub fn lanes(&self, tile: &Tile) -> (u64, u64, u64, u64) {
        let w = tile.window;
        let (br, bc) = (w.block_rows, w.block_cols);
        (
            w.row0 + self.r0 * br,
            (w.row0 + self.r1 * br).min(w.row0 + w.rows),
            w.col0 + self.c0 * bc,
            (w.col0 + self.c1 * bc).min(w.col0 + w.cols),
        )
    }
}

/// The cells range `[a, b)` of lanes `[x0, x1)` along one axis of a window starting at `start`
/// with `len` lanes in blocks of `block`, if the window holds those lanes.
fn axis(x0: f64, x1: f64, start: u64, len: u64, block: u64) -> Option<(u64, u64)> {
    let (lo, hi) = (start as f64, (start + len) as f64);
    let a = x0.max(0.0).floor();
    let b = x1.ceil();
    if a < lo || b > hi || b <= a {
        return None;
    }
    let first = (a as u64 - start) / block;
    let end = (b as u64 - start).div_ceil(block);
    Some((first, end))
}

/// The cells under pixel column `x` / row `y` of every tile, for the pixel's lanes clipped to
/// the grid.
fn pixel_axis(start: f64, scale: f64, p: u32, lanes: u64) -> Option<(f64, f64)> {
    let a = (start + f64::from(p) * scale).max(0.0);
    let b = (start + f64::from(p + 1) * scale).min(lanes as f64);
    (b > a).then_some((a, b))
}

/// The cells pixel (`x`, `y`) shows: of the first tile in `tiles` (finest first) that holds all
/// the lanes under it.
pub fn pixel_cells(v: &Viewport, tiles: &[&Tile], x: u32, y: u32) -> Option<Cells> {
    let (ra, rb) = pixel_axis(v.row0, v.row_scale, y, v.rows)?;
    let (ca, cb) = pixel_axis(v.col0, v.col_scale, x, v.cols)?;
    tiles.iter().enumerate().find_map(|(i, t)| {
        let w = t.window;
        let (r0, r1) = axis(ra, rb, w.row0, w.rows, w.block_rows)?;
        let (c0, c1) = axis(ca, cb, w.col0, w.cols, w.block_cols)?;
        Some(Cells {
            tile: i,
            r0,
            r1,
            c0,
            c1,
        })
    })
}

/// The quantity `q` over `cells` of `tile` combined (NaN when they hold no value): means weighted
/// by their finite values, zero fractions by their lanes, extremes over every cell.
pub fn combine(tile: &Tile, q: Quantity, cells: Cells) -> f32 {
    let cols = tile.window.cell_cols() as usize;
    let rows = cells.r0 as usize..cells.r1 as usize;
    let span = |r: usize| r * cols + cells.c0 as usize..r * cols + cells.c1 as usize;
    // Σ value·weight and Σ weight over the cells.
    let weighted = |value: &[f32], weight: &[f32]| {
        let (mut num, mut den) = (0.0f64, 0.0f64);
        for r in rows.clone() {
            for (&v, &w) in value[span(r)].iter().zip(&weight[span(r)]) {
                if w > 0.0 {
                    num += f64::from(v) * f64::from(w);
                    den += f64::from(w);
                }
            }
        }
        (den > 0.0).then(|| (num / den) as f32)
    };
    // The smallest minimum and largest maximum of the cells holding finite values.
    let extremes = || {
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for r in rows.clone() {
            let s = span(r);
            for ((&a, &b), &f) in tile.min.0[s.clone()]
                .iter()
                .zip(&tile.max.0[s.clone()])
                .zip(&tile.finite.0[s])
            {
                if f > 0.0 {
                    lo = lo.min(a);
                    hi = hi.max(b);
                }
            }
        }
        (lo <= hi).then_some((lo, hi))
    };
    match q.aggregate {
        Aggregate::Mean => weighted(&tile.mean.0, &tile.finite.0),
        Aggregate::Zeros => weighted(&tile.zeros.0, &tile.lanes.0).map(|z| q.zeros_shown(z)),
        Aggregate::AbsMax => extremes().map(|(lo, hi)| lo.abs().max(hi.abs())),
        Aggregate::Range => extremes().map(|(lo, hi)| hi - lo),
    }
    .unwrap_or(f32::NAN)
}

/// The cells `[a, b)` under a pixel along one axis of a tile (None: the tile does not hold it).
type Span = Option<(u64, u64)>;

/// Per cell column of a tile, what the cells of some rows hold together: (Σ value·weight,
/// Σ weight) for means and zero fractions, (smallest minimum, largest maximum) for extremes.
struct Columns {
    num: Vec<f64>,
    den: Vec<f64>,
    lo: Vec<f32>,
    hi: Vec<f32>,
}

impl Columns {
    /// The columns `c0..c1` of cell rows `r0..r1` of `tile` for `q`.
    fn of(tile: &Tile, q: Quantity, (r0, r1): (u64, u64), (c0, c1): (usize, usize)) -> Columns {
        let n = c1 - c0;
        let mut out = Columns {
            num: vec![0.0; n],
            den: vec![0.0; n],
            lo: vec![f32::INFINITY; n],
            hi: vec![f32::NEG_INFINITY; n],
        };
        let cols = tile.window.cell_cols() as usize;
        for r in r0 as usize..r1 as usize {
            let span = r * cols + c0..r * cols + c1;
            match q.aggregate {
                Aggregate::Mean | Aggregate::Zeros => {
                    let (value, weight) = if q.aggregate == Aggregate::Mean {
                        (&tile.mean.0[span.clone()], &tile.finite.0[span])
                    } else {
                        (&tile.zeros.0[span.clone()], &tile.lanes.0[span])
                    };
                    for (((&v, &w), num), den) in
                        value.iter().zip(weight).zip(&mut out.num).zip(&mut out.den)
                    {
                        if w > 0.0 {
                            *num += f64::from(v) * f64::from(w);
                            *den += f64::from(w);
                        }
                    }
                }
                Aggregate::AbsMax | Aggregate::Range => {
                    let cells = tile.min.0[span.clone()]
                        .iter()
                        .zip(&tile.max.0[span.clone()])
                        .zip(&tile.finite.0[span]);
                    for (((&a, &b), &f), (lo, hi)) in cells.zip(out.lo.iter_mut().zip(&mut out.hi))
                    {
                        if f > 0.0 {
                            *lo = lo.min(a);
                            *hi = hi.max(b);
                        }
                    }
                }
            }
        }
        out
    }

    /// The quantity over columns `a..b` (indices into these columns).
    fn combine(&self, q: Quantity, a: usize, b: usize) -> f32 {
        match q.aggregate {
            Aggregate::Mean | Aggregate::Zeros => {
                let den: f64 = self.den[a..b].iter().sum();
                if den > 0.0 {
                    let v = (self.num[a..b].iter().sum::<f64>() / den) as f32;
                    if q.aggregate == Aggregate::Zeros {
                        q.zeros_shown(v)
                    } else {
                        v
                    }
                } else {
                    f32::NAN
                }
            }
            Aggregate::AbsMax | Aggregate::Range => {
                let lo = self.lo[a..b].iter().copied().fold(f32::INFINITY, f32::min);
                let hi = self.hi[a..b]
                    .iter()
                    .copied()
                    .fold(f32::NEG_INFINITY, f32::max);
                match (lo <= hi, q.aggregate) {
                    (false, _) => f32::NAN,
                    (true, Aggregate::AbsMax) => lo.abs().max(hi.abs()),
                    (true, _) => hi - lo,
                }
            }
        }
    }
}

/// Every pixel's value, row-major (NaN: nothing there): for each pixel, [`combine`] over the
/// cells [`pixel_cells`] finds. Computed a pixel row at a time: the cell rows under it are folded
/// per cell column once, then each pixel combines its columns.
pub fn raster(v: &Viewport, tiles: &[&Tile], q: Quantity) -> Vec<f32> {
    let (width, height) = (v.width as usize, v.height as usize);
    let mut out = vec![f32::NAN; width * height];
    let mut done = vec![false; width * height];
    for tile in tiles {
        let w = tile.window;
        let xs: Vec<Span> = (0..v.width)
            .map(|x| {
                let (a, b) = pixel_axis(v.col0, v.col_scale, x, v.cols)?;
                axis(a, b, w.col0, w.cols, w.block_cols)
            })
            .collect();
        let Some(c_lo) = xs.iter().flatten().map(|s| s.0).min() else {
            continue;
        };
        let c_hi = xs.iter().flatten().map(|s| s.1).max().unwrap_or(c_lo);
        for y in 0..height {
            let Some(rows) = pixel_axis(v.row0, v.row_scale, y as u32, v.rows)
                .and_then(|(a, b)| axis(a, b, w.row0, w.rows, w.block_rows))
            else {
                continue;
            };
            if done[y * width..(y + 1) * width].iter().all(|&d| d) {
                continue;
            }
            let columns = Columns::of(tile, q, rows, (c_lo as usize, c_hi as usize));
            for (x, span) in xs.iter().enumerate() {
                let i = y * width + x;
                if let (Some((a, b)), false) = (span, done[i]) {
                    out[i] = columns.combine(q, (a - c_lo) as usize, (b - c_lo) as usize);
                    done[i] = true;
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_stats::weightmap::{weight_map, Layer, LOCAL_GAP};

    /// The aggregate over lanes `[a, b) × [c, d)` computed from the values themselves.
    fn direct(values: &[f32], cols: u64, (a, b, c, d): (u64, u64, u64, u64), q: Quantity) -> f32 {
        let block: Vec<f32> = (a..b)
            .flat_map(|r| (c..d).map(move |k| values[(r * cols + k) as usize]))
            .collect();
        let n = block.len() as f64;
        match q.aggregate {
            Aggregate::Mean => (block.iter().map(|&v| f64::from(v)).sum::<f64>() / n) as f32,
            Aggregate::Zeros => (block.iter().filter(|&&v| v == 0.0).count() as f64 / n) as f32,
            Aggregate::AbsMax => block.iter().fold(0.0f32, |m, v| m.max(v.abs())),
            Aggregate::Range => {
                block.iter().cloned().fold(f32::NEG_INFINITY, f32::max)
                    - block.iter().cloned().fold(f32::INFINITY, f32::min)
            }
        }
    }

    #[test]
    fn every_pixel_is_the_aggregate_of_the_lanes_of_its_cells() {
        let (bytes, entry, values) = super::super::test_matrix(300, 200);
        let mut v = Viewport::fit(300, 200, 37, 23);
        let base = weight_map(
            &bytes,
            &entry,
            None,
            &v.base_window(300),
            Layer::Values,
            LOCAL_GAP,
        )
        .unwrap();
        for step in 0..3 {
            if step > 0 {
                v.zoom(1.7, 11.0, 5.0);
            }
            let detail = v
                .detail_window(&base.window)
                .map(|w| weight_map(&bytes, &entry, None, &w, Layer::Values, LOCAL_GAP).unwrap());
            let tiles: Vec<&Tile> = detail.iter().chain([&base]).collect();
            for aggregate in Aggregate::ALL {
                let q = Quantity {
                    layer: Layer::Values,
                    aggregate,
                };
                let px = raster(&v, &tiles, q);
                let mut seen = 0;
                for (y, x) in (0..v.height).flat_map(|y| (0..v.width).map(move |x| (y, x))) {
                    let Some(cells) = pixel_cells(&v, &tiles, x, y) else {
                        assert!(px[(y * v.width + x) as usize].is_nan());
                        continue;
                    };
                    seen += 1;
                    let lanes = cells.lanes(tiles[cells.tile]);
                    let want = direct(&values, 200, lanes, q);
                    let got = px[(y * v.width + x) as usize];
                    assert!(
                        (got - want).abs() <= 1e-5 * want.abs().max(1e-3),
                        "{aggregate:?} at ({x}, {y}), step {step}: {got} vs {want}"
                    );
                }
                assert!(seen > 300, "only {seen} pixels show lanes");
            }
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;
    use crate::model::weightmap::colour::Normalizer;
    use crate::model::weightmap::Scale;
    use bitlens_stats::weightmap::{Cells, Grid, Layer};

    #[test]
    #[ignore]
    fn raster_speed() {
        let v0 = Viewport::fit(262144, 384, 1206, 420);
        let w = v0.base_window(1 << 21);
        let n = w.cells() as usize;
        let c = |x: f32| Cells(vec![x; n]);
        let tile = Tile {
            grid: Grid::of_shape(&[262144, 384], 1),
            window: w,
            layer: Layer::Values,
            mean: c(0.1),
            min: c(-1.0),
            max: c(1.0),
            zeros: c(0.0),
            finite: c(49.0),
            lanes: c(49.0),
            bytes_read: 0,
        };
        let q = Quantity {
            layer: Layer::Values,
            aggregate: Aggregate::Mean,
        };
        for zoom in [1.0, 4.0, 10.0] {
            let mut v = v0;
            v.zoom(zoom, 600.0, 200.0);
            let t = std::time::Instant::now();
            let px = raster(&v, &[&tile], q);
            let r = t.elapsed();
            let t = std::time::Instant::now();
            let norm = Normalizer::new(&px, q, Scale::Linear);
            let p = norm.pixels(&px);
            println!(
                "zoom {zoom}: raster {:?}, colour {:?} ({} px)",
                r,
                t.elapsed(),
                p.len() / 4
            );
        }
    }
}
