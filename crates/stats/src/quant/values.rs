//! The statistics of a quantized tensor's dequantized values, fed the `f32` values straight from
//! the dequantizer: exactly the `values`, `float` and `exponent_entropy` an `F32` [`Accumulator`]
//! reports over the same values (its histogram of each lane's top 16 bits and its moments per
//! block of [`BLOCK_LANES`] values, in the same batches), without the byte-group histograms and
//! block entropies of the `f32` bytes that [`super::DequantStats`] drops anyway, and without
//! turning the values into bytes first.
//!
//! [`Accumulator`]: crate::Accumulator

use super::DequantStats;
use crate::accumulator::{float_stats, value_stats, BLOCK_LANES};
use crate::moments::MomentStream;
use bitlens_tensors::Dtype;

/// Streams a tensor's dequantized values into [`DequantStats`].
#[derive(Debug, Clone)]
pub struct DequantValues {
    /// Histograms of each value's top 16 bits (sign, exponent, 7 mantissa bits), value `i` of a
    /// piece into histogram `i % 4` (so that runs of one value do not wait on each other's
    /// increments: a Q4_0 block has 16 values at most), summed by [`DequantValues::finish`].
    top_hist: Vec<[u64; 4]>,
    moments: MomentStream,
    /// Values of the current block of [`BLOCK_LANES`] seen.
    block_fill: u64,
}

impl Default for DequantValues {
    fn default() -> Self {
        DequantValues {
            top_hist: vec![[0; 4]; 1 << 16],
            moments: MomentStream::default(),
            block_fill: 0,
        }
    }
}

impl DequantValues {
    /// Adds the next values in element order.
    pub fn update(&mut self, mut values: &[f32]) {
        while !values.is_empty() {
            let n = ((BLOCK_LANES - self.block_fill) as usize).min(values.len());
            let (chunk, rest) = values.split_at(n);
            let mut quads = chunk.chunks_exact(4);
            for q in quads.by_ref() {
                for (k, &v) in q.iter().enumerate() {
                    self.top_hist[(v.to_bits() >> 16) as usize][k] += 1;
                }
            }
            for (k, &v) in quads.remainder().iter().enumerate() {
                self.top_hist[(v.to_bits() >> 16) as usize][k] += 1;
            }
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
        let bins: Vec<(u32, u64)> = (0u32..)
            .zip(&self.top_hist)
            .map(|(bits, h)| (bits, h.iter().sum::<u64>()))
            .filter(|&(_, c)| c > 0)
            .collect();
        let float = float_stats(Dtype::F32, &bins);
        DequantStats {
            values: value_stats(Dtype::F32, &bins, Some(self.moments.total())),
            exponent_entropy: float.as_ref().map(|f| f.exponent_entropy),
            float,
        }
    }
}
