//! What the codec panel shows: the running job, the last compression of each checkpoint, the
//! snapshots opened for decompression (files the person gave, or URLs previewed tensor by tensor),
//! per-tensor codec overrides, codec comparisons.

use super::runner::remove_output;
use crate::model::codec::{
    preset_by_id, Compressed, EntryInfo, Preset, RoundtripRow, SnapshotInfo, DEFAULT_MAX_ERROR,
    PRESETS,
};
use bitlens_protocol::{Build, DecodedTensor, RemoteFile};
use std::collections::{BTreeMap, HashMap};
use wasm_bindgen::JsCast;
use web_sys::{Blob, File, Url};

/// A finished download: object URL, file name, size, seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// `blob:` URL of the file.
    pub url: String,
    /// Suggested file name.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// Seconds the worker took.
    pub seconds: f64,
    /// The worker's wasm memory in bytes afterwards.
    pub memory: u64,
    /// The name of its file in the page's output directory, when the worker wrote it there.
    pub stored: Option<String>,
}

impl Output {
    /// A download of `blob` (an object URL for it).
    pub fn new(blob: &Blob, name: String, seconds: f64, memory: u64) -> Output {
        Output {
            url: Url::create_object_url_with_blob(blob).unwrap_or_default(),
            name,
            bytes: blob.size() as u64,
            seconds,
            memory,
            stored: None,
        }
    }

    /// A download of a codec job's output `blob`: a `File` is one the worker wrote to the page's
    /// output directory, removed with the download ([`Output::revoke`]).
    pub fn built(blob: &Blob, name: String, seconds: f64, memory: u64) -> Output {
        Output {
            stored: blob.dyn_ref::<File>().map(File::name),
            ..Output::new(blob, name, seconds, memory)
        }
    }

    /// Revokes its object URL (and removes its file from the output directory).
    pub fn revoke(&self) {
        let _ = Url::revoke_object_url(&self.url);
        if let Some(name) = &self.stored {
            remove_output(name);
        }
    }
}

/// The last compression of a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CompressRun {
    /// One snapshot per file of the checkpoint, in file order.
    pub outputs: Vec<Output>,
    /// The checkpoint's shard index, offered as it is (the CLI copies it next to the snapshots).
    pub index: Option<Output>,
    /// True for a sharded checkpoint (snapshots named `<shard>.bls`).
    pub sharded: bool,
    /// Preset of the whole checkpoint.
    pub preset: &'static Preset,
    /// Name of the base checkpoint, for deltas.
    pub base: Option<String>,
    /// Sizes and entries of all files together.
    pub result: Compressed,
    /// Entry index by tensor name.
    pub by_name: HashMap<String, usize>,
    /// Seconds the worker spent on the whole job.
    pub seconds: f64,
    /// The codec worker's wasm memory in bytes at the end (its high-water mark).
    pub memory: u64,
    /// The build of the module that ran it.
    pub build: Option<Build>,
}

impl CompressRun {
    /// Revokes the object URLs of its downloads.
    pub fn revoke(&self) {
        for o in self.outputs.iter().chain(&self.index) {
            o.revoke();
        }
    }

    /// The entry of a tensor.
    pub fn entry(&self, name: &str) -> Option<&EntryInfo> {
        self.by_name.get(name).map(|&i| &self.result.entries[i])
    }
}

/// Where a snapshot's bytes are.
#[derive(Debug, Clone, PartialEq)]
pub enum SnapshotSource {
    /// A file the person gave the page.
    Blob(Blob),
    /// A file on a server, read by range (previewed tensor by tensor, never downloaded whole).
    Url(RemoteFile),
}

/// One tensor of a remote snapshot, decoded (or being decoded) in the worker.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorPreview {
    /// The tensor's name.
    pub tensor: String,
    /// What the worker reported: codec, sizes, bytes fetched, statistics.
    pub result: Option<DecodedTensor>,
    /// The one-tensor safetensors file, for download.
    pub output: Option<Output>,
    /// Why decoding failed (a checksum mismatch names the tensor).
    pub error: Option<String>,
}

/// A column of a remote snapshot's tensor list to sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreviewSort {
    /// File order.
    #[default]
    Order,
    /// Name.
    Name,
    /// Codec.
    Codec,
    /// Bytes in the snapshot.
    Stored,
    /// Original bytes.
    Original,
    /// Stored / original.
    Ratio,
}

impl PreviewSort {
    /// Every column, with its `data-sort` key.
    pub const ALL: [(PreviewSort, &'static str); 6] = [
        (PreviewSort::Order, "order"),
        (PreviewSort::Name, "name"),
        (PreviewSort::Codec, "codec"),
        (PreviewSort::Stored, "stored"),
        (PreviewSort::Original, "original"),
        (PreviewSort::Ratio, "ratio"),
    ];
}

/// A snapshot file opened in the page.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotFile {
    /// Id (unique among snapshots).
    pub id: u32,
    /// File name.
    pub name: String,
    /// Its data.
    pub source: SnapshotSource,
    /// Its index, once read.
    pub info: Option<SnapshotInfo>,
    /// The checkpoint chosen as its base (deltas).
    pub base: Option<u32>,
    /// The decompressed file.
    pub output: Option<Output>,
    /// Why reading or decoding failed.
    pub error: Option<String>,
    /// The tensor previewed last (remote snapshots).
    pub preview: Option<TensorPreview>,
}

impl SnapshotFile {
    /// The remote file, for a snapshot opened by URL.
    pub fn remote(&self) -> Option<&RemoteFile> {
        match &self.source {
            SnapshotSource::Url(r) => Some(r),
            SnapshotSource::Blob(_) => None,
        }
    }
}

/// What a codec job is about.
#[derive(Debug, Clone, PartialEq)]
pub enum JobKind {
    /// Compressing a checkpoint's files (one snapshot per file).
    Compress {
        /// Checkpoint id.
        ckpt: u32,
    },
    /// Reading a snapshot's index.
    Info {
        /// Snapshot id.
        snap: u32,
    },
    /// Decompressing snapshots, one after another.
    Decompress {
        /// Snapshot ids, in the order of the job's files.
        snaps: Vec<u32>,
    },
    /// Decoding one tensor of a snapshot (the preview of a remote one).
    DecodeTensor {
        /// Snapshot id.
        snap: u32,
        /// Tensor name.
        tensor: String,
    },
    /// Timing codecs on one tensor.
    Roundtrip {
        /// Checkpoint id.
        ckpt: u32,
        /// Tensor name.
        tensor: String,
    },
}

/// A running job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Job id (echoed by the worker).
    pub id: u32,
    /// What it does.
    pub kind: JobKind,
    /// Units done (bytes, or codecs for round trips).
    pub done: f64,
    /// Units in all.
    pub total: f64,
    /// `performance.now()` at the start.
    pub started: f64,
}

/// Everything the codec views show.
#[derive(Default)]
pub struct CodecState {
    /// Snapshot files opened for decompression.
    pub snapshots: Vec<SnapshotFile>,
    /// Codec preset id for whole files (LMC when empty).
    pub preset: String,
    /// Base checkpoint for compression (XOR deltas).
    pub base: Option<u32>,
    /// The Inshrinkerator preset's error budget as typed (the default when unset).
    pub max_error: Option<f64>,
    /// Per-tensor codec overrides, by checkpoint id.
    pub overrides: HashMap<u32, BTreeMap<String, &'static Preset>>,
    /// The last compression of each checkpoint.
    pub compressed: HashMap<u32, CompressRun>,
    /// Codec comparisons by (checkpoint, tensor).
    pub roundtrips: HashMap<(u32, String), Vec<RoundtripRow>>,
    /// The codec job running.
    pub job: Option<Job>,
    /// Error of the last codec job.
    pub error: Option<String>,
    /// The build of the module the codec worker runs, once it has started.
    pub build: Option<Build>,
    /// Shard indexes given with snapshot sets (restored as they are).
    pub snapshot_indexes: Vec<Output>,
    /// How remote snapshots' tensor lists are sorted (column, descending).
    pub preview_sort: (PreviewSort, bool),
}

impl CodecState {
    /// The preset chosen for whole files.
    pub fn preset(&self) -> &'static Preset {
        preset_by_id(&self.preset).unwrap_or(&PRESETS[0])
    }

    /// The Inshrinkerator preset's error budget (per-tensor relative L2 error).
    pub fn max_error(&self) -> f64 {
        self.max_error.unwrap_or(DEFAULT_MAX_ERROR)
    }

    /// A tensor's codec override in a checkpoint.
    pub fn override_of(&self, ckpt: u32, tensor: &str) -> Option<&'static Preset> {
        self.overrides.get(&ckpt)?.get(tensor).copied()
    }

    /// The running job, if `job` (an event's job id; `None`: any) is it.
    pub fn current(&self, job: Option<u32>) -> Option<&Job> {
        self.job
            .as_ref()
            .filter(|j| job.is_none_or(|id| id == j.id))
    }
}
