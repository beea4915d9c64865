//! What `compress` and `decompress` wrote, as documents (the Python package's `compress_file`
//! and `decompress_file` return them; the CLI prints their sizes in a line): the files in and
//! out, their sizes, and for a compression every tensor's codec, stored size and — for lossy
//! codecs (NeuZip, paper 003; BitSnap quantization, paper 001) — its error; with `--codec auto`
//! also its choices ([`AutoReport`]).
//!
//! Types only: `bitlens_snapshot::report` fills a compression's from the index entries written.

use crate::auto::AutoReport;
use crate::codec::ErrorReport;
use serde::{Deserialize, Serialize};

/// One tensor (for a file of another format: one piece) as it was stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressedTensor {
    /// Tensor (or piece) name.
    pub name: String,
    /// Codec name (`lmc`, `neuzip`, `bitsnap`, `bitsnap-quant`, `stored`).
    pub codec: String,
    /// Stored as an XOR delta against the base's tensor of the same name.
    pub delta: bool,
    /// Original bytes.
    pub bytes: u64,
    /// Bytes of its frames in the snapshot.
    pub stored_bytes: u64,
    /// `stored_bytes / bytes`.
    pub ratio: f64,
    /// For lossy codecs: the error against the original, as the writer measured it.
    pub error: Option<ErrorReport>,
}

/// A checkpoint compressed into a snapshot (or a directory of shard snapshots).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressedReport {
    /// The checkpoint as given.
    pub input: String,
    /// The snapshot (or directory) written.
    pub output: String,
    /// Bytes of the checkpoint's files.
    pub input_bytes: u64,
    /// Bytes of the snapshots written.
    pub output_bytes: u64,
    /// `output_bytes / input_bytes`.
    pub ratio: f64,
    /// Some tensor was stored lossily.
    pub lossy: bool,
    /// Every tensor, file by file, in file order.
    pub tensors: Vec<CompressedTensor>,
    /// With `--codec auto`: each tensor's predictions, choice and achieved size.
    pub auto: Option<AutoReport>,
}

/// A snapshot (file, directory of shard snapshots, chain) restored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecompressedReport {
    /// The snapshot as given.
    pub input: String,
    /// The file (or directory) written.
    pub output: String,
    /// Bytes of the snapshots read (`null` for a chain directory).
    pub input_bytes: Option<u64>,
    /// Bytes written (`null` for a chain directory).
    pub output_bytes: Option<u64>,
}
