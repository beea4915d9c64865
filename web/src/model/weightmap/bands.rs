//! A weight map window shared among workers: [`split`] cuts it into bands of whole cell rows,
//! one per worker, and [`stack`] puts the bands' tiles back into the tile of the whole window
//! (cells are row-major, so the bands' cells follow one another).

use bitlens_stats::weightmap::{Cells, Tile, Window};

/// `window` cut into at most `parts` bands of whole cell rows, top to bottom (fewer when it has
/// fewer cell rows).
pub fn split(window: &Window, parts: usize) -> Vec<Window> {
    let cell_rows = window.cell_rows();
    let per = cell_rows.div_ceil(parts.max(1) as u64).max(1);
    (0..cell_rows)
        .step_by(per as usize)
        .map(|first| {
            let row0 = window.row0 + first * window.block_rows;
            let end =
                (window.row0 + (first + per) * window.block_rows).min(window.row0 + window.rows);
            Window {
                row0,
                rows: end - row0,
                ..*window
            }
        })
        .collect()
}

/// The tile of the bands' windows together: `parts` in top-to-bottom order, each the tile of a
/// band [`split`] made. None when they do not follow one another.
pub fn stack(parts: Vec<Tile>) -> Option<Tile> {
    let first = parts.first()?;
    let mut window = first.window;
    for pair in parts.windows(2) {
        let (a, b) = (&pair[0].window, &pair[1].window);
        if b.row0 != a.row0 + a.rows
            || b.col0 != a.col0
            || b.cols != a.cols
            || (b.block_rows, b.block_cols) != (a.block_rows, a.block_cols)
        {
            return None;
        }
    }
    let last = parts.last()?.window;
    window.rows = last.row0 + last.rows - window.row0;
    let join = |get: fn(&Tile) -> &Cells| {
        let mut all = Vec::with_capacity(parts.iter().map(|t| get(t).0.len()).sum());
        for t in &parts {
            all.extend_from_slice(&get(t).0);
        }
        Cells(all)
    };
    Some(Tile {
        grid: first.grid,
        window,
        layer: first.layer,
        mean: join(|t| &t.mean),
        min: join(|t| &t.min),
        max: join(|t| &t.max),
        zeros: join(|t| &t.zeros),
        finite: join(|t| &t.finite),
        lanes: join(|t| &t.lanes),
        bytes_read: parts.iter().map(|t| t.bytes_read).sum(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_stats::weightmap::{weight_map, Layer, LOCAL_GAP};

    #[test]
    fn bands_computed_apart_stack_into_the_tile_of_the_whole() {
        let (bytes, entry, _) = super::super::test_matrix(101, 37);
        let whole = Window {
            row0: 3,
            col0: 2,
            rows: 90,
            cols: 30,
            block_rows: 4,
            block_cols: 3,
        };
        let want = weight_map(&bytes, &entry, None, &whole, Layer::Values, LOCAL_GAP).unwrap();
        for parts in [1, 2, 3, 7, 100] {
            let bands = split(&whole, parts);
            assert!(bands.len() <= parts);
            let tiles = bands
                .iter()
                .map(|w| weight_map(&bytes, &entry, None, w, Layer::Values, LOCAL_GAP).unwrap())
                .collect();
            // Each band reads its own stretch of rows: only the bytes read may differ.
            let got = stack(tiles).unwrap();
            assert!(
                Tile {
                    bytes_read: 0,
                    ..got
                } == Tile {
                    bytes_read: 0,
                    ..want.clone()
                },
                "{parts} bands"
            );
        }
        let mut apart = split(&whole, 2)
            .iter()
            .map(|w| weight_map(&bytes, &entry, None, w, Layer::Values, LOCAL_GAP).unwrap())
            .collect::<Vec<_>>();
        apart.reverse();
        assert!(stack(apart).is_none());
    }
}
