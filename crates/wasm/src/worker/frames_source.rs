//! [`FramesAhead`]: a snapshot as the decompress job reads it — its frames, front to back, through a
//! read-ahead source, and every other byte (preamble, stored header, annex, index, trailer: the few
//! reads of `SnapshotReader::open`, docs/FORMAT.md §1) with exact reads; [`decompress_ahead`], the
//! job's decompression through it, the snapshot opened once; and [`decompress_streamed`], the same
//! with the frames read from the `Blob` as a stream while the codec decodes the ones already in.
//! Opened through a read-ahead source alone, each jump of the opening (offset 0, the trailer, back
//! to the stored header, the index) fetched a whole window (32 MiB) of frames that the decoding then
//! fetched again; and each opening costs 3–4 ms of small reads in Chromium (the job opened the
//! snapshot three times).
//!
//! Why a stream: `FileReaderSync` blocks the worker for every read, so reading and decoding add up.
//! A `File.stream()` BYOB reader fills in the browser's I/O thread while the worker decodes:
//! measured in headless Chromium (`tests/e2e/bench-page-io.mjs`, MiniLM fp32, 91 MB), reading in 1
//! MiB pieces with 0.5 ms of work per MiB after each took 85–90 ms, about what reading alone took
//! (83–98 ms; the work alone 45), where `FileReaderSync` took 246–252 (alone 194–235).

use super::windows::BlobWindows;
use crate::error::Failure;
use crate::snapshot::{base_source, decompress_opened, info_of, with_header, OnChunk, Restored};
use crate::source::JsSource;
use bitlens_protocol::SnapshotInfo;
use bitlens_snapshot::{Entry, SnapshotReader};
use bitlens_tensors::{ReadAt, SourceError};
use std::cell::{Cell, RefCell};
use web_sys::Blob;

/// Bytes of the frame section [`decompress_streamed`] asks the stream for at a time: in the
/// measurement of the module doc, 1 MiB pieces overlapped the work fully and 4 MiB pieces did not
/// (112–116 ms against 85–90).
pub const STREAM_READ: usize = 1 << 20;

/// Bytes of the frame section read from the stream and not yet decoded: the file's bytes from
/// `start`.
#[derive(Default)]
struct Held {
    start: u64,
    bytes: Vec<u8>,
}

/// A snapshot file whose frame section `[start, end)` is read through `frames` and the rest
/// through `exact`; frame bytes [`decompress_streamed`] holds are read from memory.
pub struct FramesAhead {
    exact: JsSource,
    frames: JsSource,
    /// The frame section, empty until [`FramesAhead::frames_of`].
    section: Cell<(u64, u64)>,
    /// Frame bytes read from the stream (empty unless streaming).
    held: RefCell<Held>,
}

impl FramesAhead {
    /// The snapshot behind `exact` (a source reading exactly what is asked), whose frames will be
    /// read through `frames` (the same file, read ahead) once [`FramesAhead::frames_of`] says
    /// where they lie; until then every read is exact.
    pub fn new(exact: JsSource, frames: JsSource) -> Self {
        FramesAhead {
            exact,
            frames,
            section: Cell::new((0, 0)),
            held: RefCell::default(),
        }
    }

    /// The frames are those of `entries` (the snapshot's index): from now on, reads within them
    /// go through the read-ahead source.
    pub fn frames_of(&self, entries: &[Entry]) {
        let all = entries.iter().flat_map(|e| &e.frames);
        let start = all.clone().map(|f| f.offset).min().unwrap_or(0);
        let end = all.map(|f| f.offset + f.stored_len).max().unwrap_or(0);
        self.section.set((start, end));
    }
}

impl ReadAt for FramesAhead {
    fn size(&self) -> u64 {
        self.exact.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let last = offset.saturating_add(buf.len() as u64);
        {
            let held = self.held.borrow();
            if offset >= held.start && last <= held.start + held.bytes.len() as u64 {
                let at = (offset - held.start) as usize;
                buf.copy_from_slice(&held.bytes[at..at + buf.len()]);
                return Ok(());
            }
        }
        let (start, end) = self.section.get();
        if offset >= start && last <= end {
            self.frames.read_exact_at(offset, buf)
        } else {
            self.exact.read_exact_at(offset, buf)
        }
    }
}

/// Decompresses the snapshot behind `src` into `on_chunk` (as
/// [`decompress_snapshot`](crate::snapshot::decompress_snapshot)), opening it once: the opening
/// reads exactly, then the frames are read ahead. Returns the snapshot's index and the bytes
/// written.
pub fn decompress_ahead(
    src: &FramesAhead,
    base: Option<&JsSource>,
    on_chunk: OnChunk,
    on_progress: &mut dyn FnMut(u64),
) -> Result<(SnapshotInfo, u64), Failure> {
    let reader = SnapshotReader::open(src)?;
    src.frames_of(&reader.entries);
    let info = info_of(&reader, src.size(), false)?;
    let bytes = decompress_opened(reader, base, on_chunk, on_progress)?;
    Ok((info, bytes))
}

/// [`decompress_ahead`] with the frame section read from `blob` (the file behind `src`) as one
/// stream, [`STREAM_READ`] bytes at a time, each frame decoded as soon as its bytes are in
/// ([`bitlens_snapshot::Decoding`]); the stream fills while the frames before decode. A frame
/// whose bytes the stream did not bring (an index whose frames are out of file order) is read
/// through `src` as before. Holds the frame being read and one read's bytes at most.
pub async fn decompress_streamed(
    src: &FramesAhead,
    blob: &Blob,
    base: Option<&JsSource>,
    on_chunk: OnChunk<'_>,
    on_progress: &mut dyn FnMut(u64),
) -> Result<(SnapshotInfo, u64), Failure> {
    let reader = SnapshotReader::open(src)?;
    src.frames_of(&reader.entries);
    let info = info_of(&reader, src.size(), false)?;
    let base = with_header(base)?;
    let base_src = base_source(&base);
    let all: Vec<usize> = (0..reader.entries.len()).collect();
    let mut decoding = reader.decoding(&all, base_src.as_ref())?;
    let mut out = Restored::new(on_chunk, on_progress);
    if reader.original.is_none() {
        out.write(&reader.prefix)?;
    }
    let (start, end) = src.section.get();
    let mut stream = BlobWindows::new(blob, start, end, STREAM_READ);
    let mut read = start;
    src.held.replace(Held {
        start,
        bytes: Vec::new(),
    });
    while let Some(need) = decoding.next_frame_end() {
        while read < need.min(end) {
            let n = STREAM_READ.min((end - read) as usize);
            let mut held = src.held.take();
            let at = held.bytes.len();
            held.bytes.resize(at + n, 0);
            let got = stream.next(&mut held.bytes[at..]).await;
            src.held.replace(held);
            got?;
            read += n as u64;
        }
        // At least the next frame (read through `src` when the stream did not bring it).
        decoding.step(read.max(need), &mut |bytes| out.write(bytes))?;
        let keep = decoding.next_frame_start().unwrap_or(read);
        let mut held = src.held.borrow_mut();
        let forget = keep.clamp(held.start, read) - held.start;
        held.bytes.drain(..forget as usize);
        held.start += forget;
    }
    src.held.take();
    decoding.finish()?;
    Ok((info, out.finish()?))
}
