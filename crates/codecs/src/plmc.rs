//! PLMC, the parallel form of LMC (LMC paper §4.3), as a self-describing, versioned stream.
//!
//! The input is cut into **fixed-size segments** of `segment_bytes` (default 1 MiB, a multiple of
//! the element width; only the last segment is shorter). Each segment is an independent LMC
//! stream ([`crate::lmc`]). Unlike the paper (one segment per thread), the segment size never
//! depends on the thread count, so the output bytes are identical for any number of threads, and
//! any segment can be decoded on its own.
//!
//! ## Stream layout (version 1; all integers little-endian)
//! ```text
//! offset  size  field
//!  0      4     magic "BLMC" (42 4C 4D 43)
//!  4      1     version = 1
//!  5      1     width: element size in bytes, 1 | 2 | 4 | 8
//!  6      1     transform: 0 = none, 1 = sign rotation (crate::byte_group); 0 when width = 1
//!  7      1     block_log2: LMC block size per group stream = 2^block_log2, 12..=20
//!  8      8     total_len u64: length of the original data
//! 16      4     segment_bytes u32: size of every segment but the last; a multiple of width,
//!               1..=2^30
//! 20      4     segment_count u32 = ceil(total_len / segment_bytes) (0 when total_len = 0)
//! 24      8×c   segment table, per segment i:
//!                 compressed_len u32    bytes of segment i's LMC stream
//!                 uncompressed_len u32  = segment_bytes, or the remainder for the last segment
//! 24+8c   …     the LMC streams of segments 0..c, back to back; the stream ends exactly after
//!               the last one
//! ```
//! Segment `i` decodes to bytes `[i × segment_bytes, i × segment_bytes + uncompressed_len_i)` of
//! the original. Its LMC stream starts at `24 + 8c + Σ_{j<i} compressed_len_j`.
//!
//! ## Decoder guarantees
//! The decoder checks every header field and table entry before touching payloads, never panics,
//! always terminates in time linear in input + output, and allocates at most the output (which
//! the caller sizes: [`decode`] first checks that the declared length equals `expected_len` and
//! that the stream could decode to that many bytes at all, [`DecodeError::TooLarge`]) plus one
//! block row (`width × block size`) of scratch per thread. A segment table entry whose
//! uncompressed length could not come from its compressed length is rejected too.
//!
//! ## Streaming
//! [`StreamEncoder`] builds a stream from its input given in pieces of whole segments and
//! [`StreamDecoder`] decodes one a window of whole segments at a time, so a large input or output
//! never has to be in memory at once (the snapshot container streams its large LMC frames this
//! way). The bytes are the same as those of [`encode`] / [`decode`].

use crate::byte_group::Transform;
use crate::error::DecodeError;
use crate::lmc::{self, Params, Width};

/// The four magic bytes that start a PLMC stream.
pub const MAGIC: [u8; 4] = *b"BLMC";
/// Format version written by this encoder.
pub const VERSION: u8 = 1;
/// Length of the fixed header, before the segment table.
pub const HEADER_LEN: usize = 24;
/// Bytes per segment table entry.
pub const SEGMENT_ENTRY_LEN: usize = 8;
/// Default segment size (1 MiB of input). Segments are the unit of parallelism: on the 45 MB
/// bf16 test file, 2-thread decompression speed-up was 1.83× with 4 MiB segments (11 segments,
/// 6 vs 5 per thread) and 1.94× with 1 MiB (44 segments); the 8-byte table entry per segment
/// costs 0.0008 %, and each group of a 1 MiB segment is a whole number of default blocks for every
/// width (1 MiB / w: 16 blocks of 64 KiB for w = 1, 4 of 128 KiB for w = 2, 4 and 2 of 64 KiB for
/// w = 4 and 8), so no block is cut short and the ratio does not change.
pub const DEFAULT_SEGMENT_BYTES: usize = 1 << 20;
/// Largest segment size (1 GiB).
pub const MAX_SEGMENT_BYTES: usize = 1 << 30;

/// Encoder options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Input bytes per segment (rounded down to a multiple of the width, clamped to
    /// `width..=MAX_SEGMENT_BYTES`). Part of the format: it changes the output.
    pub segment_bytes: usize,
    /// LMC block size per group stream in bytes (rounded down to a power of two, clamped to
    /// 4 KiB..=1 MiB); `None` = the default for the width ([`lmc::default_block_log2`]: 128 KiB
    /// for 2-byte elements, 64 KiB otherwise). Part of the format.
    pub block_bytes: Option<usize>,
    /// Bit transform before grouping. Part of the format.
    pub transform: Transform,
    /// Longest Huffman code the encoder may use (9..=12). Changes the output.
    pub code_limit: u8,
    /// Worker threads: `None` = the current rayon pool (the global one, or the pool whose
    /// `install` we run in; best for repeated calls), `Some(1)` = the calling thread only,
    /// `Some(n)` = a new pool of `n` threads for this call. Never changes the output. Ignored
    /// without feature `parallel`.
    ///
    /// Parallel encoding keeps up to 64 MiB of segment buffers for the next call, and every
    /// thread that encoded or decoded keeps one block row of scratch (≤ w × block size), and
    /// every thread that encoded a block with few distinct bytes its pair tables (768 KiB).
    pub threads: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            block_bytes: None,
            transform: Transform::SignRotate,
            code_limit: crate::huffman::DEFAULT_CODE_LIMIT as u8,
            threads: None,
        }
    }
}

/// What a PLMC header declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamInfo {
    /// LMC parameters shared by all segments.
    pub params: Params,
    /// Original length in bytes.
    pub total_len: u64,
    /// Size of every segment but the last.
    pub segment_bytes: u32,
    /// Number of segments.
    pub segment_count: u32,
}

impl StreamInfo {
    /// Offset of the first segment payload.
    pub fn payload_offset(&self) -> u64 {
        HEADER_LEN as u64 + self.segment_count as u64 * SEGMENT_ENTRY_LEN as u64
    }
}

fn effective_segment_bytes(opts: &Options, w: usize) -> usize {
    let s = opts.segment_bytes.clamp(w, MAX_SEGMENT_BYTES);
    s - s % w
}

fn block_log2(opts: &Options, width: Width) -> u8 {
    let Some(b) = opts.block_bytes else {
        return lmc::default_block_log2(width);
    };
    let b = b.max(1);
    let log = (usize::BITS - 1 - b.leading_zeros()) as u8;
    log.clamp(lmc::MIN_BLOCK_LOG2, lmc::MAX_BLOCK_LOG2)
}

/// Compresses `data` (elements of `width` bytes; a trailing partial element is fine) into a PLMC
/// stream. Never fails; output depends only on `data`, `width` and the format fields of `opts`.
pub fn encode(data: &[u8], width: Width, opts: &Options) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(data, width, opts, &mut out);
    out
}

/// [`encode`] into a caller-owned buffer: `out` is cleared and receives the stream, reusing its
/// capacity (repeated calls then touch no fresh memory).
pub fn encode_into(data: &[u8], width: Width, opts: &Options, out: &mut Vec<u8>) {
    let mut enc = StreamEncoder::new(data.len() as u64, width, opts, out);
    enc.push(data);
    enc.finish();
}

/// Builds one PLMC stream from its input given in pieces (e.g. a snapshot frame read window by
/// window), so the whole input never has to be in memory. The stream is written straight into
/// the caller's buffer: the header and segment table are reserved up front (the total length is
/// known) and each segment's compressed size is patched in as it is coded. The bytes are
/// identical to [`encode`] of the concatenated input, for any piece sizes and thread counts.
pub struct StreamEncoder<'o> {
    out: &'o mut Vec<u8>,
    /// Where the stream written so far ends in `out` (bytes after it are stale).
    len: usize,
    params: Params,
    segment_bytes: usize,
    total_len: u64,
    pushed: u64,
    next_segment: usize,
    #[cfg(feature = "parallel")]
    pool: Option<rayon::ThreadPool>,
    #[cfg(feature = "parallel")]
    serial: bool,
}

impl<'o> StreamEncoder<'o> {
    /// Starts a stream of `total_len` input bytes of `width`-byte elements in `out` (cleared; its
    /// capacity is reused). `opts` as for [`encode`]; with `opts.threads = Some(n > 1)` one pool is
    /// built for the whole stream.
    pub fn new(total_len: u64, width: Width, opts: &Options, out: &'o mut Vec<u8>) -> Self {
        let w = width.bytes();
        let seg = effective_segment_bytes(opts, w);
        let params = Params {
            width,
            transform: if w == 1 {
                Transform::None
            } else {
                opts.transform
            },
            block_log2: block_log2(opts, width),
            code_limit: opts.code_limit,
        };
        let count = total_len.div_ceil(seg as u64) as usize;
        // The header and table, written over the buffer's first bytes. The buffer's old bytes
        // past them are kept (not zeroed): the parallel path writes over them in place, and
        // `finish` cuts the buffer to the stream's length (`len` is where the stream ends).
        let mut head = Vec::with_capacity(HEADER_LEN + SEGMENT_ENTRY_LEN * count);
        head.extend_from_slice(&MAGIC);
        head.push(VERSION);
        head.push(w as u8);
        head.push(params.transform.to_byte());
        head.push(params.block_log2);
        head.extend_from_slice(&total_len.to_le_bytes());
        head.extend_from_slice(&(seg as u32).to_le_bytes());
        head.extend_from_slice(&(count as u32).to_le_bytes());
        for i in 0..count as u64 {
            let ulen = (total_len - i * seg as u64).min(seg as u64) as u32;
            head.extend_from_slice(&[0; 4]); // compressed length, patched in push()
            head.extend_from_slice(&ulen.to_le_bytes());
        }
        if out.len() < head.len() {
            out.resize(head.len(), 0);
        }
        out[..head.len()].copy_from_slice(&head);
        StreamEncoder {
            len: head.len(),
            out,
            params,
            segment_bytes: seg,
            total_len,
            pushed: 0,
            next_segment: 0,
            #[cfg(feature = "parallel")]
            pool: match opts.threads {
                Some(n) if n > 1 => rayon::ThreadPoolBuilder::new().num_threads(n).build().ok(),
                _ => None,
            },
            #[cfg(feature = "parallel")]
            serial: matches!(opts.threads, Some(0) | Some(1)),
        }
    }

    /// Size of every segment but the last: pieces other than the last must be multiples of it.
    pub fn segment_bytes(&self) -> usize {
        self.segment_bytes
    }

    /// Codes the next piece of the input.
    ///
    /// # Panics
    /// If the pieces add up to more than the total length, or a piece follows one that was not a
    /// whole number of segments (programming errors).
    pub fn push(&mut self, data: &[u8]) {
        assert!(
            self.pushed.is_multiple_of(self.segment_bytes as u64),
            "plmc::StreamEncoder: a piece followed a partial segment"
        );
        assert!(
            self.pushed + data.len() as u64 <= self.total_len,
            "plmc::StreamEncoder: more input than the declared total"
        );
        self.pushed += data.len() as u64;
        let segments: Vec<&[u8]> = data.chunks(self.segment_bytes).collect();
        // One thread codes straight into the output; the parallel paths code into per-segment
        // buffers and copy (6–7 % of a one-thread `bitlens compress` went to that copy).
        #[cfg(feature = "parallel")]
        if segments.len() > 1 && self.threads() > 1 {
            return self.push_parallel(&segments);
        }
        let params = self.params;
        self.out.truncate(self.len);
        for seg in segments {
            let start = self.out.len();
            with_encoder(|enc| enc.encode_into(seg, &params, self.out));
            self.record(self.out.len() - start);
        }
        self.len = self.out.len();
    }

    /// Threads the parallel path would run on: 1 when the options ask for one thread, else
    /// the stream's own pool, else the current one.
    #[cfg(feature = "parallel")]
    fn threads(&self) -> usize {
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
    #[cfg(feature = "parallel")]
    fn push_parallel(&mut self, segments: &[&[u8]]) {
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
    #[cfg(feature = "parallel")]
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
    #[cfg(feature = "parallel")]
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

    /// Writes the compressed length of the next segment into its table entry.
    fn record(&mut self, compressed: usize) {
        let at = HEADER_LEN + self.next_segment * SEGMENT_ENTRY_LEN;
        self.out[at..at + 4].copy_from_slice(&(compressed as u32).to_le_bytes());
        self.next_segment += 1;
    }

    /// Ends the stream.
    ///
    /// # Panics
    /// If less input was pushed than the declared total (a programming error).
    pub fn finish(self) {
        assert_eq!(
            self.pushed, self.total_len,
            "plmc::StreamEncoder: less input than the declared total"
        );
        self.out.truncate(self.len);
    }
}

/// The in-order placement of [`StreamEncoder`]'s parallel segments: the next segment to place,
/// the output room after the placed ones, coded segments waiting for their predecessors, and
/// the sizes placed so far.
#[cfg(feature = "parallel")]
struct Placement<'a> {
    next: usize,
    room: Option<&'a mut [u8]>,
    waiting: Vec<(usize, Vec<u8>)>,
    sizes: Vec<usize>,
}

#[cfg(feature = "parallel")]
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

thread_local! {
    static ENCODER: std::cell::RefCell<lmc::Encoder> = std::cell::RefCell::new(lmc::Encoder::new());
    static DECODER: std::cell::RefCell<lmc::Decoder> = std::cell::RefCell::new(lmc::Decoder::new());
}

/// Runs `f` with this thread's cached encoder (scratch buffers survive between calls).
fn with_encoder<R>(f: impl FnOnce(&mut lmc::Encoder) -> R) -> R {
    ENCODER.with(|e| match e.try_borrow_mut() {
        Ok(mut e) => f(&mut e),
        Err(_) => f(&mut lmc::Encoder::new()),
    })
}

/// Codes one segment with this thread's encoder into a pooled buffer.
#[cfg(feature = "parallel")]
fn encode_segment(segment: &[u8], params: &Params) -> Vec<u8> {
    with_encoder(|enc| {
        let mut v = take_buffer();
        enc.encode_into(segment, params, &mut v);
        v
    })
}

/// Runs `f` with this thread's cached decoder.
fn with_decoder<R>(f: impl FnOnce(&mut lmc::Decoder) -> R) -> R {
    DECODER.with(|d| match d.try_borrow_mut() {
        Ok(mut d) => f(&mut d),
        Err(_) => f(&mut lmc::Decoder::new()),
    })
}

/// Segment output buffers kept between parallel encodes (fresh multi-MiB allocations cost page
/// faults and `mmap` calls on every call). At most [`POOL_BYTES`] of capacity is kept.
#[cfg(feature = "parallel")]
static BUFFER_POOL: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
#[cfg(feature = "parallel")]
const POOL_BYTES: usize = 64 << 20;

#[cfg(feature = "parallel")]
fn take_buffer() -> Vec<u8> {
    let mut v = match BUFFER_POOL.lock() {
        Ok(mut p) => p.pop().unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    v.clear();
    v
}

#[cfg(feature = "parallel")]
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

fn read_u32(stream: &[u8], off: usize) -> Result<u32, DecodeError> {
    let b = stream.get(off..off + 4).ok_or(DecodeError::Truncated {
        offset: off as u64,
        needed: 4,
        available: stream.len().saturating_sub(off) as u64,
    })?;
    Ok(u32::from_le_bytes(b.try_into().unwrap()))
}

/// Parses and validates the fixed header of a PLMC stream (not the segment table).
pub fn read_header(stream: &[u8]) -> Result<StreamInfo, DecodeError> {
    if stream.len() < HEADER_LEN {
        if stream.len() >= 4 && stream[..4] != MAGIC {
            return Err(DecodeError::BadMagic {
                found: stream[..4].try_into().unwrap(),
            });
        }
        return Err(DecodeError::Truncated {
            offset: 0,
            needed: HEADER_LEN as u64,
            available: stream.len() as u64,
        });
    }
    if stream[..4] != MAGIC {
        return Err(DecodeError::BadMagic {
            found: stream[..4].try_into().unwrap(),
        });
    }
    if stream[4] != VERSION {
        return Err(DecodeError::UnsupportedVersion { version: stream[4] });
    }
    let bad = |offset: u64, field: &'static str, value: u64| DecodeError::BadHeader {
        offset,
        field,
        value,
    };
    let width = Width::from_bytes(stream[5] as usize).ok_or(bad(5, "width", stream[5] as u64))?;
    let transform = Transform::from_byte(stream[6]).ok_or(bad(6, "transform", stream[6] as u64))?;
    let block_log2 = stream[7];
    if !(lmc::MIN_BLOCK_LOG2..=lmc::MAX_BLOCK_LOG2).contains(&block_log2) {
        return Err(bad(7, "block_log2", block_log2 as u64));
    }
    let total_len = u64::from_le_bytes(stream[8..16].try_into().unwrap());
    let segment_bytes = read_u32(stream, 16)?;
    let segment_count = read_u32(stream, 20)?;
    let w = width.bytes() as u32;
    if segment_bytes == 0 || segment_bytes as usize > MAX_SEGMENT_BYTES || segment_bytes % w != 0 {
        return Err(bad(16, "segment_bytes", segment_bytes as u64));
    }
    if total_len.div_ceil(segment_bytes as u64) != segment_count as u64 {
        return Err(bad(20, "segment_count", segment_count as u64));
    }
    Ok(StreamInfo {
        params: Params {
            width,
            transform,
            block_log2,
            code_limit: crate::huffman::MAX_CODE_LEN as u8,
        },
        total_len,
        segment_bytes,
        segment_count,
    })
}

/// The most bytes a `stream_len`-byte stream with blocks of `2^block_log2` could decode to
/// (every block costs at least two bytes).
fn max_decoded_len(stream_len: usize, block_log2: u8) -> u64 {
    (stream_len as u64 / 2).saturating_mul(1u64 << block_log2) + 8
}

/// One validated segment: payload range in the stream and output length.
struct Segment {
    payload: std::ops::Range<usize>,
    out_len: usize,
}

fn read_segments(stream: &[u8], info: &StreamInfo) -> Result<Vec<Segment>, DecodeError> {
    let count = info.segment_count as usize;
    let table_end = HEADER_LEN as u64 + count as u64 * SEGMENT_ENTRY_LEN as u64;
    if table_end > stream.len() as u64 {
        return Err(DecodeError::Truncated {
            offset: HEADER_LEN as u64,
            needed: table_end - HEADER_LEN as u64,
            available: (stream.len() - HEADER_LEN) as u64,
        });
    }
    let mut segs = Vec::with_capacity(count);
    let mut pos = table_end as usize;
    for i in 0..count {
        let entry = HEADER_LEN + i * SEGMENT_ENTRY_LEN;
        let clen = read_u32(stream, entry)? as usize;
        let ulen = read_u32(stream, entry + 4)? as u64;
        let expect = if i + 1 < count {
            info.segment_bytes as u64
        } else {
            info.total_len - (count as u64 - 1) * info.segment_bytes as u64
        };
        if ulen != expect {
            return Err(DecodeError::SegmentOutOfBounds {
                segment: i as u64,
                offset: entry as u64 + 4,
                len: ulen,
                stream_len: stream.len() as u64,
                reason: "uncompressed length differs from the fixed segment size",
            });
        }
        if clen > stream.len() - pos {
            return Err(DecodeError::SegmentOutOfBounds {
                segment: i as u64,
                offset: pos as u64,
                len: clen as u64,
                stream_len: stream.len() as u64,
                reason: "compressed payload runs past the end of the stream",
            });
        }
        if ulen > max_decoded_len(clen, info.params.block_log2) {
            return Err(DecodeError::SegmentOutOfBounds {
                segment: i as u64,
                offset: pos as u64,
                len: ulen,
                stream_len: stream.len() as u64,
                reason: "payload too small for its uncompressed length",
            });
        }
        segs.push(Segment {
            payload: pos..pos + clen,
            out_len: ulen as usize,
        });
        pos += clen;
    }
    if pos != stream.len() {
        return Err(DecodeError::TrailingBytes {
            offset: pos as u64,
            count: (stream.len() - pos) as u64,
        });
    }
    Ok(segs)
}

/// Decompresses a PLMC stream whose original length must be `expected_len`.
///
/// Checks the header (and that the stream could produce `expected_len` bytes) before allocating.
pub fn decode(stream: &[u8], expected_len: usize) -> Result<Vec<u8>, DecodeError> {
    decode_with_threads(stream, expected_len, None)
}

/// [`decode`] with an explicit thread count (see [`Options::threads`]).
pub fn decode_with_threads(
    stream: &[u8],
    expected_len: usize,
    threads: Option<usize>,
) -> Result<Vec<u8>, DecodeError> {
    let info = read_header(stream)?;
    check_len(stream, &info, expected_len)?;
    let mut out = vec![0u8; expected_len];
    decode_checked(stream, &info, &mut out, threads)?;
    Ok(out)
}

/// Checks a PLMC stream's header and that it could decode to `expected_len` bytes at all
/// ([`DecodeError::TooLarge`] otherwise), without decoding: what a caller sizing its own output
/// buffer must call first.
pub fn check(stream: &[u8], expected_len: usize) -> Result<StreamInfo, DecodeError> {
    let info = read_header(stream)?;
    check_len(stream, &info, expected_len)?;
    Ok(info)
}

/// Decompresses a PLMC stream into `out`, whose length must be the original length.
pub fn decode_into(stream: &[u8], out: &mut [u8]) -> Result<(), DecodeError> {
    decode_into_with_threads(stream, out, None)
}

/// [`decode_into`] with an explicit thread count (see [`Options::threads`]).
pub fn decode_into_with_threads(
    stream: &[u8],
    out: &mut [u8],
    threads: Option<usize>,
) -> Result<(), DecodeError> {
    let info = read_header(stream)?;
    check_len(stream, &info, out.len())?;
    decode_checked(stream, &info, out, threads)
}

fn check_len(stream: &[u8], info: &StreamInfo, expected: usize) -> Result<(), DecodeError> {
    if info.total_len != expected as u64 {
        return Err(DecodeError::LengthMismatch {
            expected: expected as u64,
            actual: info.total_len,
        });
    }
    let bound = max_decoded_len(stream.len(), info.params.block_log2);
    if info.total_len > bound {
        return Err(DecodeError::TooLarge {
            declared: info.total_len,
            bound,
            stream_len: stream.len() as u64,
        });
    }
    Ok(())
}

fn decode_checked(
    stream: &[u8],
    info: &StreamInfo,
    out: &mut [u8],
    threads: Option<usize>,
) -> Result<(), DecodeError> {
    let segs = read_segments(stream, info)?;
    decode_segments(stream, &info.params, &segs, out, threads)
}

/// Decodes consecutive `segs` into `out` (exactly their total output length).
fn decode_segments(
    stream: &[u8],
    params: &Params,
    segs: &[Segment],
    out: &mut [u8],
    threads: Option<usize>,
) -> Result<(), DecodeError> {
    // Split `out` into the segments' disjoint output ranges.
    let mut jobs: Vec<(&Segment, &mut [u8])> = Vec::with_capacity(segs.len());
    let mut rest = out;
    for s in segs {
        let (a, b) = rest.split_at_mut(s.out_len);
        jobs.push((s, a));
        rest = b;
    }
    debug_assert!(rest.is_empty());
    let one = |(s, o): (&Segment, &mut [u8])| {
        with_decoder(|dec| {
            dec.decode_into(
                &stream[s.payload.clone()],
                params,
                o,
                s.payload.start as u64,
            )
        })
    };
    run_jobs(jobs, threads, one)
}

/// Decodes a PLMC stream a window of whole segments at a time, so the output never has to be in
/// memory at once (a snapshot frame is decoded, checksummed and written window by window). The
/// whole stream (header, segment table, every length bound) is validated before the first window.
pub struct StreamDecoder<'s> {
    stream: &'s [u8],
    params: Params,
    segments: Vec<Segment>,
    next: usize,
    threads: Option<usize>,
}

impl<'s> StreamDecoder<'s> {
    /// Opens `stream`, whose original length must be `expected_len`; `threads` as in
    /// [`Options::threads`].
    pub fn new(
        stream: &'s [u8],
        expected_len: usize,
        threads: Option<usize>,
    ) -> Result<Self, DecodeError> {
        let info = check(stream, expected_len)?;
        let segments = read_segments(stream, &info)?;
        Ok(StreamDecoder {
            stream,
            params: info.params,
            segments,
            next: 0,
            threads,
        })
    }

    /// Decodes the next whole segments, as many as fit in `max_bytes` of output (at least one),
    /// into `out`, which is resized to their length. Returns `Ok(false)`, with `out` empty, once
    /// every segment has been decoded.
    pub fn next_window(
        &mut self,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> Result<bool, DecodeError> {
        let first = self.next;
        let mut bytes = 0;
        while self.next < self.segments.len()
            && (self.next == first || bytes + self.segments[self.next].out_len <= max_bytes)
        {
            bytes += self.segments[self.next].out_len;
            self.next += 1;
        }
        out.resize(bytes, 0);
        if first == self.next {
            return Ok(false);
        }
        decode_segments(
            self.stream,
            &self.params,
            &self.segments[first..self.next],
            out,
            self.threads,
        )?;
        Ok(true)
    }
}

#[cfg(feature = "parallel")]
fn run_jobs<'a, F>(
    jobs: Vec<(&'a Segment, &'a mut [u8])>,
    threads: Option<usize>,
    one: F,
) -> Result<(), DecodeError>
where
    F: Fn((&'a Segment, &'a mut [u8])) -> Result<(), DecodeError> + Sync,
{
    use rayon::prelude::*;
    if jobs.len() <= 1 || matches!(threads, Some(0) | Some(1)) {
        return jobs.into_iter().try_for_each(one);
    }
    let run = |jobs: Vec<(&'a Segment, &'a mut [u8])>| -> Result<(), DecodeError> {
        // Collect every result so the error reported is always the first failing segment's.
        let results: Vec<Result<(), DecodeError>> = jobs.into_par_iter().map(&one).collect();
        results.into_iter().collect()
    };
    match threads {
        None => run(jobs),
        Some(n) => match rayon::ThreadPoolBuilder::new().num_threads(n).build() {
            Ok(pool) => pool.install(|| run(jobs)),
            Err(_) => jobs.into_iter().try_for_each(one),
        },
    }
}

#[cfg(not(feature = "parallel"))]
fn run_jobs<'a, F>(
    jobs: Vec<(&'a Segment, &'a mut [u8])>,
    _threads: Option<usize>,
    one: F,
) -> Result<(), DecodeError>
where
    F: Fn((&'a Segment, &'a mut [u8])) -> Result<(), DecodeError>,
{
    jobs.into_iter().try_for_each(one)
}

#[cfg(all(test, feature = "parallel"))]
mod tests {
    use super::*;

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
