//! Splits the work into worker tasks.
//!
//! Statistics: tensors of one file are batched, in file order, into tasks of about
//! [`task_bytes`] (a worker reads the task's tensors front to back in windows, reading through the
//! small gaps between them, and hands each tensor its part), so a model of thousands of small
//! tensors costs few messages; a large tensor is a task of its own. A tensor is never split across
//! workers, because partial accumulators stay inside a worker. Comparisons: pairs are batched the
//! same way by size. Tasks are handed out one at a time to whichever worker is free, so the load
//! balances itself.

/// Largest target size of one task in bytes.
pub const TASK_BYTES: u64 = 32 << 20;

/// Smallest target size of one task in bytes (a task costs a message each way and a file open).
pub const MIN_TASK_BYTES: u64 = 4 << 20;

/// Tasks per worker a run of work is cut into, at least. Few, because a worker that ends a task
/// waits for the page's thread to hand it the next, and on two cores that thread is drawing the
/// new table while the first tasks run; two, so that a worker slowed by the page's thread hands
/// its second share to the other.
pub const TASKS_PER_WORKER: u64 = 2;

/// The target size of the tasks of a run of `total` bytes on `workers` workers: a share of
/// [`TASKS_PER_WORKER`] tasks per worker, within [`MIN_TASK_BYTES`]..=[`TASK_BYTES`]. Tasks go to
/// whichever worker is free, so the workers end at most one task apart: with [`TASK_BYTES`]
/// alone a 52 MB GGUF was two tasks of 34 and 18 MB, and one of two workers sat idle for a
/// third of the run.
pub fn task_bytes(total: u64, workers: usize) -> u64 {
    total
        .div_ceil(TASKS_PER_WORKER * workers.max(1) as u64)
        .clamp(MIN_TASK_BYTES, TASK_BYTES)
}

/// A tensor to accumulate: where it is and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Row index (tensor) or pair index (comparison).
    pub item: usize,
    /// File index within the checkpoint.
    pub file: usize,
    /// Absolute offset in the file.
    pub offset: u64,
    /// Length in bytes.
    pub bytes: u64,
}

/// Consecutive spans batched by size: cut as near to every `target` bytes as whole spans allow
/// (a span goes to the batch its middle byte falls in), so batches are `target` bytes give or take
/// half a span; a span of `target` bytes or more shares its batch only with neighbours whose
/// middle bytes lie within half a target of its ends.
pub fn batches(spans: &[Span], target: u64) -> Vec<Vec<Span>> {
    let target = target.max(1);
    let mut out: Vec<(u64, Vec<Span>)> = Vec::new();
    let mut before = 0u64;
    for &s in spans {
        let batch = (before + s.bytes / 2) / target;
        match out.last_mut() {
            Some((b, cur)) if *b == batch => cur.push(s),
            _ => out.push((batch, vec![s])),
        }
        before += s.bytes;
    }
    out.into_iter().map(|(_, b)| b).collect()
}

/// Batches of consecutive spans of one file, by size as [`batches`].
pub fn file_batches(spans: &[Span], target: u64) -> Vec<Vec<Span>> {
    batches(spans, target)
        .into_iter()
        .flat_map(|b| {
            b.chunk_by(|x, y| x.file == y.file)
                .map(<[Span]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(item: usize, file: usize, offset: u64, bytes: u64) -> Span {
        Span {
            item,
            file,
            offset,
            bytes,
        }
    }

    #[test]
    fn small_tensors_batch_and_large_ones_stand_alone() {
        let mb = 1 << 20;
        let spans = [
            span(0, 0, 100, mb),
            span(1, 0, 100 + mb, mb),
            span(2, 0, 100 + 2 * mb, 64 * mb),
            span(3, 0, 100 + 66 * mb, mb),
            span(4, 1, 100, mb),
        ];
        let items: Vec<Vec<usize>> = batches(&spans, TASK_BYTES)
            .iter()
            .map(|t| t.iter().map(|s| s.item).collect())
            .collect();
        assert_eq!(items, vec![vec![0, 1], vec![2], vec![3, 4]]);
    }

    #[test]
    fn tasks_are_a_share_of_the_run_within_bounds() {
        let mb = 1 << 20;
        assert_eq!(task_bytes(64 * mb, 2), 16 * mb);
        assert_eq!(task_bytes(mb, 2), MIN_TASK_BYTES);
        assert_eq!(task_bytes(10_000 * mb, 2), TASK_BYTES);
        assert_eq!(task_bytes(0, 0), MIN_TASK_BYTES);
    }

    #[test]
    fn streamed_tensors_batch_by_size_within_one_file() {
        let mb = 1 << 20;
        // Gaps between the spans do not matter; a file change and the size target cut (span 3's
        // middle byte, at 45 MiB of the run, is past the first 32 MiB).
        let spans = [
            span(0, 0, 0, 10 * mb),
            span(1, 0, 50 * mb, 10 * mb),
            span(2, 1, 0, 10 * mb),
            span(3, 1, 20 * mb, 30 * mb),
            span(4, 1, 90 * mb, 5 * mb),
            span(5, 1, 99 * mb, 64 * mb),
        ];
        let items: Vec<Vec<usize>> = file_batches(&spans, TASK_BYTES)
            .iter()
            .map(|b| b.iter().map(|s| s.item).collect())
            .collect();
        assert_eq!(items, [vec![0, 1], vec![2], vec![3, 4], vec![5]]);
    }

    #[test]
    fn a_large_span_shares_its_batch_only_with_spans_near_its_ends() {
        // Pseudo-random sizes from 1 byte to 3 targets, many runs.
        let target = 1_000u64;
        let mut x = 12_345u64;
        for _ in 0..200 {
            let spans: Vec<Span> = (0..40)
                .scan(0, |at, i| {
                    x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let bytes = 1 + (x >> 33) % (3 * target);
                    *at += bytes;
                    Some(span(i, 0, *at - bytes, bytes))
                })
                .collect();
            for batch in batches(&spans, target) {
                for big in batch.iter().filter(|s| s.bytes >= target) {
                    for other in batch.iter().filter(|s| s.item != big.item) {
                        let mid = other.offset + other.bytes / 2;
                        let near = if other.offset < big.offset {
                            big.offset - mid
                        } else {
                            mid - (big.offset + big.bytes)
                        };
                        assert!(near <= target / 2, "{big:?} with {other:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn batches_are_the_target_give_or_take_half_a_span() {
        let mb = 1 << 20;
        // A GGUF-like run of 50 MiB: 7, 1 and 2 MiB tensors with tiny norms between them.
        let sizes = [7 * mb, 4096, mb, 4096, 2 * mb, 4096];
        let spans: Vec<Span> = (0..30)
            .scan(0, |at, i| {
                let bytes = sizes[i % sizes.len()];
                *at += bytes;
                Some(span(i, 0, *at - bytes, bytes))
            })
            .collect();
        let total: u64 = spans.iter().map(|s| s.bytes).sum();
        let target = total / 2;
        let b = batches(&spans, target);
        assert_eq!(b.len(), 2);
        for batch in &b {
            let bytes: u64 = batch.iter().map(|s| s.bytes).sum();
            assert!(
                bytes.abs_diff(target) <= 7 * mb / 2,
                "{bytes} against {target}"
            );
        }
        let items: Vec<usize> = b.concat().iter().map(|s| s.item).collect();
        assert_eq!(items, (0..30).collect::<Vec<_>>(), "in order, each once");
    }
}
