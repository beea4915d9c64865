//! Bounded inflate of raw deflate streams (deflated members) with `miniz_oxide`: an [`Inflater`]
//! never produces more than the declared size, refuses declared sizes beyond what deflate can
//! reach from the compressed size ([`MAX_RATIO`]: a zip bomb is refused before anything is
//! allocated), and reports a stream that is corrupt, truncated, or longer or shorter than declared.

use super::read::read_vec;
use super::ZipError;
use crate::source::{ReadAt, SourceError};
use miniz_oxide::inflate::stream::{inflate as mz_inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

/// The largest inflated/compressed ratio a deflate stream can reach (a run of one byte coded as
/// 258-byte matches: about 1032:1). A member declaring more is refused as a zip bomb.
pub const MAX_RATIO: u64 = 1032;
/// Inflated bytes allowed on top of `compressed × MAX_RATIO` (tiny members: block headers).
const RATIO_SLACK: u64 = 1024;
/// Compressed bytes read per request while inflating: the first read is small (a reader after a
/// member's first bytes needs little), each next one doubles, up to the largest.
pub(super) const INPUT_WINDOW: u64 = 64 * 1024;
const FIRST_INPUT_WINDOW: u64 = 1024;

/// Refuses a deflate stream of `compressed` bytes declaring more than deflate can produce.
pub(super) fn check_ratio(at: u64, compressed: u64, size: u64) -> Result<(), ZipError> {
    if size
        > compressed
            .saturating_mul(MAX_RATIO)
            .saturating_add(RATIO_SLACK)
    {
        return Err(ZipError::RatioTooHigh {
            at,
            compressed,
            size,
            limit: MAX_RATIO,
        });
    }
    Ok(())
}

/// An inflater's working memory (about 43 KB: the 32 KiB window and the decoder's tables), kept
/// to be reused by the next one.
pub struct Scratch(Box<InflateState>);

impl Scratch {
    /// Fresh working memory.
    pub fn new() -> Self {
        Scratch(InflateState::new_boxed(DataFormat::Raw))
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

/// A bounded streaming inflater over a raw deflate stream of `compressed` bytes at an offset of a
/// [`ReadAt`]: it reads the compressed bytes in windows growing from 1 KiB to 64 KiB and never
/// produces more than the declared size.
pub struct Inflater<'a> {
    src: &'a dyn ReadAt,
    at: u64,
    pos: u64,
    end: u64,
    size: u64,
    produced: u64,
    state: Box<InflateState>,
    input: Vec<u8>,
    in_start: usize,
    window: u64,
    ended: bool,
}

impl<'a> Inflater<'a> {
    /// An inflater for the `compressed` bytes at `offset` declared to inflate to `size` bytes;
    /// refuses streams outside the source and declared sizes beyond [`MAX_RATIO`].
    pub fn new(
        src: &'a dyn ReadAt,
        offset: u64,
        compressed: u64,
        size: u64,
    ) -> Result<Self, ZipError> {
        Self::with_prefix(src, offset, compressed, size, Vec::new())
    }

    /// [`Inflater::new`] given the stream's first compressed bytes already read (`prefix`, at
    /// most `compressed` bytes: see [`Archive::locate`](super::Archive::locate)).
    pub fn with_prefix(
        src: &'a dyn ReadAt,
        offset: u64,
        compressed: u64,
        size: u64,
        prefix: Vec<u8>,
    ) -> Result<Self, ZipError> {
        Self::with_scratch(src, offset, compressed, size, prefix, Scratch::new())
    }

    /// [`Inflater::with_prefix`] reusing the working memory of an earlier inflater
    /// ([`Inflater::into_scratch`]): for reading the start of many members.
    pub fn with_scratch(
        src: &'a dyn ReadAt,
        offset: u64,
        compressed: u64,
        size: u64,
        mut prefix: Vec<u8>,
        scratch: Scratch,
    ) -> Result<Self, ZipError> {
        let Scratch(mut state) = scratch;
        // A full reset (dictionary zeroed): nothing of an earlier stream can show through.
        state.reset(DataFormat::Raw);
        if offset
            .checked_add(compressed)
            .is_none_or(|e| e > src.size())
        {
            return Err(SourceError::OutOfBounds {
                offset,
                len: compressed,
                size: src.size(),
            }
            .into());
        }
        check_ratio(offset, compressed, size)?;
        prefix.truncate(compressed as usize);
        Ok(Inflater {
            src,
            at: offset,
            pos: offset + prefix.len() as u64,
            end: offset + compressed,
            size,
            produced: 0,
            state,
            input: prefix,
            in_start: 0,
            window: FIRST_INPUT_WINDOW,
            ended: false,
        })
    }

    /// Gives back the working memory for another inflater.
    pub fn into_scratch(self) -> Scratch {
        Scratch(self.state)
    }

    /// Offset of the compressed stream in the source.
    pub fn stream_offset(&self) -> u64 {
        self.at
    }

    /// Inflated bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// Inflates into `out`, at most up to the declared size; returns the bytes written (0 once
    /// the declared size is reached). Errors if the stream is corrupt, its compressed bytes end
    /// first, or it ends before the declared size.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, ZipError> {
        let want = (self.size - self.produced).min(out.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        match self.pump(&mut out[..want])? {
            0 => Err(ZipError::InflatedTooShort {
                at: self.at,
                expected: self.size,
                got: self.produced,
            }),
            n => Ok(n),
        }
    }

    /// Inflates and discards `n` bytes (bounded by the declared size).
    pub fn skip(&mut self, n: u64) -> Result<(), ZipError> {
        let target = self.produced.saturating_add(n).min(self.size);
        let mut scratch = vec![0u8; (target - self.produced).min(32 * 1024) as usize];
        while self.produced < target {
            let want = (target - self.produced).min(scratch.len() as u64) as usize;
            self.read(&mut scratch[..want])?;
        }
        Ok(())
    }

    /// After the declared size was produced: checks the stream ends there (it produces no more
    /// byte and reaches its end block within its compressed bytes).
    pub fn finish(mut self) -> Result<(), ZipError> {
        if self.produced < self.size {
            return Err(ZipError::InflatedTooShort {
                at: self.at,
                expected: self.size,
                got: self.produced,
            });
        }
        let mut probe = [0u8; 1];
        while !self.ended {
            if self.pump(&mut probe)? > 0 {
                return Err(ZipError::InflatedTooLong {
                    at: self.at,
                    expected: self.size,
                });
            }
        }
        Ok(())
    }

    /// One step of inflation into `out` (non-empty); returns bytes written, 0 only once the
    /// stream has ended.
    fn pump(&mut self, out: &mut [u8]) -> Result<usize, ZipError> {
        loop {
            if self.ended {
                return Ok(0);
            }
            // Inflate what is buffered first (the inflater may hold output from earlier input);
            // read more compressed bytes only when it can make no progress without them.
            let r = mz_inflate(
                &mut self.state,
                &self.input[self.in_start..],
                out,
                MZFlush::None,
            );
            self.in_start += r.bytes_consumed;
            self.produced += r.bytes_written as u64;
            match r.status {
                Ok(MZStatus::StreamEnd) => self.ended = true,
                Ok(_) | Err(MZError::Buf) => {}
                Err(_) => {
                    return Err(ZipError::Corrupt {
                        at: self.at,
                        produced: self.produced,
                    })
                }
            }
            if r.bytes_written > 0 || self.ended {
                return Ok(r.bytes_written);
            }
            if r.bytes_consumed > 0 {
                continue;
            }
            if self.in_start < self.input.len() {
                // Input and room for output, yet no progress: the data is bad.
                return Err(ZipError::Corrupt {
                    at: self.at,
                    produced: self.produced,
                });
            }
            if self.pos == self.end {
                return Err(ZipError::Truncated {
                    at: self.at,
                    compressed: self.end - self.at,
                });
            }
            let n = (self.end - self.pos).min(self.window);
            self.window = (self.window * 2).min(INPUT_WINDOW);
            self.input = read_vec(self.src, self.pos, n)?;
            self.in_start = 0;
            self.pos += n;
        }
    }
}

/// Streams bytes `skip..skip + len` of the raw deflate stream of `compressed` bytes at `offset`
/// (a [`crate::format::Data::Deflated`]) into `f` in pieces of at most `window` bytes, reusing
/// one buffer; inflation stops at `skip + len` and never produces more.
pub fn for_each_inflated<F, E>(
    src: &dyn ReadAt,
    offset: u64,
    compressed: u64,
    skip: u64,
    len: u64,
    window: usize,
    mut f: F,
) -> Result<(), E>
where
    F: FnMut(&[u8]) -> Result<(), E>,
    E: From<ZipError>,
{
    let total = skip.checked_add(len).ok_or(ZipError::RatioTooHigh {
        at: offset,
        compressed,
        size: u64::MAX,
        limit: MAX_RATIO,
    })?;
    let mut inf = Inflater::new(src, offset, compressed, total)?;
    inf.skip(skip)?;
    let mut buf = vec![0u8; (window.max(1) as u64).min(len) as usize];
    while inf.produced() < total {
        let want = (total - inf.produced()).min(buf.len() as u64) as usize;
        let n = inf.read(&mut buf[..want])?;
        f(&buf[..n])?;
    }
    Ok(())
}
