//! The codec worker's reports: the build it runs, progress, output chunks folded into Blobs, each
//! finished file of a compress / decompress / tensor-preview job, and the end (or failure) of a job.

use super::{CodecPanel, CompressRun, Ctx, JobKind, News, Output, TensorPreview};
use crate::model::codec::{base_file, file_name, restored_name, snapshot_name, Compressed};
use crate::ui::io::blob::BlobBuilder;
use crate::ui::jobs::now;
use bitlens_protocol::js::Event;
use bitlens_protocol::{FileDone, FileOutput, JobResult, WorkerEvent};
use web_sys::Blob;

impl CodecPanel {
    /// Handles a report of the codec worker; false when the page need not be drawn again.
    pub(super) fn on_event(&mut self, event: Event, ctx: &mut Ctx) -> bool {
        match event {
            WorkerEvent::Ready(build) => self.state.build = Some(build),
            WorkerEvent::Chunk {
                task,
                file,
                chunk,
                bytes,
            } => {
                if self.state.current(Some(task)).is_none() {
                    return false;
                }
                let building = match self.building.take() {
                    Some((j, f, b)) if (j, f) == (task, file) => b,
                    _ => BlobBuilder::default(),
                };
                let building = self.building.insert((task, file, building));
                if let Err(e) = building.2.push(chunk.0, bytes) {
                    self.building = None;
                    self.runner.cancel();
                    self.state.job = None;
                    self.codec_failed(ctx, "output".into(), e.to_string());
                    return true;
                }
                return false;
            }
            WorkerEvent::Progress { task, done, total } => {
                if let Some(j) = self.state.job.as_mut().filter(|j| j.id == task) {
                    j.done = done as f64;
                    if total > 0 {
                        j.total = total as f64;
                    }
                }
            }
            WorkerEvent::File { task, file, result } => {
                let Some(j) = self.state.current(Some(task)).cloned() else {
                    return false;
                };
                let built = match self.building.take() {
                    Some((bj, bf, b)) if (bj, bf) == (task, file) => b,
                    _ => BlobBuilder::default(),
                };
                let result = result.and_then(|f| {
                    let blob = built.finish().map_err(|e| e.to_string())?;
                    Ok((f, blob))
                });
                self.on_file(ctx, &j.kind, file, result);
            }
            WorkerEvent::Done {
                task,
                seconds,
                memory,
                result,
            } => {
                let Some(j) = self.state.current(Some(task)).cloned() else {
                    return false;
                };
                self.state.job = None;
                self.building = None;
                // Compress / decompress: the whole path as the page sees it, from the job's start
                // to the last Blob built (the worker's own `seconds` leave out the page's part).
                let seconds = match j.kind {
                    JobKind::Compress { .. } | JobKind::Decompress { .. } => {
                        (now() - j.started) / 1e3
                    }
                    _ => seconds,
                };
                self.on_done(ctx, j.kind, result, (seconds, memory));
                self.next_info(ctx);
            }
            WorkerEvent::Update { task, .. } => {
                return self.on_event(Self::unexpected(task), ctx);
            }
            WorkerEvent::Failed { task, message } => {
                let Some(j) = self.state.current(task).cloned() else {
                    return false;
                };
                if task.is_none() {
                    self.runner.cancel();
                }
                self.state.job = None;
                self.drop_partial();
                let file = match &j.kind {
                    JobKind::Compress { ckpt } => ctx
                        .checkpoint(*ckpt)
                        .map_or("checkpoint".into(), |c| c.name.clone()),
                    JobKind::Info { snap } => {
                        let name = self.snapshot_name(*snap);
                        if let Some(s) = self.state.snapshots.iter_mut().find(|s| s.id == *snap) {
                            s.error = Some(message.clone());
                        }
                        name
                    }
                    JobKind::Decompress { .. } => "decompress".into(),
                    JobKind::DecodeTensor { snap, .. } => {
                        let name = self.snapshot_name(*snap);
                        if let Some(p) = self.preview(*snap) {
                            p.error = Some(message.clone());
                        }
                        name
                    }
                    JobKind::Roundtrip { tensor, .. } => tensor.clone(),
                };
                self.codec_failed(ctx, file, message);
                self.next_info(ctx);
            }
        }
        true
    }

    /// The failure of a job whose worker answered with another kind of job's event.
    fn unexpected(task: u32) -> Event {
        WorkerEvent::Failed {
            task: Some(task),
            message: "the codec worker answered with a statistics task's event".into(),
        }
    }

    /// One file of a compress / decompress job is done (or failed), with its output.
    fn on_file(
        &mut self,
        ctx: &mut Ctx,
        kind: &JobKind,
        file: usize,
        result: Result<(FileDone, Blob), String>,
    ) {
        match kind {
            JobKind::Compress { ckpt } => {
                let Some(c) = ctx.checkpoint(*ckpt) else {
                    return;
                };
                let (path, ckpt_name) = match c.files.get(file) {
                    Some(f) => (f.path.clone(), c.name.clone()),
                    None => return,
                };
                let sharded = c.files.len() > 1 || ctx.indexes.contains_key(ckpt);
                match result.and_then(|(f, blob)| {
                    let FileOutput::Snapshot(parsed) = f.output else {
                        return Err("the worker sent no snapshot result".to_owned());
                    };
                    let name = snapshot_name(&path, sharded);
                    Ok((Output::built(&blob, name, f.seconds, f.memory), parsed))
                }) {
                    Ok(part) => self.compress_parts.push(part),
                    Err(e) => self.codec_failed(ctx, ckpt_name, e),
                }
            }
            JobKind::Decompress { snaps } => {
                let Some(s) = snaps
                    .get(file)
                    .and_then(|id| self.state.snapshots.iter_mut().find(|s| s.id == *id))
                else {
                    return;
                };
                match result {
                    Ok((f, blob)) => {
                        if let Some(o) = &s.output {
                            o.revoke();
                        }
                        let name = restored_name(&s.name);
                        s.output = Some(Output::built(&blob, name, f.seconds, f.memory));
                    }
                    Err(e) => s.error = Some(e),
                }
            }
            JobKind::DecodeTensor { snap, tensor } => {
                let name = format!("{}.safetensors", tensor.replace('/', "_"));
                let Some(p) = self.preview(*snap) else {
                    return;
                };
                match result {
                    Ok((f, blob)) => {
                        p.output = Some(Output::built(&blob, name, f.seconds, f.memory))
                    }
                    Err(e) => p.error = Some(e),
                }
            }
            JobKind::Info { .. } | JobKind::Roundtrip { .. } => {}
        }
    }

    /// The preview of snapshot `snap`'s tensor, while it is being decoded or shown.
    fn preview(&mut self, snap: u32) -> Option<&mut TensorPreview> {
        self.state
            .snapshots
            .iter_mut()
            .find(|s| s.id == snap)?
            .preview
            .as_mut()
    }

    /// A finished job: `cost` is the worker's (seconds, wasm memory bytes).
    fn on_done(&mut self, ctx: &mut Ctx, kind: JobKind, result: JobResult, cost: (f64, u64)) {
        let (seconds, memory) = cost;
        match (kind, result) {
            (JobKind::Compress { ckpt }, _) => {
                let Some(c) = ctx.checkpoint(ckpt) else {
                    return;
                };
                let (name, files) = (c.name.clone(), c.files.len());
                let parts = std::mem::take(&mut self.compress_parts);
                if parts.len() != files {
                    return self.codec_failed(
                        ctx,
                        name,
                        format!("the worker sent {} of {files} snapshots", parts.len()),
                    );
                }
                let (outputs, results): (Vec<Output>, Vec<Compressed>) = parts.into_iter().unzip();
                let result = Compressed::merge(results);
                let by_name = result
                    .entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (e.name.clone(), i))
                    .collect();
                let base = if result.delta {
                    self.state
                        .base
                        .and_then(|b| ctx.checkpoint(b))
                        .map(|c| c.name.clone())
                } else {
                    None
                };
                let index = ctx
                    .indexes
                    .get(&ckpt)
                    .map(|(path, blob)| Output::new(blob, file_name(path).to_owned(), 0.0, 0));
                let run = CompressRun {
                    sharded: files > 1 || index.is_some(),
                    outputs,
                    index,
                    preset: self.state.preset(),
                    base,
                    result,
                    by_name,
                    seconds,
                    memory,
                    build: self.state.build.clone(),
                };
                if let Some(old) = self.state.compressed.insert(ckpt, run) {
                    old.revoke();
                }
            }
            (JobKind::Info { snap }, result) => {
                let restored = restored_name(&self.snapshot_name(snap));
                // The base a delta was made against: a loaded file of that size, with the
                // snapshot's name in a sharded checkpoint.
                let candidates: Vec<(u32, u64)> = ctx
                    .checkpoints
                    .iter()
                    .filter_map(|c| {
                        let paths: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
                        base_file(&paths, &restored).map(|i| (c.id, c.files[i].layout.file_size))
                    })
                    .collect();
                if let Some(s) = self.state.snapshots.iter_mut().find(|s| s.id == snap) {
                    match result {
                        JobResult::Info(info) => {
                            if let Some(size) = info.base_file_size {
                                s.base = candidates.iter().find(|c| c.1 == size).map(|c| c.0);
                            }
                            s.info = Some(info);
                            self.news.push(News::Index(snap));
                        }
                        _ => s.error = Some("the worker sent no snapshot index".into()),
                    }
                }
            }
            (JobKind::Decompress { .. }, _) => {}
            (JobKind::DecodeTensor { snap, .. }, result) => {
                if let JobResult::Tensor(t) = &result {
                    self.news.push(News::Decoded {
                        snap,
                        tensor: t.name.clone(),
                        stats: Box::new(t.stats.clone()),
                    });
                }
                let Some(p) = self.preview(snap) else {
                    return;
                };
                match result {
                    JobResult::Tensor(t) => p.result = Some(*t),
                    _ => p.error = Some("the worker sent no decoded tensor".into()),
                }
            }
            (JobKind::Roundtrip { ckpt, tensor }, JobResult::Roundtrip(rows)) => {
                self.state.roundtrips.insert((ckpt, tensor), rows);
            }
            (JobKind::Roundtrip { tensor, .. }, _) => {
                self.codec_failed(ctx, tensor, "the worker sent no comparison".into())
            }
        }
    }
}
