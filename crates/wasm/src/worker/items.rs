//! The statistics pool's tasks: tensors whose stored bytes are one range of their file (a plain
//! dtype or ggml blocks) streamed window by window from `Blob`s or remote files (`Range` requests,
//! see [`super::http`]) into the core's accumulators
//! ([`bitlens_stats::entry::ElementAccumulator`], [`bitlens_stats::FlipAccumulator`]), with the
//! bytes read and the items finished reported at most every [`FLUSH_MS`](super::post::FLUSH_MS).
//! Each worker holds one window (and its copy in wasm memory) and one accumulator at a time, so
//! memory does not grow with the file. Tensors that are not byte ranges (and pairs that are not
//! two plain ranges) are read synchronously and streamed in element order by the CLI's functions
//! ([`bitlens_stats::entry`]).

use super::post::{Post, Throttle};
use super::windows::{window_for, Windows};
use crate::error::Failure;
use crate::source::FileSource;
use bitlens_protocol::js::{Event, Js};
use bitlens_protocol::{Batch, EntryPair, FileRef, FlipSpan, JobResult, Results, StatsSpan};
use bitlens_report::sidecar::Fingerprint;
use bitlens_stats::entry::ElementAccumulator;
use bitlens_stats::{FlipAccumulator, TensorStats};
use bitlens_tensors::format::{self, Entry};
use bitlens_tensors::source::{Retaining, RETAIN_BYTES};

/// Collects a task's progress and finished items and posts them as `Update`s.
struct Reporter<'a, T> {
    task: u32,
    out: &'a dyn Post,
    bytes: u64,
    items: Vec<(usize, T)>,
    wrap: fn(Vec<(usize, T)>) -> Results,
    throttle: Throttle,
}

impl<'a, T> Reporter<'a, T> {
    fn new(task: u32, out: &'a dyn Post, wrap: fn(Vec<(usize, T)>) -> Results) -> Self {
        Reporter {
            task,
            out,
            bytes: 0,
            items: Vec::new(),
            wrap,
            throttle: Throttle::new(false),
        }
    }

    /// `bytes` more were read.
    fn add(&mut self, bytes: u64) -> Result<(), Failure> {
        self.bytes += bytes;
        self.maybe_flush()
    }

    /// Item `item` is finished.
    fn result(&mut self, item: usize, value: T) -> Result<(), Failure> {
        self.items.push((item, value));
        self.maybe_flush()
    }

    fn maybe_flush(&mut self) -> Result<(), Failure> {
        if self.throttle.due(false) {
            let batch = self.take();
            // The batch's items are one byte string (`Results`): moved, not copied.
            self.out.post_moving_bytes(&Event::Update {
                task: self.task,
                batch,
            })?;
        }
        Ok(())
    }

    /// What was not reported yet.
    fn take(&mut self) -> Batch {
        Batch {
            bytes: std::mem::take(&mut self.bytes),
            results: (self.wrap)(std::mem::take(&mut self.items)),
        }
    }
}

/// Gaps between spans of at most this many bytes are read through (and dropped) rather than
/// starting a new read: a GGUF pads each tensor to its alignment (32 bytes by default), and a
/// new `Blob` stream or `Range` request costs more than reading 64 KiB.
const READ_THROUGH: u64 = 64 << 10;

/// Statistics of `spans` of `file`: each run of consecutive spans at most [`READ_THROUGH`] bytes
/// apart ([`runs`]) is read front to back in windows of `window` bytes, and each window's bytes
/// are handed to the tensors they belong to.
pub async fn stats(
    task: u32,
    file: FileRef<Js>,
    spans: &[StatsSpan],
    out: &dyn Post,
    window: usize,
) -> Result<JobResult, Failure> {
    let mut rep = Reporter::new(task, out, Results::Stats);
    // A tensor of no bytes needs no read.
    for s in spans.iter().filter(|s| s.bytes == 0) {
        rep.result(s.item, ElementAccumulator::new(s.ty, 0)?.finish()?)?;
    }
    let spans: Vec<&StatsSpan> = spans.iter().filter(|s| s.bytes > 0).collect();
    let window = window_for(&file, window);
    let mut buf = Vec::new();
    for run in runs(&spans) {
        read_run(&file, run, window, &mut buf, &mut rep).await?;
    }
    Ok(JobResult::Items(rep.take()))
}

/// `spans` cut into runs read in one pass each: a run ends where the next span starts more than
/// [`READ_THROUGH`] bytes after it, or before its end (the same storage as two tensors, or spans
/// out of file order).
fn runs<'a, 'b>(spans: &'b [&'a StatsSpan]) -> Vec<&'b [&'a StatsSpan]> {
    spans
        .chunk_by(|a, b| {
            let end = a.offset + a.bytes;
            b.offset >= end && b.offset - end <= READ_THROUGH
        })
        .collect()
}

/// Reads one run of spans (at least one, each of some bytes) front to back in windows of `window`
/// bytes into one accumulator per span, reporting each span's statistics when its last byte came.
async fn read_run(
    file: &FileRef<Js>,
    run: &[&StatsSpan],
    window: usize,
    buf: &mut Vec<u8>,
    rep: &mut Reporter<'_, TensorStats>,
) -> Result<(), Failure> {
    let (Some(first), Some(last)) = (run.first(), run.last()) else {
        return Ok(());
    };
    let (start, end) = (first.offset, last.offset + last.bytes);
    let mut reader = Windows::open(file.clone(), start, end, window)?;
    buf.resize(window.min((end - start) as usize), 0);
    let mut next = run.iter();
    // The span being fed and its accumulator.
    let mut acc: Option<(&StatsSpan, ElementAccumulator)> = None;
    let mut pos = start;
    while pos < end {
        let w = &mut buf[..window.min((end - pos) as usize)];
        reader.next(w).await?;
        let w_end = pos + w.len() as u64;
        let mut fed = 0;
        loop {
            if acc.is_none() {
                match next.as_slice().first() {
                    Some(&s) if s.offset < w_end => {
                        next.next();
                        acc = Some((s, ElementAccumulator::new(s.ty, s.bytes)?));
                    }
                    _ => break,
                }
            }
            let Some((span, a)) = acc.as_mut() else {
                break;
            };
            let span_end = span.offset + span.bytes;
            let (from, to) = (span.offset.max(pos), span_end.min(w_end));
            a.update(&w[(from - pos) as usize..(to - pos) as usize])?;
            fed += to - from;
            if span_end > w_end {
                break;
            }
            if let Some((span, a)) = acc.take() {
                rep.result(span.item, a.finish()?)?;
            }
        }
        rep.add(fed)?;
        pos = w_end;
    }
    Ok(())
}

/// Flip statistics of each pair of `spans`, reading both files' windows at once.
pub async fn flips(
    task: u32,
    spans: Vec<FlipSpan<Js>>,
    out: &dyn Post,
    window: usize,
) -> Result<JobResult, Failure> {
    let mut rep = Reporter::new(task, out, Results::Flips);
    let size = spans.iter().map(|s| s.bytes).max().unwrap_or(0);
    // Both files of a pair step by the same windows: remote-sized when either is remote.
    let window = spans
        .iter()
        .flat_map(|s| [window_for(&s.a, window), window_for(&s.b, window)])
        .max()
        .unwrap_or(window);
    let mut buf_a = vec![0u8; window.min(size as usize)];
    let mut buf_b = buf_a.clone();
    for s in spans {
        let mut acc = FlipAccumulator::new(s.dtype, s.bytes);
        let mut ra = Windows::open(s.a, s.a_offset, s.a_offset + s.bytes, window)?;
        let mut rb = Windows::open(s.b, s.b_offset, s.b_offset + s.bytes, window)?;
        let mut pos = 0;
        while pos < s.bytes {
            let n = window.min((s.bytes - pos) as usize);
            let (wa, wb) = (&mut buf_a[..n], &mut buf_b[..n]);
            let (got_a, got_b) = futures_util::future::join(ra.next(wa), rb.next(wb)).await;
            got_a?;
            got_b?;
            acc.update(wa, wb)?;
            pos += n as u64;
            rep.add(2 * n as u64)?;
        }
        rep.result(s.item, acc.finish()?)?;
    }
    Ok(JobResult::Items(rep.take()))
}

/// Bytes [`describe`] reads ahead at a time from a local file.
const DESCRIBE_READ_AHEAD: usize = 64 << 10;

/// Bytes [`entry_stats`] reads ahead at a time from a local file for reads smaller than that.
const ENTRY_READ_AHEAD: usize = 1 << 20;

/// The layout of a checkpoint file of any format, read synchronously (`FileReaderSync`, or range
/// requests for a URL) from the bytes that describe its tensors; for a URL also its fingerprint
/// (`bitlens_report::sidecar`), hashed from the bytes the reader read (kept by a [`Retaining`]
/// source), so checking a sidecar costs no request.
pub fn describe(file: FileRef<Js>) -> Result<JobResult, Failure> {
    // The readers read a header field by field: 64 KiB at a time serves them, and reads only a
    // few KiB more than what describes the tensors (not a 32 MiB window).
    let src = FileSource::open(file)?.read_ahead(DESCRIBE_READ_AHEAD);
    // Over HTTP every read is a request: a PyTorch zip's storages are located from its central
    // directory instead of one request per local header (`Locate::Predict`). Only a remote file's
    // reads are kept (a local one needs no fingerprint).
    let remote = matches!(src, FileSource::Url(_));
    let src = Retaining::with_budget(src, if remote { RETAIN_BYTES } else { 0 });
    let locate = if remote {
        format::zip::Locate::Predict
    } else {
        format::zip::Locate::Verify
    };
    let layout = format::open_with(&src, locate).map_err(|e| src.inner().named(e))?;
    let fingerprint = remote
        .then(|| Fingerprint::read(&src).ok().map(Box::new))
        .flatten();
    Ok(JobResult::Layout(Box::new(layout), fingerprint))
}

/// Statistics of `entries` of `file`, each streamed in element order through the CLI's per-tensor
/// function ([`bitlens_stats::entry::entry_stats`]): ggml block-quantized tensors, deflated `.npz`
/// members, PyTorch views. Read synchronously in windows of `window` bytes.
pub fn entry_stats(
    task: u32,
    file: FileRef<Js>,
    entries: &[(usize, Entry)],
    out: &dyn Post,
    window: usize,
) -> Result<JobResult, Failure> {
    // Whole windows are read exactly as asked; smaller reads (a small tensor, a view read row by
    // row, a zip member's compressed input) 1 MiB at a time, not 32 MiB past a small tensor.
    let src = FileSource::open(file)?.read_ahead(ENTRY_READ_AHEAD);
    let mut rep = Reporter::new(task, out, Results::Stats);
    for (item, entry) in entries {
        let mut read = 0;
        let stats = bitlens_stats::entry::entry_stats(&src, entry, window, |n| read += n)
            .map_err(|e| src.named(format_args!("tensor `{}`: {e}", entry.name)))?;
        rep.add(read)?;
        rep.result(*item, stats)?;
    }
    Ok(JobResult::Items(rep.take()))
}

/// Differences of each pair of `pairs`, streamed in lockstep in element order through the CLI's
/// per-pair function ([`bitlens_stats::entry::entry_diff`]): deflated `.npz` members, PyTorch
/// views, ggml blocks (with their dequantized values). Read synchronously in windows of `window`
/// bytes, one window per side at a time.
pub fn entry_flips(
    task: u32,
    pairs: Vec<EntryPair<Js>>,
    out: &dyn Post,
    window: usize,
) -> Result<JobResult, Failure> {
    let mut rep = Reporter::new(task, out, Results::Diffs);
    for p in pairs {
        let a = FileSource::open(p.a)?.read_ahead(ENTRY_READ_AHEAD);
        let b = FileSource::open(p.b)?.read_ahead(ENTRY_READ_AHEAD);
        let mut read = 0;
        let diff =
            bitlens_stats::entry::entry_diff((&a, &p.a_entry), (&b, &p.b_entry), window, |n| {
                read += n
            })
            .map_err(|e| a.named(format_args!("tensor `{}` against B: {e}", p.a_entry.name)))?;
        rep.add(read)?;
        rep.result(p.item, diff)?;
    }
    Ok(JobResult::Items(rep.take()))
}
