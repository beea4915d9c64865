//! What `--codec auto` decided (issue 17; candidates from LMC §4, NeuZip §3 and BitSnap §3): the
//! `bitlens compress --codec auto --json` document ([`AutoReport`]: per tensor the candidates'
//! predicted sizes, the one chosen and the size it achieved, with totals per file and over all
//! files) and the per-entry summary the page shows ([`AutoInfo`]).
//!
//! Types only: `bitlens_snapshot::auto` fills them from its choices and the written index.

use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What `auto` decided for one tensor, as a snapshot entry carries it to the page: the
/// candidates' predicted stored bytes, the one chosen and its prediction. The achieved size is
/// the entry's stored bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoInfo {
    /// The chosen candidate (`lmc`, `neuzip`, `lmc-delta`, `unchanged`, `bitsnap`, `stored`).
    pub chosen: String,
    /// `(candidate, predicted bytes)` of every candidate that applied.
    pub predicted: Vec<(String, u64)>,
    /// The chosen candidate's prediction in bytes.
    pub predicted_bytes: u64,
    /// Bytes of the tensor sampled for the predictions.
    pub sample_bytes: u64,
}

/// One tensor's choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoTensor {
    /// Tensor name.
    pub name: String,
    /// Its dtype.
    pub dtype: Dtype,
    /// Its byte length.
    pub bytes: u64,
    /// Bytes of it sampled for the predictions.
    pub sample_bytes: u64,
    /// Predicted stored bytes per candidate (`lmc`, `neuzip`, `lmc-delta`, `unchanged`,
    /// `bitsnap`, `stored`), by candidate name.
    pub predicted: BTreeMap<String, u64>,
    /// Candidates whose prediction a trial encode of the sample corrected.
    pub trial: Vec<String>,
    /// The candidate chosen.
    pub chosen: String,
    /// The container codec it is stored with (as `inspect` names it).
    pub codec: String,
    /// Stored as a delta against the base.
    pub delta: bool,
    /// The chosen candidate's prediction in bytes.
    pub predicted_bytes: u64,
    /// Its stored bytes in the snapshot.
    pub achieved_bytes: u64,
}

/// Sums over tensors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoTotals {
    /// Tensors.
    pub tensors: usize,
    /// Σ original bytes.
    pub bytes: u64,
    /// Σ predicted stored bytes of the chosen candidates.
    pub predicted_bytes: u64,
    /// Σ achieved stored bytes.
    pub achieved_bytes: u64,
    /// The snapshot files' sizes (achieved bytes plus header, index and trailer).
    pub snapshot_bytes: u64,
}

impl AutoTotals {
    /// Adds another file's totals.
    pub fn add(&mut self, o: &AutoTotals) {
        self.tensors += o.tensors;
        self.bytes += o.bytes;
        self.predicted_bytes += o.predicted_bytes;
        self.achieved_bytes += o.achieved_bytes;
        self.snapshot_bytes += o.snapshot_bytes;
    }
}

/// One compressed file's choices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoFile {
    /// The checkpoint file compressed.
    pub input: String,
    /// The snapshot written.
    pub output: String,
    /// The base file of a delta.
    pub base: Option<String>,
    /// Per tensor, in file order.
    pub tensors: Vec<AutoTensor>,
    /// Sums over its tensors.
    pub totals: AutoTotals,
}

/// The whole `compress --codec auto --json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoReport {
    /// Every file compressed (a shard set: each shard).
    pub files: Vec<AutoFile>,
    /// Sums over all files.
    pub totals: AutoTotals,
}

impl AutoReport {
    /// The document over these files, with their totals summed.
    pub fn new(files: Vec<AutoFile>) -> AutoReport {
        let mut totals = AutoTotals::default();
        for f in &files {
            totals.add(&f.totals);
        }
        AutoReport { files, totals }
    }
}
