//! The codec panel: its own state ([`CodecState`], what the views read) and messages
//! ([`CodecMsg`]), handled by [`CodecPanel::update`] — compress the active checkpoint (one snapshot
//! per file, deltas against the base checkpoint's file of the same name), decompress one or several
//! snapshots, read snapshot indexes, preview a remote snapshot (its index read by range, one chosen
//! tensor decoded with its statistics: [`CodecPanel::open_remote`]), time codecs on a tensor — on
//! top of the codec worker ([`runner::CodecRunner`]); the worker's reports are handled in
//! [`reports`], the snapshot jobs (open, index, restore, decode one tensor) in [`snapshots`].
//!
//! The panel reads the app's checkpoints through a [`Ctx`] and reports problems into its error
//! list; what the app must know of its jobs — a snapshot's index read, a tensor decoded — it
//! leaves as [`News`] ([`CodecPanel::take_news`]): the app models each snapshot as a checkpoint
//! whose rows get their statistics from the decoded tensors. [`CodecPanel::want_preview`] decodes
//! the tensor the app shows, as soon as the codec worker is free.

mod reports;
pub mod runner;
mod snapshots;
pub mod state;

pub use state::{
    CodecState, CompressRun, Job, JobKind, Output, PreviewSort, SnapshotFile, SnapshotSource,
    TensorPreview,
};

use crate::model::checkpoint::Checkpoint;
use crate::model::codec::{base_file, comparison, options, preset_by_id, Compressed};
use crate::ui::io::blob::BlobBuilder;
use crate::ui::jobs::{entry_of, now};
use crate::ui::loader::LoadError;
use bitlens_protocol::js::{Event, Js, Request};
use bitlens_protocol::{FileRef, JobFile, WorkerRequest};
use runner::CodecRunner;
use std::collections::{BTreeMap, HashMap};
use web_sys::Blob;
use yew::Callback;

/// Messages of the codec panel.
pub enum CodecMsg {
    /// Choose the whole-file codec preset.
    SetPreset(String),
    /// Choose the base checkpoint for compression.
    SetBase(Option<u32>),
    /// Set the Inshrinkerator preset's error budget (`None`: not a number ≥ 0, ignored).
    SetMaxError(Option<f64>),
    /// Compress the active checkpoint.
    Compress,
    /// Stop the codec job.
    Cancel,
    /// The codec worker reported.
    Worker(Event),
    /// Choose a snapshot's base checkpoint.
    SnapshotBase(u32, Option<u32>),
    /// Decompress a snapshot.
    Decompress(u32),
    /// Decompress every snapshot that is ready (index read, base chosen for deltas).
    DecompressAll,
    /// Set (or clear) a tensor's codec override in the active checkpoint.
    SetOverride(String, Option<String>),
    /// Run the codec comparison on a tensor of the active checkpoint.
    CompareCodecs(String),
    /// Decode one tensor of a snapshot (snapshot id, tensor name) for its preview.
    PreviewTensor(u32, String),
    /// Sort remote snapshots' tensor lists by a column (again: reverse).
    SortPreview(PreviewSort),
}

/// What the panel's jobs tell the app.
#[derive(Debug, Clone, PartialEq)]
pub enum News {
    /// The index of snapshot `.0` was read (its `info` is set).
    Index(u32),
    /// A tensor of a snapshot was decoded: the statistics of its decoded bytes.
    Decoded {
        /// Snapshot id.
        snap: u32,
        /// Tensor name.
        tensor: String,
        /// Statistics of its decoded bytes.
        stats: Box<bitlens_stats::TensorStats>,
    },
}

/// What the panel reads of the app — the loaded checkpoints — and where it reports problems.
pub struct Ctx<'a> {
    /// Loaded checkpoints.
    pub checkpoints: &'a [Checkpoint],
    /// The data of each checkpoint's files, by checkpoint id.
    pub blobs: &'a HashMap<u32, Vec<Blob>>,
    /// The shard index file of each sharded checkpoint that came with one, by checkpoint id.
    pub indexes: &'a HashMap<u32, (String, Blob)>,
    /// The active checkpoint.
    pub active: Option<u32>,
    /// The app's error list.
    pub errors: &'a mut Vec<LoadError>,
}

impl Ctx<'_> {
    /// A checkpoint by id.
    pub fn checkpoint(&self, id: u32) -> Option<&Checkpoint> {
        self.checkpoints.iter().find(|c| c.id == id)
    }
}

/// The codec panel: its state, the codec worker and the bookkeeping of the running job.
pub struct CodecPanel {
    /// What the views show.
    pub state: CodecState,
    runner: CodecRunner,
    /// Snapshots whose index is still to be read.
    pending_info: Vec<u32>,
    /// The snapshots (download, result) of the running compress job so far, in file order.
    compress_parts: Vec<(Output, Compressed)>,
    /// The output file being received from the codec worker: (job, file index, its chunks).
    building: Option<(u32, usize, BlobBuilder)>,
    next_snapshot: u32,
    /// A tensor to decode (snapshot, tensor) once the codec worker is free.
    pending_preview: Option<(u32, String)>,
    /// What the app has not been told yet.
    news: Vec<News>,
}

impl CodecPanel {
    /// A panel whose codec worker reports to `events`.
    pub fn new(events: Callback<Event>) -> Self {
        CodecPanel {
            state: CodecState::default(),
            runner: CodecRunner::new(events),
            pending_info: Vec::new(),
            compress_parts: Vec::new(),
            building: None,
            next_snapshot: 0,
            pending_preview: None,
            news: Vec::new(),
        }
    }

    /// Handles a message; false when the page need not be drawn again.
    pub fn update(&mut self, msg: CodecMsg, mut ctx: Ctx) -> bool {
        match msg {
            CodecMsg::SetPreset(id) => self.state.preset = id,
            CodecMsg::SetBase(b) => self.state.base = b,
            CodecMsg::SetMaxError(e) => {
                if let Some(e) = e.filter(|e| e.is_finite() && *e >= 0.0) {
                    self.state.max_error = Some(e);
                }
            }
            CodecMsg::Compress => self.start_compress(&mut ctx),
            CodecMsg::Cancel => {
                self.runner.cancel();
                self.drop_partial();
                if let Some(JobKind::DecodeTensor { snap, .. }) =
                    self.state.job.take().map(|j| j.kind)
                {
                    if let Some(p) = self
                        .state
                        .snapshots
                        .iter_mut()
                        .find(|s| s.id == snap)
                        .and_then(|s| s.preview.as_mut())
                    {
                        p.error = Some("cancelled".into());
                    }
                }
                self.state.error = Some("cancelled".into());
                self.next_info(&mut ctx);
            }
            CodecMsg::Worker(e) => return self.on_event(e, &mut ctx),
            CodecMsg::SnapshotBase(snap, base) => {
                if let Some(s) = self.state.snapshots.iter_mut().find(|s| s.id == snap) {
                    s.base = base;
                }
            }
            CodecMsg::Decompress(snap) => self.start_decompress(vec![snap], &mut ctx),
            CodecMsg::DecompressAll => {
                let snaps = self.ready_snapshots();
                if !snaps.is_empty() {
                    self.start_decompress(snaps, &mut ctx);
                }
            }
            CodecMsg::SetOverride(tensor, preset) => {
                let Some(id) = ctx.active else {
                    return false;
                };
                let map = self.state.overrides.entry(id).or_default();
                match preset.as_deref().and_then(preset_by_id) {
                    Some(p) => {
                        map.insert(tensor, p);
                    }
                    None => {
                        map.remove(&tensor);
                    }
                }
            }
            CodecMsg::CompareCodecs(tensor) => self.start_roundtrip(tensor, &mut ctx),
            CodecMsg::PreviewTensor(snap, tensor) => self.start_preview(snap, tensor, &mut ctx),
            CodecMsg::SortPreview(col) => {
                let (current, desc) = self.state.preview_sort;
                self.state.preview_sort = (col, current == col && !desc);
            }
        }
        true
    }

    /// Starts the codec worker now, so it reports its build before the first job.
    pub fn warm(&mut self, ctx: &mut Ctx) {
        if let Err(e) = self.runner.warm() {
            self.codec_failed(ctx, "codec worker".into(), e);
        }
    }

    /// Forgets what belongs to a removed checkpoint.
    pub fn forget(&mut self, id: u32) {
        if let Some(r) = self.state.compressed.remove(&id) {
            r.revoke();
        }
        self.state.overrides.remove(&id);
        if self.state.base == Some(id) {
            self.state.base = None;
        }
    }

    /// Stops the codec job and forgets every snapshot, compression and comparison.
    pub fn clear(&mut self) {
        self.runner.cancel();
        self.drop_partial();
        self.state.job = None;
        self.pending_info.clear();
        self.pending_preview = None;
        self.news.clear();
        for s in self.state.snapshots.drain(..) {
            let preview = s.preview.as_ref().and_then(|p| p.output.as_ref());
            for o in s.output.iter().chain(preview) {
                o.revoke();
            }
        }
        for (_, r) in self.state.compressed.drain() {
            r.revoke();
        }
        for o in self.state.snapshot_indexes.drain(..) {
            o.revoke();
        }
        self.state.overrides.clear();
        self.state.roundtrips.clear();
        self.state.base = None;
    }

    /// Reports a codec failure against `file`: in the panel and in the app's error list.
    fn codec_failed(&mut self, ctx: &mut Ctx, file: String, message: String) {
        self.state.error = Some(message.clone());
        ctx.errors.push(LoadError {
            file,
            reason: message,
        });
    }

    /// Starts a codec job (`request(id)`), expecting `total` units; a failure to start is reported
    /// against `file`.
    fn start_job(
        &mut self,
        ctx: &mut Ctx,
        kind: JobKind,
        request: impl FnOnce(u32) -> Request,
        total: f64,
        file: String,
    ) {
        if self.state.job.is_some() {
            return self.codec_failed(ctx, file, "another codec job is running".into());
        }
        match self.runner.start(request) {
            Ok(id) => {
                self.state.job = Some(Job {
                    id,
                    kind,
                    done: 0.0,
                    total,
                    started: now(),
                });
            }
            Err(e) => self.codec_failed(ctx, file, e),
        }
    }

    /// Forgets the snapshots of an unfinished compress job (and their object URLs).
    fn drop_partial(&mut self) {
        for (o, _) in self.compress_parts.drain(..) {
            o.revoke();
        }
        self.building = None;
    }

    /// The blob of the file of checkpoint `base` that serves as the base of `file`.
    fn base_blob(ctx: &Ctx, base: u32, file: &str) -> Result<Blob, String> {
        let c = ctx.checkpoint(base).ok_or("the base checkpoint is gone")?;
        let paths: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
        base_file(&paths, file)
            .and_then(|i| ctx.blobs.get(&base)?.get(i).cloned())
            .ok_or_else(|| format!("base {} has no shard named {file}", c.name))
    }

    fn start_compress(&mut self, ctx: &mut Ctx) {
        self.state.error = None;
        let Some(c) = ctx.active.and_then(|id| ctx.checkpoint(id)) else {
            return;
        };
        let (id, name) = (c.id, c.name.clone());
        let paths: Vec<String> = c.files.iter().map(|f| f.path.clone()).collect();
        let Some(blobs) = ctx.blobs.get(&id).cloned() else {
            return;
        };
        // Inshrinkerator's chains continue from a `.bls` snapshot (the CLI's `--base`), not from a
        // checkpoint: its preset takes no base here.
        let base = self
            .state
            .base
            .filter(|&b| b != id && !self.state.preset().inshrink);
        let mut files = Vec::with_capacity(blobs.len());
        for (path, blob) in paths.iter().zip(&blobs) {
            let base_blob = match base.map(|b| Self::base_blob(ctx, b, path)).transpose() {
                Ok(b) => b,
                Err(e) => return self.codec_failed(ctx, name, e),
            };
            files.push(JobFile {
                blob: Js(blob.clone().into()),
                base: base_blob.map(|b| Js(b.into())),
            });
        }
        let empty = BTreeMap::new();
        let overrides = self.state.overrides.get(&id).unwrap_or(&empty);
        let options = options(self.state.preset(), overrides, self.state.max_error());
        let total: f64 = blobs.iter().map(Blob::size).sum();
        self.drop_partial();
        let request = |task| WorkerRequest::Compress {
            task,
            files,
            options,
        };
        self.start_job(ctx, JobKind::Compress { ckpt: id }, request, total, name);
    }

    fn start_roundtrip(&mut self, tensor: String, ctx: &mut Ctx) {
        self.state.error = None;
        let Some(c) = ctx.active.and_then(|id| ctx.checkpoint(id)) else {
            return;
        };
        let id = c.id;
        let Some(row) = c.rows.iter().find(|r| r.name == tensor) else {
            return;
        };
        let Some(blob) = ctx.blobs.get(&id).and_then(|b| b.get(row.file)).cloned() else {
            return;
        };
        let codecs = comparison();
        let total = codecs.len() as f64;
        // A ggml block type is timed on its stored blocks (as the snapshot container stores
        // them), not on dequantized values: the job's name says so.
        let name = match row.ty {
            bitlens_tensors::format::ElementType::Ggml(g) => format!(
                "codec comparison of the stored {} blocks (bytes as stored, not dequantized values)",
                g.name().unwrap_or("ggml")
            ),
            bitlens_tensors::format::ElementType::Dtype(_) => "codec comparison".into(),
        };
        let request: Box<dyn FnOnce(u32) -> Request> =
            if let bitlens_tensors::format::Data::Range { .. } = row.data {
                let (offset, bytes, dtype) = (row.offset, row.bytes, row.dtype);
                Box::new(move |task| WorkerRequest::Roundtrip {
                    task,
                    blob: Js(blob.into()),
                    offset,
                    bytes,
                    dtype,
                    codecs,
                })
            } else {
                // A deflated `.npz` member or a PyTorch view: the worker streams its bytes in
                // element order (`format::bytes`) into one buffer, then times them.
                let entry = entry_of(row);
                Box::new(move |task| WorkerRequest::RoundtripEntry {
                    task,
                    file: FileRef::Blob(Js(blob.into())),
                    entry,
                    codecs,
                })
            };
        let kind = JobKind::Roundtrip { ckpt: id, tensor };
        self.start_job(ctx, kind, request, total, name);
    }
}
