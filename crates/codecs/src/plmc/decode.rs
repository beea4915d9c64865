//! The PLMC decoder (LMC paper §4.3): segments decoded independently, on a rayon pool when
//! there are several, into disjoint ranges of the output; and [`StreamDecoder`], which decodes a
//! window of whole segments at a time.

use super::header::{read_segments, Segment, StreamInfo};
use super::{check, with_cached};
use crate::error::DecodeError;
use crate::lmc::{self, Params};

pub(super) fn decode_checked(
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
    /// [`super::Options::threads`].
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

thread_local! {
    static DECODER: std::cell::RefCell<lmc::Decoder> = std::cell::RefCell::new(lmc::Decoder::new());
}

/// Runs `f` with this thread's cached decoder.
fn with_decoder<R>(f: impl FnOnce(&mut lmc::Decoder) -> R) -> R {
    with_cached(&DECODER, f)
}
