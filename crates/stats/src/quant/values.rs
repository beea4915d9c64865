//! The statistics of a quantized tensor's dequantized values, fed the `f32` values straight from
//! the dequantizer: exactly the `values`, `float` and `exponent_entropy` an `F32` [`Accumulator`]
//! reports over the same values (its histogram of each lane's top 16 bits and its moments per
//! block of [`BLOCK_LANES`] values, in the same batches), without the byte-group histograms and
//! block entropies of the `f32` bytes that [`super::DequantStats`] drops anyway, and without
//! turning the values into bytes first.
//!
//! [`Accumulator`]: crate::Accumulator

use super::DequantStats;
use crate::accumulator::{float_stats, nonzero_bins, value_stats, BLOCK_LANES};
use crate::moments::MomentStream;
use bitlens_tensors::Dtype;

/// Lanes of [`TopHistogram`]: value `i` of a piece is counted in lane `i % LANES`, so that runs
/// of one value do not wait on each other's increments (a Q4_0 block has 16 values at most).
const LANES: usize = 4;

/// Values counted in a [`TopHistogram`]'s `u32` table before it is folded into its `u64` one:
/// no lane's count can pass `u32::MAX` in between.
const FOLD_EVERY: u64 = u32::MAX as u64;

/// One [`TopHistogram`] table: [`LANES`] `u32` counts per top-16-bit pattern.
type Table = Box<[[u32; LANES]; 1 << 16]>;

/// Zeroed tables kept per thread for the next tensor (at most this many): a fresh 1 MiB table
/// cost every quantized tensor a 1 MiB `memset` (or 256 first-touch page faults), and a GGUF file
/// has hundreds of them.
const POOLED_TABLES: usize = 2;

thread_local! {
    /// Zeroed tables given back by finished histograms on this thread.
    static TABLES: std::cell::RefCell<Vec<Table>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A zeroed table: one given back on this thread, else a new one.
fn zeroed_table() -> Table {
    TABLES.with(|t| t.borrow_mut().pop()).unwrap_or_else(|| {
        let counts: Box<[[u32; LANES]]> = vec![[0; LANES]; 1 << 16].into_boxed_slice();
        counts
            .try_into()
            .unwrap_or_else(|_| unreachable!("65 536 rows"))
    })
}

/// Keeps `table`, which must be all zeros, for this thread's next [`zeroed_table`].
fn give_back(table: Table) {
    TABLES.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() < POOLED_TABLES {
            t.push(table);
        }
    });
}

/// A histogram of each value's top 16 bits (sign, exponent, 7 mantissa bits): a table of
/// [`LANES`] `u32` counts per pattern (1 MiB, half of the L2 cache a `u64` table filled),
/// indexed by a `u16` so that no bounds check is needed, folded into `u64` counts only when it
/// could overflow. At the end its non-empty rows are read and zeroed in one pass, and the table
/// goes back to the thread's pool ([`zeroed_table`]).
#[derive(Debug, Clone)]
struct TopHistogram {
    counts: Table,
    /// Values counted in `counts` since its last fold.
    pending: u64,
    /// Folded counts per pattern (empty until the first fold).
    folded: Vec<u64>,
}

impl Default for TopHistogram {
    fn default() -> Self {
        TopHistogram {
            counts: zeroed_table(),
            pending: 0,
            folded: Vec::new(),
        }
    }
}

impl TopHistogram {
    /// Counts `values`, value `i` in lane `i % LANES`.
    fn add(&mut self, values: &[f32]) {
        if self.pending + values.len() as u64 > FOLD_EVERY {
            self.fold();
        }
        self.pending += values.len() as u64;
        let top = |v: f32| usize::from((v.to_bits() >> 16) as u16);
        let mut lanes = values.chunks_exact(LANES);
        for q in lanes.by_ref() {
            for (k, &v) in q.iter().enumerate() {
                self.counts[top(v)][k] += 1;
            }
        }
        for (k, &v) in lanes.remainder().iter().enumerate() {
            self.counts[top(v)][k] += 1;
        }
    }

    /// Moves the `u32` counts into the `u64` ones.
    fn fold(&mut self) {
        self.folded.resize(1 << 16, 0);
        for (f, c) in self.folded.iter_mut().zip(self.counts.iter_mut()) {
            *f += c.iter().map(|&n| u64::from(n)).sum::<u64>();
            *c = [0; LANES];
        }
        self.pending = 0;
    }

    /// The non-empty bins as (pattern, count), in pattern order.
    fn bins(mut self) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        if self.folded.is_empty() {
            // One pass over the table: a row of four zero lanes is skipped by one comparison,
            // and the rows read are zeroed for the table's next use.
            for (pattern, row) in self.counts.iter_mut().enumerate() {
                if *row != [0; LANES] {
                    out.push((pattern as u32, row.iter().map(|&n| u64::from(n)).sum()));
                    *row = [0; LANES];
                }
            }
        } else {
            self.fold();
            out = nonzero_bins(&self.folded);
        }
        give_back(self.counts);
        out
    }
}

/// Streams a tensor's dequantized values into [`DequantStats`].
#[derive(Debug, Clone, Default)]
pub struct DequantValues {
    top_hist: TopHistogram,
    moments: MomentStream,
    /// Values of the current block of [`BLOCK_LANES`] seen.
    block_fill: u64,
}

impl DequantValues {
    /// Adds the next values in element order.
    pub fn update(&mut self, mut values: &[f32]) {
        while !values.is_empty() {
            let n = ((BLOCK_LANES - self.block_fill) as usize).min(values.len());
            let (chunk, rest) = values.split_at(n);
            self.top_hist.add(chunk);
            self.moments.extend_slice(chunk);
            self.block_fill += n as u64;
            if self.block_fill == BLOCK_LANES {
                self.moments.close_block();
                self.block_fill = 0;
            }
            values = rest;
        }
    }

    /// The statistics of every value fed.
    pub fn finish(mut self) -> DequantStats {
        if self.block_fill > 0 {
            self.moments.close_block();
        }
        let bins = self.top_hist.bins();
        let float = float_stats(Dtype::F32, &bins);
        DequantStats {
            values: value_stats(Dtype::F32, &bins, Some(self.moments.total())),
            exponent_entropy: float.as_ref().map(|f| f.exponent_entropy),
            float,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_u32_counts_fold_before_a_lane_could_overflow_and_none_is_lost() {
        let top = |v: f32| v.to_bits() >> 16;
        let mut h = TopHistogram::default();
        h.add(&[1.0, 2.0, 1.0]);
        assert!(h.folded.is_empty());
        // As if four billion values had been counted since the last fold.
        h.pending = FOLD_EVERY - 2;
        h.add(&[1.0, 1.0, 3.0]);
        assert_eq!(h.folded.len(), 1 << 16, "folded before counting");
        assert_eq!(h.pending, 3);
        assert_eq!(h.bins(), vec![(top(1.0), 4), (top(2.0), 1), (top(3.0), 1)]);
    }

    #[test]
    fn a_table_given_back_is_zeroed_and_the_next_histogram_counts_from_nothing() {
        let top = |v: f32| v.to_bits() >> 16;
        let mut first = TopHistogram::default();
        first.add(&[1.0, -2.5, 1.0, f32::NAN, 0.0]);
        let bins = first.bins();
        assert_eq!(bins.len(), 4);
        TABLES.with(|t| {
            let t = t.borrow();
            assert!(!t.is_empty(), "the table went back to the pool");
            assert!(t
                .iter()
                .all(|table| table.iter().all(|row| *row == [0; LANES])));
        });
        let mut second = TopHistogram::default();
        second.add(&[3.0]);
        assert_eq!(second.bins(), vec![(top(3.0), 1)]);
        // The pool stays bounded however many histograms end on this thread.
        let many: Vec<TopHistogram> = (0..POOLED_TABLES + 3)
            .map(|_| TopHistogram::default())
            .collect();
        many.into_iter().for_each(|h| assert!(h.bins().is_empty()));
        TABLES.with(|t| assert_eq!(t.borrow().len(), POOLED_TABLES));
    }
}
