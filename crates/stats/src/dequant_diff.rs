//! How the dequantized values of two checkpoints of one ggml block-quantized tensor differ: both
//! sides' stored blocks are dequantized ([`bitlens_tensors::format::gguf::dequantize`], llama.cpp's
//! reference kernels as gguf-py's `dequantize`) piece by piece and compared value by value —
//! the fraction of changed values, the largest and mean absolute difference and the relative L2
//! distance `‖b − a‖ / ‖a‖`. This is the quantized counterpart of the changed-element fraction of
//! [`crate::flip`] (BitSnap), which on block bytes only says that a block changed, not by how much.
//!
//! Memory is bounded: windows of any size are cut into whole blocks (a partial block waits for
//! the next window) and dequantized in pieces of at most [`DEQUANT_BLOCKS`] blocks into two reused
//! buffers.

use crate::quant::{QuantError, DEQUANT_BLOCKS};
use crate::StatsError;
use bitlens_tensors::format::gguf::dequantize;
use bitlens_tensors::format::GgmlType;
use serde::{Deserialize, Serialize};

/// Differences between the dequantized values of two checkpoints of one quantized tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DequantDiff {
    /// Values compared.
    pub values: u64,
    /// Values that differ (`a != b`, except a NaN of the same bit pattern on both sides; `0.0` and
    /// `-0.0` are equal).
    pub changed: u64,
    /// `changed / values` (0 for an empty tensor).
    pub changed_fraction: f64,
    /// Pairs where either value is NaN or infinite: counted in `changed` when they differ, left out
    /// of the differences below.
    pub nonfinite: u64,
    /// Largest `|b − a|` over the finite pairs (0 when there is none).
    pub max_abs_diff: f64,
    /// Mean `|b − a|` over the finite pairs (0 when there is none).
    pub mean_abs_diff: f64,
    /// `‖b − a‖₂ / ‖a‖₂` over the finite pairs; `None` when `a` is all zeros there.
    pub relative_l2: Option<f64>,
}

/// Streams the stored block bytes of both sides into a [`DequantDiff`].
#[derive(Debug, Clone)]
pub struct DequantDiffAccumulator {
    ty: GgmlType,
    block_bytes: usize,
    block_elems: usize,
    carry_a: Vec<u8>,
    carry_b: Vec<u8>,
    va: Vec<f32>,
    vb: Vec<f32>,
    values: u64,
    changed: u64,
    nonfinite: u64,
    max_abs: f64,
    sum_abs: f64,
    sum_sq_diff: f64,
    sum_sq_a: f64,
}

impl DequantDiffAccumulator {
    /// An accumulator for two tensors of block type `ty` (one that
    /// [`bitlens_tensors::format::gguf::can_dequantize`]).
    pub fn new(ty: GgmlType) -> Result<Self, QuantError> {
        let (Some(bb), Some(be)) = (ty.block_bytes(), ty.block_elems()) else {
            return Err(QuantError::UnknownType(ty.0));
        };
        Ok(DequantDiffAccumulator {
            ty,
            block_bytes: bb as usize,
            block_elems: be as usize,
            carry_a: Vec::new(),
            carry_b: Vec::new(),
            va: Vec::new(),
            vb: Vec::new(),
            values: 0,
            changed: 0,
            nonfinite: 0,
            max_abs: 0.0,
            sum_abs: 0.0,
            sum_sq_diff: 0.0,
            sum_sq_a: 0.0,
        })
    }

    /// Feeds the same byte window of both sides (any length; partial blocks are carried over).
    pub fn update(&mut self, a: &[u8], b: &[u8]) -> Result<(), QuantError> {
        if a.len() != b.len() {
            return Err(StatsError::WindowLengthMismatch {
                a: a.len() as u64,
                b: b.len() as u64,
            }
            .into());
        }
        let bb = self.block_bytes;
        let (mut a, mut b) = (a, b);
        if !self.carry_a.is_empty() {
            let k = (bb - self.carry_a.len()).min(a.len());
            self.carry_a.extend_from_slice(&a[..k]);
            self.carry_b.extend_from_slice(&b[..k]);
            (a, b) = (&a[k..], &b[k..]);
            if self.carry_a.len() < bb {
                return Ok(());
            }
            let (ca, cb) = (
                std::mem::take(&mut self.carry_a),
                std::mem::take(&mut self.carry_b),
            );
            self.blocks(&ca, &cb)?;
        }
        let whole = a.len() / bb * bb;
        self.blocks(&a[..whole], &b[..whole])?;
        self.carry_a.extend_from_slice(&a[whole..]);
        self.carry_b.extend_from_slice(&b[whole..]);
        Ok(())
    }

    /// Whole blocks of both sides, in pieces of at most [`DEQUANT_BLOCKS`] blocks.
    fn blocks(&mut self, a: &[u8], b: &[u8]) -> Result<(), QuantError> {
        let piece = DEQUANT_BLOCKS * self.block_bytes;
        for (pa, pb) in a.chunks(piece).zip(b.chunks(piece)) {
            let n = pa.len() / self.block_bytes * self.block_elems;
            self.va.resize(n, 0.0);
            self.vb.resize(n, 0.0);
            dequantize(self.ty, pa, &mut self.va)?;
            dequantize(self.ty, pb, &mut self.vb)?;
            self.values += n as u64;
            for (&x, &y) in self.va.iter().zip(&self.vb) {
                if x != y && x.to_bits() != y.to_bits() {
                    self.changed += 1;
                }
                if !(x.is_finite() && y.is_finite()) {
                    self.nonfinite += 1;
                    continue;
                }
                let (x, y) = (f64::from(x), f64::from(y));
                let d = (y - x).abs();
                self.max_abs = self.max_abs.max(d);
                self.sum_abs += d;
                self.sum_sq_diff += d * d;
                self.sum_sq_a += x * x;
            }
        }
        Ok(())
    }

    /// The differences of the whole tensor pair; errors when a partial block is left over.
    pub fn finish(self) -> Result<DequantDiff, QuantError> {
        if !self.carry_a.is_empty() {
            let whole = self.values / self.block_elems as u64 * self.block_bytes as u64;
            return Err(StatsError::MisalignedRange {
                start: 0,
                end: whole + self.carry_a.len() as u64,
                block_bytes: self.block_bytes as u64,
            }
            .into());
        }
        let finite = self.values - self.nonfinite;
        Ok(DequantDiff {
            values: self.values,
            changed: self.changed,
            changed_fraction: crate::flip::ratio(self.changed, self.values),
            nonfinite: self.nonfinite,
            max_abs_diff: self.max_abs,
            mean_abs_diff: if finite == 0 {
                0.0
            } else {
                self.sum_abs / finite as f64
            },
            relative_l2: (self.sum_sq_a > 0.0).then(|| (self.sum_sq_diff / self.sum_sq_a).sqrt()),
        })
    }
}
