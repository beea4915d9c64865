//! The ordered frame pipeline the container's compress and decompress paths run on (issue 16):
//! items `0..n` (groups of consecutive frames) are *produced* — read and coded — by every thread
//! of the rayon pool at once, each into a slot of a ring of buffers reused from item to item, and
//! *consumed* — checksummed and written — strictly in order on the calling thread, which also
//! produces whenever the next item in order is not ready yet. What only producing needs (a frame's
//! compressed payload when decoding) lives in a scratch buffer per thread, not per slot: every
//! buffer is memory touched for the first time once per run (~1.6 µs per 4 KiB page here).
//!
//! Before it, the container coded a batch of one frame per thread and waited for the batch: a
//! 1 MiB frame decodes in 0.2–0.3 ms, about as long as a sleeping pool thread takes to wake in
//! this project's VM, so a second thread added almost nothing (1.00–1.37× on two threads). Here
//! each helper thread is woken once per call and then claims items until none are left, so the
//! threads only wait when the ring is full (the consumer is behind) or at the end.
//!
//! Memory stays bounded: at most [`ring_len`] items are in flight, and their bytes are at most
//! [`IN_FLIGHT_BYTES`] per thread unless a single item is larger (a 64 MiB frame of a codec other
//! than LMC is then the only item in flight, as it was a batch of its own before). Without feature
//! `parallel`, or on one thread, items are produced and consumed one after the other in one slot.
#[cfg(feature = "parallel")]
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// What produces an item: `(item, thread's scratch, slot)`; `Sync` when items are produced on
/// several threads (feature `parallel`), so that sources that cannot be shared (the page's
/// JavaScript files) still run on one.
#[cfg(feature = "parallel")]
pub(crate) trait Produce<T, S, E>:
    Fn(usize, &mut T, &mut S) -> Result<(), E> + Sync
{
}
#[cfg(feature = "parallel")]
impl<T, S, E, F: Fn(usize, &mut T, &mut S) -> Result<(), E> + Sync> Produce<T, S, E> for F {}
/// What produces an item: `(item, thread's scratch, slot)`; `Sync` when items are produced on
/// several threads (feature `parallel`), so that sources that cannot be shared (the page's
/// JavaScript files) still run on one.
#[cfg(not(feature = "parallel"))]
pub(crate) trait Produce<T, S, E>: Fn(usize, &mut T, &mut S) -> Result<(), E> {}
#[cfg(not(feature = "parallel"))]
impl<T, S, E, F: Fn(usize, &mut T, &mut S) -> Result<(), E>> Produce<T, S, E> for F {}

/// Bytes of items in flight per thread of the pool (an item larger than the budget runs alone).
#[cfg(any(feature = "parallel", test))]
pub(crate) const IN_FLIGHT_BYTES: u64 = 3 * crate::format::LMC_FRAME_BYTES as u64;

/// Buffers one item is produced into and consumed from, reused from item to item.
pub(crate) trait Slot: Default + Send {
    /// Gives back memory beyond `keep` bytes per buffer (after an item larger than usual).
    fn trim(&mut self, keep: usize);
}

/// A buffer: truncated and its capacity given back beyond `keep` bytes.
impl Slot for Vec<u8> {
    fn trim(&mut self, keep: usize) {
        self.truncate(keep);
        self.shrink_to(keep);
    }
}

/// A reused byte buffer that only grows: its first [`GrowBuf::len`] bytes are the current
/// contents. A `Vec` resized to each frame's length zeroes the difference every time a longer
/// frame follows a shorter one (tensors of 128 KiB between biases of 512 bytes: 5 % of a bf16
/// optimizer state's decompression went to `memset`); this one zeroes only what it has never
/// held.
#[derive(Default)]
pub(crate) struct GrowBuf {
    buf: Vec<u8>,
    len: usize,
}

impl GrowBuf {
    /// The current contents.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The current contents, made `n` bytes long (what they hold is left to the caller).
    pub(crate) fn ready(&mut self, n: usize) -> &mut [u8] {
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        self.len = n;
        &mut self.buf[..n]
    }

    /// Runs `f` on the buffer as a `Vec` (for coders that fill a `Vec` of their own); its
    /// length afterwards is the contents'.
    pub(crate) fn with_vec<R>(&mut self, f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
        self.buf.truncate(self.len);
        let r = f(&mut self.buf);
        self.len = self.buf.len();
        r
    }
}

impl Slot for GrowBuf {
    fn trim(&mut self, keep: usize) {
        self.buf.trim(keep);
        self.len = self.len.min(self.buf.len());
    }
}

impl<S: Slot> Slot for Vec<S> {
    fn trim(&mut self, keep: usize) {
        for s in self.iter_mut() {
            s.trim(keep);
        }
    }
}

/// Number of slots in the ring on `threads` threads: one per thread producing, and four more so
/// that the consumer's item and the few after it (a short tensor decodes in a fraction of the
/// time a 1 MiB frame takes) never hold a producer up. Four, not two: on two threads the CLI's
/// wall time fell 3–14 % on 42–45 MB files once the native CLI's buffers came in huge pages and
/// extra slots stopped costing page faults (BENCHMARKS.md, issue 16, session 10).
#[cfg(any(feature = "parallel", test))]
pub(crate) fn ring_len(threads: usize) -> usize {
    threads + 4
}

/// Bytes of work the pipeline needs per thread before it runs on one more: below it the ring
/// (its slots' buffers touched for the first time, the hand-offs between threads) costs more
/// than the thread gains, so a small file runs on one thread whatever the pool (the CLI's
/// default `--threads` is every core). Measured with `tests/python/bench_threads.py` on real
/// weights cut to 1–90 MB: two threads lost up to 18 % at 4–8 MB and won 1.2–1.7× from 16 MB
/// (BENCHMARKS.md, issue 28, "Threads must never cost").
pub(crate) const MIN_BYTES_PER_THREAD: u64 = 6 << 20;

/// The threads a pipeline over items of `bytes` runs on, with a pool of `pool` threads: one per
/// [`MIN_BYTES_PER_THREAD`] of work, at least one, at most the pool.
pub(crate) fn threads_for(bytes: &[u64], pool: usize) -> usize {
    let total: u64 = bytes.iter().sum();
    let wanted = usize::try_from(total / MIN_BYTES_PER_THREAD).unwrap_or(usize::MAX);
    pool.min(wanted).max(1)
}

/// Runs the pipeline over `bytes.len()` items (`bytes[i]`: item `i`'s size, for the memory bound)
/// on the current rayon pool: `produce(i, scratch, slot)` on any thread (with that thread's
/// scratch), `consume(i, slot)` on this one in the order of `i`. `slots` keeps the ring's buffers
/// from call to call. Errors come out in item
/// order, as a sequential run would give them: an item's produce error is returned when the item
/// would have been consumed, and a consume error stops the pipeline.
pub(crate) fn run<T: Slot, S: Slot, E: Send>(
    bytes: &[u64],
    slots: &mut Vec<S>,
    produce: &dyn Produce<T, S, E>,
    consume: &mut dyn FnMut(usize, &mut S) -> Result<(), E>,
) -> Result<(), E> {
    let threads = threads_for(bytes, rayon_threads());
    if threads <= 1 || bytes.len() <= 1 {
        if slots.is_empty() {
            slots.push(S::default());
        }
        let (slot, mut scratch) = (&mut slots[0], T::default());
        for (i, &n) in bytes.iter().enumerate() {
            produce(i, &mut scratch, slot)?;
            consume(i, slot)?;
            trim_after(slot, n);
            trim_after(&mut scratch, n);
        }
        return Ok(());
    }
    #[cfg(feature = "parallel")]
    {
        run_parallel(bytes, threads, slots, produce, consume)
    }
    #[cfg(not(feature = "parallel"))]
    unreachable!("rayon_threads() is 1 without feature `parallel`")
}

/// Frames smaller than this are grouped into items of up to [`crate::format::LMC_FRAME_BYTES`]
/// (the small tensors of a checkpoint: biases, norms), so that the ring is not worked one
/// kilobyte at a time; larger frames are items of their own, so a slot's buffers hold one large
/// frame, not parts of several.
pub(crate) const SMALL_FRAME: u64 = 64 << 10;

/// Cuts frames of `lens` bytes (in order) into the pipeline's items: the range of frames of each
/// item, and its bytes.
pub(crate) fn items(lens: impl Iterator<Item = u64>) -> (Vec<std::ops::Range<usize>>, Vec<u64>) {
    let (mut items, mut bytes): (Vec<std::ops::Range<usize>>, Vec<u64>) = (Vec::new(), Vec::new());
    let group = crate::format::LMC_FRAME_BYTES as u64;
    let mut grouping = false;
    for (i, n) in lens.enumerate() {
        match (items.last_mut(), bytes.last_mut()) {
            (Some(r), Some(b)) if grouping && n < SMALL_FRAME && *b + n <= group => {
                r.end = i + 1;
                *b += n;
            }
            _ => {
                items.push(i..i + 1);
                bytes.push(n);
                grouping = n < SMALL_FRAME;
            }
        }
    }
    (items, bytes)
}

/// Trims a slot that held an item larger than the usual frame, so a ring of slots does not keep
/// several 64 MiB buffers after one large frame passed through each.
fn trim_after<S: Slot>(slot: &mut S, item_bytes: u64) {
    let usual = crate::format::LMC_FRAME_BYTES;
    if item_bytes > usual as u64 {
        slot.trim(usual);
    }
}

#[cfg(feature = "parallel")]
/// Where the ring stands, under one lock.
struct Ring<E> {
    /// The next item to claim.
    next: usize,
    /// Items consumed so far (the next to consume).
    consumed: usize,
    /// Bytes of the items claimed and not yet consumed.
    in_flight: u64,
    /// Per slot: the item produced into it and how producing it went.
    ready: Vec<Option<(usize, Result<(), E>)>>,
    /// Set when the consumer stops (done, or an error): helpers claim nothing more.
    stop: bool,
}

#[cfg(feature = "parallel")]
impl<E> Ring<E> {
    /// The next item to produce, if the ring has a free slot for it and the memory bound allows
    /// it; claims it.
    fn claim(&mut self, bytes: &[u64], slots: usize, budget: u64) -> Option<usize> {
        let i = self.next;
        if self.stop || i >= bytes.len() || i >= self.consumed + slots {
            return None;
        }
        if self.in_flight > 0 && self.in_flight + bytes[i] > budget {
            return None;
        }
        self.next += 1;
        self.in_flight += bytes[i];
        Some(i)
    }
}

#[cfg(feature = "parallel")]
/// Locks, ignoring poisoning (a panicking producer's panic reaches the caller through rayon).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(feature = "parallel")]
fn run_parallel<T: Slot, S: Slot, E: Send>(
    bytes: &[u64],
    threads: usize,
    slots: &mut Vec<S>,
    produce: &dyn Produce<T, S, E>,
    consume: &mut dyn FnMut(usize, &mut S) -> Result<(), E>,
) -> Result<(), E> {
    let k = ring_len(threads).min(bytes.len());
    if slots.len() < k {
        slots.resize_with(k, S::default);
    }
    let cells: Vec<Mutex<S>> = slots.drain(..).map(Mutex::new).collect();
    let budget = IN_FLIGHT_BYTES * threads as u64;
    let ring = Mutex::new(Ring {
        next: 0,
        consumed: 0,
        in_flight: 0,
        ready: (0..k).map(|_| None).collect(),
        stop: false,
    });
    let changed = Condvar::new();
    // Produces item `i` into its slot and records the outcome.
    let produce_one = |i: usize, scratch: &mut T| {
        let result = produce(i, scratch, &mut lock(&cells[i % k]));
        trim_after(scratch, bytes[i]);
        let mut r = lock(&ring);
        r.ready[i % k] = Some((i, result));
        changed.notify_all();
    };
    let helper = || {
        let mut scratch = T::default();
        let mut r = lock(&ring);
        loop {
            if r.stop || r.next >= bytes.len() {
                return;
            }
            match r.claim(bytes, k, budget) {
                Some(i) => {
                    drop(r);
                    produce_one(i, &mut scratch);
                    r = lock(&ring);
                }
                None => r = changed.wait(r).unwrap_or_else(PoisonError::into_inner),
            }
        }
    };
    let result = rayon::in_place_scope(|scope| {
        for _ in 1..threads.min(bytes.len()) {
            scope.spawn(|_| helper());
        }
        let mut lead = || -> Result<(), E> {
            let mut scratch = T::default();
            let mut r = lock(&ring);
            while r.consumed < bytes.len() {
                let c = r.consumed;
                if matches!(r.ready[c % k], Some((i, _)) if i == c) {
                    let produced = r.ready[c % k].take().map_or(Ok(()), |(_, res)| res);
                    drop(r);
                    produced?;
                    {
                        let mut slot = lock(&cells[c % k]);
                        consume(c, &mut slot)?;
                        trim_after(&mut *slot, bytes[c]);
                    }
                    r = lock(&ring);
                    r.consumed += 1;
                    r.in_flight -= bytes[c];
                    changed.notify_all();
                } else if let Some(i) = r.claim(bytes, k, budget) {
                    drop(r);
                    produce_one(i, &mut scratch);
                    r = lock(&ring);
                } else {
                    r = changed.wait(r).unwrap_or_else(PoisonError::into_inner);
                }
            }
            Ok(())
        };
        let result = lead();
        lock(&ring).stop = true;
        changed.notify_all();
        result
    });
    slots.extend(
        cells
            .into_iter()
            .map(|c| c.into_inner().unwrap_or_else(PoisonError::into_inner)),
    );
    result
}

/// Threads of the current rayon pool (1 without feature `parallel`).
pub(crate) fn rayon_threads() -> usize {
    #[cfg(feature = "parallel")]
    return rayon::current_num_threads();
    #[cfg(not(feature = "parallel"))]
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grow_buf_keeps_what_it_held_and_its_length_is_the_contents() {
        let mut b = GrowBuf::default();
        b.ready(8).copy_from_slice(b"abcdefgh");
        assert_eq!(b.ready(3), b"abc");
        assert_eq!(b.bytes(), b"abc");
        // Longer again: the bytes it held come back, nothing is zeroed.
        assert_eq!(b.ready(8), b"abcdefgh");
        b.ready(2);
        b.with_vec(|v| {
            assert_eq!(v, b"ab");
            v.extend_from_slice(b"xyz");
        });
        assert_eq!(b.bytes(), b"abxyz");
        b.trim(4);
        assert_eq!(b.bytes(), b"abxy");
    }

    #[test]
    fn small_work_runs_on_one_thread() {
        let m = MIN_BYTES_PER_THREAD;
        assert_eq!(threads_for(&[], 8), 1);
        assert_eq!(threads_for(&[m - 1], 8), 1);
        assert_eq!(threads_for(&[m / 2, m / 2, m / 2], 8), 1);
        assert_eq!(threads_for(&[m, m], 8), 2);
        assert_eq!(threads_for(&[100 * m], 2), 2);
        assert_eq!(threads_for(&[100 * m], 1), 1);
    }

    type Buf = Vec<u8>;

    /// Small frames are grouped up to one LMC frame's bytes; larger frames stand alone.
    #[test]
    fn small_frames_are_grouped_and_large_ones_stand_alone() {
        let k = 1u64 << 10;
        let lens = [3 * k, 2 * k, 1 << 20, 512 * k, 4 * k, 60 * k, 64 * k, 0, 1];
        let (items, bytes) = items(lens.iter().copied());
        assert_eq!(items, vec![0..2, 2..3, 3..4, 4..6, 6..7, 7..9]);
        assert_eq!(bytes, vec![5 * k, 1 << 20, 512 * k, 64 * k, 64 * k, 1]);
        let many = vec![60 * k; 40];
        let (items, _) = super::items(many.iter().copied());
        assert_eq!(items.len(), 3, "17 + 17 + 6 frames of 60 KiB");
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// Every item is consumed once, in order, with the bytes its producer wrote, on 1–4 threads
    /// and with items of uneven sizes (some larger than the in-flight budget).
    #[test]
    fn consumes_every_item_in_order_with_its_bytes() {
        for threads in 1..=4 {
            let sizes: Vec<u64> = (0..200u64)
                .map(|i| match i % 37 {
                    5 => 9 << 20,
                    _ => 1 + (i * 7919) % 70_000,
                })
                .collect();
            let mut slots = Vec::new();
            let mut seen = Vec::new();
            pool(threads).install(|| {
                run::<Buf, Buf, String>(
                    &sizes,
                    &mut slots,
                    &|i, _, s| {
                        s.clear();
                        s.extend((0..sizes[i].min(4096)).map(|j| (i as u64 + j) as u8));
                        Ok(())
                    },
                    &mut |i, s| {
                        let want: Vec<u8> = (0..sizes[i].min(4096))
                            .map(|j| (i as u64 + j) as u8)
                            .collect();
                        assert_eq!(*s, want, "item {i}");
                        seen.push(i);
                        Ok(())
                    },
                )
                .unwrap()
            });
            assert_eq!(seen, (0..200).collect::<Vec<_>>(), "{threads} threads");
            assert!(slots.len() <= ring_len(threads));
        }
    }

    /// The first failing item's error comes out, as in a sequential run, whichever thread
    /// produced it and whatever was produced after it; nothing after it is consumed.
    #[test]
    fn the_first_error_in_item_order_wins() {
        for threads in 1..=3 {
            let sizes = vec![1000u64; 64];
            let mut consumed = Vec::new();
            let err = pool(threads).install(|| {
                run::<Buf, Buf, usize>(
                    &sizes,
                    &mut Vec::new(),
                    &|i, _, _| if i == 17 || i == 40 { Err(i) } else { Ok(()) },
                    &mut |i, _| {
                        consumed.push(i);
                        Ok(())
                    },
                )
                .unwrap_err()
            });
            assert_eq!(err, 17);
            assert_eq!(consumed, (0..17).collect::<Vec<_>>());
        }
    }

    /// A consumer's error stops the pipeline and is returned.
    #[test]
    fn a_consumer_error_stops_the_pipeline() {
        let sizes = vec![10u64; 1000];
        let mut n = 0;
        let err = pool(2).install(|| {
            run::<Buf, Buf, &str>(&sizes, &mut Vec::new(), &|_, _, _| Ok(()), &mut |i, _| {
                n += 1;
                if i == 3 {
                    Err("sink full")
                } else {
                    Ok(())
                }
            })
            .unwrap_err()
        });
        assert_eq!((err, n), ("sink full", 4));
    }

    /// At most one item larger than the budget is in flight, and the slots are trimmed after it.
    #[test]
    fn large_items_run_alone_and_their_buffers_are_given_back() {
        let threads = 2;
        let big = IN_FLIGHT_BYTES * threads as u64 + 1;
        let sizes = vec![big, 10, big, big, 10];
        let in_flight = std::sync::atomic::AtomicU64::new(0);
        let peak = std::sync::atomic::AtomicU64::new(0);
        let mut slots = Vec::new();
        pool(threads).install(|| {
            run::<Buf, Buf, ()>(
                &sizes,
                &mut slots,
                &|i, _, s| {
                    use std::sync::atomic::Ordering::SeqCst;
                    let now = in_flight.fetch_add(sizes[i], SeqCst) + sizes[i];
                    peak.fetch_max(now, SeqCst);
                    s.resize(if sizes[i] > 10 { 4 << 20 } else { 10 }, 1);
                    Ok(())
                },
                &mut |i, _| {
                    in_flight.fetch_sub(sizes[i], std::sync::atomic::Ordering::SeqCst);
                    Ok(())
                },
            )
            .unwrap()
        });
        assert!(peak.into_inner() <= big + 10);
        let usual = crate::format::LMC_FRAME_BYTES;
        assert!(slots.iter().all(|s| s.capacity() <= usual));
    }
}
