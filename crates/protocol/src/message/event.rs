//! What a worker answers ([`WorkerEvent`]) and the results a job ends with ([`JobResult`]).

use crate::bins::BinsReport;
use crate::result::{Compressed, DecodedTensor, RoundtripRow, SnapshotInfo};
use bitlens_lessons::lossy::Survey;
use bitlens_report::sidecar::Fingerprint;
use bitlens_stats::weightmap::{Element, Tile};
use bitlens_stats::{EntryDiff, FlipStats, TensorStats};
use bitlens_tensors::format::Layout;
use serde::{Deserialize, Serialize};

/// Finished items of a statistics or flips task, by item. Each list crosses to the page as one
/// byte string (its JSON, the `inspect --json` shapes; see [`json_bytes`]), which the worker
/// moves rather than copies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Results {
    /// Tensor statistics.
    Stats(#[serde(with = "json_bytes")] Vec<(usize, TensorStats)>),
    /// Flip statistics.
    Flips(#[serde(with = "json_bytes")] Vec<(usize, FlipStats)>),
    /// Flip statistics with the dequantized differences of quantized tensors.
    Diffs(#[serde(with = "json_bytes")] Vec<(usize, EntryDiff)>),
}

/// A value serialized as the bytes of its JSON. A tensor's statistics are ~1000 numbers (byte
/// histograms, bit counts): as a JavaScript object each was a property the worker's
/// `postMessage` cloned and the page's `serde_wasm_bindgen` read across the wasm boundary one by
/// one, and on a GGUF file of 412 tensors that held the page's main thread, and with it the
/// workers' next tasks (BENCHMARKS.md, "Quantized statistics at the speed of the rest"). As
/// bytes they cross as one `Uint8Array` and are parsed in wasm (exactly: the workspace's
/// `serde_json` parses floats with `float_roundtrip`).
pub mod json_bytes {
    use serde::de::{DeserializeOwned, Error as _, SeqAccess, Visitor};
    use serde::ser::Error as _;
    use serde::{Deserializer, Serialize, Serializer};
    use std::marker::PhantomData;

    /// Writes `value`'s JSON as a byte string.
    pub fn serialize<S: Serializer, T: Serialize>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        let json = serde_json::to_vec(value).map_err(S::Error::custom)?;
        s.serialize_bytes(&json)
    }

    /// Reads a value from the JSON in a byte string (or in a sequence of bytes, as formats
    /// without byte strings write one).
    pub fn deserialize<'de, D: Deserializer<'de>, T: DeserializeOwned>(
        d: D,
    ) -> Result<T, D::Error> {
        d.deserialize_byte_buf(JsonBytes(PhantomData))
    }

    struct JsonBytes<T>(PhantomData<T>);

    impl<'de, T: DeserializeOwned> Visitor<'de> for JsonBytes<T> {
        type Value = T;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("the bytes of a JSON document")
        }

        fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<T, E> {
            serde_json::from_slice(v).map_err(E::custom)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
            let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
            while let Some(b) = seq.next_element::<u8>()? {
                bytes.push(b);
            }
            serde_json::from_slice(&bytes).map_err(A::Error::custom)
        }
    }
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
    /// Why this build (and, threaded, this pool size) was chosen: web/worker.js's `chooseBuild`.
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
    /// A checkpoint file's layout, and for a remote file its fingerprint (size and header hash,
    /// from the bytes read for the layout) that a sidecar is checked against.
    Layout(Box<Layout>, Option<Box<Fingerprint>>),
    /// The lossy lesson's non-uniform against uniform bins.
    Bins(Box<BinsReport>),
    /// The lossy lesson's survey.
    LossySurvey(Box<Survey>),
    /// A weight map's cells.
    WeightMap(Box<Tile>),
    /// Lanes of a tensor, exactly.
    Elements(Vec<Element>),
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
