//! Streaming, mergeable statistics of checkpoint tensors.
//!
//! - [`accumulator`]: feed a tensor's bytes in windows of any size; get bit-position set ratios (LMC
//!   Fig. 5), order-0 byte entropy raw and per byte group, the 64 KiB block-adaptive entropy estimate
//!   and the compressed size it predicts (LMC §4.1), sign / exponent / mantissa histograms and their
//!   entropies (NeuZip Fig. 1), and value statistics. Accumulators over block-aligned ranges merge, so
//!   a worker pool can split a tensor.
//! - [`flip`]: the same for two checkpoints of one tensor: bit-flip ratio per position (LMC Fig. 6),
//!   fraction of changed elements (BitSnap), and the entropy of the XOR delta.
//! - [`quant`]: ggml block-quantized tensors (GGUF): the stored blocks' statistics, the
//!   dequantized values' statistics and the block scales / quant codes.
//! - [`dequant_diff`]: how the dequantized values of two checkpoints of a quantized tensor differ
//!   (changed fraction, largest / mean absolute difference, relative L2).
//! - [`entry`]: one tensor of any format (or a pair of them, for a diff) streamed in element order.
//! - [`tensor_stats`]: what the pass of one tensor produces ([`TensorStats`]) and its errors.
//! - [`weightmap`]: a tensor's values as an image: the mean / min / max / zeros of each block of
//!   a 2-D region, of its values, one bit, its exponents or its changes, read from that region's
//!   bytes only; and a few values read exactly.
//! - [`summary`]: whole-file / whole-model totals merged from per-tensor results.
//! - [`entropy`]: the entropy arithmetic.
//! - [`format`](mod@format): human-readable numbers for reports (CLI tables and the page).
//!
//! All results are plain serde structs; the CLI prints them and the browser renders them.
#![forbid(unsafe_code)]

pub mod accumulator;
pub mod dequant_diff;
pub mod entropy;
pub mod entry;
pub mod flip;
pub mod format;
mod moments;
pub mod quant;
pub mod summary;
pub mod tensor_stats;
mod values;
pub mod weightmap;

pub use accumulator::{
    split_ranges, Accumulator, FloatStats, StatsError, TensorStats, BLOCK_LANES,
};
pub use dequant_diff::{DequantDiff, DequantDiffAccumulator};
pub use entry::EntryDiff;
pub use flip::{FlipAccumulator, FlipStats};
pub use quant::{DequantStats, QuantAccumulator, QuantStats, QuantSummary};
pub use summary::{DtypeFlips, DtypeSummary, FlipSummary, Summary};
pub use values::{ValueHistogram, ValueStats, VALUE_BINS};
