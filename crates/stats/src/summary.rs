//! Whole-file and whole-model totals merged from per-tensor results.
//!
//! Bit positions only mean the same thing within one dtype, so bit ratios and entropies of fields
//! are merged per dtype; sizes, the byte entropy and the predicted compressed size cover everything.
//! A ggml block-quantized tensor (GGUF `Q4_K`, `Q8_0`, …) is measured as `U8` lanes of its stored
//! blocks, yet a `Q4_K` byte and a `Q8_0` byte mean different things: such tensors are grouped by
//! their block type ([`DtypeSummary::element_type`]), which also merges their quant codes'
//! histograms into one code entropy per type. Plain dtypes group as before (and their JSON is
//! unchanged).

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
    /// Per-dtype totals, ordered by dtype; ggml block types each have their own entry (see
    /// [`DtypeSummary::element_type`]), after the plain ones of their lane dtype.
    pub by_dtype: Vec<DtypeSummary>,
    #[serde(skip)]
    byte_hist: Vec<u64>,
}

/// Totals over the tensors of one dtype (or of one ggml block type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DtypeSummary {
    /// The dtype of the lanes measured (`U8` for a ggml block type).
    pub dtype: Dtype,
    /// For the tensors of one ggml block type (`Q4_K`, …): its name ([`TensorStats::element_type`]);
    /// absent for a plain dtype, so the JSON of plain checkpoints is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_type: Option<String>,
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
    /// For a ggml block type: bits per quant code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_bits: Option<u32>,
    /// For a ggml block type: the Shannon entropy of all its tensors' quant codes together,
    /// bits per code (of the merged code histograms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_entropy: Option<f64>,
    #[serde(skip)]
    group_hist: Vec<Vec<u64>>,
    #[serde(skip)]
    exponent_hist: Option<Vec<u64>>,
    #[serde(skip)]
    code_hist: Option<Vec<u64>>,
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
        let ty = stats.element_type.as_deref();
        let pos = match DtypeSummary::find(&self.by_dtype, stats.dtype, ty) {
            Ok(p) => p,
            Err(p) => {
                self.by_dtype
                    .insert(p, DtypeSummary::new(stats.dtype, ty.map(str::to_owned)));
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
            match DtypeSummary::find(&self.by_dtype, d.dtype, d.element_type.as_deref()) {
                Ok(p) => self.by_dtype[p].merge(d),
                Err(p) => self.by_dtype.insert(p, d.clone()),
            }
        }
    }
}

impl DtypeSummary {
    /// The group's name: its block type's (`Q4_K`), else its dtype's (`BF16`).
    pub fn type_name(&self) -> String {
        self.element_type
            .clone()
            .unwrap_or_else(|| self.dtype.to_string())
    }

    /// The position of the group of `dtype` / `element_type` in `groups` (ordered by both), or
    /// where it goes.
    fn find(
        groups: &[DtypeSummary],
        dtype: Dtype,
        element_type: Option<&str>,
    ) -> Result<usize, usize> {
        groups
            .binary_search_by(|d| (d.dtype, d.element_type.as_deref()).cmp(&(dtype, element_type)))
    }

    fn new(dtype: Dtype, element_type: Option<String>) -> Self {
        DtypeSummary {
            dtype,
            element_type,
            tensors: 0,
            params: 0,
            bytes: 0,
            predicted_bytes: 0,
            lanes: 0,
            bit_set_counts: Vec::new(),
            bit_set_ratio: Vec::new(),
            byte_group_entropy: Vec::new(),
            exponent_entropy: None,
            code_bits: None,
            code_entropy: None,
            group_hist: Vec::new(),
            exponent_hist: None,
            code_hist: None,
        }
    }

    fn add(&mut self, elements: u64, stats: &TensorStats) {
        let mut one = DtypeSummary::new(stats.dtype, stats.element_type.clone());
        one.tensors = 1;
        one.params = elements;
        one.bytes = stats.bytes;
        one.predicted_bytes = stats.predicted_bytes;
        one.lanes = stats.lanes;
        one.bit_set_counts = stats.bit_set_counts.clone();
        one.group_hist = stats.byte_group_hist.clone();
        one.exponent_hist = stats.float.as_ref().map(|f| f.exponent_hist.clone());
        one.code_bits = stats.quant.as_ref().map(|q| q.code_bits);
        one.code_hist = stats.quant.as_ref().map(|q| q.code_hist.clone());
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
        if let Some(c) = &other.code_hist {
            add_into(self.code_hist.get_or_insert_with(Vec::new), c);
        }
        self.code_bits = self.code_bits.or(other.code_bits);
        self.bit_set_ratio = self
            .bit_set_counts
            .iter()
            .map(|&c| ratio(c, self.lanes))
            .collect();
        self.byte_group_entropy = self.group_hist.iter().map(|g| bits_per_symbol(g)).collect();
        self.exponent_entropy = self.exponent_hist.as_deref().map(bits_per_symbol);
        self.code_entropy = self.code_hist.as_deref().map(bits_per_symbol);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Accumulator, QuantAccumulator};
    use bitlens_tensors::format::GgmlType;

    /// Statistics of `blocks` whole blocks of `ty` whose bytes are `f(i)`, the scale bytes kept
    /// a small finite f16.
    fn quant(ty: &str, blocks: usize, f: impl Fn(usize) -> u8) -> TensorStats {
        let ty = GgmlType::from_name(ty).unwrap();
        let bb = ty.block_bytes().unwrap() as usize;
        let mut bytes: Vec<u8> = (0..blocks * bb).map(f).collect();
        for b in bytes.chunks_mut(bb) {
            b[..2].copy_from_slice(&half::f16::from_f32(0.5).to_le_bytes());
        }
        let mut acc = QuantAccumulator::new(ty, bytes.len() as u64).unwrap();
        acc.update(&bytes).unwrap();
        acc.finish().unwrap()
    }

    #[test]
    fn block_types_group_apart_with_their_merged_code_entropy() {
        let (q8a, q8b) = (
            quant("Q8_0", 3, |i| i as u8),
            quant("Q8_0", 2, |i| (i * 7) as u8),
        );
        let q4 = quant("Q4_0", 4, |i| (i * 3) as u8);
        let mut f = Accumulator::new(Dtype::F32, 8);
        f.update(&[0, 0, 128, 63, 0, 0, 0, 64]).unwrap();
        let f32s = f.finish().unwrap();
        let mut s = Summary::default();
        for (n, st) in [(96, &q8a), (2, &f32s), (128, &q4), (64, &q8b)] {
            s.add(n, st);
        }
        let names: Vec<String> = s.by_dtype.iter().map(DtypeSummary::type_name).collect();
        assert_eq!(names, ["Q4_0", "Q8_0", "F32"], "U8 lanes sort before F32");
        let q8 = &s.by_dtype[1];
        assert_eq!((q8.dtype, q8.tensors, q8.params), (Dtype::U8, 2, 160));
        assert_eq!(q8.bytes, q8a.bytes + q8b.bytes);
        let (a, b) = (q8a.quant.as_ref().unwrap(), q8b.quant.as_ref().unwrap());
        let merged: Vec<u64> = a
            .code_hist
            .iter()
            .zip(&b.code_hist)
            .map(|(x, y)| x + y)
            .collect();
        assert_eq!(q8.code_bits, Some(8));
        assert_eq!(q8.code_entropy, Some(bits_per_symbol(&merged)));
        assert_eq!(s.by_dtype[0].code_bits, Some(4));
        // Merging summaries keeps the groups apart too.
        let mut twice = s.clone();
        twice.merge(&s);
        assert_eq!(twice.by_dtype.len(), 3);
        assert_eq!(twice.by_dtype[1].tensors, 4);
        assert_eq!(twice.by_dtype[1].code_entropy, q8.code_entropy);
        // A plain dtype's entry has none of the new keys.
        let json = serde_json::to_value(&s.by_dtype[2]).unwrap();
        for key in ["element_type", "code_bits", "code_entropy"] {
            assert!(json.get(key).is_none(), "{key}");
        }
        assert_eq!(
            serde_json::to_value(q8).unwrap()["element_type"],
            serde_json::json!("Q8_0")
        );
    }
}
