//! Runs the statistics accumulators over files: tensors in parallel, large tensors split into
//! block-aligned parts that are accumulated in parallel and merged in order (rayon).
//!
//! Memory stays bounded by the thread count: each running part holds one read window and one
//! accumulator, and a tensor is never split into more than [`PARTS_PER_THREAD`] parts per thread.

use crate::progress::Progress;
use crate::source::Source;
use anyhow::{Context, Result};
use bitlens_stats::{
    split_ranges, Accumulator, FlipAccumulator, FlipStats, StatsError, TensorStats,
};
use bitlens_tensors::{source::for_each_window, Dtype, Header, ReadAt, TensorInfo};
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

/// Statistics of every tensor of one file, in header order.
pub fn file_stats(
    path: &Path,
    src: &Source,
    header: &Header,
    progress: &Progress,
) -> Result<Vec<TensorStats>> {
    header
        .tensors
        .par_iter()
        .map(|t| {
            tensor_stats(src, header, t, progress)
                .with_context(|| format!("{}: tensor `{}`", path.display(), t.name))
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

fn tensor_stats(
    src: &Source,
    header: &Header,
    t: &TensorInfo,
    progress: &Progress,
) -> Result<TensorStats> {
    let (base, _) = header.file_range(t);
    let len = t.byte_len();
    let acc = in_parts(
        t.dtype,
        len,
        |r| {
            let mut acc = Accumulator::for_range(t.dtype, len, r.clone())?;
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
    /// Its header.
    pub header: &'a Header,
    /// The tensor.
    pub tensor: &'a TensorInfo,
}

/// Flip statistics of two tensors of equal dtype and shape.
pub fn flip_stats(a: &Side, b: &Side, progress: &Progress) -> Result<FlipStats> {
    let (base_a, _) = a.header.file_range(a.tensor);
    let (base_b, _) = b.header.file_range(b.tensor);
    let dtype = a.tensor.dtype;
    let len = a.tensor.byte_len();
    let acc = in_parts(
        dtype,
        len,
        |r| {
            let mut acc = FlipAccumulator::for_range(dtype, len, r.clone())?;
            let mut buf_b = vec![0u8; WINDOW.min((r.end - r.start) as usize)];
            let mut pos = r.start;
            for_each_window(
                a.src,
                base_a + r.start,
                base_a + r.end,
                WINDOW,
                |wa| -> Result<()> {
                    let wb = &mut buf_b[..wa.len()];
                    b.src.read_exact_at(base_b + pos, wb)?;
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
