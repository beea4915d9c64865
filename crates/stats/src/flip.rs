//! Differences between two checkpoints of one tensor.
//!
//! The two tensors' bytes are XORed and the XOR stream is accumulated as unsigned lanes of the same
//! width: its bit-set ratios are the bit-flip ratios of LMC Fig. 6, its zero lanes are the unchanged
//! elements (BitSnap's changed fraction is the rest), and its block entropy predicts the size of an
//! XOR-delta snapshot. Merging and windowing work as for [`Accumulator`].

use crate::accumulator::{Accumulator, StatsError, TensorStats};
use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// XOR window size: windows of any size are XORed in pieces of this many bytes.
const XOR_CHUNK: usize = 64 << 10;

/// Bit flips and changes between two checkpoints of one tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlipStats {
    /// Element type of both tensors.
    pub dtype: Dtype,
    /// Lanes compared (elements; 2 per C64 element; bytes for packed sub-byte types).
    pub lanes: u64,
    /// Lanes whose bits differ.
    pub changed_lanes: u64,
    /// `changed_lanes / lanes` (0 for an empty tensor).
    pub changed_fraction: f64,
    /// Flipped bits per bit position, bit 0 = least significant.
    pub bit_flip_counts: Vec<u64>,
    /// `bit_flip_counts / lanes`.
    pub bit_flip_ratio: Vec<f64>,
    /// Statistics of the XOR delta itself (entropies, block estimate, predicted delta size).
    pub delta: TensorStats,
}

/// Streams two checkpoints of one tensor into [`FlipStats`].
#[derive(Debug, Clone)]
pub struct FlipAccumulator {
    dtype: Dtype,
    inner: Accumulator,
    scratch: Vec<u8>,
}

/// The unsigned type whose lanes have the width of `dtype`'s lanes.
fn xor_dtype(dtype: Dtype) -> Dtype {
    match dtype.lane_bytes() {
        1 => Dtype::U8,
        2 => Dtype::U16,
        4 => Dtype::U32,
        _ => Dtype::U64,
    }
}

impl FlipAccumulator {
    /// An accumulator for two whole tensors of `dtype` and `byte_len` bytes each.
    pub fn new(dtype: Dtype, byte_len: u64) -> Self {
        Self::for_range(dtype, byte_len, 0..byte_len).expect("the whole tensor is aligned")
    }

    /// An accumulator for a block-aligned byte range (see [`crate::split_ranges`]).
    pub fn for_range(dtype: Dtype, byte_len: u64, range: Range<u64>) -> Result<Self, StatsError> {
        Ok(FlipAccumulator {
            dtype,
            inner: Accumulator::for_range(xor_dtype(dtype), byte_len, range)?,
            scratch: Vec::new(),
        })
    }

    /// Feeds the same byte window of both checkpoints.
    pub fn update(&mut self, a: &[u8], b: &[u8]) -> Result<(), StatsError> {
        if a.len() != b.len() {
            return Err(StatsError::WindowLengthMismatch {
                a: a.len() as u64,
                b: b.len() as u64,
            });
        }
        for (ca, cb) in a.chunks(XOR_CHUNK).zip(b.chunks(XOR_CHUNK)) {
            self.scratch.clear();
            self.scratch.extend(ca.iter().zip(cb).map(|(x, y)| x ^ y));
            self.inner.update(&self.scratch)?;
        }
        Ok(())
    }

    /// Appends the result of the range that directly follows this one.
    pub fn merge(self, next: FlipAccumulator) -> Result<FlipAccumulator, StatsError> {
        Ok(FlipAccumulator {
            dtype: self.dtype,
            inner: self.inner.merge(next.inner)?,
            scratch: Vec::new(),
        })
    }

    /// The flip statistics of the whole tensor pair.
    pub fn finish(self) -> Result<FlipStats, StatsError> {
        let delta = self.inner.finish()?;
        let unchanged = delta.values.as_ref().map_or(0, |v| v.zeros);
        let lanes = delta.lanes;
        let changed_lanes = lanes - unchanged;
        Ok(FlipStats {
            dtype: self.dtype,
            lanes,
            changed_lanes,
            changed_fraction: ratio(changed_lanes, lanes),
            bit_flip_counts: delta.bit_set_counts.clone(),
            bit_flip_ratio: delta.bit_set_ratio.clone(),
            delta,
        })
    }
}

/// `part / whole`, 0 when `whole` is 0.
pub(crate) fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}
