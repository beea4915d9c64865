//! Whole-file and whole-model totals merged from per-tensor results.
//!
//! Bit positions only mean the same thing within one dtype, so bit ratios and entropies of fields
//! are merged per dtype; sizes, the byte entropy and the predicted compressed size cover everything.

use crate::accumulator::TensorStats;
use crate::entropy::bits_per_symbol;
use crate::flip::{ratio, FlipStats};
use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};

/// Totals over many tensors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Tensors counted.
    pub tensors: u64,
    /// Elements (parameters) counted.
    pub params: u64,
    /// Bytes of tensor data.
    pub bytes: u64,
    /// Order-0 entropy of all data bytes, bits per byte.
    pub byte_entropy: f64,
    /// Σ of the per-tensor block-adaptive bounds, in bytes.
    pub predicted_bytes: u64,
    /// `predicted_bytes / bytes` (1 when empty).
    pub predicted_ratio: f64,
    /// Per-dtype totals, ordered by dtype.
    pub by_dtype: Vec<DtypeSummary>,
    #[serde(skip)]
    byte_hist: Vec<u64>,
}

/// Totals over the tensors of one dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DtypeSummary {
    /// The dtype.
    pub dtype: Dtype,
    /// Tensors of this dtype.
    pub tensors: u64,
    /// Their elements.
    pub params: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Σ of their predicted sizes.
    pub predicted_bytes: u64,
    /// Lanes counted.
    pub lanes: u64,
    /// Set bits per position, bit 0 = least significant.
    pub bit_set_counts: Vec<u64>,
    /// `bit_set_counts / lanes`.
    pub bit_set_ratio: Vec<f64>,
    /// Order-0 entropy per byte group, bits per byte.
    pub byte_group_entropy: Vec<f64>,
    /// Entropy of the merged exponent histogram (floating-point types).
    pub exponent_entropy: Option<f64>,
    #[serde(skip)]
    group_hist: Vec<Vec<u64>>,
    #[serde(skip)]
    exponent_hist: Option<Vec<u64>>,
}

fn add_into(acc: &mut Vec<u64>, more: &[u64]) {
    if acc.len() < more.len() {
        acc.resize(more.len(), 0);
    }
    for (a, b) in acc.iter_mut().zip(more) {
        *a += b;
    }
}

impl Summary {
    /// Adds one tensor of `elements` elements.
    pub fn add(&mut self, elements: u64, stats: &TensorStats) {
        self.tensors += 1;
        self.params += elements;
        self.bytes += stats.bytes;
        self.predicted_bytes += stats.predicted_bytes;
        for g in &stats.byte_group_hist {
            add_into(&mut self.byte_hist, g);
        }
        self.byte_entropy = bits_per_symbol(&self.byte_hist);
        self.predicted_ratio = if self.bytes == 0 {
            1.0
        } else {
            self.predicted_bytes as f64 / self.bytes as f64
        };
        let pos = match self
            .by_dtype
            .binary_search_by_key(&stats.dtype, |d| d.dtype)
        {
            Ok(p) => p,
            Err(p) => {
                self.by_dtype.insert(p, DtypeSummary::new(stats.dtype));
                p
            }
        };
        self.by_dtype[pos].add(elements, stats);
    }

    /// Adds every tensor of another summary.
    pub fn merge(&mut self, other: &Summary) {
        self.tensors += other.tensors;
        self.params += other.params;
        self.bytes += other.bytes;
        self.predicted_bytes += other.predicted_bytes;
        add_into(&mut self.byte_hist, &other.byte_hist);
        self.byte_entropy = bits_per_symbol(&self.byte_hist);
        self.predicted_ratio = if self.bytes == 0 {
            1.0
        } else {
            self.predicted_bytes as f64 / self.bytes as f64
        };
        for d in &other.by_dtype {
            match self.by_dtype.binary_search_by_key(&d.dtype, |x| x.dtype) {
                Ok(p) => self.by_dtype[p].merge(d),
                Err(p) => self.by_dtype.insert(p, d.clone()),
            }
        }
    }
}

impl DtypeSummary {
    fn new(dtype: Dtype) -> Self {
        DtypeSummary {
            dtype,
            tensors: 0,
            params: 0,
            bytes: 0,
            predicted_bytes: 0,
            lanes: 0,
            bit_set_counts: Vec::new(),
            bit_set_ratio: Vec::new(),
            byte_group_entropy: Vec::new(),
            exponent_entropy: None,
            group_hist: Vec::new(),
            exponent_hist: None,
        }
    }

    fn add(&mut self, elements: u64, stats: &TensorStats) {
        let mut one = DtypeSummary::new(stats.dtype);
        one.tensors = 1;
        one.params = elements;
        one.bytes = stats.bytes;
        one.predicted_bytes = stats.predicted_bytes;
        one.lanes = stats.lanes;
        one.bit_set_counts = stats.bit_set_counts.clone();
        one.group_hist = stats.byte_group_hist.clone();
        one.exponent_hist = stats.float.as_ref().map(|f| f.exponent_hist.clone());
        self.merge(&one);
    }

    fn merge(&mut self, other: &DtypeSummary) {
        self.tensors += other.tensors;
        self.params += other.params;
        self.bytes += other.bytes;
        self.predicted_bytes += other.predicted_bytes;
        self.lanes += other.lanes;
        add_into(&mut self.bit_set_counts, &other.bit_set_counts);
        if self.group_hist.len() < other.group_hist.len() {
            self.group_hist.resize(other.group_hist.len(), Vec::new());
        }
        for (a, b) in self.group_hist.iter_mut().zip(&other.group_hist) {
            add_into(a, b);
        }
        if let Some(e) = &other.exponent_hist {
            add_into(self.exponent_hist.get_or_insert_with(Vec::new), e);
        }
        self.bit_set_ratio = self
            .bit_set_counts
            .iter()
            .map(|&c| ratio(c, self.lanes))
            .collect();
        self.byte_group_entropy = self.group_hist.iter().map(|g| bits_per_symbol(g)).collect();
        self.exponent_entropy = self.exponent_hist.as_deref().map(bits_per_symbol);
    }
}

/// Totals of a checkpoint comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlipSummary {
    /// Tensor pairs compared.
    pub tensors: u64,
    /// Lanes compared.
    pub lanes: u64,
    /// Lanes that changed.
    pub changed_lanes: u64,
    /// `changed_lanes / lanes`.
    pub changed_fraction: f64,
    /// Bytes of XOR delta.
    pub bytes: u64,
    /// Σ of the block-adaptive bounds of the XOR deltas, in bytes.
    pub delta_predicted_bytes: u64,
    /// The whole-model bit-flip ratio per position when every compared tensor has the same dtype.
    pub bit_flip_ratio: Option<Vec<f64>>,
    /// Per-dtype flip totals.
    pub by_dtype: Vec<DtypeFlips>,
}

/// Flip totals over the tensors of one dtype.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DtypeFlips {
    /// The dtype.
    pub dtype: Dtype,
    /// Tensor pairs compared.
    pub tensors: u64,
    /// Lanes compared.
    pub lanes: u64,
    /// Lanes that changed.
    pub changed_lanes: u64,
    /// `changed_lanes / lanes`.
    pub changed_fraction: f64,
    /// Flipped bits per position.
    pub bit_flip_counts: Vec<u64>,
    /// `bit_flip_counts / lanes`.
    pub bit_flip_ratio: Vec<f64>,
}

impl FlipSummary {
    /// Adds one compared tensor pair.
    pub fn add(&mut self, f: &FlipStats) {
        self.tensors += 1;
        self.lanes += f.lanes;
        self.changed_lanes += f.changed_lanes;
        self.changed_fraction = ratio(self.changed_lanes, self.lanes);
        self.bytes += f.delta.bytes;
        self.delta_predicted_bytes += f.delta.predicted_bytes;
        let pos = match self.by_dtype.binary_search_by_key(&f.dtype, |d| d.dtype) {
            Ok(p) => p,
            Err(p) => {
                self.by_dtype.insert(
                    p,
                    DtypeFlips {
                        dtype: f.dtype,
                        tensors: 0,
                        lanes: 0,
                        changed_lanes: 0,
                        changed_fraction: 0.0,
                        bit_flip_counts: Vec::new(),
                        bit_flip_ratio: Vec::new(),
                    },
                );
                p
            }
        };
        let d = &mut self.by_dtype[pos];
        d.tensors += 1;
        d.lanes += f.lanes;
        d.changed_lanes += f.changed_lanes;
        d.changed_fraction = ratio(d.changed_lanes, d.lanes);
        add_into(&mut d.bit_flip_counts, &f.bit_flip_counts);
        d.bit_flip_ratio = d
            .bit_flip_counts
            .iter()
            .map(|&c| ratio(c, d.lanes))
            .collect();
        self.bit_flip_ratio = match self.by_dtype.as_slice() {
            [only] => Some(only.bit_flip_ratio.clone()),
            _ => None,
        };
    }
}
