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
//!   the tensors only): `Done` with [`JobResult::Layout`] (a remote file's with its sidecar
//!   fingerprint).
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
//! - a weight map's cells (`WeightMap`): `Done` with [`JobResult::WeightMap`]; a few lanes read
//!   exactly (`Elements`): `Done` with [`JobResult::Elements`].
//!
//! [`request`] holds what the page asks, [`event`] what the worker answers.

mod event;
mod request;

pub use event::{Batch, Build, BuildKind, FileDone, FileOutput, JobResult, Results, WorkerEvent};
pub use request::{EntryPair, FileRef, FlipSpan, JobFile, RemoteFile, StatsSpan, WorkerRequest};

#[cfg(test)]
mod tests;
