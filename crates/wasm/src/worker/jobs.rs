//! The codec worker's jobs: compress safetensors files into snapshots and decompress snapshots
//! (one file after another, each output posted as transferred chunks, then a `File` event), read a
//! snapshot's index, time codecs on one tensor. Files are read synchronously (the core's streaming
//! compressor pulls frames through a [`ReadAt`](bitlens_tensors::ReadAt)): the input through the
//! read-ahead helper when there is one, a base file and an index with `FileReaderSync`.

use super::post::{Post, Throttle};
use super::to_blob;
use crate::convert::{memory_bytes, now};
use crate::error::Failure;
use crate::snapshot::{
    codec_roundtrip, compress_snapshot, decompress_snapshot, open_snapshot, peer_codec_roundtrip,
};
use crate::source::{read_blob, JsSource};
use bitlens_protocol::js::{Event, Js};
use bitlens_protocol::{
    ComparedCodec, CompressOptions, Contender, FileDone, FileOutput, JobFile, JobResult,
    RoundtripRow, SnapshotInfo,
};
use bitlens_tensors::Dtype;
use js_sys::{Function, Uint8Array};
use wasm_bindgen::prelude::*;
use web_sys::Blob;

/// Progress of a job over all its files (units done of `total`), posted at most every
/// [`FLUSH_MS`](super::post::FLUSH_MS) and when it reaches the total.
struct Progress<'a> {
    task: u32,
    total: u64,
    /// Units of the files already done.
    base: u64,
    throttle: Throttle,
    out: &'a dyn Post,
}

impl<'a> Progress<'a> {
    /// Progress of job `task` over `total` units, the first report due at once.
    fn new(task: u32, total: u64, out: &'a dyn Post) -> Self {
        Progress {
            task,
            total,
            base: 0,
            throttle: Throttle::new(true),
            out,
        }
    }

    /// The current file has done `done` units.
    fn file(&mut self, done: u64) {
        let all = self.base + done;
        if self.throttle.due(all >= self.total) {
            let (task, total) = (self.task, self.total);
            // Progress is advisory: a report that cannot be sent is skipped.
            let _ = self.out.post(
                &Event::Progress {
                    task,
                    done: all,
                    total,
                },
                None,
            );
        }
    }
}

/// The input of a file: through the read-ahead helper `ahead(blob)`, or `FileReaderSync`.
fn input(blob: &Blob, ahead: Option<&Function>) -> Result<JsSource, Failure> {
    match ahead {
        Some(f) => {
            let read = f
                .call1(&JsValue::NULL, blob)
                .map_err(|e| Failure::js(&e))?
                .dyn_into::<Function>()
                .map_err(|_| Failure::new("the read-ahead helper gave no function"))?;
            JsSource::new(read, blob.size())
        }
        None => JsSource::from_blob(blob.clone()),
    }
}

/// The base file of a job file, if it has one.
fn base(file: &JobFile<Js>) -> Result<Option<JsSource>, Failure> {
    file.base
        .clone()
        .map(|b| JsSource::from_blob(to_blob(b)?))
        .transpose()
}

/// Posts each chunk of output file `file` to the page, transferred (not copied): the page builds
/// the Blob, so the copy into the browser's blob store runs on the page's thread while this worker
/// goes on coding.
fn chunk_poster(
    task: u32,
    file: usize,
    out: &dyn Post,
) -> impl FnMut(&[u8]) -> std::io::Result<()> + '_ {
    move |bytes: &[u8]| {
        let buffer = Uint8Array::from(bytes).buffer();
        let event = Event::Chunk {
            task,
            file,
            chunk: Js(buffer.clone().into()),
            bytes: bytes.len() as u64,
        };
        out.post(&event, Some(&buffer))
            .map_err(|f| std::io::Error::other(f.0))
    }
}

/// One file done: posts its `File` event.
fn file_done(
    task: u32,
    file: usize,
    started: f64,
    output: FileOutput,
    out: &dyn Post,
) -> Result<(), Failure> {
    let done = FileDone {
        seconds: (now() - started) / 1e3,
        memory: memory_bytes() as u64,
        output,
    };
    out.post(
        &Event::File {
            task,
            file,
            result: Ok(done),
        },
        None,
    )
}

/// Compresses every file of the job; stops at the first failure (as the CLI does).
pub fn compress(
    task: u32,
    files: Vec<JobFile<Js>>,
    options: &CompressOptions,
    ahead: Option<&Function>,
    out: &dyn Post,
) -> Result<JobResult, Failure> {
    let blobs = files
        .iter()
        .map(|f| to_blob(f.blob.clone()))
        .collect::<Result<Vec<Blob>, _>>()?;
    let total = blobs.iter().map(|b| b.size() as u64).sum();
    let mut progress = Progress::new(task, total, out);
    for (i, (file, blob)) in files.iter().zip(&blobs).enumerate() {
        let started = now();
        let src = input(blob, ahead)?;
        let base = base(file)?;
        let result = compress_snapshot(
            &src,
            base.as_ref(),
            options,
            &mut chunk_poster(task, i, out),
            &mut |done| progress.file(done),
        )?;
        progress.base += result.in_bytes;
        file_done(task, i, started, FileOutput::Snapshot(result), out)?;
    }
    Ok(JobResult::Files)
}

/// Decompresses every file of the job; a file that fails is reported and the next one goes on.
pub fn decompress(
    task: u32,
    files: Vec<JobFile<Js>>,
    total: u64,
    ahead: Option<&Function>,
    out: &dyn Post,
) -> Result<JobResult, Failure> {
    let mut progress = Progress::new(task, total, out);
    for (i, file) in files.iter().enumerate() {
        let started = now();
        let restored = restore(task, i, file, ahead, &mut progress, out);
        match restored {
            Ok((info, bytes)) => {
                progress.base += bytes;
                file_done(task, i, started, FileOutput::Restored(info), out)?;
            }
            Err(f) => {
                let event = Event::File {
                    task,
                    file: i,
                    result: Err(f.0),
                };
                out.post(&event, None)?;
            }
        }
    }
    Ok(JobResult::Files)
}

/// Restores one snapshot of a decompress job: its index and the bytes written.
fn restore(
    task: u32,
    i: usize,
    file: &JobFile<Js>,
    ahead: Option<&Function>,
    progress: &mut Progress,
    out: &dyn Post,
) -> Result<(SnapshotInfo, u64), Failure> {
    let blob = to_blob(file.blob.clone())?;
    let info = open_snapshot(JsSource::from_blob(blob.clone())?)?;
    let bytes = decompress_snapshot(
        input(&blob, ahead)?,
        base(file)?.as_ref(),
        &mut chunk_poster(task, i, out),
        &mut |done| progress.file(done),
    )?;
    Ok((info, bytes))
}

/// A snapshot's index.
pub fn info(blob: Blob) -> Result<JobResult, Failure> {
    Ok(JobResult::Info(open_snapshot(JsSource::from_blob(blob)?)?))
}

/// Times each codec of `codecs` on the tensor at `[offset, offset + bytes)` of `blob`, posting
/// progress after each.
pub fn roundtrip(
    task: u32,
    blob: &Blob,
    offset: u64,
    bytes: u64,
    dtype: Dtype,
    codecs: &[ComparedCodec],
    out: &dyn Post,
) -> Result<JobResult, Failure> {
    let data = read_blob(blob, offset, bytes as usize)?;
    let mut rows = Vec::with_capacity(codecs.len());
    for c in codecs {
        let result = match c.codec {
            Contender::Bitlens(choice) => codec_roundtrip(&choice, dtype, &data, &now)?,
            Contender::Peer(peer) => peer_codec_roundtrip(peer, &data, &now)?,
        };
        rows.push(RoundtripRow {
            label: c.label.clone(),
            result,
        });
        let (done, total) = (rows.len() as u64, codecs.len() as u64);
        let _ = out.post(&Event::Progress { task, done, total }, None);
    }
    Ok(JobResult::Roundtrip(rows))
}
