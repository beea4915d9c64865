//! Statistics of a ggml block-quantized tensor (GGUF `Q4_0`, `Q4_K`, `IQ4_NL`, …), fed its stored
//! bytes in windows of any size:
//!
//! 1. the stored block bytes as `U8` lanes (what a codec sees): bit set ratios, byte entropy,
//!    64 KiB block entropy and the compressed size it implies — the [`TensorStats`] fields, with
//!    `dtype` `U8` and [`TensorStats::element_type`] naming the block type;
//! 2. the dequantized values ([`bitlens_tensors::format::gguf::dequantize`], llama.cpp's
//!    reference kernels as gguf-py's `dequantize`) as `F32`: value statistics and histograms,
//!    sign / exponent / mantissa histograms — [`DequantStats`], in
//!    [`TensorStats::dequantized`] (absent for types that cannot be dequantized);
//! 3. the block scales' distribution and the quant codes' histogram and entropy ([`QuantStats`],
//!    module `parts`) as [`QuantSummary`], in [`TensorStats::quant`] (absent for the grid types it
//!    does not cover).
//!
//! Memory is bounded: windows are cut into whole blocks (a partial block waits for the next
//! window) and dequantized in pieces of about [`DEQUANT_VALUES`] values into one reused buffer,
//! which [`DequantValues`] reads as `f32`s.

use crate::accumulator::{Accumulator, FloatStats, StatsError, TensorStats};
use crate::values::ValueStats;
use bitlens_tensors::format::gguf::parts::{code_bytes, CodeBytes};
use bitlens_tensors::format::gguf::{
    can_dequantize, can_dequantize_with_codes, dequantize, dequantize_with_codes,
};
use bitlens_tensors::format::GgmlType;
use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};

mod parts;
mod values;

pub use parts::{QuantStats, QuantSummary};
pub use values::DequantValues;

/// Blocks dequantized per piece by the diff (Q4_K: 256 values a block, so 1 MiB of `f32`s).
pub const DEQUANT_BLOCKS: usize = 1024;

/// Values dequantized per piece by [`QuantAccumulator`] (at least one block): 16 KiB of `f32`s,
/// which the value statistics then read from L1.
pub const DEQUANT_VALUES: usize = 4096;

/// Statistics of a quantized tensor's dequantized values, as those of an `F32` tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DequantStats {
    /// Value statistics and histogram.
    pub values: Option<ValueStats>,
    /// Sign / exponent / mantissa histograms of the `f32` values.
    pub float: Option<FloatStats>,
    /// Entropy of the `f32` exponent field in bits.
    pub exponent_entropy: Option<f64>,
}

/// Why a quantized tensor's statistics failed.
#[derive(Debug, thiserror::Error)]
pub enum QuantError {
    /// The type has no known block size.
    #[error("unknown ggml type {0}")]
    UnknownType(u32),
    /// The accumulators refused the bytes.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// Dequantizing or splitting blocks failed.
    #[error(transparent)]
    Dequant(#[from] bitlens_tensors::format::gguf::DequantError),
}

/// Streams a quantized tensor's stored bytes into the three kinds of statistics of the module doc.
pub struct QuantAccumulator {
    ty: GgmlType,
    block_bytes: usize,
    block_elems: usize,
    raw: Accumulator,
    values: Option<DequantValues>,
    quant: Option<QuantStats>,
    carry: Vec<u8>,
    out: Vec<f32>,
    /// The type's codes are read out while dequantizing (into `codes`).
    coded: bool,
    /// The codes of the values in `out` when `coded` (empty otherwise).
    codes: Vec<u8>,
    /// For a type whose codes are bytes as they stand ([`code_bytes`]): the block bytes around
    /// them, counted, so that the codes' byte counts are the raw byte histogram's less these
    /// (the raw statistics count every byte anyway).
    around_codes: Option<(CodeBytes, Box<[u64; 256]>)>,
}

impl QuantAccumulator {
    /// An accumulator for a tensor of `ty` whose stored bytes are `byte_len` long.
    pub fn new(ty: GgmlType, byte_len: u64) -> Result<QuantAccumulator, QuantError> {
        let (Some(bb), Some(be)) = (ty.block_bytes(), ty.block_elems()) else {
            return Err(QuantError::UnknownType(ty.0));
        };
        let values = can_dequantize(ty).then(DequantValues::default);
        Ok(QuantAccumulator {
            coded: values.is_some() && can_dequantize_with_codes(ty),
            ty,
            block_bytes: bb as usize,
            block_elems: be as usize,
            raw: Accumulator::new(Dtype::U8, byte_len),
            values,
            quant: QuantStats::new(ty),
            carry: Vec::new(),
            out: Vec::new(),
            codes: Vec::new(),
            around_codes: code_bytes(ty).map(|layout| (layout, Box::new([0; 256]))),
        })
    }

    /// Feeds the next stored bytes (any length).
    pub fn update(&mut self, mut bytes: &[u8]) -> Result<(), QuantError> {
        self.raw.update(bytes)?;
        if !self.carry.is_empty() {
            let need = (self.block_bytes - self.carry.len()).min(bytes.len());
            self.carry.extend_from_slice(&bytes[..need]);
            bytes = &bytes[need..];
            if self.carry.len() == self.block_bytes {
                let block = std::mem::take(&mut self.carry);
                self.blocks(&block)?;
            }
        }
        let whole = bytes.len() / self.block_bytes * self.block_bytes;
        self.blocks(&bytes[..whole])?;
        self.carry.extend_from_slice(&bytes[whole..]);
        Ok(())
    }

    /// Whole blocks into the value and scale/code statistics. Codes are counted where they cost
    /// least: from the raw byte counts when they are bytes as they stand, out of dequantization
    /// when they are assembled from several fields, else from the blocks taken apart.
    fn blocks(&mut self, blocks: &[u8]) -> Result<(), QuantError> {
        let coded = self.coded;
        if let Some(q) = &mut self.quant {
            if let Some((layout, around)) = &mut self.around_codes {
                q.add_scales(blocks)?;
                for b in blocks.chunks_exact(self.block_bytes) {
                    let (head, tail) = (&b[..layout.range.start], &b[layout.range.end..]);
                    head.iter()
                        .chain(tail)
                        .for_each(|&x| around[usize::from(x)] += 1);
                }
            } else if coded {
                q.add_scales(blocks)?;
            } else {
                q.add(blocks)?;
            }
        }
        if let Some(values) = &mut self.values {
            let per_piece = (DEQUANT_VALUES / self.block_elems).max(1);
            for piece in blocks.chunks(per_piece * self.block_bytes) {
                let n = piece.len() / self.block_bytes * self.block_elems;
                self.out.resize(n, 0.0);
                match &mut self.quant {
                    Some(q) if coded => {
                        self.codes.resize(n, 0);
                        dequantize_with_codes(self.ty, piece, &mut self.out, &mut self.codes)?;
                        q.add_codes(&self.codes);
                    }
                    _ => dequantize(self.ty, piece, &mut self.out)?,
                }
                values.update(&self.out);
            }
        }
        Ok(())
    }

    /// The statistics; fails unless every stored byte was fed.
    pub fn finish(mut self) -> Result<TensorStats, QuantError> {
        let mut stats = self.raw.finish()?;
        // Byte values of packed blocks are not the tensor's values.
        stats.values = None;
        stats.element_type = Some(self.ty.name().unwrap_or("?").to_owned());
        stats.dequantized = self.values.map(DequantValues::finish);
        if let (Some(q), Some((_, around))) = (&mut self.quant, &self.around_codes) {
            // Every byte was fed (or `raw.finish` failed), so each count is at least its part.
            let all = stats.byte_group_hist.first().map_or(&[][..], Vec::as_slice);
            let mut codes = [0u64; 256];
            for ((c, &a), &r) in codes.iter_mut().zip(all).zip(around.iter()) {
                *c = a.saturating_sub(r);
            }
            q.add_code_byte_counts(&codes);
        }
        stats.quant = self.quant.as_ref().map(QuantSummary::of);
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_tensors::format::gguf::dequantize_to_vec;

    /// Q8_0 blocks: an f16 scale then 32 int8 codes.
    fn q8_0(blocks: &[(f32, [i8; 32])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (d, q) in blocks {
            out.extend_from_slice(&half::f16::from_f32(*d).to_le_bytes());
            out.extend(q.iter().map(|&c| c as u8));
        }
        out
    }

    #[test]
    fn q8_0_stats_are_of_the_bytes_the_values_and_the_scales_whatever_the_windows() {
        let q8 = GgmlType::from_name("Q8_0").unwrap();
        let mut codes = [[0i8; 32]; 3];
        for (b, c) in codes.iter_mut().enumerate() {
            for (i, x) in c.iter_mut().enumerate() {
                *x = (i as i8 - 16) * (b as i8 + 1);
            }
        }
        let bytes = q8_0(&[(0.5, codes[0]), (0.25, codes[1]), (2.0, codes[2])]);
        let values = dequantize_to_vec(q8, &bytes).unwrap();
        let want_min = values.iter().copied().fold(f32::INFINITY, f32::min);
        let want_max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut results = Vec::new();
        for window in [1, 5, 34, 1000] {
            let mut acc = QuantAccumulator::new(q8, bytes.len() as u64).unwrap();
            for w in bytes.chunks(window) {
                acc.update(w).unwrap();
            }
            results.push(acc.finish().unwrap());
        }
        let s = &results[0];
        assert!(results.iter().all(|r| r == s), "windows change nothing");
        assert_eq!(s.dtype, Dtype::U8);
        assert_eq!(s.bytes, bytes.len() as u64);
        assert_eq!(s.element_type.as_deref(), Some("Q8_0"));
        assert!(s.values.is_none());
        let v = s.dequantized.as_ref().unwrap().values.as_ref().unwrap();
        assert_eq!(
            (v.min, v.max),
            (Some(f64::from(want_min)), Some(f64::from(want_max)))
        );
        let q = s.quant.as_ref().unwrap();
        assert_eq!((q.blocks, q.scales), (3, 3));
        assert_eq!((q.scale_min, q.scale_max), (Some(0.25), Some(2.0)));
        assert_eq!(q.code_bits, 8);
        assert_eq!(q.code_hist.iter().sum::<u64>(), 96);
        // The JSON of a plain tensor has none of the new keys.
        let mut plain = Accumulator::new(Dtype::F32, 4);
        plain.update(&1f32.to_le_bytes()).unwrap();
        let json = serde_json::to_value(plain.finish().unwrap()).unwrap();
        for key in ["element_type", "dequantized", "quant"] {
            assert!(json.get(key).is_none(), "{key}");
        }
    }

    #[test]
    fn a_partial_block_left_over_is_incomplete() {
        let q8 = GgmlType::from_name("Q8_0").unwrap();
        let mut acc = QuantAccumulator::new(q8, 34).unwrap();
        acc.update(&[0u8; 20]).unwrap();
        assert!(acc.finish().is_err());
    }
}
