//! The PLMC encoder (LMC paper §4.3): the input cut into fixed-size segments, each coded as an
//! independent LMC stream ([`crate::lmc`]) straight into the caller's buffer, with the segment
//! table patched as each is done. The parallel paths are in `encode/parallel.rs`.

#[cfg(feature = "parallel")]
mod parallel;

use super::header::header_bytes;
use super::{with_cached, Options, HEADER_LEN, MAX_SEGMENT_BYTES, SEGMENT_ENTRY_LEN};
use crate::byte_group::Transform;
use crate::lmc::{self, Params, Width};

/// The segment size `opts` asks for, clamped to `w..=MAX_SEGMENT_BYTES` and rounded down to a
/// multiple of the width `w`.
fn effective_segment_bytes(opts: &Options, w: usize) -> usize {
    let s = opts.segment_bytes.clamp(w, MAX_SEGMENT_BYTES);
    s - s % w
}

/// The block size `opts` asks for, as log2: rounded down to a power of two and clamped to the
/// format's range (the width's default when `None`).
fn block_log2(opts: &Options, width: Width) -> u8 {
    let Some(b) = opts.block_bytes else {
        return lmc::default_block_log2(width);
    };
    let b = b.max(1);
    let log = (usize::BITS - 1 - b.leading_zeros()) as u8;
    log.clamp(lmc::MIN_BLOCK_LOG2, lmc::MAX_BLOCK_LOG2)
}

/// Builds one PLMC stream from its input given in pieces (e.g. a snapshot frame read window by
/// window), so the whole input never has to be in memory. The stream is written straight into
/// the caller's buffer: the header and segment table are reserved up front (the total length is
/// known) and each segment's compressed size is patched in as it is coded. The bytes are
/// identical to [`super::encode()`] of the concatenated input, for any piece sizes and thread
/// counts.
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
    /// capacity is reused). `opts` as for [`super::encode()`]; with `opts.threads = Some(n > 1)`
    /// one pool is built for the whole stream.
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
        // The header and table, written over the buffer's first bytes. The buffer's old bytes
        // past them are kept (not zeroed): the parallel path writes over them in place, and
        // `finish` cuts the buffer to the stream's length (`len` is where the stream ends).
        let head = header_bytes(&params, total_len, seg);
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

thread_local! {
    static ENCODER: std::cell::RefCell<lmc::Encoder> = std::cell::RefCell::new(lmc::Encoder::new());
}

/// Runs `f` with this thread's cached encoder (scratch buffers survive between calls).
fn with_encoder<R>(f: impl FnOnce(&mut lmc::Encoder) -> R) -> R {
    with_cached(&ENCODER, f)
}
