//! What the page asks a worker ([`WorkerRequest`]) and the files and spans a request names.

use crate::choice::{ComparedCodec, CompressOptions};
use bitlens_stats::weightmap::{Layer, Window};
use bitlens_tensors::format::{ElementType, Entry};
use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};

/// A file on a server, read with `Range` requests (its size known from the probe the page made).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteFile {
    /// The `http(s)` URL.
    pub url: String,
    /// Its size in bytes (from the probe's `Content-Range`).
    pub size: u64,
    /// Send cookies / credentials with the requests (only when the embedding page opts in).
    pub credentials: bool,
}

/// Where a worker reads a file: a `Blob` the person gave the page (`J`), or a URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FileRef<J> {
    /// A local file (a `Blob` / `File`).
    Blob(J),
    /// A remote file.
    Url(RemoteFile),
}

/// One tensor of a statistics task: its stored bytes, one range of the task's file. A worker reads
/// consecutive spans that follow each other in the file closely in one pass (through the gaps
/// between them), any others apart; spans in file order read fastest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsSpan {
    /// Row of the tensor in its checkpoint (echoed in the result).
    pub item: usize,
    /// Its element type: a plain dtype, or a ggml block type (its blocks in file order).
    pub ty: ElementType,
    /// Offset of its bytes in the file.
    pub offset: u64,
    /// Its byte length.
    pub bytes: u64,
}

/// One tensor of a flips task: the same tensor in two checkpoints' files.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlipSpan<J> {
    /// Pair index in the comparison (echoed in the result).
    pub item: usize,
    /// Its dtype.
    pub dtype: Dtype,
    /// The file of checkpoint A.
    pub a: FileRef<J>,
    /// Offset of the tensor in `a`.
    pub a_offset: u64,
    /// The file of checkpoint B.
    pub b: FileRef<J>,
    /// Offset of the tensor in `b`.
    pub b_offset: u64,
    /// Byte length of the tensor (in each file).
    pub bytes: u64,
}

/// One tensor of an entry flips task: the same tensor in two checkpoints' files, each described
/// by its [`Entry`] (any [`bitlens_tensors::format::Data`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryPair<J> {
    /// Pair index in the comparison (echoed in the result).
    pub item: usize,
    /// The file of checkpoint A.
    pub a: FileRef<J>,
    /// The tensor in `a`.
    pub a_entry: Entry,
    /// The file of checkpoint B.
    pub b: FileRef<J>,
    /// The tensor in `b`.
    pub b_entry: Entry,
}

/// One file of a compress / decompress job, with the base file for deltas.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFile<J> {
    /// The file (safetensors to compress, a snapshot to decompress).
    pub blob: J,
    /// The base checkpoint's file.
    pub base: Option<J>,
}

/// What the page asks a worker to do. `J` is how the files (`Blob`s) travel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkerRequest<J> {
    /// Statistics of tensors of one file.
    Stats {
        /// Task id.
        task: u32,
        /// The file.
        file: FileRef<J>,
        /// Its tensors.
        spans: Vec<StatsSpan>,
    },
    /// Bit flips between the same tensors of two checkpoints.
    Flips {
        /// Task id.
        task: u32,
        /// The tensor pairs.
        spans: Vec<FlipSpan<J>>,
    },
    /// Compress safetensors files into snapshots, one after another.
    Compress {
        /// Job id.
        task: u32,
        /// The files.
        files: Vec<JobFile<J>>,
        /// Codec choices.
        options: CompressOptions,
    },
    /// Decompress snapshots into the original files, one after another.
    Decompress {
        /// Job id.
        task: u32,
        /// The snapshots.
        files: Vec<JobFile<J>>,
        /// Bytes of all the original files (for the progress bar).
        total: u64,
    },
    /// Read a snapshot's index.
    SnapshotInfo {
        /// Job id.
        task: u32,
        /// The snapshot.
        file: FileRef<J>,
    },
    /// Decode one tensor of a snapshot into a safetensors file holding only it (what
    /// `bitlens decompress SNAPSHOT --tensor NAME` writes), with its statistics.
    DecodeTensor {
        /// Job id.
        task: u32,
        /// The snapshot.
        file: FileRef<J>,
        /// The tensor's name.
        tensor: String,
        /// The base checkpoint's file, for a delta snapshot (refused without one).
        base: Option<FileRef<J>>,
    },
    /// Time codecs on one tensor.
    Roundtrip {
        /// Job id.
        task: u32,
        /// The file holding the tensor.
        blob: J,
        /// Offset of its bytes.
        offset: u64,
        /// Its byte length.
        bytes: u64,
        /// Its dtype.
        dtype: Dtype,
        /// The codecs, in the order of the result's rows.
        codecs: Vec<ComparedCodec>,
    },
    /// Read the layout of a checkpoint file of any format (`bitlens_tensors::format::open`).
    Describe {
        /// Task id.
        task: u32,
        /// The file.
        file: FileRef<J>,
    },
    /// Differences between the same tensors of two checkpoints, each pair streamed in lockstep in
    /// element order as `bitlens diff` does (`bitlens_stats::entry::entry_diff`): the pairs
    /// [`FlipSpan`]s cannot describe.
    EntryFlips {
        /// Task id.
        task: u32,
        /// The tensor pairs.
        pairs: Vec<EntryPair<J>>,
    },
    /// Time codecs on one tensor of any format: its bytes materialised in element order
    /// (`bitlens_tensors::format::bytes`), then timed as [`WorkerRequest::Roundtrip`] does.
    RoundtripEntry {
        /// Job id.
        task: u32,
        /// The file holding the tensor.
        file: FileRef<J>,
        /// The tensor.
        entry: Entry,
        /// The codecs, in the order of the result's rows.
        codecs: Vec<ComparedCodec>,
    },
    /// Statistics of tensors of one file, each streamed in element order as the CLI does
    /// (`bitlens_stats::entry::entry_stats`): the tensors [`StatsSpan`]s cannot describe, whose
    /// stored bytes are not one range (a deflated `.npz` member, a PyTorch view).
    EntryStats {
        /// Task id.
        task: u32,
        /// The file.
        file: FileRef<J>,
        /// Its tensors, each with its row in the checkpoint (echoed in the result).
        entries: Vec<(usize, Entry)>,
    },
    /// The lossy lesson's Inshrinkerator view: non-uniform against uniform bins on the values of
    /// one tensor (f32, f16 or bf16), `bitlens_lessons::bins::bins_lesson`.
    InshrinkBins {
        /// Task id.
        task: u32,
        /// The file holding the tensor (a local file or a URL).
        file: FileRef<J>,
        /// Offset of its first value.
        offset: u64,
        /// Bytes of the values measured.
        bytes: u64,
        /// Its dtype.
        dtype: Dtype,
        /// The non-uniform quantizer's `β`, in [0, 1].
        balance: f64,
    },
    /// A weight map of one tensor: the cells of `window` for `layer`
    /// (`bitlens_stats::weightmap::weight_map`), read from the window's bytes only.
    WeightMap {
        /// Task id.
        task: u32,
        /// The file holding the tensor (a local file or a URL).
        file: FileRef<J>,
        /// The tensor.
        entry: Entry,
        /// For the changes layer: the tensor in the checkpoint it changed to.
        other: Option<(FileRef<J>, Entry)>,
        /// The region and block size.
        window: Window,
        /// What a cell aggregates.
        layer: Layer,
    },
    /// A few lanes of one tensor read exactly (`bitlens_stats::weightmap::elements`).
    Elements {
        /// Task id.
        task: u32,
        /// The file holding the tensor (a local file or a URL).
        file: FileRef<J>,
        /// The tensor.
        entry: Entry,
        /// The first lane.
        start: u64,
        /// How many lanes (at most `bitlens_stats::weightmap::MAX_ELEMENTS`).
        count: u64,
    },
    /// The lossy lesson's survey: every lossy setting it offers encoded, decoded back and
    /// compared on the values of one tensor (`bitlens_lessons::lossy::survey`).
    LossySurvey {
        /// Task id.
        task: u32,
        /// The file holding the tensor (a local file or a URL).
        file: FileRef<J>,
        /// Offset of its first value.
        offset: u64,
        /// Bytes of the values measured.
        bytes: u64,
        /// Its dtype (f32, f16 or bf16).
        dtype: Dtype,
    },
}

impl<J> WorkerRequest<J> {
    /// The task (or job) id.
    pub fn task(&self) -> u32 {
        match self {
            WorkerRequest::Stats { task, .. }
            | WorkerRequest::Flips { task, .. }
            | WorkerRequest::Compress { task, .. }
            | WorkerRequest::Decompress { task, .. }
            | WorkerRequest::SnapshotInfo { task, .. }
            | WorkerRequest::DecodeTensor { task, .. }
            | WorkerRequest::Roundtrip { task, .. }
            | WorkerRequest::Describe { task, .. }
            | WorkerRequest::EntryStats { task, .. }
            | WorkerRequest::EntryFlips { task, .. }
            | WorkerRequest::RoundtripEntry { task, .. }
            | WorkerRequest::InshrinkBins { task, .. }
            | WorkerRequest::LossySurvey { task, .. }
            | WorkerRequest::WeightMap { task, .. }
            | WorkerRequest::Elements { task, .. } => *task,
        }
    }
}
