//! Where the weight map looks: a [`Viewport`] over the tensor's grid (the lane at the canvas's
//! top-left corner and how many rows and columns of lanes a pixel spans), zoomed about a point
//! and panned by pixels, never past the tensor's edges. The whole tensor fills the canvas (a tall
//! matrix is stretched across, a wide one down: the axes scale apart); zooming scales both alike.
//! It also picks the base tile's blocks (shaped like a pixel of the fitted view, as fine as the
//! cell budget allows) and the window to ask a worker for when the base is coarser than a pixel
//! ([`Viewport::detail_window`]).

use bitlens_stats::weightmap::Window;

/// The closest zoom: a lane spans this many pixels at most.
pub const MAX_PIXELS_PER_LANE: f64 = 32.0;

/// A view of a `rows × cols` grid on a `width × height` pixel canvas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viewport {
    /// Rows of the grid.
    pub rows: u64,
    /// Columns of the grid.
    pub cols: u64,
    /// Canvas width in pixels.
    pub width: u32,
    /// Canvas height in pixels.
    pub height: u32,
    /// Row (fractional) at the canvas's top edge.
    pub row0: f64,
    /// Column (fractional) at the canvas's left edge.
    pub col0: f64,
    /// Rows of lanes per pixel.
    pub row_scale: f64,
    /// Columns of lanes per pixel.
    pub col_scale: f64,
}

/// The fitted scale of `lanes` on `pixels`.
fn fit_axis(lanes: u64, pixels: u32) -> f64 {
    (lanes as f64 / f64::from(pixels)).max(1.0 / MAX_PIXELS_PER_LANE)
}

impl Viewport {
    /// The whole grid, filling the canvas.
    pub fn fit(rows: u64, cols: u64, width: u32, height: u32) -> Viewport {
        let (width, height) = (width.max(1), height.max(1));
        let mut v = Viewport {
            rows,
            cols,
            width,
            height,
            row0: 0.0,
            col0: 0.0,
            row_scale: fit_axis(rows, height),
            col_scale: fit_axis(cols, width),
        };
        v.clamp();
        v
    }

    /// How far in the view is zoomed along its rows (1: the whole grid).
    pub fn zoom_level(&self) -> f64 {
        fit_axis(self.rows, self.height) / self.row_scale
    }

    /// True when the whole grid is shown.
    pub fn fitted(&self) -> bool {
        self.row_scale >= fit_axis(self.rows, self.height) - 1e-12
            && self.col_scale >= fit_axis(self.cols, self.width) - 1e-12
    }

    /// Zooms in by `factor` (below 1: out) keeping the lane under pixel (`x`, `y`) there. Each
    /// axis stops on its own: never out past the whole grid, never in past
    /// [`MAX_PIXELS_PER_LANE`] (so a tall matrix, its columns already wide, goes on zooming down
    /// its rows until they are single lanes too).
    pub fn zoom(&mut self, factor: f64, x: f64, y: f64) {
        if !(factor.is_finite() && factor > 0.0) {
            return;
        }
        let (r, c) = (
            self.row0 + y * self.row_scale,
            self.col0 + x * self.col_scale,
        );
        let finest = 1.0 / MAX_PIXELS_PER_LANE;
        let row_fit = fit_axis(self.rows, self.height);
        let col_fit = fit_axis(self.cols, self.width);
        self.row_scale = (self.row_scale / factor).clamp(finest.min(row_fit), row_fit);
        self.col_scale = (self.col_scale / factor).clamp(finest.min(col_fit), col_fit);
        self.row0 = r - y * self.row_scale;
        self.col0 = c - x * self.col_scale;
        self.clamp();
    }

    /// Moves the view by (`dx`, `dy`) pixels (dragging the image right shows what lies left).
    pub fn pan(&mut self, dx: f64, dy: f64) {
        self.row0 -= dy * self.row_scale;
        self.col0 -= dx * self.col_scale;
        self.clamp();
    }

    /// Keeps the view on the grid: centred along an axis the grid does not fill, else within it.
    fn clamp(&mut self) {
        let clamp_axis = |start: f64, lanes: u64, pixels: u32, scale: f64| {
            let span = f64::from(pixels) * scale;
            if span >= lanes as f64 {
                (lanes as f64 - span) / 2.0
            } else {
                start.clamp(0.0, lanes as f64 - span)
            }
        };
        self.row0 = clamp_axis(self.row0, self.rows, self.height, self.row_scale);
        self.col0 = clamp_axis(self.col0, self.cols, self.width, self.col_scale);
    }

    /// The lane (row, column) under pixel (`x`, `y`), if there is one.
    pub fn lane_at(&self, x: f64, y: f64) -> Option<(u64, u64)> {
        let r = (self.row0 + y * self.row_scale).floor();
        let c = (self.col0 + x * self.col_scale).floor();
        (r >= 0.0 && c >= 0.0 && r < self.rows as f64 && c < self.cols as f64)
            .then_some((r as u64, c as u64))
    }

    /// The lanes shown: rows `r0..r1`, columns `c0..c1`.
    pub fn visible(&self) -> (u64, u64, u64, u64) {
        let axis = |start: f64, pixels: u32, scale: f64, lanes: u64| {
            let a = start.floor().max(0.0) as u64;
            let b = (start + f64::from(pixels) * scale).ceil().max(0.0) as u64;
            (a.min(lanes), b.min(lanes))
        };
        let (r0, r1) = axis(self.row0, self.height, self.row_scale, self.rows);
        let (c0, c1) = axis(self.col0, self.width, self.col_scale, self.cols);
        (r0, r1, c0, c1)
    }

    /// The whole grid in blocks shaped like a pixel of the fitted view, the finest that give at
    /// most `max_cells` cells (single lanes along an axis a pixel spans less than a lane of).
    pub fn base_window(&self, max_cells: u64) -> Window {
        let fit = Viewport::fit(self.rows, self.cols, self.width, self.height);
        let cells = |k: f64| {
            let br = (fit.row_scale * k).ceil().max(1.0) as u64;
            let bc = (fit.col_scale * k).ceil().max(1.0) as u64;
            (
                br,
                bc,
                self.rows
                    .div_ceil(br)
                    .saturating_mul(self.cols.div_ceil(bc)),
            )
        };
        // The smallest k (blocks k pixels' worth of lanes) that fits the budget: bisection.
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        while cells(hi).2 > max_cells.max(1) {
            hi *= 2.0;
        }
        for _ in 0..40 {
            let mid = (lo + hi) / 2.0;
            if cells(mid).2 > max_cells.max(1) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let (block_rows, block_cols, _) = cells(hi);
        Window {
            row0: 0,
            col0: 0,
            rows: self.rows,
            cols: self.cols,
            block_rows,
            block_cols,
        }
    }

    /// The window to compute when the base tile's blocks (`base`) are coarser than a pixel along
    /// an axis: the lanes shown, rounded out to whole blocks of ⌊lanes per pixel⌋ (at least one
    /// lane) along each axis. None when the base tile is fine enough.
    pub fn detail_window(&self, base: &Window) -> Option<Window> {
        let coarse = |scale: f64, block: u64| block > 1 && scale < block as f64;
        if !coarse(self.row_scale, base.block_rows) && !coarse(self.col_scale, base.block_cols) {
            return None;
        }
        let br = (self.row_scale.floor() as u64).max(1);
        let bc = (self.col_scale.floor() as u64).max(1);
        let (r0, r1, c0, c1) = self.visible();
        let row0 = r0 / br * br;
        let col0 = c0 / bc * bc;
        let rows = (r1.div_ceil(br) * br).min(self.rows) - row0;
        let cols = (c1.div_ceil(bc) * bc).min(self.cols) - col0;
        (rows > 0 && cols > 0).then_some(Window {
            row0,
            col0,
            rows,
            cols,
            block_rows: br,
            block_cols: bc,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_the_canvas_and_zooms_about_the_pointer() {
        let mut v = Viewport::fit(10_000, 5_000, 800, 400);
        assert_eq!((v.row_scale, v.col_scale), (25.0, 6.25));
        assert!(v.fitted());
        assert_eq!((v.row0, v.col0), (0.0, 0.0));
        let under = v.lane_at(400.0, 200.0).unwrap();
        v.zoom(2.0, 400.0, 200.0);
        assert_eq!((v.row_scale, v.col_scale), (12.5, 3.125));
        assert_eq!(v.lane_at(400.0, 200.0), Some(under));
        // Never out past the fit, never in past 32 pixels per lane, each axis on its own.
        v.zoom(0.001, 0.0, 0.0);
        assert!(v.fitted());
        v.zoom(1e9, 0.0, 0.0);
        assert_eq!((v.row_scale, v.col_scale), (1.0 / 32.0, 1.0 / 32.0));
        assert!(v.row0 >= 0.0 && v.col0 >= 0.0);
        // A tall matrix goes on down its rows once its columns are at their widest.
        let mut tall = Viewport::fit(30522, 384, 1200, 420);
        for _ in 0..40 {
            tall.zoom(1.25, 600.0, 210.0);
        }
        assert!(tall.row_scale < 1.0 && tall.col_scale == 1.0 / 32.0);
    }

    #[test]
    fn panning_stops_at_the_edges() {
        let mut v = Viewport::fit(1000, 1000, 100, 100);
        v.zoom(10.0, 0.0, 0.0);
        v.pan(-1e9, -1e9);
        let (r0, r1, c0, c1) = v.visible();
        assert_eq!((r1, c1), (1000, 1000));
        assert_eq!((r0, c0), (900, 900));
        v.pan(1e9, 0.0);
        assert_eq!(v.col0, 0.0);
        assert_eq!(v.lane_at(-1.0, 0.0), None);
    }

    #[test]
    fn base_blocks_take_the_shape_of_a_pixel_and_fit_the_budget() {
        let v = Viewport::fit(30522, 384, 1200, 420);
        let base = v.base_window(1 << 21);
        assert_eq!(base.block_cols, 1);
        assert!(base.cells() <= 1 << 21);
        assert!(
            Window {
                block_rows: base.block_rows - 1,
                ..base
            }
            .cells()
                > 1 << 21
        );
        // The fitted view draws from the base alone.
        assert_eq!(v.detail_window(&base), None);
    }

    #[test]
    fn a_detail_window_is_asked_for_only_below_the_base_blocks() {
        let mut v = Viewport::fit(10_000, 10_000, 1000, 500);
        let base = v.base_window(1 << 20);
        assert_eq!(v.detail_window(&base), None);
        v.zoom(8.0, 500.0, 250.0);
        let w = v.detail_window(&base).unwrap();
        assert_eq!((w.block_rows, w.block_cols), (2, 1));
        let (r0, r1, c0, c1) = v.visible();
        assert!(w.row0 <= r0 && w.row0 + w.rows >= r1 && w.col0 <= c0 && w.col0 + w.cols >= c1);
        assert_eq!(w.row0 % 2, 0);
        assert!(w.cells() <= 2 * 1000 * 500);
    }
}
