//! The `bitlens bench --json` document: bitlens' codecs (LMC §4, NeuZip §3, BitSnap §3) beside
//! peer compressors on the same tensors, ratio and speed both ways.

use crate::codec::ErrorReport;
use serde::{Deserialize, Serialize};

/// How far a lossy codec's output is from the original.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LossyError {
    /// Mean squared error (squared units of the values).
    pub mse: f64,
    /// Mean relative error over nonzero values (a fraction).
    pub mean_rel: f64,
    /// Largest relative error (a fraction).
    pub max_rel: f64,
}

impl From<ErrorReport> for LossyError {
    fn from(r: ErrorReport) -> Self {
        LossyError {
            mse: r.mse,
            mean_rel: r.mean_rel,
            max_rel: r.max_rel,
        }
    }
}

/// One row of the benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// Codec and variant, e.g. `zstd-3 (byte-grouped)`; rows over whole input files end in
    /// `(whole file)` (`snapshot`, `bg4-lz4`).
    pub codec: String,
    /// Threads it ran on.
    pub threads: usize,
    /// Σ compressed / Σ original.
    pub ratio: f64,
    /// Σ compressed bytes.
    pub compressed_bytes: u64,
    /// Original megabytes (10⁶ bytes) per second of compression, best pass.
    pub compress_mb_s: f64,
    /// Original megabytes per second of decompression, best pass.
    pub decompress_mb_s: f64,
    /// Compression speed of the median pass (MB/s).
    pub compress_median_mb_s: f64,
    /// Decompression speed of the median pass (MB/s).
    pub decompress_median_mb_s: f64,
    /// Error over finite float values, for lossy codecs (lossless rows are checked byte for byte).
    pub error: Option<LossyError>,
}

/// The whole `bench --json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The inputs as given.
    pub inputs: Vec<String>,
    /// Tensors measured.
    pub tensors: usize,
    /// Their total bytes.
    pub bytes: u64,
    /// One row per codec.
    pub results: Vec<BenchRow>,
}
