//! Two checkpoints matched tensor by tensor (by name), and the flip statistics of each pair.
//!
//! A sequence of checkpoints is compared step by step: checkpoint `i` against `i + 1`, so the
//! "flip ratio over steps" view shows how many bits change from one step to the next (LMC Fig. 6).

use crate::model::checkpoint::{Checkpoint, TensorRow};
use bitlens_stats::{DequantDiff, EntryDiff, FlipStats, FlipSummary};
use bitlens_tensors::Dtype;
use std::rc::Rc;

/// One tensor present in both checkpoints with the same dtype and shape.
#[derive(Debug, Clone, PartialEq)]
pub struct PairRow {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Bytes of one side.
    pub bytes: u64,
    /// Row index in checkpoint A.
    pub a_row: usize,
    /// Row index in checkpoint B.
    pub b_row: usize,
    /// Flip statistics, once computed.
    pub flips: Option<Rc<FlipStats>>,
    /// How the dequantized values changed (ggml block types), once computed.
    pub dequantized: Option<Rc<DequantDiff>>,
}

/// A tensor present on both sides whose dtype or shape differs (not compared).
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// Tensor name.
    pub name: String,
    /// `dtype shape` in A.
    pub a: String,
    /// `dtype shape` in B.
    pub b: String,
}

/// The comparison of checkpoint A with checkpoint B.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Id of checkpoint A.
    pub a: u32,
    /// Id of checkpoint B.
    pub b: u32,
    /// Compared tensors, in A's order.
    pub pairs: Vec<PairRow>,
    /// Same name, different dtype or shape.
    pub mismatched: Vec<Mismatch>,
    /// Names only in A.
    pub only_in_a: Vec<String>,
    /// Names only in B.
    pub only_in_b: Vec<String>,
    /// Totals over the pairs that have flip statistics.
    pub summary: Rc<FlipSummary>,
    /// Pairs with flip statistics.
    pub done: usize,
}

impl Comparison {
    /// Matches the tensors of two checkpoints by name ([`bitlens_tensors::pair`], shared with
    /// `bitlens diff`).
    pub fn new(a: &Checkpoint, b: &Checkpoint) -> Comparison {
        let p = bitlens_tensors::pair(
            a.rows.iter().map(TensorRow::key),
            b.rows.iter().map(TensorRow::key),
        );
        let pairs = p
            .matched
            .iter()
            .map(|&(ai, bi)| {
                let ra = &a.rows[ai];
                PairRow {
                    name: ra.name.clone(),
                    dtype: ra.dtype,
                    bytes: ra.bytes,
                    a_row: ai,
                    b_row: bi,
                    flips: None,
                    dequantized: None,
                }
            })
            .collect();
        let mismatched = p
            .mismatched
            .iter()
            .map(|&(ai, bi)| {
                let (ra, rb) = (&a.rows[ai], &b.rows[bi]);
                Mismatch {
                    name: ra.name.clone(),
                    a: format!("{} {:?}", ra.dtype, ra.shape),
                    b: format!("{} {:?}", rb.dtype, rb.shape),
                }
            })
            .collect();
        let names = |c: &Checkpoint, rows: &[usize]| -> Vec<String> {
            rows.iter().map(|&i| c.rows[i].name.clone()).collect()
        };
        Comparison {
            a: a.id,
            b: b.id,
            pairs,
            mismatched,
            only_in_a: names(a, &p.only_in_a),
            only_in_b: names(b, &p.only_in_b),
            summary: Rc::new(FlipSummary::default()),
            done: 0,
        }
    }

    /// Stores one pair's flip statistics and adds them to the summary.
    pub fn set_flips(&mut self, pair: usize, flips: FlipStats) {
        let Some(p) = self.pairs.get_mut(pair) else {
            return;
        };
        if p.flips.is_none() {
            self.done += 1;
            Rc::make_mut(&mut self.summary).add(&flips);
        }
        p.flips = Some(Rc::new(flips));
    }

    /// Stores one pair's differences (flips, and the dequantized values' for a quantized tensor).
    pub fn set_diff(&mut self, pair: usize, diff: EntryDiff) {
        if let Some(p) = self.pairs.get_mut(pair) {
            p.dequantized = diff.dequantized.map(Rc::new);
        }
        self.set_flips(pair, diff.flips);
    }

    /// True when every pair has flip statistics.
    pub fn complete(&self) -> bool {
        self.done == self.pairs.len()
    }

    /// Bytes read to compare every pair (both sides).
    pub fn read_bytes(&self) -> u64 {
        self.pairs.iter().map(|p| 2 * p.bytes).sum()
    }
}

/// The consecutive pairs `(i, i + 1)` of a sequence of checkpoint ids.
pub fn steps(ids: &[u32]) -> Vec<(u32, u32)> {
    ids.windows(2).map(|w| (w[0], w[1])).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::checkpoint::{tests::header, FileInfo};

    fn ckpt(id: u32, tensors: &[(&str, &str, &[u64])]) -> Checkpoint {
        Checkpoint::new(
            id,
            format!("c{id}"),
            vec![FileInfo::safetensors(
                "f.safetensors".into(),
                header(tensors),
            )],
            None,
        )
        .unwrap()
    }

    #[test]
    fn matches_by_name_and_reports_the_rest() {
        let a = ckpt(
            1,
            &[
                ("x", "BF16", &[4]),
                ("y", "F32", &[2]),
                ("only_a", "U8", &[1]),
            ],
        );
        let b = ckpt(
            2,
            &[
                ("y", "F32", &[3]),
                ("x", "BF16", &[4]),
                ("only_b", "U8", &[1]),
            ],
        );
        let c = Comparison::new(&a, &b);
        assert_eq!(c.pairs.len(), 1);
        assert_eq!((c.pairs[0].a_row, c.pairs[0].b_row), (0, 1));
        assert_eq!(c.mismatched.len(), 1);
        assert_eq!(c.only_in_a, vec!["only_a"]);
        assert_eq!(c.only_in_b, vec!["only_b"]);
        assert_eq!(c.read_bytes(), 16);
    }

    #[test]
    fn steps_are_consecutive() {
        assert_eq!(steps(&[3, 5, 9]), vec![(3, 5), (5, 9)]);
        assert!(steps(&[3]).is_empty());
    }
}
