//! The codec panel's snapshot jobs: snapshots opened (files given, URLs), their indexes read one
//! after another, restoring them, and decoding one tensor — the preview of a remote snapshot, or
//! the tensor the app shows of a snapshot checkpoint ([`CodecPanel::want_preview`]) — with what the
//! app must hear of them ([`News`]).

use super::{CodecPanel, Ctx, JobKind, News, Output, SnapshotFile, SnapshotSource, TensorPreview};
use crate::model::codec::restored_name;
use bitlens_protocol::js::Js;
use bitlens_protocol::{FileRef, JobFile, RemoteFile, WorkerRequest};
use web_sys::Blob;

impl CodecPanel {
    /// What the jobs finished since the last call tell the app.
    pub fn take_news(&mut self) -> Vec<News> {
        std::mem::take(&mut self.news)
    }

    /// Decodes tensor `tensor` of snapshot `snap` for the app (the tensor it shows), now or once
    /// the codec worker is free; nothing when it is being decoded, or was (its preview holds the
    /// result or the error, which stays until the visitor asks again).
    pub fn want_preview(&mut self, snap: u32, tensor: &str, ctx: &mut Ctx) {
        let kind = JobKind::DecodeTensor {
            snap,
            tensor: tensor.to_owned(),
        };
        let tried = self
            .state
            .snapshots
            .iter()
            .find(|s| s.id == snap)
            .and_then(|s| s.preview.as_ref())
            .is_some_and(|p| p.tensor == tensor);
        if tried || self.state.job.as_ref().is_some_and(|j| j.kind == kind) {
            return;
        }
        if self.state.job.is_some() {
            self.pending_preview = Some((snap, tensor.to_owned()));
        } else {
            self.start_preview(snap, tensor.to_owned(), ctx);
        }
    }

    /// Forgets snapshot `snap` (its checkpoint was removed): its downloads, and its job if it runs.
    pub fn remove_snapshot(&mut self, snap: u32, ctx: &mut Ctx) {
        let running = self.state.job.as_ref().is_some_and(|j| match &j.kind {
            JobKind::Info { snap: s } | JobKind::DecodeTensor { snap: s, .. } => *s == snap,
            JobKind::Decompress { snaps } => snaps.contains(&snap),
            JobKind::Compress { .. } | JobKind::Roundtrip { .. } => false,
        });
        if running {
            self.runner.cancel();
            self.drop_partial();
            self.state.job = None;
        }
        self.pending_info.retain(|&s| s != snap);
        if self.pending_preview.as_ref().is_some_and(|p| p.0 == snap) {
            self.pending_preview = None;
        }
        if let Some(i) = self.state.snapshots.iter().position(|s| s.id == snap) {
            let s = self.state.snapshots.remove(i);
            let preview = s.preview.as_ref().and_then(|p| p.output.as_ref());
            for o in s.output.iter().chain(preview) {
                o.revoke();
            }
        }
        self.next_info(ctx);
    }

    /// Opens snapshot files (path and data) and the shard indexes given with snapshot sets; true
    /// when there was a snapshot.
    pub fn open(
        &mut self,
        snapshots: Vec<(String, Blob)>,
        indexes: Vec<(String, Blob)>,
        ctx: &mut Ctx,
    ) -> bool {
        for (path, blob) in indexes {
            let name = crate::model::codec::file_name(&path).to_owned();
            self.state
                .snapshot_indexes
                .push(Output::new(&blob, name, 0.0, 0));
        }
        let any = !snapshots.is_empty();
        for (name, blob) in snapshots {
            self.add_snapshot(name, SnapshotSource::Blob(blob));
        }
        self.next_info(ctx);
        any
    }

    /// Opens a snapshot on a server (the loader calls this for a URL whose first 8 bytes are
    /// `BITLENS\0`): its index is read by range, then its tensors are listed and any one of them can
    /// be decoded, fetching only that tensor's frames.
    pub fn open_remote(&mut self, name: String, file: RemoteFile, ctx: &mut Ctx) {
        self.add_snapshot(name, SnapshotSource::Url(file));
        self.next_info(ctx);
    }

    /// Adds a snapshot whose index is still to be read.
    pub(super) fn add_snapshot(&mut self, name: String, source: SnapshotSource) {
        let id = self.next_snapshot;
        self.next_snapshot += 1;
        self.state.snapshots.push(SnapshotFile {
            id,
            name,
            source,
            info: None,
            base: None,
            output: None,
            error: None,
            preview: None,
        });
        self.pending_info.insert(0, id);
    }

    /// Decompresses the snapshots `snaps` (in that order) in one job.
    pub(super) fn start_decompress(&mut self, snaps: Vec<u32>, ctx: &mut Ctx) {
        self.state.error = None;
        let mut files = Vec::with_capacity(snaps.len());
        let mut total = 0;
        for &snap in &snaps {
            let Some(s) = self.state.snapshots.iter().find(|s| s.id == snap) else {
                return;
            };
            let SnapshotSource::Blob(blob) = &s.source else {
                let message =
                    "a snapshot on a server is previewed tensor by tensor, not restored whole";
                return self.codec_failed(ctx, s.name.clone(), message.into());
            };
            let (name, blob, base) = (s.name.clone(), blob.clone(), s.base);
            total += s.info.as_ref().map_or(0, |i| i.original_size);
            let base_blob = match base.map(|b| Self::base_blob(ctx, b, &restored_name(&name))) {
                Some(Err(e)) => return self.codec_failed(ctx, name, e),
                b => b.and_then(Result::ok),
            };
            files.push(JobFile {
                blob: Js(blob.into()),
                base: base_blob.map(|b| Js(b.into())),
            });
        }
        for s in self
            .state
            .snapshots
            .iter_mut()
            .filter(|s| snaps.contains(&s.id))
        {
            s.error = None;
        }
        let name = self.snapshot_name(snaps.first().copied().unwrap_or(0));
        let request = |task| WorkerRequest::Decompress { task, files, total };
        let kind = JobKind::Decompress { snaps };
        self.start_job(ctx, kind, request, total as f64, name);
    }

    /// Every snapshot that can be decompressed now (index read, base chosen for deltas).
    pub(super) fn ready_snapshots(&self) -> Vec<u32> {
        self.state
            .snapshots
            .iter()
            .filter(|s| {
                s.remote().is_none()
                    && s.info
                        .as_ref()
                        .is_some_and(|i| !i.delta || s.base.is_some())
            })
            .map(|s| s.id)
            .collect()
    }

    /// Starts reading the next pending snapshot index, if the worker is free; with none, decodes
    /// the tensor the app waits for ([`CodecPanel::want_preview`]).
    pub(super) fn next_info(&mut self, ctx: &mut Ctx) {
        if self.state.job.is_some() {
            return;
        }
        if self.pending_info.is_empty() {
            if let Some((snap, tensor)) = self.pending_preview.take() {
                self.start_preview(snap, tensor, ctx);
            }
            return;
        }
        while let Some(snap) = self.pending_info.pop() {
            let Some(s) = self.state.snapshots.iter().find(|s| s.id == snap) else {
                continue;
            };
            let (name, file, total) = match &s.source {
                SnapshotSource::Blob(b) => (
                    s.name.clone(),
                    FileRef::Blob(Js(b.clone().into())),
                    b.size(),
                ),
                SnapshotSource::Url(r) => (s.name.clone(), FileRef::Url(r.clone()), r.size as f64),
            };
            let request = |task| WorkerRequest::SnapshotInfo { task, file };
            self.start_job(ctx, JobKind::Info { snap }, request, total, name);
            return;
        }
    }

    /// Decodes tensor `tensor` of snapshot `snap` (with its chosen base, for a delta) for its
    /// preview: statistics, charts and a one-tensor file to download.
    pub(super) fn start_preview(&mut self, snap: u32, tensor: String, ctx: &mut Ctx) {
        self.state.error = None;
        let Some(s) = self.state.snapshots.iter().find(|s| s.id == snap) else {
            return;
        };
        let name = s.name.clone();
        let file = match &s.source {
            SnapshotSource::Blob(b) => FileRef::Blob(Js(b.clone().into())),
            SnapshotSource::Url(r) => FileRef::Url(r.clone()),
        };
        let total = s
            .info
            .as_ref()
            .and_then(|i| i.entries.iter().find(|e| e.name == tensor))
            .map_or(0, |e| e.bytes);
        let base = match s
            .base
            .map(|b| Self::base_blob(ctx, b, &restored_name(&name)))
        {
            Some(Err(e)) => return self.codec_failed(ctx, name, e),
            b => b.and_then(Result::ok).map(|b| FileRef::Blob(Js(b.into()))),
        };
        let kind = JobKind::DecodeTensor {
            snap,
            tensor: tensor.clone(),
        };
        let preview = TensorPreview {
            tensor: tensor.clone(),
            result: None,
            output: None,
            error: None,
        };
        let request = |task| WorkerRequest::DecodeTensor {
            task,
            file,
            tensor,
            base,
        };
        self.start_job(ctx, kind.clone(), request, total as f64, name);
        if self.state.job.as_ref().is_some_and(|j| j.kind == kind) {
            if let Some(s) = self.state.snapshots.iter_mut().find(|s| s.id == snap) {
                if let Some(o) = s.preview.as_ref().and_then(|p| p.output.as_ref()) {
                    o.revoke();
                }
                s.preview = Some(preview);
            }
        }
    }

    pub(super) fn snapshot_name(&self, snap: u32) -> String {
        self.state
            .snapshots
            .iter()
            .find(|s| s.id == snap)
            .map_or("snapshot".into(), |s| s.name.clone())
    }
}
