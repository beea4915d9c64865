//! The `bitlens inspect --json` document of `.bls` snapshots (LMC §4 container, docs/FORMAT.md):
//! per snapshot its sizes and flags, and per tensor its codec, sizes, frames and — for lossy
//! codecs — its error; an Inshrinkerator snapshot (paper 002) adds its plan and search.
//!
//! Types only: `bitlens_snapshot::report` fills them from an opened snapshot's index. The page
//! reports a snapshot it opened with the same types, adding the statistics of each tensor it
//! decoded ([`SnapshotTensor::statistics`]; the CLI never sets them).

use crate::codec::ErrorReport;
use crate::inshrink::{InshrinkInfo, TensorPlan};
use bitlens_stats::TensorStats;
use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};

/// One tensor of a snapshot (for a snapshot of another format: one piece of the file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotTensor {
    /// Tensor name (for a piece of another format: its name in the file's layout, or the gap's).
    pub name: String,
    /// The dtype its bytes are coded as (`U8` for ggml blocks and gaps).
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<u64>,
    /// Codec name (`lmc`, `neuzip`, `bitsnap`, `bitsnap-quant`, `stored`, `inshrink`).
    pub codec: String,
    /// Stored as an XOR delta against the base checkpoint's tensor of the same name.
    pub delta: bool,
    /// Original bytes.
    pub bytes: u64,
    /// Bytes in the snapshot (its frames).
    pub stored_bytes: u64,
    /// `stored_bytes / bytes`.
    pub ratio: f64,
    /// Frames it is stored in.
    pub frames: usize,
    /// For lossy codecs: the error against the original, as the writer measured it.
    pub error: Option<ErrorReport>,
    /// Inshrinkerator tensors: the tensor's layer type and group, setting, achieved relative L2
    /// error, protected count, bins and whether it is a delta (from its streams).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inshrink: Option<TensorPlan>,
    /// Snapshots of other formats: what the piece is (`tensor`, `gap`, `deflated`) and its element
    /// type as the file names it (`F16`, `Q8_0`, …; empty for gaps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece: Option<(String, String)>,
    /// The page only (the embed's `inspect()`): the statistics of the tensor's decoded bytes, once
    /// it was decoded (previewed). `bitlens inspect --json` of a snapshot reads no tensor and
    /// never writes this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<TensorStats>,
}

/// One snapshot file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotReport {
    /// The snapshot's path or URL as given.
    pub path: String,
    /// Its size in bytes.
    pub snapshot_size: u64,
    /// Size of the file it restores.
    pub original_size: u64,
    /// `snapshot_size / original_size`.
    pub ratio: f64,
    /// Some tensor is stored lossily.
    pub lossy: bool,
    /// A delta against a base checkpoint (decoding needs the base).
    pub delta: bool,
    /// The original safetensors `__metadata__`, in file order.
    pub metadata: Option<Vec<(String, String)>>,
    /// Every tensor (piece), in file order.
    pub tensors: Vec<SnapshotTensor>,
    /// The original file's format when it is not safetensors (`GGUF v3`, `PyTorch zip`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_format: Option<String>,
    /// Inshrinkerator snapshots: the plan per layer group, the quality measure, the search report
    /// and the base of the chain (its per-tensor plans are under each tensor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inshrink: Option<InshrinkInfo>,
}

/// The whole document: `{"snapshots": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotsReport {
    /// Every snapshot given, in order.
    pub snapshots: Vec<SnapshotReport>,
}
