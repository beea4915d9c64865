//! PLMC's parallel encoding (LMC paper §4.3: segments compressed in parallel): segments coded on
//! a rayon pool and placed into the output in order; the bytes are those of one thread.

use super::{with_encoder, StreamEncoder};
use crate::lmc::{self, Params};

impl StreamEncoder<'_> {
    /// Threads the parallel path would run on: 1 when the options ask for one thread, else
    /// the stream's own pool, else the current one.
    pub(super) fn threads(&self) -> usize {
        match &self.pool {
            _ if self.serial => 1,
            Some(pool) => pool.current_num_threads(),
            None => rayon::current_num_threads(),
        }
    }

    /// Codes the segments in parallel. When the output already has capacity for at least half
    /// the input after the stream (a reused buffer), each segment is placed there as soon as
    /// its predecessors are ([`Self::push_parallel_in_order`]); otherwise they are coded into
    /// pooled buffers and copied once their total is known ([`Self::push_parallel_then_copy`]),
    /// which allocates no more than the stream needs. (Reserving room for the worst case
    /// instead made one-shot encodes of large inputs 2× slower: allocations over 32 MiB always
    /// get fresh pages from glibc.)
    pub(super) fn push_parallel(&mut self, segments: &[&[u8]]) {
        let input: usize = segments.iter().map(|s| s.len()).sum();
        let bound: usize = segments.iter().map(|s| lmc::max_encoded_len(s.len())).sum();
        let room = (self.out.capacity() - self.len).min(bound);
        if room >= input / 2 {
            self.push_parallel_in_order(segments, room);
        } else {
            self.push_parallel_then_copy(segments);
        }
    }

    /// Codes the segments in parallel into pooled buffers (one balanced `par_iter`), then copies
    /// them into place in parallel: the output grows once by their total.
    fn push_parallel_then_copy(&mut self, segments: &[&[u8]]) {
        use rayon::prelude::*;
        let params = self.params;
        let start = self.len;
        let work = |out: &mut Vec<u8>| -> Vec<Vec<u8>> {
            let coded: Vec<Vec<u8>> = segments
                .par_iter()
                .map(|s| encode_segment(s, &params))
                .collect();
            let total: usize = coded.iter().map(Vec::len).sum();
            if out.len() < start + total {
                out.resize(start + total, 0);
            }
            let mut rest = &mut out[start..start + total];
            let mut jobs = Vec::with_capacity(coded.len());
            for c in &coded {
                let (dst, tail) = rest.split_at_mut(c.len());
                jobs.push((dst, &c[..]));
                rest = tail;
            }
            jobs.into_par_iter()
                .for_each(|(dst, src)| dst.copy_from_slice(src));
            coded
        };
        let coded = match &self.pool {
            Some(pool) => pool.install(|| work(self.out)),
            None => work(self.out),
        };
        for c in &coded {
            self.record(c.len());
            self.len += c.len();
        }
        return_buffers(coded);
    }

    /// Codes the segments in parallel and places each into the output as soon as every segment
    /// before it is placed, by the thread that completes that prefix, so the copy reads a
    /// buffer that is still in cache and overlaps the coding of later segments. Threads take
    /// segments in order from a shared counter (neighbours finish at about the same time), and
    /// the output is grown to `room` bytes after the stream within its capacity (its bytes past
    /// the stream stay stale). Segments that do not fit (with their successors) are appended
    /// one by one afterwards. Measured on bf16, 2 threads vs 1 (`lmc_speed`,
    /// quiet machine): copying in a second parallel pass after all the coding gave 1.66–1.80×,
    /// this 1.91–1.96×.
    fn push_parallel_in_order(&mut self, segments: &[&[u8]], room: usize) {
        use rayon::prelude::*;
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Mutex;
        let params = self.params;
        let start = self.len;
        if self.out.len() < start + room {
            self.out.resize(start + room, 0);
        }
        let next = AtomicUsize::new(0);
        let placement = Mutex::new(Placement {
            next: 0,
            room: Some(&mut self.out[start..start + room]),
            waiting: Vec::new(),
            sizes: Vec::with_capacity(segments.len()),
        });
        let work = || {
            let threads = rayon::current_num_threads().clamp(1, segments.len());
            (0..threads).into_par_iter().for_each(|_| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(seg) = segments.get(k) else { break };
                let coded = encode_segment(seg, &params);
                let ready = placement
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .add(k, coded);
                let mut done = Vec::with_capacity(ready.len());
                for (dst, coded) in ready {
                    dst.copy_from_slice(&coded);
                    done.push(coded);
                }
                return_buffers(done);
            });
        };
        match &self.pool {
            Some(pool) => pool.install(work),
            None => work(),
        }
        let Placement {
            sizes, mut waiting, ..
        } = placement.into_inner().unwrap_or_else(|e| e.into_inner());
        for size in sizes {
            self.record(size);
            self.len += size;
        }
        // Segments that did not fit the room go after the others, one by one.
        waiting.sort_by_key(|(k, _)| *k);
        self.out.truncate(self.len);
        for (_, coded) in &waiting {
            self.out.extend_from_slice(coded);
            self.record(coded.len());
            self.len += coded.len();
        }
        return_buffers(waiting.into_iter().map(|(_, v)| v).collect());
    }
}

/// The in-order placement of [`StreamEncoder`]'s parallel segments: the next segment to place,
/// the output room after the placed ones, coded segments waiting for their predecessors, and
/// the sizes placed so far.
struct Placement<'a> {
    next: usize,
    room: Option<&'a mut [u8]>,
    waiting: Vec<(usize, Vec<u8>)>,
    sizes: Vec<usize>,
}

impl<'a> Placement<'a> {
    /// Records coded segment `k`; returns the segments that are now next in order, each with
    /// the output bytes it is to be copied into. A segment larger than the room left stays
    /// waiting, and so do all after it.
    fn add(&mut self, k: usize, coded: Vec<u8>) -> Vec<(&'a mut [u8], Vec<u8>)> {
        self.waiting.push((k, coded));
        let mut ready = Vec::new();
        while let Some(i) = self.waiting.iter().position(|(k, _)| *k == self.next) {
            let room = self.room.take().unwrap_or_default();
            if self.waiting[i].1.len() > room.len() {
                self.room = Some(room);
                break;
            }
            let (_, coded) = self.waiting.swap_remove(i);
            let (dst, rest) = room.split_at_mut(coded.len());
            self.room = Some(rest);
            self.sizes.push(coded.len());
            self.next += 1;
            ready.push((dst, coded));
        }
        ready
    }
}

/// Codes one segment with this thread's encoder into a pooled buffer.
fn encode_segment(segment: &[u8], params: &Params) -> Vec<u8> {
    with_encoder(|enc| {
        let mut v = take_buffer();
        enc.encode_into(segment, params, &mut v);
        v
    })
}

/// Segment output buffers kept between parallel encodes (fresh multi-MiB allocations cost page
/// faults and `mmap` calls on every call). At most [`POOL_BYTES`] of capacity is kept.
static BUFFER_POOL: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
const POOL_BYTES: usize = 64 << 20;

fn take_buffer() -> Vec<u8> {
    let mut v = match BUFFER_POOL.lock() {
        Ok(mut p) => p.pop().unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    v.clear();
    v
}

fn return_buffers(bufs: Vec<Vec<u8>>) {
    if let Ok(mut p) = BUFFER_POOL.lock() {
        let mut held: usize = p.iter().map(|b| b.capacity()).sum();
        for b in bufs {
            if held + b.capacity() > POOL_BYTES {
                break;
            }
            held += b.capacity();
            p.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::{encode, Options};
    use super::*;
    use crate::lmc::Width;

    /// In-order placement with too little room: the segments that fit are placed, the rest are
    /// appended after them, and the stream is the same as one thread's.
    #[test]
    fn in_order_placement_overflows_into_appended_segments() {
        let mut random = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let data: Vec<u8> = (0..300_000)
            .map(|i| {
                let x = random();
                // Half compressible, half random: segments of different sizes.
                if i < 150_000 {
                    (x % 7) as u8
                } else {
                    x as u8
                }
            })
            .collect();
        let opts = Options {
            segment_bytes: 16 << 10,
            threads: Some(2),
            ..Options::default()
        };
        let serial = encode(
            &data,
            Width::W2,
            &Options {
                threads: Some(1),
                ..opts
            },
        );
        for room in [0, 1000, 100_000, 250_000, 400_000] {
            let mut out = vec![0xEEu8; 1];
            let mut enc = StreamEncoder::new(data.len() as u64, Width::W2, &opts, &mut out);
            let segments: Vec<&[u8]> = data.chunks(enc.segment_bytes()).collect();
            enc.pushed = data.len() as u64;
            enc.out.reserve(room + enc.len);
            let pool = enc.pool.take().expect("a 2-thread pool");
            pool.install(|| enc.push_parallel_in_order(&segments, room));
            enc.finish();
            assert_eq!(out, serial, "room {room}");
        }
        // No thread count given: the current pool decides. On one thread the segments are coded
        // straight into the output, on two in parallel; the bytes are the same.
        let unset = Options {
            threads: None,
            ..opts
        };
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut out = Vec::new();
            pool.install(|| {
                let mut enc = StreamEncoder::new(data.len() as u64, Width::W2, &unset, &mut out);
                assert_eq!(enc.threads(), threads);
                enc.push(&data);
                enc.finish();
            });
            assert_eq!(out, serial, "{threads} threads in the current pool");
        }
    }
}
