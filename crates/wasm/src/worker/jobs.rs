//! The codec worker's jobs: compress safetensors files into snapshots and decompress snapshots
//! (one file after another, each output written to a file of the worker's output directory and
//! handed to the page whole, or posted as transferred chunks; then a `File` event), read a
//! snapshot's index, decode one tensor of a snapshot into a file of its own with its statistics,
//! time codecs on one tensor (a byte range, or any tensor materialised in element order). The core
//! pulls bytes through a [`ReadAt`](bitlens_tensors::ReadAt): a compress or decompress job's input
//! through the read-ahead helper when there is one, else read as a stream while the codec works on
//! what has arrived ([`super::streamed`]); a base file and an index with `FileReaderSync`; a
//! snapshot given by URL (index, one tensor) with synchronous range requests
//! ([`HttpSource`](crate::http_source::HttpSource)).

use super::frames_source::{decompress_ahead, decompress_streamed, FramesAhead};
use super::opfs::OpfsFile;
use super::post::{Post, Throttle};
use super::streamed::compress_streamed;
use super::to_blob;
use crate::convert::{memory_bytes, now};
use crate::error::Failure;
use crate::sink::ChunkSink;
use crate::snapshot::{codec_roundtrip, compress_snapshot, peer_codec_roundtrip, snapshot_info};
use crate::source::{read_blob, FileSource, JsSource};
use bitlens_protocol::js::{Event, Js};
use bitlens_protocol::{
    ComparedCodec, CompressOptions, Contender, DecodedTensor, FileDone, FileOutput, FileRef,
    JobFile, JobResult, RoundtripRow, SnapshotInfo,
};
use bitlens_snapshot::{BaseSource, SnapshotError, SnapshotReader};
use bitlens_stats::entry::lane_dtype;
use bitlens_stats::Accumulator;
use bitlens_tensors::format::bytes::{self, BytesError};
use bitlens_tensors::format::Entry;
use bitlens_tensors::Dtype;
use js_sys::{Function, Uint8Array};
use std::io::Write;
use wasm_bindgen::prelude::*;
use web_sys::{Blob, FileSystemDirectoryHandle};

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

/// Posts `bytes`, a chunk of output file `file` of job `task`, to the page, transferred (not
/// copied): the page builds the Blob, so the copy into the browser's blob store runs on the page's
/// thread while this worker goes on coding.
fn post_chunk(task: u32, file: usize, bytes: &[u8], out: &dyn Post) -> std::io::Result<()> {
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

/// Where output file `i` of a compress / decompress job goes: a file of the worker's output
/// directory (origin private file system), handed to the page whole at the end as the one `Chunk`
/// of the file; else chunks posted to the page as they come.
enum Output<'a> {
    /// Written to a file the page gets at the end: (the file, job, file index).
    File(OpfsFile, u32, usize),
    /// Posted chunk by chunk: (job, file, the page).
    Posted(u32, usize, &'a dyn Post),
}

impl<'a> Output<'a> {
    /// The output of file `i` of job `task`: a new file of `dir`, or posted when there is no
    /// directory or the file cannot be made (the output still reaches the page).
    async fn open(
        task: u32,
        i: usize,
        dir: Option<&FileSystemDirectoryHandle>,
        out: &'a dyn Post,
    ) -> Output<'a> {
        if let Some(dir) = dir {
            if let Ok(file) = OpfsFile::create(dir, &format!("job{task}-file{i}")).await {
                return Output::File(file, task, i);
            }
        }
        Output::Posted(task, i, out)
    }

    /// Hands on the next bytes of the file.
    fn emit(&self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Output::File(f, ..) => f.write(bytes),
            Output::Posted(task, file, out) => post_chunk(*task, *file, bytes, *out),
        }
    }

    /// The file is complete: a written file goes to the page (as one `Chunk`, not transferred: a
    /// `File` is a reference to the bytes).
    async fn finish(self, out: &dyn Post) -> Result<(), Failure> {
        let Output::File(f, task, file) = self else {
            return Ok(());
        };
        let done = f.finish().await?;
        let event = Event::Chunk {
            task,
            file,
            bytes: done.size() as u64,
            chunk: Js(done.into()),
        };
        out.post(&event, None)
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

/// Compresses every file of the job; stops at the first failure (as the CLI does). Outputs go to
/// files of `dir` when the worker has an output directory.
pub async fn compress(
    task: u32,
    files: Vec<JobFile<Js>>,
    options: &CompressOptions,
    ahead: Option<&Function>,
    dir: Option<&FileSystemDirectoryHandle>,
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
        let base = base(file)?;
        let output = Output::open(task, i, dir, out).await;
        let mut on_chunk = |bytes: &[u8]| output.emit(bytes);
        let mut on_progress = |done| progress.file(done);
        // Without the read-ahead helper the input is read as a stream where the codec allows.
        let streamed = match ahead {
            None => {
                compress_streamed(
                    blob,
                    base.as_ref(),
                    options,
                    &mut on_chunk,
                    &mut on_progress,
                )
                .await?
            }
            Some(_) => None,
        };
        let result = match streamed {
            Some(result) => result,
            None => compress_snapshot(
                &input(blob, ahead)?,
                base.as_ref(),
                options,
                &mut on_chunk,
                &mut on_progress,
            )?,
        };
        output.finish(out).await?;
        progress.base += result.in_bytes;
        file_done(task, i, started, FileOutput::Snapshot(result), out)?;
    }
    Ok(JobResult::Files)
}

/// Decompresses every file of the job; a file that fails is reported and the next one goes on.
/// Outputs go to files of `dir` when the worker has an output directory.
pub async fn decompress(
    task: u32,
    files: Vec<JobFile<Js>>,
    total: u64,
    ahead: Option<&Function>,
    dir: Option<&FileSystemDirectoryHandle>,
    out: &dyn Post,
) -> Result<JobResult, Failure> {
    let mut progress = Progress::new(task, total, out);
    for (i, file) in files.iter().enumerate() {
        let started = now();
        let output = Output::open(task, i, dir, out).await;
        let restored = match restore(file, ahead, &output, &mut progress).await {
            Ok(done) => output.finish(out).await.map(|()| done),
            Err(f) => Err(f),
        };
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

/// Restores one snapshot of a decompress job into `output`: its index and the bytes written. Its
/// frames come through the read-ahead helper when there is one, else as a stream of the file
/// ([`decompress_streamed`]).
async fn restore(
    file: &JobFile<Js>,
    ahead: Option<&Function>,
    output: &Output<'_>,
    progress: &mut Progress<'_>,
) -> Result<(SnapshotInfo, u64), Failure> {
    let blob = to_blob(file.blob.clone())?;
    // The opening with exact reads: a read-ahead source would fetch a whole window of frames (up
    // to 32 MiB) for each jump of it, and the decompression reads them again.
    let exact = JsSource::from_blob(blob.clone())?.read_ahead(0);
    let src = FramesAhead::new(exact, input(&blob, ahead)?);
    let base = base(file)?;
    let mut on_chunk = |bytes: &[u8]| output.emit(bytes);
    let mut on_progress = |done| progress.file(done);
    match ahead {
        Some(_) => decompress_ahead(&src, base.as_ref(), &mut on_chunk, &mut on_progress),
        None => {
            decompress_streamed(&src, &blob, base.as_ref(), &mut on_chunk, &mut on_progress).await
        }
    }
}

/// A snapshot's index (of a URL: read by range, the preamble and the end of the file).
pub fn info(file: FileRef<Js>) -> Result<JobResult, Failure> {
    let src = FileSource::open(file)?;
    // A local snapshot's Inshrinkerator streams are read for their per-tensor errors; a remote
    // one is described from its index and annex (two requests).
    let streams = matches!(src, FileSource::Blob(_));
    let info = snapshot_info(&src, streams).map_err(|f| src.named(f.0))?;
    Ok(JobResult::Info(info))
}

/// Decodes tensor `tensor` of the snapshot `file` (with `base` for a delta) into a safetensors file
/// holding only it, posted as `Chunk`s then a `File` event; its bytes are checksum-verified and
/// their statistics computed as they go by. Of a URL, only the snapshot's preamble, index and the
/// tensor's frames are fetched.
pub fn decode_tensor(
    task: u32,
    file: FileRef<Js>,
    tensor: &str,
    base: Option<FileRef<Js>>,
    out: &dyn Post,
) -> Result<JobResult, Failure> {
    let started = now();
    let src = FileSource::open(file)?;
    let named = |e: SnapshotError| src.named(e);
    let reader = SnapshotReader::open(&src).map_err(named)?;
    let idx = reader.find(tensor).ok_or_else(|| {
        named(SnapshotError::NoTensor {
            name: tensor.into(),
        })
    })?;
    let (entry, info) = (&reader.entries[idx], &reader.header.tensors[idx]);
    if reader.base.is_some() && base.is_none() {
        return Err(src.named(format_args!(
            "tensor `{tensor}`: the snapshot is a delta against a base checkpoint; open the base checkpoint's file to decode it"
        )));
    }
    let base = base.map(FileSource::open).transpose()?;
    let base_header = base
        .as_ref()
        .map(bitlens_tensors::read_header)
        .transpose()
        .map_err(|e| Failure(format!("base: {e}")))?;
    let base_src = base
        .as_ref()
        .zip(base_header.as_ref())
        .map(|(src, header)| BaseSource {
            src: src as &dyn bitlens_snapshot::Source,
            header,
        });
    let skip = bitlens_snapshot::tensor_file_prefix(&reader.header, tensor)
        .map_err(named)?
        .len() as u64;
    let mut stats = Accumulator::new(info.dtype, entry.raw_len);
    let mut progress = Progress::new(task, entry.raw_len, out);
    let mut poster = |bytes: &[u8]| post_chunk(task, 0, bytes, out);
    let mut sink = ChunkSink::new(&mut poster);
    let mut written = 0u64;
    let file_bytes = reader
        .decode_tensor_file(tensor, base_src.as_ref(), &mut |bytes| {
            let data = &bytes[(skip.saturating_sub(written) as usize).min(bytes.len())..];
            written += bytes.len() as u64;
            stats
                .update(data)
                .map_err(|e| SnapshotError::Misuse(format!("statistics: {e}")))?;
            progress.file(written.saturating_sub(skip));
            sink.write_all(bytes)
                .map_err(|e| SnapshotError::Misuse(format!("output: {e}")))
        })
        .map_err(named)?;
    sink.flush().map_err(|e| Failure(format!("output: {e}")))?;
    let stats = stats
        .finish()
        .map_err(|e| Failure(format!("statistics of `{tensor}`: {e}")))?;
    let output = FileOutput::Tensor(tensor.to_owned());
    file_done(task, 0, started, output, out)?;
    Ok(JobResult::Tensor(Box::new(DecodedTensor {
        name: tensor.to_owned(),
        codec: entry.codec.name().to_owned(),
        lossy: entry.codec.is_lossy(),
        bytes: entry.raw_len,
        stored_bytes: entry.stored_len(),
        file_bytes,
        fetched: src.fetched(),
        stats,
    })))
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
    time_codecs(task, &data, dtype, codecs, out)
}

/// The largest tensor [`roundtrip_entry`] materialises: the round trip holds the tensor, its
/// encoded frames and its decoded copy at once, and wasm32 memory ends at 4 GiB.
pub const MAX_ROUNDTRIP_ENTRY: u64 = 1 << 30;

/// Bytes [`roundtrip_entry`] reads ahead at a time from a local file.
const ROUNDTRIP_READ_AHEAD: usize = 1 << 20;

/// [`roundtrip`] for a tensor of any format (a deflated `.npz` member, a PyTorch view, a ggml
/// tensor's stored blocks): its bytes materialised in element order by
/// [`bitlens_tensors::format::bytes`] (at most [`MAX_ROUNDTRIP_ENTRY`]), then timed the same way.
/// A ggml block type is timed on its stored blocks as `U8`, as the snapshot container stores them.
pub fn roundtrip_entry(
    task: u32,
    file: FileRef<Js>,
    entry: &Entry,
    codecs: &[ComparedCodec],
    out: &dyn Post,
) -> Result<JobResult, Failure> {
    let len = bytes::byte_len(entry);
    if len > MAX_ROUNDTRIP_ENTRY {
        return Err(Failure(format!(
            "tensor `{}` has {len} bytes; the codec comparison holds at most {MAX_ROUNDTRIP_ENTRY} in the page",
            entry.name
        )));
    }
    let src = FileSource::open(file)?.read_ahead(ROUNDTRIP_READ_AHEAD);
    let mut data = Vec::with_capacity(len as usize);
    bytes::for_each_window::<_, BytesError>(&src, entry, super::WINDOW, |w| {
        data.extend_from_slice(w);
        Ok(())
    })
    .map_err(|e| src.named(format_args!("tensor `{}`: {e}", entry.name)))?;
    time_codecs(task, &data, lane_dtype(entry.ty), codecs, out)
}

/// Times each codec of `codecs` on `data` (a tensor of `dtype`), posting progress after each.
fn time_codecs(
    task: u32,
    data: &[u8],
    dtype: Dtype,
    codecs: &[ComparedCodec],
    out: &dyn Post,
) -> Result<JobResult, Failure> {
    let mut rows = Vec::with_capacity(codecs.len());
    for c in codecs {
        let result = match c.codec {
            Contender::Bitlens(choice) => codec_roundtrip(&choice, dtype, data, &now)?,
            Contender::Peer(peer) => peer_codec_roundtrip(peer, data, &now)?,
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
