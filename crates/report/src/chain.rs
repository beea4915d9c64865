//! The `bitlens inspect --json` document of checkpoint chains (LMC §4.4, Fig. 12: a key, then XOR
//! deltas against the previous step): per step and file whether it is a key or a delta, sizes
//! and ratios; the totals against every step stored in full; the delta ratio's trend.
//!
//! [`FileKind`] and [`BaseLink`] are also fields of the chain's manifest (`chain.json`,
//! `bitlens_snapshot::chain::Manifest`), which fills [`ChainReport`].

use serde::{Deserialize, Serialize};

/// Whether a file of a step is stored in full or as a delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileKind {
    /// Stored in full.
    Key,
    /// Stored as its XOR with its base.
    Delta,
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Key => "key",
            FileKind::Delta => "delta",
        })
    }
}

/// The base of a delta: a file of an earlier step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaseLink {
    /// The base step's name.
    pub step: String,
    /// The base file's name within that step.
    pub file: String,
}

/// One file of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainFile {
    /// The original file's name.
    pub name: String,
    /// Key or delta.
    pub kind: FileKind,
    /// For a delta, the file it is a delta against.
    pub base: Option<BaseLink>,
    /// The codec family the file was compressed with.
    pub codec: String,
    /// Size of the original file in bytes.
    pub original_size: u64,
    /// Size of its snapshot on disk in bytes.
    pub snapshot_size: u64,
    /// `snapshot_size / original_size`.
    pub ratio: f64,
    /// The size stored in full (a key's own; a delta's when measured).
    pub full_size: Option<u64>,
    /// A delta's size relative to the file in full (`snapshot_size / full_size`).
    pub delta_vs_full: Option<f64>,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainStep {
    /// The step's name.
    pub name: String,
    /// Its files, in the order they were given.
    pub files: Vec<ChainFile>,
    /// Σ original sizes of its files.
    pub original_size: u64,
    /// Σ snapshot sizes of its files.
    pub snapshot_size: u64,
    /// `snapshot_size / original_size`.
    pub ratio: f64,
}

/// The chain's totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainTotals {
    /// The checkpoints' raw size in bytes.
    pub original_size: u64,
    /// The chain's snapshots in bytes (the manifest not counted).
    pub chain_size: u64,
    /// `chain_size / original_size`.
    pub ratio: f64,
    /// Every file stored in full (when every delta's full size was measured).
    pub all_full_size: Option<u64>,
    /// What the deltas save: `all_full_size - chain_size` (negative when they cost).
    pub saved_bytes: Option<i64>,
}

/// The delta ratio of one file name step by step (LMC Fig. 12: it falls as training converges).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trend {
    /// The file's name.
    pub file: String,
    /// `(step, delta ratio = snapshot / original)`.
    pub points: Vec<(String, f64)>,
}

/// A chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainReport {
    /// The chain directory as given.
    pub path: String,
    /// The codec the user chose.
    pub codec: String,
    /// Every how many steps a key is stored (`null`: only the first).
    pub key_every: Option<u64>,
    /// The steps in training order.
    pub steps: Vec<ChainStep>,
    /// Totals.
    pub totals: ChainTotals,
    /// Per delta file name, its ratio over the steps.
    pub trend: Vec<Trend>,
}

/// The whole document: `{"chains": [...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainsReport {
    /// Every chain given, in order.
    pub chains: Vec<ChainReport>,
}
