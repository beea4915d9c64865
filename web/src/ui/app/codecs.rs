//! The root component's codec jobs: compress the active checkpoint (one snapshot per file, deltas
//! against the base checkpoint's file of the same name), decompress one or several snapshots, read
//! snapshot indexes, time codecs on a tensor — and the worker's reports about them.

use super::{object_url, revoke, App, CompressRun, Output};
use crate::model::codec::{
    base_file, options_json, restored_name, snapshot_name, Compressed, SnapshotInfo, COMPARISON,
};
use crate::ui::codec::{CodecEvent, FileDone, JobKind};
use crate::ui::io::blob::BlobBuilder;
use crate::ui::jobs::now;
use crate::ui::loader::LoadError;
use js_sys::{Array, Object, Reflect};
use std::collections::BTreeMap;
use wasm_bindgen::JsValue;
use web_sys::Blob;

/// One file of a compress / decompress job as the worker takes it: `{blob, base?}`.
fn job_file(blob: &Blob, base: Option<&Blob>) -> JsValue {
    let o = Object::new();
    let _ = Reflect::set(&o, &"blob".into(), blob);
    if let Some(b) = base {
        let _ = Reflect::set(&o, &"base".into(), b);
    }
    o.into()
}

/// An output of the page (a download) for a blob.
fn output(blob: &Blob, name: String, seconds: f64, memory: f64) -> Output {
    Output {
        url: object_url(blob),
        name,
        bytes: blob.size() as u64,
        seconds,
        memory: memory as u64,
    }
}

impl App {
    pub(super) fn codec_failed(&mut self, file: String, message: String) {
        self.state.codec_error = Some(message.clone());
        self.state.errors.push(LoadError {
            file,
            reason: message,
        });
    }

    /// Starts a codec job; a failure to start is reported against `file`.
    fn start_job(
        &mut self,
        kind: JobKind,
        wire_kind: &str,
        fields: &[(&str, JsValue)],
        total: f64,
        file: String,
    ) {
        if let Err(e) = self.codec.start(kind, wire_kind, fields, total, now()) {
            self.codec_failed(file, e);
        }
    }

    /// Forgets the snapshots of an unfinished compress job (and their object URLs).
    pub(super) fn drop_partial(&mut self) {
        for (o, _) in self.compress_parts.drain(..) {
            revoke(Some(&o));
        }
        self.building = None;
    }

    /// The blob of the file of checkpoint `base` that serves as the base of `file`.
    fn base_blob(&self, base: u32, file: &str) -> Result<Blob, String> {
        let c = self
            .state
            .checkpoint(base)
            .ok_or("the base checkpoint is gone")?;
        let paths: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
        base_file(&paths, file)
            .and_then(|i| self.state.blobs.get(&base)?.get(i).cloned())
            .ok_or_else(|| format!("base {} has no shard named {file}", c.name))
    }

    pub(super) fn start_compress(&mut self) {
        self.state.codec_error = None;
        let Some(c) = self.state.active_checkpoint() else {
            return;
        };
        let (id, name) = (c.id, c.name.clone());
        let paths: Vec<String> = c.files.iter().map(|f| f.path.clone()).collect();
        let Some(blobs) = self.state.blobs.get(&id).cloned() else {
            return;
        };
        let base = self.state.base.filter(|&b| b != id);
        let files = Array::new();
        for (path, blob) in paths.iter().zip(&blobs) {
            let base_blob = match base.map(|b| self.base_blob(b, path)).transpose() {
                Ok(b) => b,
                Err(e) => return self.codec_failed(name, e),
            };
            files.push(&job_file(blob, base_blob.as_ref()));
        }
        let empty = BTreeMap::new();
        let overrides = self.state.overrides.get(&id).unwrap_or(&empty);
        let options = options_json(self.state.preset(), overrides);
        let total: f64 = blobs.iter().map(Blob::size).sum();
        let fields = [("files", files.into()), ("options", JsValue::from(options))];
        self.drop_partial();
        self.start_job(
            JobKind::Compress { ckpt: id },
            "compress",
            &fields,
            total,
            name,
        );
    }

    /// Decompresses the snapshots `snaps` (in that order) in one job.
    pub(super) fn start_decompress(&mut self, snaps: Vec<u32>) {
        self.state.codec_error = None;
        let files = Array::new();
        let mut total = 0.0;
        for &snap in &snaps {
            let Some(s) = self.state.snapshots.iter().find(|s| s.id == snap) else {
                return;
            };
            let (name, blob, base) = (s.name.clone(), s.blob.clone(), s.base);
            total += s.info.as_ref().map_or(0.0, |i| i.original_size as f64);
            let base_blob = match base.map(|b| self.base_blob(b, &restored_name(&name))) {
                Some(Err(e)) => return self.codec_failed(name, e),
                b => b.and_then(Result::ok),
            };
            files.push(&job_file(&blob, base_blob.as_ref()));
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
        let fields = [("files", files.into()), ("total", JsValue::from(total))];
        self.start_job(
            JobKind::Decompress { snaps },
            "decompress",
            &fields,
            total,
            name,
        );
    }

    /// Every snapshot that can be decompressed now (index read, base chosen for deltas).
    pub(super) fn ready_snapshots(&self) -> Vec<u32> {
        self.state
            .snapshots
            .iter()
            .filter(|s| {
                s.info
                    .as_ref()
                    .is_some_and(|i| !i.delta || s.base.is_some())
            })
            .map(|s| s.id)
            .collect()
    }

    pub(super) fn start_roundtrip(&mut self, tensor: String) {
        self.state.codec_error = None;
        let Some(c) = self.state.active_checkpoint() else {
            return;
        };
        let id = c.id;
        let Some(row) = c.rows.iter().find(|r| r.name == tensor) else {
            return;
        };
        let Some(blob) = self
            .state
            .blobs
            .get(&id)
            .and_then(|b| b.get(row.file))
            .cloned()
        else {
            return;
        };
        let codecs = Array::new();
        for (label, codec, k) in COMPARISON {
            let o = Object::new();
            let _ = Reflect::set(&o, &"label".into(), &label.into());
            let _ = Reflect::set(&o, &"codec".into(), &codec.into());
            let k = k.map_or(JsValue::NULL, JsValue::from);
            let _ = Reflect::set(&o, &"mantissa_bits".into(), &k);
            codecs.push(&o);
        }
        let fields = [
            ("blob", JsValue::from(blob)),
            ("offset", JsValue::from(row.offset as f64)),
            ("bytes", JsValue::from(row.bytes as f64)),
            ("dtype", JsValue::from(row.dtype.to_string())),
            ("codecs", codecs.into()),
        ];
        let kind = JobKind::Roundtrip { ckpt: id, tensor };
        let total = COMPARISON.len() as f64;
        self.start_job(kind, "roundtrip", &fields, total, "codec comparison".into());
    }

    /// Starts reading the next pending snapshot index, if the worker is free.
    pub(super) fn next_info(&mut self) {
        if self.codec.busy() {
            return;
        }
        while let Some(snap) = self.pending_info.pop() {
            let Some(s) = self.state.snapshots.iter().find(|s| s.id == snap) else {
                continue;
            };
            let (name, blob) = (s.name.clone(), s.blob.clone());
            let total = blob.size();
            let fields = [("blob", JsValue::from(blob))];
            self.start_job(
                JobKind::Info { snap },
                "snapshot-info",
                &fields,
                total,
                name,
            );
            return;
        }
    }

    fn snapshot_name(&self, snap: u32) -> String {
        self.state
            .snapshots
            .iter()
            .find(|s| s.id == snap)
            .map_or("snapshot".into(), |s| s.name.clone())
    }

    /// Handles a report of the codec worker; false when the page need not be drawn again.
    pub(super) fn on_codec(&mut self, event: CodecEvent) -> bool {
        match event {
            CodecEvent::Ready(build) => self.state.codec_build = Some(build),
            CodecEvent::Chunk {
                job,
                file,
                chunk,
                len,
            } => {
                if self.codec.current(Some(job)).is_none() {
                    return false;
                }
                if !matches!(&self.building, Some((j, f, _)) if (*j, *f) == (job, file)) {
                    self.building = Some((job, file, BlobBuilder::default()));
                }
                let (_, _, b) = self.building.as_mut().expect("set above");
                if let Err(e) = b.push(chunk, len) {
                    self.building = None;
                    self.codec.cancel();
                    self.codec_failed("output".into(), e.to_string());
                }
                return false;
            }
            CodecEvent::Progress { job, done, total } => {
                if let Some(j) = self.codec.job.as_mut().filter(|j| j.id == job) {
                    j.done = done;
                    if total > 0.0 {
                        j.total = total;
                    }
                }
            }
            CodecEvent::File { job, file, result } => {
                let Some(j) = self.codec.current(Some(job)).cloned() else {
                    return false;
                };
                let built = match self.building.take() {
                    Some((bj, bf, b)) if (bj, bf) == (job, file) => b,
                    _ => BlobBuilder::default(),
                };
                let result = result.and_then(|f| {
                    let blob = built.finish().map_err(|e| e.to_string())?;
                    Ok((f, blob))
                });
                self.on_codec_file(&j.kind, file, result);
            }
            CodecEvent::Done {
                job,
                json,
                seconds,
                memory,
            } => {
                let Some(j) = self.codec.current(Some(job)).cloned() else {
                    return false;
                };
                self.codec.job = None;
                self.building = None;
                // Compress / decompress: the whole path as the page sees it, from the job's start
                // to the last Blob built (the worker's own `seconds` leave out the page's part).
                let seconds = match j.kind {
                    JobKind::Compress { .. } | JobKind::Decompress { .. } => {
                        (now() - j.started) / 1e3
                    }
                    _ => seconds,
                };
                self.on_codec_done(j.kind, &json, (seconds, memory as u64));
                self.next_info();
            }
            CodecEvent::Failed { job, message } => {
                let Some(j) = self.codec.current(job).cloned() else {
                    return false;
                };
                if job.is_none() {
                    self.codec.cancel();
                }
                self.codec.job = None;
                self.drop_partial();
                let file = match &j.kind {
                    JobKind::Compress { ckpt } => self
                        .state
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
                    JobKind::Roundtrip { tensor, .. } => tensor.clone(),
                };
                self.codec_failed(file, message);
                self.next_info();
            }
        }
        self.state.codec_job = self.codec.job.clone();
        true
    }

    /// One file of a compress / decompress job is done (or failed), with its output.
    fn on_codec_file(
        &mut self,
        kind: &JobKind,
        file: usize,
        result: Result<(FileDone, Blob), String>,
    ) {
        match kind {
            JobKind::Compress { ckpt } => {
                let Some(c) = self.state.checkpoint(*ckpt) else {
                    return;
                };
                let (path, ckpt_name) = match c.files.get(file) {
                    Some(f) => (f.path.clone(), c.name.clone()),
                    None => return,
                };
                let sharded = c.files.len() > 1 || self.state.indexes.contains_key(ckpt);
                match result.and_then(|(f, blob)| {
                    let parsed = serde_json::from_str::<Compressed>(&f.json)
                        .map_err(|e| format!("result unreadable: {e}"))?;
                    let name = snapshot_name(&path, sharded);
                    Ok((output(&blob, name, f.seconds, f.memory), parsed))
                }) {
                    Ok(part) => self.compress_parts.push(part),
                    Err(e) => self.codec_failed(ckpt_name, e),
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
                        revoke(s.output.as_ref());
                        s.output = Some(output(&blob, restored_name(&s.name), f.seconds, f.memory));
                    }
                    Err(e) => s.error = Some(e),
                }
            }
            JobKind::Info { .. } | JobKind::Roundtrip { .. } => {}
        }
    }

    /// A finished job: `cost` is the worker's (seconds, wasm memory bytes).
    fn on_codec_done(&mut self, kind: JobKind, json: &str, cost: (f64, u64)) {
        let (seconds, memory) = cost;
        match kind {
            JobKind::Compress { ckpt } => {
                let Some(c) = self.state.checkpoint(ckpt) else {
                    return;
                };
                let (name, files) = (c.name.clone(), c.files.len());
                let parts = std::mem::take(&mut self.compress_parts);
                if parts.len() != files {
                    return self.codec_failed(
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
                        .and_then(|b| self.state.checkpoint(b))
                        .map(|c| c.name.clone())
                } else {
                    None
                };
                let index = self.state.indexes.get(&ckpt).map(|(path, blob)| {
                    output(
                        blob,
                        crate::model::codec::file_name(path).to_owned(),
                        0.0,
                        0.0,
                    )
                });
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
                    build: self.state.codec_build.clone(),
                };
                if let Some(old) = self.state.compressed.insert(ckpt, run) {
                    old.revoke();
                }
            }
            JobKind::Info { snap } => {
                let info = serde_json::from_str::<SnapshotInfo>(json);
                let restored = restored_name(&self.snapshot_name(snap));
                // The base a delta was made against: a loaded file of that size, with the
                // snapshot's name in a sharded checkpoint.
                let candidates: Vec<(u32, u64)> = self
                    .state
                    .checkpoints
                    .iter()
                    .filter_map(|c| {
                        let paths: Vec<&str> = c.files.iter().map(|f| f.path.as_str()).collect();
                        base_file(&paths, &restored).map(|i| (c.id, c.files[i].header.file_size))
                    })
                    .collect();
                if let Some(s) = self.state.snapshots.iter_mut().find(|s| s.id == snap) {
                    match info {
                        Ok(info) => {
                            if let Some(size) = info.base_file_size {
                                s.base = candidates.iter().find(|c| c.1 == size).map(|c| c.0);
                            }
                            s.info = Some(info);
                        }
                        Err(e) => s.error = Some(format!("index unreadable: {e}")),
                    }
                }
            }
            JobKind::Decompress { .. } => {}
            JobKind::Roundtrip { ckpt, tensor } => {
                match serde_json::from_str::<Vec<crate::model::codec::RoundtripRow>>(json) {
                    Ok(rows) => {
                        self.state.roundtrips.insert((ckpt, tensor), rows);
                    }
                    Err(e) => self.codec_failed(tensor, format!("result unreadable: {e}")),
                }
            }
        }
    }
}
