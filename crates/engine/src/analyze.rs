//! Runs the statistics accumulators over files: tensors in parallel, large tensors split into
//! block-aligned parts that are accumulated in parallel and merged in order (rayon).
//!
//! Memory stays bounded by the thread count: each running part holds one read window and one
//! accumulator, and a tensor is never split into more than [`PARTS_PER_THREAD`] parts per thread.
//!
//! Tensors of any format: a plain-dtype tensor stored as a byte range (safetensors, GGUF F32/F16,
//! `.npy`, PyTorch contiguous tensors) takes the parallel path above; any other (a deflated `.npz`
//! member, a PyTorch view, a ggml block-quantized tensor) is streamed in element order by
//! [`bitlens_stats::entry::entry_stats`], which the page's workers run too. A diff compares stored
//! bytes; for a quantized tensor also its dequantized values
//! ([`bitlens_stats::entry::EntryDiffer`], the page's workers' too).

use crate::error::{Context, Error, Result};
use crate::progress::Progress;
use crate::source::Source;
use bitlens_stats::entry::{lane_dtype, EntryDiffer};
use bitlens_stats::{
    split_ranges, Accumulator, EntryDiff, FlipAccumulator, FlipStats, StatsError, TensorStats,
};
use bitlens_tensors::format::{bytes, Data, ElementType, Entry, Layout};
use bitlens_tensors::{source::for_each_window, Dtype, ReadAt};
use rayon::prelude::*;
use std::ops::Range;
use std::path::Path;

/// Bytes read per window.
pub const WINDOW: usize = 4 << 20;

/// Smallest part a tensor is split into for parallel accumulation.
const MIN_PART: u64 = 16 << 20;

/// Upper bound on parts per thread for one tensor (bounds the partial results held for merging).
const PARTS_PER_THREAD: u64 = 4;

fn part_bytes(len: u64) -> u64 {
    let threads = rayon::current_num_threads() as u64;
    MIN_PART.max(len.div_ceil(threads * PARTS_PER_THREAD))
}

/// Statistics of the tensors of one file that `wanted` picks, in layout order (`None` for the
/// others, which are not read).
pub fn file_stats(
    path: &Path,
    src: &Source,
    layout: &Layout,
    wanted: &(dyn Fn(&Entry) -> bool + Sync),
    progress: &dyn Progress,
) -> Result<Vec<Option<TensorStats>>> {
    layout
        .entries
        .par_iter()
        .map(|t| {
            wanted(t)
                .then(|| {
                    entry_stats(src, t, progress)
                        .with_context(|| format!("{}: tensor `{}`", path.display(), t.name))
                })
                .transpose()
        })
        .collect()
}

/// Accumulates a tensor of `len` bytes in block-aligned parts on the rayon pool and merges the
/// parts in order; `part` accumulates one byte range.
fn in_parts<A: Send>(
    dtype: Dtype,
    len: u64,
    part: impl Fn(Range<u64>) -> Result<A> + Sync + Send,
    merge: fn(A, A) -> Result<A, StatsError>,
) -> Result<A> {
    let parts: Vec<A> = split_ranges(dtype, len, part_bytes(len))
        .into_par_iter()
        .map(part)
        .collect::<Result<_>>()?;
    let mut parts = parts.into_iter();
    let first = parts
        .next()
        .expect("split_ranges returns at least one range");
    Ok(parts.try_fold(first, merge)?)
}

fn entry_stats(src: &Source, t: &Entry, progress: &dyn Progress) -> Result<TensorStats> {
    match (t.ty, &t.data) {
        (ElementType::Dtype(dtype), &Data::Range { offset, len }) => {
            range_stats(src, dtype, offset, len, progress)
        }
        _ => Ok(bitlens_stats::entry::entry_stats(src, t, WINDOW, |n| {
            progress.inc(n)
        })?),
    }
}

/// A plain tensor of `len` bytes at `base`, in parallel parts.
fn range_stats(
    src: &Source,
    dtype: Dtype,
    base: u64,
    len: u64,
    progress: &dyn Progress,
) -> Result<TensorStats> {
    let acc = in_parts(
        dtype,
        len,
        |r| {
            let mut acc = Accumulator::for_range(dtype, len, r.clone())?;
            for_each_window(
                src,
                base + r.start,
                base + r.end,
                WINDOW,
                |w| -> Result<()> {
                    acc.update(w)?;
                    progress.inc(w.len() as u64);
                    Ok(())
                },
            )?;
            Ok(acc)
        },
        Accumulator::merge,
    )?;
    Ok(acc.finish()?)
}

/// One side of a comparison: a tensor and the file it lives in.
pub struct Side<'a> {
    /// The file.
    pub src: &'a Source,
    /// The tensor.
    pub tensor: &'a Entry,
}

/// Flip statistics of two tensors of equal element type and shape, on their stored bytes (for a
/// ggml block type: the raw block bytes as `U8` lanes, plus how its dequantized values changed).
/// Two plain byte ranges of a dtype are compared in parallel parts; any other pair is streamed in
/// element order, each side on a thread of its own, into the
/// [`bitlens_stats::entry::EntryDiffer`] the page's workers use (through `entry_diff`).
pub fn flip_stats(a: &Side, b: &Side, progress: &dyn Progress) -> Result<EntryDiff> {
    let dtype = lane_dtype(a.tensor.ty);
    if let (
        Data::Range {
            offset: base_a,
            len,
        },
        Data::Range { offset: base_b, .. },
        ElementType::Dtype(_),
    ) = (&a.tensor.data, &b.tensor.data, a.tensor.ty)
    {
        return Ok(EntryDiff {
            flips: range_flips(a.src, *base_a, b.src, *base_b, dtype, *len, progress)?,
            dequantized: None,
        });
    }
    let mut differ = EntryDiffer::new(a.tensor, b.tensor, WINDOW)?;
    paired(
        a,
        b,
        bytes::byte_len(a.tensor),
        differ.window(),
        |wa, wb| {
            differ.update(wa, wb)?;
            progress.inc(2 * wa.len() as u64);
            Ok(())
        },
    )?;
    Ok(differ.finish()?)
}

/// Two plain byte ranges, in parallel parts.
fn range_flips(
    src_a: &Source,
    base_a: u64,
    src_b: &Source,
    base_b: u64,
    dtype: Dtype,
    len: u64,
    progress: &dyn Progress,
) -> Result<FlipStats> {
    let acc = in_parts(
        dtype,
        len,
        |r| {
            let mut acc = FlipAccumulator::for_range(dtype, len, r.clone())?;
            let mut buf_b = vec![0u8; WINDOW.min((r.end - r.start) as usize)];
            let mut pos = r.start;
            for_each_window(
                src_a,
                base_a + r.start,
                base_a + r.end,
                WINDOW,
                |wa| -> Result<()> {
                    let wb = &mut buf_b[..wa.len()];
                    src_b.read_exact_at(base_b + pos, wb)?;
                    acc.update(wa, wb)?;
                    pos += wa.len() as u64;
                    progress.inc(2 * wa.len() as u64);
                    Ok(())
                },
            )?;
            Ok(acc)
        },
        FlipAccumulator::merge,
    )?;
    Ok(acc.finish()?)
}

/// Streams both sides' bytes in element order and calls `f` with equal-length pieces of at most
/// `window` bytes (each side read by [`bytes::for_each_window`] on its own thread, handing its
/// windows over a channel of two, so memory stays a few windows).
fn paired(
    a: &Side,
    b: &Side,
    len: u64,
    window: usize,
    mut f: impl FnMut(&[u8], &[u8]) -> Result<()>,
) -> Result<()> {
    std::thread::scope(|scope| {
        let (ra, ha) = producer(scope, a, window);
        let (rb, hb) = producer(scope, b, window);
        let mut pa = Pull::new(ra);
        let mut pb = Pull::new(rb);
        let (mut ba, mut bb) = (Vec::new(), Vec::new());
        let mut left = len;
        let mut result = Ok(());
        while left > 0 {
            let n = left.min(window as u64) as usize;
            if let Err(e) = pa.take(n, &mut ba).and_then(|()| pb.take(n, &mut bb)) {
                result = Err(e);
                break;
            }
            if let Err(e) = f(&ba, &bb) {
                result = Err(e);
                break;
            }
            left -= n as u64;
        }
        // Dropping the receivers stops the producers; their own errors come first.
        drop((pa, pb));
        for h in [ha, hb] {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => crate::bail!("a reading thread panicked"),
            }
        }
        result
    })
}

type Window = Vec<u8>;

/// How a producer's stream of windows ended early: the consumer hung up (an error of its own,
/// reported by it), or reading failed.
enum Stopped {
    /// The consumer stopped.
    Hungup,
    /// Reading failed.
    Failed(Error),
}

impl From<bitlens_tensors::format::bytes::BytesError> for Stopped {
    fn from(e: bitlens_tensors::format::bytes::BytesError) -> Stopped {
        Stopped::Failed(e.into())
    }
}

fn producer<'s, 'e>(
    scope: &'s std::thread::Scope<'s, 'e>,
    side: &'e Side<'e>,
    window: usize,
) -> (
    std::sync::mpsc::Receiver<Window>,
    std::thread::ScopedJoinHandle<'s, Result<()>>,
) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Window>(2);
    let handle = scope.spawn(move || {
        let sent = bytes::for_each_window(side.src, side.tensor, window, |w| {
            // A closed channel: the consumer stopped (an error of its own); stop quietly.
            tx.send(w.to_vec()).map_err(|_| Stopped::Hungup)
        });
        match sent {
            Ok(()) | Err(Stopped::Hungup) => Ok(()),
            Err(Stopped::Failed(e)) => Err(e),
        }
    });
    (rx, handle)
}

/// The consumer's end of a side's windows.
struct Pull {
    rx: std::sync::mpsc::Receiver<Window>,
    buf: Window,
    pos: usize,
}

impl Pull {
    fn new(rx: std::sync::mpsc::Receiver<Window>) -> Pull {
        Pull {
            rx,
            buf: Vec::new(),
            pos: 0,
        }
    }

    /// The next `n` bytes into `out`.
    fn take(&mut self, n: usize, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        while out.len() < n {
            if self.pos == self.buf.len() {
                self.buf = self
                    .rx
                    .recv()
                    .map_err(|_| Error::invalid("a tensor ended early"))?;
                self.pos = 0;
            }
            let k = (n - out.len()).min(self.buf.len() - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + k]);
            self.pos += k;
        }
        Ok(())
    }
}
