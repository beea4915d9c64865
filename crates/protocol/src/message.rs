//! The messages between the page and a worker. The page posts one [`WorkerRequest`] per task (the
//! statistics pool) or job (the codec worker); the worker answers with [`WorkerEvent`]s, every one
//! naming its task, and always ends a task with `Done` or `Failed`.
//!
//! - statistics / flips: `Update`s (at most every 100 ms) with the bytes read and the items
//!   finished since the last one, then `Done` with the rest ([`JobResult::Items`]).
//! - compress / decompress: `Progress` (at most every 100 ms), each output file as `Chunk`s (their
//!   `ArrayBuffer`s transferred, not copied; or one `Chunk` holding the whole file as a `File` the
//!   worker wrote to the origin private file system) then `File`, and `Done`. Compress stops at the first
//!   failure (as the CLI does); decompress reports a failed file and goes on with the next.
//! - one tensor of a snapshot (`DecodeTensor`): `Progress` (bytes of the tensor decoded), the
//!   one-tensor safetensors file as `Chunk`s then `File`, and `Done` with its statistics
//!   ([`JobResult::Tensor`]).
//! - snapshot index, codec comparison: `Progress` (comparison: one per codec), then `Done` with
//!   the result.
//! - a checkpoint's layout (`Describe`: GGUF, PyTorch, NumPy, read from the bytes that describe
//!   the tensors only): `Done` with [`JobResult::Layout`].
//! - statistics of tensors stored other than as a plain byte range (`EntryStats`: ggml
//!   block-quantized, deflated `.npz` members, PyTorch views): as statistics, `Update`s then `Done`
//!   with [`JobResult::Items`].
//! - differences between the same tensor in two checkpoints when either is not a plain byte
//!   range of a dtype (`EntryFlips`: deflated `.npz` members, PyTorch views, ggml blocks — their
//!   dequantized values too): as flips, `Update`s then `Done` with [`JobResult::Items`] of
//!   [`Results::Diffs`].
//! - codec comparison of a tensor stored other than as a plain byte range (`RoundtripEntry`): as
//!   the codec comparison.
//! - the lossy lesson's non-uniform bins (`InshrinkBins`): `Done` with [`JobResult::Bins`]; its
//!   survey of the lossy codecs (`LossySurvey`): `Done` with [`JobResult::LossySurvey`].
//! - the codec worker also says once, before any job, which build of the module it runs (`Ready`).

use crate::bins::BinsReport;
use crate::choice::{ComparedCodec, CompressOptions};
use crate::result::{Compressed, DecodedTensor, RoundtripRow, SnapshotInfo};
use bitlens_lessons::lossy::Survey;
use bitlens_stats::{EntryDiff, FlipStats, TensorStats};
use bitlens_tensors::format::{Entry, Layout};
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

/// One tensor of a statistics task: its bytes in the task's file. The spans of a task are
/// contiguous in the file and in file order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsSpan {
    /// Row of the tensor in its checkpoint (echoed in the result).
    pub item: usize,
    /// Its dtype.
    pub dtype: Dtype,
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
    /// (`bitlens_stats::entry::entry_stats`): the tensors [`StatsSpan`]s cannot describe.
    EntryStats {
        /// Task id.
        task: u32,
        /// The file.
        file: FileRef<J>,
        /// Its tensors, each with its row in the checkpoint (echoed in the result).
        entries: Vec<(usize, Entry)>,
    },
    /// The lossy lesson's Inshrinkerator view: non-uniform against uniform bins on the values of
    /// one tensor (f32, f16 or bf16), `bitlens_inshrink::lesson::bins_lesson`.
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
    /// The lossy lesson's survey: every lossy setting it offers encoded, decoded back and
    /// compared on the values of one tensor (`bitlens_codecs::lesson::lossy::survey`).
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
            | WorkerRequest::LossySurvey { task, .. } => *task,
        }
    }
}

/// Finished items of a statistics or flips task, by item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Results {
    /// Tensor statistics.
    Stats(Vec<(usize, TensorStats)>),
    /// Flip statistics.
    Flips(Vec<(usize, FlipStats)>),
    /// Flip statistics with the dequantized differences of quantized tensors.
    Diffs(Vec<(usize, EntryDiff)>),
}

impl Results {
    /// True when no item is in it.
    pub fn is_empty(&self) -> bool {
        match self {
            Results::Stats(v) => v.is_empty(),
            Results::Flips(v) => v.is_empty(),
            Results::Diffs(v) => v.is_empty(),
        }
    }
}

/// Progress of a statistics or flips task since the last report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// Bytes read.
    pub bytes: u64,
    /// Items finished.
    pub results: Results,
}

/// Which build of the module a worker runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BuildKind {
    /// Wasm threads: shared memory, PLMC on a rayon pool of workers.
    Threads,
    /// Single-threaded.
    Single,
}

impl BuildKind {
    /// `threads` or `single`.
    pub const fn name(self) -> &'static str {
        match self {
            BuildKind::Threads => "threads",
            BuildKind::Single => "single",
        }
    }
}

/// The build of the module a worker runs, and why it is not the threaded one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Build {
    /// Threaded or single-threaded.
    pub kind: BuildKind,
    /// Threads the codecs run on.
    pub threads: u32,
    /// Why the single-threaded build was chosen.
    pub reason: Option<String>,
}

/// What a file of a compress / decompress job gave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FileOutput {
    /// Compress: the snapshot's sizes and entries.
    Snapshot(Compressed),
    /// Decompress: the index of the snapshot the file was restored from.
    Restored(SnapshotInfo),
    /// Decode one tensor: the file holds only the tensor of this name.
    Tensor(String),
}

/// One file of a compress / decompress job, done (its bytes came as `Chunk`s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDone {
    /// Seconds the worker spent on it.
    pub seconds: f64,
    /// The worker's wasm memory in bytes afterwards.
    pub memory: u64,
    /// What it gave.
    pub output: FileOutput,
}

/// What a finished task or job gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum JobResult {
    /// Statistics / flips: the bytes and items since the last `Update`.
    Items(Batch),
    /// Compress / decompress: each file came with its own `File` event.
    Files,
    /// A snapshot's index.
    Info(SnapshotInfo),
    /// A codec comparison, one row per codec asked for.
    Roundtrip(Vec<RoundtripRow>),
    /// One tensor decoded from a snapshot (its file came as `Chunk`s and a `File` event).
    Tensor(Box<DecodedTensor>),
    /// A checkpoint file's layout.
    Layout(Box<Layout>),
    /// The lossy lesson's non-uniform against uniform bins.
    Bins(Box<BinsReport>),
    /// The lossy lesson's survey.
    LossySurvey(Box<Survey>),
}

/// What a worker reports. `J` is how output chunks (`ArrayBuffer`s) travel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkerEvent<J> {
    /// The codec worker loaded its module (once, before any job).
    Ready(Build),
    /// Progress of a statistics or flips task.
    Update {
        /// Task id.
        task: u32,
        /// Bytes and items since the last report.
        batch: Batch,
    },
    /// Progress of a codec job: bytes (compress, decompress, index) or codecs (comparison).
    Progress {
        /// Job id.
        task: u32,
        /// Units done.
        done: u64,
        /// Units in all.
        total: u64,
    },
    /// The next bytes of an output file.
    Chunk {
        /// Job id.
        task: u32,
        /// Index of the file in the job.
        file: usize,
        /// The bytes (an `ArrayBuffer`, transferred; or the whole file, a `File`).
        chunk: J,
        /// Their length.
        bytes: u64,
    },
    /// A file of a compress / decompress job is done, or failed.
    File {
        /// Job id.
        task: u32,
        /// Index of the file in the job.
        file: usize,
        /// What it gave, or why it failed.
        result: Result<FileDone, String>,
    },
    /// A task or job finished.
    Done {
        /// Task or job id.
        task: u32,
        /// Seconds the worker spent on it.
        seconds: f64,
        /// The worker's wasm memory in bytes at the end (its high-water mark).
        memory: u64,
        /// What it gave.
        result: JobResult,
    },
    /// A task or job failed (`None`: a request the worker could not read).
    Failed {
        /// Task or job id, if known.
        task: Option<u32>,
        /// What went wrong (the core's typed error).
        message: String,
    },
}

impl<J> WorkerEvent<J> {
    /// The task or job the event is about (`None`: `Ready`, or a request the worker could not read).
    pub fn task(&self) -> Option<u32> {
        match self {
            WorkerEvent::Ready(_) => None,
            WorkerEvent::Failed { task, .. } => *task,
            WorkerEvent::Update { task, .. }
            | WorkerEvent::Progress { task, .. }
            | WorkerEvent::Chunk { task, .. }
            | WorkerEvent::File { task, .. }
            | WorkerEvent::Done { task, .. } => Some(*task),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choice::{Choice, CodecKind, Contender, PeerCodec};
    use crate::result::Roundtrip;
    use bitlens_tensors::format::{Data, ElementType, Format, GgmlType, MetaValue};

    fn round_trip<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(v: T) {
        let json = serde_json::to_string(&v).unwrap();
        assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v, "{json}");
    }

    /// A PyTorch view: the transpose of a 4 × 6 `F32` storage.
    fn view() -> Entry {
        Entry {
            name: "t".into(),
            ty: ElementType::Dtype(Dtype::F32),
            shape: vec![6, 4],
            data: Data::Strided {
                offset: 64,
                len: 96,
                storage_offset: 0,
                strides: vec![1, 6],
            },
        }
    }

    #[test]
    fn requests_round_trip() {
        let files = vec![JobFile {
            blob: "a.safetensors".to_owned(),
            base: Some("b.safetensors".to_owned()),
        }];
        let requests = [
            WorkerRequest::Stats {
                task: 1,
                file: FileRef::Blob("f".to_owned()),
                spans: vec![StatsSpan {
                    item: 3,
                    dtype: Dtype::BF16,
                    offset: 8,
                    bytes: 1 << 40,
                }],
            },
            WorkerRequest::Flips {
                task: 2,
                spans: vec![FlipSpan {
                    item: 0,
                    dtype: Dtype::F32,
                    a: FileRef::Blob("a".into()),
                    a_offset: 0,
                    b: FileRef::Url(RemoteFile {
                        url: "http://127.0.0.1/b.safetensors".into(),
                        size: 1 << 33,
                        credentials: false,
                    }),
                    b_offset: 4,
                    bytes: 16,
                }],
            },
            WorkerRequest::Compress {
                task: 3,
                files: files.clone(),
                options: CompressOptions {
                    whole: Choice::neuzip(3),
                    overrides: [("t".to_owned(), Choice::new(CodecKind::Stored))].into(),
                    inshrink: None,
                },
            },
            WorkerRequest::Decompress {
                task: 4,
                files,
                total: 99,
            },
            WorkerRequest::SnapshotInfo {
                task: 5,
                file: FileRef::Blob("s.bls".into()),
            },
            WorkerRequest::DecodeTensor {
                task: 6,
                file: FileRef::Url(RemoteFile {
                    url: "http://127.0.0.1:8000/model.bls".into(),
                    size: 1 << 34,
                    credentials: true,
                }),
                tensor: "encoder.layer.0.attention.self.query.weight".into(),
                base: Some(FileRef::Blob("base.safetensors".into())),
            },
            WorkerRequest::Roundtrip {
                task: 7,
                blob: "f".into(),
                offset: 8,
                bytes: 64,
                dtype: Dtype::F16,
                codecs: vec![
                    ComparedCodec {
                        label: "LMC".into(),
                        codec: Contender::Bitlens(Choice::new(CodecKind::Lmc)),
                    },
                    ComparedCodec {
                        label: "zstd".into(),
                        codec: Contender::Peer(PeerCodec::Zstd),
                    },
                ],
            },
            WorkerRequest::Describe {
                task: 8,
                file: FileRef::Blob("model.gguf".into()),
            },
            WorkerRequest::EntryStats {
                task: 9,
                file: FileRef::Blob("model.npz".into()),
                entries: vec![(
                    2,
                    Entry {
                        name: "w".into(),
                        ty: ElementType::Ggml(GgmlType(12)),
                        shape: vec![256, 2],
                        data: Data::Deflated {
                            offset: 30,
                            compressed: 100,
                            skip: 128,
                            len: 288,
                        },
                    },
                )],
            },
            WorkerRequest::EntryFlips {
                task: 10,
                pairs: vec![EntryPair {
                    item: 4,
                    a: FileRef::Blob("a.pt".into()),
                    a_entry: view(),
                    b: FileRef::Url(RemoteFile {
                        url: "http://127.0.0.1/b.pt".into(),
                        size: 1 << 20,
                        credentials: false,
                    }),
                    b_entry: view(),
                }],
            },
            WorkerRequest::RoundtripEntry {
                task: 11,
                file: FileRef::Blob("a.pt".into()),
                entry: view(),
                codecs: vec![ComparedCodec {
                    label: "zstd".into(),
                    codec: Contender::Peer(PeerCodec::Zstd),
                }],
            },
            WorkerRequest::InshrinkBins {
                task: 12,
                file: FileRef::Blob("w.safetensors".into()),
                offset: 64,
                bytes: 1 << 19,
                dtype: Dtype::BF16,
                balance: 0.5,
            },
            WorkerRequest::LossySurvey {
                task: 13,
                file: FileRef::Url(RemoteFile {
                    url: "https://example.org/w.safetensors".into(),
                    size: 1 << 20,
                    credentials: false,
                }),
                offset: 64,
                bytes: 1 << 10,
                dtype: Dtype::F32,
            },
        ];
        for (i, r) in requests.into_iter().enumerate() {
            assert_eq!(r.task(), i as u32 + 1);
            round_trip(r);
        }
    }

    #[test]
    fn events_round_trip() {
        let info = SnapshotInfo {
            size: 10,
            original_size: 20,
            lossy: false,
            delta: true,
            base_file_size: Some(20),
            entries: Vec::new(),
            inshrink: None,
        };
        let events: Vec<WorkerEvent<String>> = vec![
            WorkerEvent::Ready(Build {
                kind: BuildKind::Single,
                threads: 1,
                reason: Some("not isolated".into()),
            }),
            WorkerEvent::Update {
                task: 1,
                batch: Batch {
                    bytes: 4 << 20,
                    results: Results::Stats(Vec::new()),
                },
            },
            WorkerEvent::Progress {
                task: 2,
                done: 1,
                total: 9,
            },
            WorkerEvent::Chunk {
                task: 2,
                file: 0,
                chunk: "buffer".into(),
                bytes: 6,
            },
            WorkerEvent::File {
                task: 2,
                file: 0,
                result: Ok(FileDone {
                    seconds: 0.5,
                    memory: 1 << 20,
                    output: FileOutput::Restored(info.clone()),
                }),
            },
            WorkerEvent::File {
                task: 2,
                file: 1,
                result: Err("checksum mismatch".into()),
            },
            WorkerEvent::Done {
                task: 2,
                seconds: 1.0,
                memory: 1 << 20,
                result: JobResult::Roundtrip(vec![RoundtripRow {
                    label: "LMC".into(),
                    result: Roundtrip {
                        codec: "lmc".into(),
                        lossy: false,
                        bytes: 4,
                        stored_bytes: 2,
                        ratio: 0.5,
                        encode_seconds: 0.1,
                        decode_seconds: 0.1,
                        error: None,
                    },
                }]),
            },
            WorkerEvent::Done {
                task: 3,
                seconds: 0.0,
                memory: 0,
                result: JobResult::Info(info),
            },
            WorkerEvent::Done {
                task: 3,
                seconds: 0.0,
                memory: 0,
                result: JobResult::Layout(Box::new(Layout {
                    format: Format::Gguf,
                    kind: "GGUF v3".into(),
                    file_size: 1000,
                    entries: Vec::new(),
                    metadata: vec![
                        ("general.name".into(), MetaValue::Str("tiny".into())),
                        (
                            "general.alignment".into(),
                            MetaValue::Array(vec![MetaValue::UInt(32), MetaValue::Float(0.5)]),
                        ),
                    ],
                })),
            },
            WorkerEvent::File {
                task: 4,
                file: 0,
                result: Ok(FileDone {
                    seconds: 0.1,
                    memory: 1 << 20,
                    output: FileOutput::Tensor("w".into()),
                }),
            },
            WorkerEvent::Done {
                task: 4,
                seconds: 0.1,
                memory: 1 << 20,
                result: JobResult::Tensor(Box::new(DecodedTensor {
                    name: "w".into(),
                    codec: "neuzip-m3".into(),
                    lossy: true,
                    bytes: 8,
                    stored_bytes: 5,
                    file_bytes: 8 + 64,
                    fetched: 70_000,
                    stats: {
                        let mut acc = bitlens_stats::Accumulator::new(Dtype::F32, 8);
                        acc.update(&[0, 0, 128, 63, 0, 0, 0, 192]).unwrap();
                        acc.finish().unwrap()
                    },
                })),
            },
            WorkerEvent::Done {
                task: 5,
                seconds: 0.2,
                memory: 1 << 20,
                result: JobResult::Bins(Box::new(crate::bins::BinsReport {
                    values: 3,
                    balance: 0.5,
                    uniform_limit: 256,
                    lo: -1.0,
                    hi: 1.0,
                    histogram: vec![1, 0, 2],
                    rows: vec![crate::bins::BinsRow {
                        bins: 4,
                        nonuniform: crate::bins::BinsFit {
                            centroids: vec![-1.0, 0.0, 0.5, 1.0],
                            rel_l2: 0.01,
                            max_abs: 0.25,
                        },
                        uniform: crate::bins::BinsFit {
                            centroids: vec![-1.0, -1.0 / 3.0, 1.0 / 3.0, 1.0],
                            rel_l2: 0.1,
                            max_abs: 1.0 / 3.0,
                        },
                    }],
                    fewest: vec![crate::bins::BinsFewest {
                        bins: 4,
                        error: 0.01,
                        nonuniform: 4,
                        uniform: None,
                    }],
                })),
            },
            WorkerEvent::Done {
                task: 6,
                seconds: 0.2,
                memory: 1 << 20,
                result: JobResult::LossySurvey(Box::new(
                    bitlens_lessons::lossy::survey(
                        // Four values whose errors are dyadic, so JSON carries every float exactly.
                        &[0, 0, 128, 63, 0, 0, 0, 192, 0, 0, 64, 64, 0, 0, 0, 63],
                        bitlens_codecs::float::FloatFormat::F32,
                    )
                    .unwrap(),
                )),
            },
            WorkerEvent::Failed {
                task: None,
                message: "unreadable request".into(),
            },
        ];
        for e in events {
            round_trip(e);
        }
        assert_eq!(
            serde_json::to_string(&BuildKind::Threads).unwrap(),
            format!("\"{}\"", BuildKind::Threads.name())
        );
        assert!(Results::Flips(Vec::new()).is_empty());
        assert!(Results::Diffs(Vec::new()).is_empty());
        // The flip statistics travel as in `Results::Flips`; the dequantized differences too.
        round_trip(bitlens_stats::DequantDiff {
            values: 64,
            changed: 2,
            changed_fraction: 2.0 / 64.0,
            nonfinite: 1,
            max_abs_diff: 0.5,
            mean_abs_diff: 0.75 / 63.0,
            relative_l2: None,
        });
    }
}
