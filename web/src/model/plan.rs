//! Splits the work into worker tasks.
//!
//! Statistics: consecutive tensors of one file are batched into one contiguous byte range of at
//! least [`TASK_BYTES`] (a worker reads it in windows and hands each tensor its part), so a model of
//! thousands of small tensors costs few messages; a large tensor is a task of its own. A tensor is
//! never split across workers, because partial accumulators stay inside a worker. Comparisons:
//! pairs are batched the same way by size. Tasks are handed out one at a time to whichever worker is
//! free, so the load balances itself.

/// Target size of one task in bytes.
pub const TASK_BYTES: u64 = 32 << 20;

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

/// Batches of spans; spans in a batch are consecutive items of one file when `contiguous` was
/// asked for, else just consecutive items.
pub fn batches(spans: &[Span], contiguous: bool) -> Vec<Vec<Span>> {
    let mut out: Vec<Vec<Span>> = Vec::new();
    let mut cur: Vec<Span> = Vec::new();
    let mut cur_bytes = 0u64;
    for &s in spans {
        let joins = match cur.last() {
            None => true,
            Some(last) => {
                !contiguous || (last.file == s.file && last.offset + last.bytes == s.offset)
            }
        };
        if !joins || cur_bytes >= TASK_BYTES || (cur_bytes > 0 && s.bytes >= TASK_BYTES) {
            out.push(std::mem::take(&mut cur));
            cur_bytes = 0;
        }
        cur_bytes += s.bytes;
        cur.push(s);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Batches of spans read one by one (tensors streamed in element order, not one byte range):
/// consecutive items of one file, by size as [`batches`].
pub fn file_batches(spans: &[Span]) -> Vec<Vec<Span>> {
    batches(spans, false)
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
        let b = batches(&spans, true);
        let items: Vec<Vec<usize>> = b
            .iter()
            .map(|t| t.iter().map(|s| s.item).collect())
            .collect();
        assert_eq!(items, vec![vec![0, 1], vec![2], vec![3], vec![4]]);
        let loose = batches(&spans, false);
        assert_eq!(loose.len(), 3);
    }

    #[test]
    fn a_gap_breaks_a_batch() {
        let b = batches(&[span(0, 0, 0, 10), span(1, 0, 20, 10)], true);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn streamed_tensors_batch_by_size_within_one_file() {
        let mb = 1 << 20;
        // Gaps between the spans do not matter; a file change and the size target cut.
        let spans = [
            span(0, 0, 0, 10 * mb),
            span(1, 0, 50 * mb, 10 * mb),
            span(2, 1, 0, 10 * mb),
            span(3, 1, 20 * mb, 30 * mb),
            span(4, 1, 90 * mb, 5 * mb),
            span(5, 1, 99 * mb, 64 * mb),
        ];
        let items: Vec<Vec<usize>> = file_batches(&spans)
            .iter()
            .map(|b| b.iter().map(|s| s.item).collect())
            .collect();
        assert_eq!(items, [vec![0, 1], vec![2, 3], vec![4], vec![5]]);
    }
}
