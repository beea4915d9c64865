//! Sorting and filtering of the tensor table.

use crate::model::checkpoint::TensorRow;
use std::cmp::Ordering;

/// A sortable column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// File order.
    Order,
    /// Tensor name.
    Name,
    /// Dtype name.
    Dtype,
    /// Element count.
    Params,
    /// Bytes.
    Bytes,
    /// Order-0 byte entropy (bits per byte).
    Entropy,
    /// Exponent entropy (bits).
    ExponentEntropy,
    /// Predicted compressed / original size.
    PredictedRatio,
}

/// Rows the table draws at first while statistics run, and how many more each time it is scrolled
/// to its end (one `<tbody>`, three screens of the table's scroll box): a table of 2 472 tensors
/// cost the browser 420 ms to lay out the first time and 150–250 ms at each redraw, on the core
/// the statistics workers need; 64 rows rather than 256 also made the 412-tensor GGUFs' pass ~10 %
/// faster and their table show 60–100 ms sooner (BENCHMARKS.md, "The page's GGUF statistics on a
/// long table").
pub const DRAWN_STEP: usize = 64;

/// The table's sort order and name filter, and how many of its rows are drawn while statistics
/// run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Sort column.
    pub key: SortKey,
    /// Descending instead of ascending.
    pub descending: bool,
    /// Case-insensitive substring of the tensor name; empty shows all.
    pub filter: String,
    /// Rows drawn while statistics run (every row once they stop): [`DRAWN_STEP`] at first,
    /// [`DRAWN_STEP`] more each time the table is scrolled to its end ([`View::draw_more`]).
    pub drawn: usize,
}

impl Default for View {
    fn default() -> Self {
        View {
            key: SortKey::Order,
            descending: false,
            filter: String::new(),
            drawn: DRAWN_STEP,
        }
    }
}

impl View {
    /// How many of `rows` matching rows to draw: all of them once the statistics stop
    /// (`running` false), else the first [`View::drawn`].
    pub fn rows_to_draw(&self, rows: usize, running: bool) -> usize {
        if running {
            rows.min(self.drawn)
        } else {
            rows
        }
    }

    /// The table was scrolled to its last drawn row while statistics run: draw more.
    pub fn draw_more(&mut self) {
        self.drawn += DRAWN_STEP;
    }

    /// Clicking a header: sort by it, or flip the direction if it already is the sort column.
    pub fn click(&mut self, key: SortKey) {
        if self.key == key {
            self.descending = !self.descending;
        } else {
            self.key = key;
            // Numbers are most interesting largest first; names A→Z.
            self.descending = !matches!(key, SortKey::Order | SortKey::Name | SortKey::Dtype);
        }
    }

    /// Indices of the rows to show, in display order. Rows without a value for the sort column
    /// (statistics not computed yet) go last in either direction.
    pub fn apply(&self, rows: &[TensorRow]) -> Vec<usize> {
        let needle = self.filter.to_lowercase();
        let mut idx: Vec<usize> = (0..rows.len())
            .filter(|&i| needle.is_empty() || rows[i].name.to_lowercase().contains(&needle))
            .collect();
        let num = |r: &TensorRow| -> Option<f64> {
            let s = r.stats.as_deref();
            match self.key {
                SortKey::Params => Some(r.params as f64),
                SortKey::Bytes => Some(r.bytes as f64),
                SortKey::Entropy => s.map(|s| s.byte_entropy),
                SortKey::ExponentEntropy => s.and_then(|s| s.exponent_entropy),
                SortKey::PredictedRatio => s.map(|s| s.predicted_ratio),
                _ => None,
            }
        };
        idx.sort_by(|&a, &b| {
            let (ra, rb) = (&rows[a], &rows[b]);
            let ord = match self.key {
                SortKey::Order => a.cmp(&b),
                SortKey::Name => ra.name.cmp(&rb.name),
                SortKey::Dtype => ra.type_name().cmp(&rb.type_name()),
                _ => match (num(ra), num(rb)) {
                    (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
                    (Some(_), None) => return Ordering::Less,
                    (None, Some(_)) => return Ordering::Greater,
                    (None, None) => Ordering::Equal,
                },
            };
            let ord = if self.descending { ord.reverse() } else { ord };
            ord.then(a.cmp(&b))
        });
        idx
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_tensors::Dtype;

    fn row(name: &str, params: u64) -> TensorRow {
        TensorRow {
            file: 0,
            name: name.into(),
            dtype: Dtype::BF16,
            ty: bitlens_tensors::format::ElementType::Dtype(Dtype::BF16),
            data: bitlens_tensors::format::Data::Range {
                offset: 0,
                len: 2 * params,
            },
            shape: vec![params],
            params,
            bytes: 2 * params,
            offset: 0,
            stats: None,
        }
    }

    #[test]
    fn sorts_and_filters() {
        let rows = [row("b.weight", 10), row("a.bias", 30), row("c.weight", 20)];
        let mut v = View::default();
        assert_eq!(v.apply(&rows), vec![0, 1, 2]);
        v.click(SortKey::Params);
        assert_eq!(v.apply(&rows), vec![1, 2, 0]);
        v.click(SortKey::Params);
        assert_eq!(v.apply(&rows), vec![0, 2, 1]);
        v.click(SortKey::Name);
        assert_eq!(v.apply(&rows), vec![1, 0, 2]);
        v.filter = "WEIGHT".into();
        assert_eq!(v.apply(&rows), vec![0, 2]);
    }

    #[test]
    fn rows_without_stats_go_last() {
        let rows = [row("a", 1), row("b", 2)];
        let mut v = View::default();
        v.click(SortKey::Entropy);
        assert_eq!(v.apply(&rows), vec![0, 1]);
    }

    #[test]
    fn the_first_rows_are_drawn_while_statistics_run_and_all_after() {
        let mut v = View::default();
        assert_eq!(v.rows_to_draw(2472, true), DRAWN_STEP);
        assert_eq!(v.rows_to_draw(DRAWN_STEP - 1, true), DRAWN_STEP - 1);
        assert_eq!(v.rows_to_draw(2472, false), 2472);
        v.draw_more();
        assert_eq!(v.rows_to_draw(2472, true), 2 * DRAWN_STEP);
        assert_eq!(v.rows_to_draw(DRAWN_STEP + 1, true), DRAWN_STEP + 1);
    }
}
