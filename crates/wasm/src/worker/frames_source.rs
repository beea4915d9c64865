//! [`FramesAhead`]: a snapshot as the decompress job reads it — its frames, front to back, through a
//! read-ahead source, and every other byte (preamble, stored header, annex, index, trailer: the few
//! reads of `SnapshotReader::open`, docs/FORMAT.md §1) with exact reads; [`decompress_ahead`], the
//! job's decompression through it, the snapshot opened once; and [`decompress_streamed`], the same
//! with the frames read from the `Blob` as a stream while the codec decodes the ones already in.
//! Opened through a read-ahead source alone, each jump of the opening (offset 0, the trailer, back
//! to the stored header, the index) fetched a whole window (32 MiB) of frames that the decoding then
//! fetched again; and each opening costs 3–4 ms of small reads in Chromium (the job opened the
//! snapshot three times).

use super::streamed::{read_range, HeldBytes, StreamIn, STREAM_READ};
use crate::error::Failure;
use crate::snapshot::{base_source, decompress_opened, info_of, with_header, OnChunk, Restored};
use crate::source::JsSource;
use bitlens_protocol::SnapshotInfo;
use bitlens_snapshot::{Entry, SnapshotReader};
use bitlens_tensors::{ReadAt, SourceError};
use std::cell::Cell;
use web_sys::Blob;

/// Bytes at the end of a snapshot [`decompress_streamed`] reads before opening it: its index and
/// trailer unless the index is longer (a snapshot of a few thousand tensors).
const TAIL_BYTES: u64 = 1 << 20;

/// A snapshot file whose frame section `[start, end)` is read through `frames` and the rest
/// through `exact`; frame bytes [`decompress_streamed`] holds are read from memory.
pub struct FramesAhead {
    exact: JsSource,
    frames: JsSource,
    /// The frame section, empty until [`FramesAhead::frames_of`].
    section: Cell<(u64, u64)>,
    /// Bytes read from the stream (empty unless streaming).
    held: HeldBytes,
    /// The end of the file (its index and trailer), read at once before the snapshot is opened
    /// (empty unless streaming).
    tail: HeldBytes,
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
            held: HeldBytes::default(),
            tail: HeldBytes::default(),
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
        if self.held.copy_to(offset, buf) || self.tail.copy_to(offset, buf) {
            return Ok(());
        }
        let last = offset.saturating_add(buf.len() as u64);
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

/// [`decompress_ahead`] with the file read from `blob` (the file behind `src`) as one stream
/// ([`StreamIn`]), each frame decoded as soon as its bytes are in
/// ([`bitlens_snapshot::Decoding`]). A frame whose bytes the stream did not bring (an index whose
/// frames are out of file order) is read through `src` as before.
pub async fn decompress_streamed(
    src: &FramesAhead,
    blob: &Blob,
    base: Option<&JsSource>,
    on_chunk: OnChunk<'_>,
    on_progress: &mut dyn FnMut(u64),
) -> Result<(SnapshotInfo, u64), Failure> {
    // The opening's reads (preamble and stored header at the start, index and trailer at the end)
    // come from the stream's first read and one read of the end: each `FileReaderSync` read cost
    // ~2 ms.
    let size = src.size();
    let tail = size.saturating_sub(TAIL_BYTES);
    src.tail.hold(tail, read_range(blob, tail, size).await?);
    let mut stream = StreamIn::new(&src.held, blob, 0, size);
    stream.fill_to(STREAM_READ as u64).await?;
    let reader = SnapshotReader::open(src)?;
    src.tail.clear();
    src.frames_of(&reader.entries);
    let info = info_of(&reader, size, false)?;
    let base = with_header(base)?;
    let base_src = base_source(&base);
    let all: Vec<usize> = (0..reader.entries.len()).collect();
    let mut decoding = reader.decoding(&all, base_src.as_ref())?;
    let mut out = Restored::new(on_chunk, on_progress);
    if reader.original.is_none() {
        out.write(&reader.prefix)?;
    }
    while let Some((_, need)) = decoding.next_frame() {
        let read = stream.fill_to(need).await?;
        // At least the next frame (read through `src` when the stream did not bring it).
        decoding.step(read.max(need), &mut |bytes| out.write(bytes))?;
        stream.forget_before(decoding.next_frame().map_or(read, |(start, _)| start));
    }
    stream.finish().await?;
    decoding.finish()?;
    Ok((info, out.finish()?))
}
