//! The documents of a catalogue run (`python -m bitlens.catalogue`, `bitlens_engine::catalogue`):
//! the files a run covers ([`CatalogueFile`]) and what it did with each ([`FileRecord`]): the
//! file's `inspect` document (LMC §3's statistics and the §4.1 entropy bound), where its sidecar
//! is, and with `--compress` the `.bls` snapshot it wrote (the container of LMC §4). A file that
//! fails is a record with its error, never a stopped run.
//!
//! Types only: the engine fills them; the Python package turns them into Parquet rows.

use crate::inspect::InspectReport;
use crate::sidecar::Fingerprint;
use serde::{Deserialize, Serialize};

/// One checkpoint file a catalogue run covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogueFile {
    /// The checkpoint it belongs to: its shard index for a shard of a sharded checkpoint, its
    /// directory for a `.npy` file (a directory of arrays is one checkpoint), else the file itself.
    pub checkpoint: String,
    /// The file: a local path or a URL.
    pub file: String,
}

/// What a run did with a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    /// Its tensors were read and measured (and its sidecar written).
    Measured,
    /// Its sidecar matched the file's size and header hash: nothing but the header was read.
    Reused,
    /// It could not be read, measured or compressed: `error` says why.
    Failed,
}

/// The record of one file of a catalogue run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// The checkpoint it belongs to ([`CatalogueFile::checkpoint`]).
    pub checkpoint: String,
    /// The file: a local path or a URL.
    pub file: String,
    /// What the run did with it.
    pub status: FileStatus,
    /// Why it failed: the CLI's one-line message (`null` unless something failed; a file whose
    /// statistics were taken but whose compression failed has both).
    pub error: Option<String>,
    /// The class of `error`: `usage`, `format`, `corrupt`, `remote` or `io` (the Python
    /// package's `UsageError`, `FormatError`, `CorruptError`, `RemoteError`, `OSError`).
    pub error_kind: Option<String>,
    /// The file's size and header hash, when its header could be read.
    pub fingerprint: Option<Fingerprint>,
    /// Where its sidecar (`<file>.bitlens.json`) is: written, or kept because it matched.
    pub sidecar: Option<String>,
    /// Its `inspect --json` document (one file), when it was measured or its sidecar reused.
    pub report: Option<InspectReport>,
    /// With `--compress`: the snapshot written (or kept).
    pub snapshot: Option<SnapshotRecord>,
    /// Wall time of this file's work in seconds (header, statistics, sidecar, compression).
    pub seconds: f64,
}

/// A file's `.bls` snapshot made by a catalogue run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    /// The codec asked for (`lmc`, `auto`, …).
    pub codec: String,
    /// Where the snapshot is.
    pub path: String,
    /// Bytes of the file.
    pub input_bytes: u64,
    /// Bytes of the snapshot.
    pub output_bytes: u64,
    /// `output_bytes / input_bytes`.
    pub ratio: f64,
    /// Seconds spent compressing (`null` when an earlier run's snapshot was kept).
    pub seconds: Option<f64>,
}
