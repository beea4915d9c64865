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

/// The quantity `q` over `cells` of `tile` combined (NaN when they hold no value).
pub fn combine(tile: &Tile, q: Quantity, cells: Cells) -> f32 {
    let cols = tile.window.cell_cols();
    let (mut num, mut den) = (0.0f64, 0.0f64);
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for r in cells.r0..cells.r1 {
        for c in cells.c0..cells.c1 {
            let i = (r * cols + c) as usize;
            match q.aggregate {
                Aggregate::Mean => {
                    let f = f64::from(tile.finite.0[i]);
                    if f > 0.0 {
                        num += f64::from(tile.mean.0[i]) * f;
                        den += f;
                    }
                }
                Aggregate::Zeros => {
                    let l = f64::from(tile.lanes.0[i]);
                    if l > 0.0 {
                        num += f64::from(tile.zeros.0[i]) * l;
                        den += l;
                    }
                }
                Aggregate::AbsMax | Aggregate::Range => {
                    if tile.finite.0[i] > 0.0 {
                        lo = lo.min(tile.min.0[i]);
                        hi = hi.max(tile.max.0[i]);
                    }
                }
            }
        }
    }
    match q.aggregate {
        Aggregate::Mean if den > 0.0 => (num / den) as f32,
        Aggregate::Zeros if den > 0.0 => q.zeros_shown((num / den) as f32),
        Aggregate::AbsMax if lo <= hi => lo.abs().max(hi.abs()),
        Aggregate::Range if lo <= hi => hi - lo,
        _ => f32::NAN,
    }
}

/// Every pixel's value, row-major (NaN: nothing there).
pub fn raster(v: &Viewport, tiles: &[&Tile], q: Quantity) -> Vec<f32> {
    let mut out = Vec::with_capacity(v.width as usize * v.height as usize);
    for y in 0..v.height {
        for x in 0..v.width {
            out.push(
                pixel_cells(v, tiles, x, y).map_or(f32::NAN, |c| combine(tiles[c.tile], q, c)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_stats::weightmap::{weight_map, Layer, LOCAL_GAP};
    use bitlens_tensors::format::{Data, ElementType, Entry};
    use bitlens_tensors::Dtype;

    fn matrix(rows: u64, cols: u64) -> (Vec<u8>, Entry, Vec<f32>) {
        let values: Vec<f32> = (0..rows * cols)
            .map(|i| {
                ((i * 7919 % 1000) as f32 - 500.0) / 64.0 * if i % 13 == 0 { 0.0 } else { 1.0 }
            })
            .collect();
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let entry = Entry {
            name: "w".into(),
            ty: ElementType::Dtype(Dtype::F32),
            shape: vec![rows, cols],
            data: Data::Range {
                offset: 0,
                len: rows * cols * 4,
            },
        };
        (bytes, entry, values)
    }

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
        let (bytes, entry, values) = matrix(300, 200);
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
