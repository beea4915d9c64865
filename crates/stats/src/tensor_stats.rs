//! What the statistics pass of one tensor produces (LMC §3–§4.1, NeuZip Fig. 1): [`TensorStats`]
//! with its [`FloatStats`], and [`StatsError`], the misuse of an accumulator. Plain serde
//! structs: the CLI prints them, the page renders them, sidecars carry them.

use crate::values::ValueStats;
use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};

/// Misuse of an accumulator (feeding or merging the wrong ranges).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// More bytes were fed than the accumulator's range holds.
    #[error("fed {got} bytes into a range of {expected} bytes")]
    TooMuchData {
        /// Bytes the range holds.
        expected: u64,
        /// Bytes fed so far including the rejected window.
        got: u64,
    },
    /// `finish` was called before the whole tensor was fed.
    #[error("tensor incomplete: {got} of {expected} bytes fed")]
    Incomplete {
        /// Bytes of the whole tensor.
        expected: u64,
        /// Bytes covered.
        got: u64,
    },
    /// A range does not start (or end) on a block boundary.
    #[error("byte range {start}..{end} is not aligned to blocks of {block_bytes} bytes")]
    MisalignedRange {
        /// Range start.
        start: u64,
        /// Range end.
        end: u64,
        /// Block size in bytes for this dtype.
        block_bytes: u64,
    },
    /// The two windows of a flip comparison differ in length.
    #[error("flip windows differ in length: {a} and {b} bytes")]
    WindowLengthMismatch {
        /// Length of the first window.
        a: u64,
        /// Length of the second window.
        b: u64,
    },
    /// Merged accumulators are not consecutive ranges of the same tensor.
    #[error("cannot merge: first range ends at byte {end}, next starts at byte {next_start}")]
    NotContiguous {
        /// End of the first range.
        end: u64,
        /// Start of the next range.
        next_start: u64,
    },
}

/// Sign / exponent / mantissa histograms of a floating-point tensor (NeuZip Fig. 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FloatStats {
    /// Width of the exponent field.
    pub exponent_bits: u32,
    /// Width of the mantissa field.
    pub mantissa_bits: u32,
    /// Leading mantissa bits covered by `mantissa_hist` (all of them for types up to 16 bits; 7 for
    /// f32, 4 for f64).
    pub mantissa_hist_bits: u32,
    /// Count of positive (index 0) and negative (index 1) values; empty without a sign bit.
    pub sign_hist: Vec<u64>,
    /// Count per biased exponent value.
    pub exponent_hist: Vec<u64>,
    /// Count per value of the leading `mantissa_hist_bits` mantissa bits.
    pub mantissa_hist: Vec<u64>,
    /// Entropy of the sign bit in bits.
    pub sign_entropy: f64,
    /// Entropy of the exponent field in bits.
    pub exponent_entropy: f64,
    /// Entropy of the leading `mantissa_hist_bits` mantissa bits in bits.
    pub mantissa_entropy: f64,
}

/// Statistics of one tensor (or of one XOR delta, see [`crate::flip`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorStats {
    /// Element type.
    pub dtype: Dtype,
    /// Bytes of data.
    pub bytes: u64,
    /// Lanes counted (elements; 2 per C64 element; bytes for packed sub-byte types).
    pub lanes: u64,
    /// Set bits per bit position of a lane, bit 0 = least significant.
    pub bit_set_counts: Vec<u64>,
    /// `bit_set_counts / lanes` (LMC Fig. 5).
    pub bit_set_ratio: Vec<f64>,
    /// Order-0 entropy of the raw bytes, bits per byte.
    pub byte_entropy: f64,
    /// Order-0 entropy of each byte group, bits per byte, least significant byte first.
    pub byte_group_entropy: Vec<f64>,
    /// Histogram of each byte group (256 counts per group).
    pub byte_group_hist: Vec<Vec<u64>>,
    /// Bytes per block of one byte group (65 536).
    pub block_bytes: u64,
    /// Entropy of each 64 KiB block of each byte group, bits per byte: `[group][block]`.
    pub block_entropy: Vec<Vec<f32>>,
    /// Σ of the block entropies in bits: the block-adaptive order-0 bound of LMC §4.1.
    pub block_entropy_bits: f64,
    /// The compressed size that bound implies, in bytes.
    pub predicted_bytes: u64,
    /// `predicted_bytes / bytes` (1 for an empty tensor).
    pub predicted_ratio: f64,
    /// Entropy of the exponent field in bits (floating-point types).
    pub exponent_entropy: Option<f64>,
    /// Sign / exponent / mantissa histograms (floating-point types).
    pub float: Option<FloatStats>,
    /// Value statistics (absent for packed F6, and for ggml block types, whose values are in
    /// [`TensorStats::dequantized`]).
    pub values: Option<ValueStats>,
    /// For a ggml block-quantized tensor (GGUF Q4_K, Q8_0, …): its type's name. The fields above
    /// then describe its stored block bytes as `U8` lanes (what a codec sees). Absent otherwise,
    /// so the JSON of plain dtypes is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_type: Option<String>,
    /// For a ggml block type: statistics of the dequantized values (as `F32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dequantized: Option<crate::quant::DequantStats>,
    /// For a ggml block type: its block scales' distribution and quant codes' entropy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quant: Option<crate::quant::QuantSummary>,
}
