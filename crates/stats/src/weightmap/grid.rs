//! Where a tensor's values sit in a weight map: the 2-D [`Grid`] of its lanes (a matrix as rows ×
//! columns, an N-D tensor by its last dimension, a vector wrapped into a square) and the
//! [`Window`] of that grid a map shows, cut into blocks of `block_rows × block_cols` lanes, one
//! cell each.

use super::MapError;
use serde::{Deserialize, Serialize};

/// The 2-D arrangement of a tensor's lanes (values; a complex value is two lanes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grid {
    /// Rows: the product of all dimensions but the last (a wrapped vector: as many as needed).
    pub rows: u64,
    /// Columns: the last dimension in lanes (a wrapped vector: ⌈√n⌉).
    pub cols: u64,
    /// Lanes in the tensor; the last row of a wrapped vector may hold fewer than `cols`.
    pub lanes: u64,
}

impl Grid {
    /// The number of lanes of a tensor of `shape`, None when it does not fit a `u64`.
    pub fn lanes_of(shape: &[u64], lanes_per_element: u64) -> Option<u64> {
        if shape.contains(&0) || lanes_per_element == 0 {
            return Some(0);
        }
        shape
            .iter()
            .try_fold(lanes_per_element, |n, &d| n.checked_mul(d))
    }

    /// The grid of a tensor of `shape` with `lanes_per_element` lanes per element: 2-D and more
    /// by the last dimension, a vector (or a scalar) wrapped into rows of ⌈√n⌉ lanes. A shape
    /// whose lane count overflows (see [`Grid::lanes_of`]) saturates.
    pub fn of_shape(shape: &[u64], lanes_per_element: u64) -> Grid {
        let lanes = Grid::lanes_of(shape, lanes_per_element).unwrap_or(u64::MAX);
        if lanes == 0 {
            return Grid {
                rows: 0,
                cols: 0,
                lanes: 0,
            };
        }
        if shape.len() >= 2 {
            let cols = shape[shape.len() - 1].saturating_mul(lanes_per_element);
            return Grid {
                rows: lanes / cols,
                cols,
                lanes,
            };
        }
        let cols = ceil_sqrt(lanes);
        Grid {
            rows: lanes.div_ceil(cols),
            cols,
            lanes,
        }
    }

    /// The lane at (`row`, `col`), if the tensor has one there.
    pub fn lane(&self, row: u64, col: u64) -> Option<u64> {
        if row >= self.rows || col >= self.cols {
            return None;
        }
        let lane = row * self.cols + col;
        (lane < self.lanes).then_some(lane)
    }
}

/// ⌈√n⌉ for any `u64` (a float estimate, corrected).
fn ceil_sqrt(n: u64) -> u64 {
    let mut r = (n as f64).sqrt() as u64;
    while r.saturating_mul(r) < n {
        r += 1;
    }
    while r > 1 && (r - 1).saturating_mul(r - 1) >= n {
        r -= 1;
    }
    r.max(1)
}

/// A region of a [`Grid`] cut into blocks, one cell of the map each; the last block of a row or
/// column may be cut short by the region's edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// First row of the region.
    pub row0: u64,
    /// First column of the region.
    pub col0: u64,
    /// Rows of the region.
    pub rows: u64,
    /// Columns of the region.
    pub cols: u64,
    /// Rows of lanes per cell (≥ 1).
    pub block_rows: u64,
    /// Columns of lanes per cell (≥ 1).
    pub block_cols: u64,
}

impl Window {
    /// The whole grid in square blocks, as small as gives at most `max_cells` cells (blocks of one
    /// lane when the tensor has no more lanes than that).
    pub fn whole(grid: Grid, max_cells: u64) -> Window {
        let max_cells = max_cells.max(1);
        let mut side = ceil_sqrt(grid.rows.saturating_mul(grid.cols).div_ceil(max_cells)).max(1);
        let cells = |b: u64| grid.rows.div_ceil(b).saturating_mul(grid.cols.div_ceil(b));
        while cells(side) > max_cells {
            side += 1;
        }
        Window {
            row0: 0,
            col0: 0,
            rows: grid.rows,
            cols: grid.cols,
            block_rows: side,
            block_cols: side,
        }
    }

    /// Cells down the region.
    pub fn cell_rows(&self) -> u64 {
        self.rows.div_ceil(self.block_rows.max(1))
    }

    /// Cells across the region.
    pub fn cell_cols(&self) -> u64 {
        self.cols.div_ceil(self.block_cols.max(1))
    }

    /// Cells in the region.
    pub fn cells(&self) -> u64 {
        self.cell_rows().saturating_mul(self.cell_cols())
    }

    /// Checks the region lies in `grid`, its blocks are not empty and it has at most `max_cells`
    /// cells.
    pub fn check(&self, grid: Grid, max_cells: u64) -> Result<(), MapError> {
        let fits =
            |start: u64, len: u64, end: u64| start.checked_add(len).is_some_and(|e| e <= end);
        if self.block_rows == 0
            || self.block_cols == 0
            || !fits(self.row0, self.rows, grid.rows)
            || !fits(self.col0, self.cols, grid.cols)
        {
            return Err(MapError::Window {
                window: *self,
                rows: grid.rows,
                cols: grid.cols,
            });
        }
        let cells = self.cells();
        if cells > max_cells {
            return Err(MapError::TooManyCells {
                cells,
                max: max_cells,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_keep_their_rows_and_vectors_wrap_into_a_square() {
        assert_eq!(
            Grid::of_shape(&[384, 1536], 1),
            Grid {
                rows: 384,
                cols: 1536,
                lanes: 384 * 1536
            }
        );
        assert_eq!(Grid::of_shape(&[2, 3, 5], 1).rows, 6);
        assert_eq!(Grid::of_shape(&[2, 3, 5], 2).cols, 10);
        let v = Grid::of_shape(&[10], 1);
        assert_eq!((v.rows, v.cols), (3, 4));
        assert_eq!(v.lane(2, 1), Some(9));
        assert_eq!(v.lane(2, 2), None);
        assert_eq!(
            Grid::of_shape(&[], 1),
            Grid {
                rows: 1,
                cols: 1,
                lanes: 1
            }
        );
        assert_eq!(Grid::of_shape(&[0, 4], 1).lanes, 0);
    }

    #[test]
    fn ceil_sqrt_is_exact_at_squares_and_between() {
        for n in 1..5000u64 {
            let r = ceil_sqrt(n);
            assert!(r * r >= n && (r - 1) * (r - 1) < n, "{n} → {r}");
        }
        assert_eq!(ceil_sqrt(u64::MAX), 1 << 32);
    }

    #[test]
    fn the_whole_grid_fits_the_cell_budget_in_the_smallest_square_blocks() {
        let g = Grid::of_shape(&[30522, 384], 1);
        let w = Window::whole(g, 1 << 20);
        assert!(w.cells() <= 1 << 20);
        let smaller = Window {
            block_rows: w.block_rows - 1,
            block_cols: w.block_cols - 1,
            ..w
        };
        assert!(smaller.cells() > 1 << 20);
        assert_eq!(
            Window::whole(Grid::of_shape(&[8, 8], 1), 1 << 20).block_rows,
            1
        );
        w.check(g, 1 << 20).unwrap();
        assert!(w.check(g, 10).is_err());
        assert!(Window {
            rows: g.rows + 1,
            ..w
        }
        .check(g, 1 << 20)
        .is_err());
        assert!(Window { block_cols: 0, ..w }.check(g, 1 << 20).is_err());
    }
}
