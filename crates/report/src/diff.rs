//! The `bitlens diff --json` document: bit flips and changed elements between two checkpoints of
//! any format, tensors matched by name, element type and shape (LMC §3, Fig. 6: where training
//! moves the bits, and what an XOR delta of them would cost).

use bitlens_stats::{DequantDiff, FlipSummary};
use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};

/// One compared tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorDiff {
    /// Tensor name.
    pub name: String,
    /// Lane type of both sides (`U8` for a ggml block type: its raw bytes).
    pub dtype: Dtype,
    /// The ggml block type of both sides (`Q4_K`…), when quantized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_type: Option<String>,
    /// Shape of both sides.
    pub shape: Vec<u64>,
    /// Lanes compared (elements; 2 per C64 element; bytes for packed types).
    pub lanes: u64,
    /// Lanes that changed.
    pub changed_lanes: u64,
    /// `changed_lanes / lanes`.
    pub changed_fraction: f64,
    /// Flipped bits per position, bit 0 = least significant.
    pub bit_flip_counts: Vec<u64>,
    /// `bit_flip_counts / lanes` (LMC Fig. 6).
    pub bit_flip_ratio: Vec<f64>,
    /// Order-0 entropy of each byte group of the XOR delta, bits per byte.
    pub delta_byte_group_entropy: Vec<f64>,
    /// The 64 KiB block-entropy bound of the XOR delta, in bytes.
    pub delta_predicted_bytes: u64,
    /// How the dequantized values changed (ggml block types that dequantize).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dequantized: Option<DequantDiff>,
}

/// A tensor present on both sides with different element type or shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Tensor name.
    pub name: String,
    /// `(element type, shape)` in A.
    pub a: (String, Vec<u64>),
    /// `(element type, shape)` in B.
    pub b: (String, Vec<u64>),
}

/// The whole `diff --json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffReport {
    /// Checkpoint A as given (path or URL).
    pub a: String,
    /// Checkpoint B as given (path or URL).
    pub b: String,
    /// Compared tensors, in A's order.
    pub tensors: Vec<TensorDiff>,
    /// Same name, different element type or shape (not compared).
    pub mismatched: Vec<Mismatch>,
    /// Names only in A.
    pub only_in_a: Vec<String>,
    /// Names only in B.
    pub only_in_b: Vec<String>,
    /// Totals over the compared tensors.
    pub overall: FlipSummary,
}
