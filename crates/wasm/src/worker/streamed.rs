//! Reading a file as a stream while the codec works on what has arrived (issue 28: the page
//! against its floor). The core reads synchronously ([`ReadAt`]), and `FileReaderSync` blocks the
//! worker for every read, so reading and coding added up. Here the async job reads the bytes the
//! codec needs next from a `File.stream()` BYOB reader ([`StreamIn`]) into memory the source
//! serves them from ([`HeldBytes`]), then runs the core's next step (a
//! [`bitlens_snapshot::Encoding`] or [`bitlens_snapshot::Decoding`]) on them, and forgets what is
//! done. [`compress_streamed`] is the compress job's path; the decompress job's is
//! [`super::frames_source::decompress_streamed`].
//!
//! Measured in headless Chromium (`tests/e2e/bench-page-io.mjs`, MiniLM fp32, 91 MB): reading in
//! 1 MiB pieces with 0.5 ms of work per MiB after each took 85–90 ms, about what reading alone
//! took (83–98 ms; the work alone 45), where `FileReaderSync` took 246–252 (alone 194–235); 4 MiB
//! pieces took 112–116.

use super::windows::BlobWindows;
use crate::error::Failure;
use crate::sink::ChunkSink;
use crate::snapshot::{
    base_source, codec_choice, finished, is_safetensors, with_header, Codecs, OnChunk,
};
use crate::source::JsSource;
use bitlens_protocol::{CompressOptions, Compressed};
use bitlens_snapshot::CodecKind;
use bitlens_tensors::format::DETECT_BYTES;
use bitlens_tensors::{read_header, Header, ReadAt, SourceError, TensorInfo};
use std::cell::RefCell;
use std::collections::VecDeque;
use web_sys::Blob;

/// Bytes [`StreamIn`] asks the stream for at a time (see the module doc).
pub const STREAM_READ: usize = 1 << 20;

/// Bytes of a file read from a stream and not yet done with: consecutive pieces of the file, each
/// with its offset (a piece is one read; the codec is done with whole pieces at a time, so none is
/// ever moved: cutting the bytes done with off one buffer moved ~1 MiB per frame), and emptied
/// pieces kept for the next reads.
#[derive(Default)]
struct Held {
    pieces: VecDeque<(u64, Vec<u8>)>,
    spare: Vec<Vec<u8>>,
}

/// The bytes a [`StreamIn`] has read and the codec has not finished with, for a source to serve
/// reads from.
#[derive(Default)]
pub struct HeldBytes(RefCell<Held>);

impl HeldBytes {
    /// Holds `bytes`, the file's from `start`, instead of what was held.
    pub fn hold(&self, start: u64, bytes: Vec<u8>) {
        let mut held = self.0.borrow_mut();
        held.pieces.clear();
        held.pieces.push_back((start, bytes));
    }

    /// Holds nothing.
    pub fn clear(&self) {
        self.0.borrow_mut().pieces.clear();
    }

    /// Fills `buf` with the bytes at `offset` when they are all held; false when not.
    pub fn copy_to(&self, offset: u64, buf: &mut [u8]) -> bool {
        let held = self.0.borrow();
        let last = offset.saturating_add(buf.len() as u64);
        let (Some((first, _)), Some((back, bytes))) = (held.pieces.front(), held.pieces.back())
        else {
            return buf.is_empty();
        };
        if offset < *first || last > back + bytes.len() as u64 {
            return false;
        }
        // The pieces are consecutive: copy from each the part of [offset, last) it holds.
        for (start, bytes) in &held.pieces {
            let end = start + bytes.len() as u64;
            let (from, to) = (offset.max(*start), last.min(end));
            if from < to {
                let (at, len) = ((from - start) as usize, (to - from) as usize);
                let into = (from - offset) as usize;
                buf[into..into + len].copy_from_slice(&bytes[at..at + len]);
            }
        }
        true
    }
}

/// `[start, end)` of a `Blob` read as one stream, [`STREAM_READ`] bytes at a time, into a
/// [`HeldBytes`].
pub struct StreamIn<'h> {
    held: &'h HeldBytes,
    stream: BlobWindows,
    /// Where the bytes read so far end.
    read: u64,
    end: u64,
}

impl<'h> StreamIn<'h> {
    /// A stream of `[start, end)` of `blob` into `held` (emptied).
    pub fn new(held: &'h HeldBytes, blob: &Blob, start: u64, end: u64) -> Self {
        held.clear();
        StreamIn {
            held,
            stream: BlobWindows::new(blob, start, end, STREAM_READ),
            read: start,
            end,
        }
    }

    /// Reads on until the bytes up to `need` (or the end) are held; returns where the bytes read
    /// end.
    pub async fn fill_to(&mut self, need: u64) -> Result<u64, Failure> {
        while self.read < need.min(self.end) {
            let n = STREAM_READ.min((self.end - self.read) as usize);
            let mut piece = self.held.0.borrow_mut().spare.pop().unwrap_or_default();
            piece.resize(n, 0);
            self.stream.next(&mut piece).await?;
            self.held
                .0
                .borrow_mut()
                .pieces
                .push_back((self.read, piece));
            self.read += n as u64;
        }
        Ok(self.read)
    }

    /// Reads the rest of the range when it is at most one read (stopping the stream before its
    /// end, on drop, costs the worker ~1 ms).
    pub async fn finish(mut self) -> Result<(), Failure> {
        if self.end - self.read <= STREAM_READ as u64 {
            self.fill_to(self.end).await?;
        }
        Ok(())
    }

    /// The codec is done with every byte before `keep`: the pieces that end by it are dropped
    /// (kept for the next reads).
    pub fn forget_before(&self, keep: u64) {
        let mut held = self.held.0.borrow_mut();
        while let Some((start, bytes)) = held.pieces.front() {
            if start + bytes.len() as u64 > keep {
                break;
            }
            if let Some((_, piece)) = held.pieces.pop_front() {
                held.spare.push(piece);
            }
        }
    }
}

impl Drop for StreamIn<'_> {
    fn drop(&mut self) {
        self.held.0.take();
    }
}

/// `[start, end)` of `blob`, read with one stream.
pub async fn read_range(blob: &Blob, start: u64, end: u64) -> Result<Vec<u8>, Failure> {
    let len = (end - start) as usize;
    let mut bytes = vec![0; len];
    if len > 0 {
        BlobWindows::new(blob, start, end, len)
            .next(&mut bytes)
            .await?;
    }
    Ok(bytes)
}

/// A file read exactly by `FileReaderSync`, except the bytes a [`StreamIn`] holds.
pub struct HeldSource {
    /// The file, read exactly (no read-ahead).
    pub exact: JsSource,
    /// The bytes read from the stream.
    pub held: HeldBytes,
}

impl ReadAt for HeldSource {
    fn size(&self) -> u64 {
        self.exact.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        if self.held.copy_to(offset, buf) {
            return Ok(());
        }
        self.exact.read_exact_at(offset, buf)
    }
}

/// The compress job's path for a safetensors file with one codec choice (not auto, not
/// Inshrinkerator): [`crate::snapshot::compress_snapshot`]'s snapshot, byte for byte, with the
/// tensors read from `blob` as a stream, each frame encoded once its bytes are in. `None` (and
/// nothing written) for the other files and choices, which take `compress_snapshot`.
pub async fn compress_streamed(
    blob: &Blob,
    base: Option<&JsSource>,
    options: &CompressOptions,
    on_chunk: OnChunk<'_>,
    on_progress: &mut dyn FnMut(u64),
) -> Result<Option<Compressed>, Failure> {
    if options.inshrink.is_some() {
        return Ok(None);
    }
    let whole = codec_choice(&options.whole, base.is_some())?;
    if whole.kind == CodecKind::Auto {
        return Ok(None);
    }
    let src = HeldSource {
        exact: JsSource::from_blob(blob.clone())?.read_ahead(0),
        held: HeldBytes::default(),
    };
    // The header too comes from the stream: each `FileReaderSync` read of it cost ~2 ms.
    let size = src.size();
    let mut stream = StreamIn::new(&src.held, blob, 0, size);
    stream.fill_to(DETECT_BYTES as u64).await?;
    if !is_safetensors(&src)? {
        return Ok(None);
    }
    let mut first8 = [0u8; 8];
    src.read_exact_at(0, &mut first8)?;
    stream.fill_to(Header::needed_prefix(first8, size)?).await?;
    let header = read_header(&src)?;
    let base = with_header(base)?;
    let base_src = base_source(&base);
    let codecs = Codecs::new(whole, options, base_src.is_some())?;
    let codec_for = |t: &TensorInfo| codecs.codec_for(t);
    let mut encoding = bitlens_snapshot::encoding(
        &src,
        &header,
        base_src.as_ref(),
        &codec_for,
        ChunkSink::new(on_chunk),
    )?;
    stream.forget_before(header.data_start());
    while let Some((_, need)) = encoding.next_frame() {
        let read = stream.fill_to(need).await?;
        // At least the next frame (read exactly when the stream did not bring it).
        encoding.step(read.max(need), on_progress)?;
        stream.forget_before(encoding.next_frame().map_or(read, |(start, _)| start));
    }
    stream.finish().await?;
    let (sink, entries) = encoding.finish()?;
    Ok(Some(finished(&src.exact, sink, &entries, None)?))
}
