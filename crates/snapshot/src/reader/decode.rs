//! Decoding an opened snapshot (LMC §4's container): the tensors asked for, or the whole original
//! file, frame by frame on the ordered pipeline ([`crate::pipeline`]), large LMC frames window by
//! window; every tensor's checksum (and, for deltas, its base's) is verified before its last
//! bytes are handed over. [`Decoding`] runs the same in steps, each up to a file offset, for a
//! caller that reads the frames as they arrive.

use super::{bytes_or_read, BaseSource, SnapshotReader, Source};
use crate::codec::Codec;
use crate::error::SnapshotError;
use crate::format::{Entry, Frame, STREAM_WINDOW};
use crate::pipeline::GrowBuf;
use crate::pipeline::Slot;
use bitlens_codecs::StreamDecoder;
use bitlens_tensors::TensorInfo;
use std::collections::VecDeque;
use xxhash_rust::xxh3::Xxh3;

impl<R: Source> SnapshotReader<R> {
    /// Decodes the tensors at `which` (index positions, in that order), passing their original bytes
    /// to `sink` frame by frame; every checksum is verified before the last bytes of a tensor are
    /// handed over.
    pub fn decode_tensors(
        &self,
        which: &[usize],
        base: Option<&BaseSource>,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        let mut decoding = self.decoding(which, base)?;
        decoding.step(u64::MAX, sink)?;
        decoding.finish()
    }

    /// [`SnapshotReader::decode_tensors`] in steps ([`Decoding::step`]), so that a caller reading
    /// the frames as they arrive can decode each part as soon as it is there.
    pub fn decoding<'r>(
        &'r self,
        which: &[usize],
        base: Option<&'r BaseSource<'r>>,
    ) -> Result<Decoding<'r, R>, SnapshotError> {
        self.check_base(base)?;
        let mut work = Vec::new();
        for &t in which {
            let e = self
                .entries
                .get(t)
                .ok_or_else(|| SnapshotError::Misuse(format!("no tensor #{t}")))?;
            let base_tensor = match (e.delta, base) {
                (true, Some(b)) => Some(self.base_tensor(e, b)?),
                _ => None,
            };
            let mut offset = 0;
            for fi in 0..e.frames.len() {
                work.push(Work {
                    tensor: t,
                    frame: fi,
                    offset,
                    base_tensor,
                });
                offset += e.frames[fi].raw_len;
            }
        }
        Ok(Decoding {
            reader: self,
            base,
            work,
            done: 0,
            verifier: Verifier::default(),
            pending: which.iter().copied().collect(),
            slots: Vec::new(),
            window: FrameSlot::default(),
        })
    }

    /// Writes the original file to `sink`: a safetensors file's header and every tensor, or every
    /// piece of a file of another format (version 3), in file order.
    pub fn decode_all(
        &self,
        base: Option<&BaseSource>,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        self.check_base(base)?;
        if self.original.is_none() {
            sink(&self.prefix)?;
        }
        let all: Vec<usize> = (0..self.entries.len()).collect();
        self.decode_tensors(&all, base, sink)
    }

    fn base_tensor<'b>(
        &self,
        e: &Entry,
        base: &'b BaseSource,
    ) -> Result<(u64, &'b TensorInfo), SnapshotError> {
        let ours = self.header.tensor(&e.name).expect("index matches header");
        let theirs = base
            .header
            .tensor(&e.name)
            .ok_or_else(|| SnapshotError::WrongBase {
                reason: format!("base has no tensor `{}`", e.name),
            })?;
        if theirs.dtype != ours.dtype || theirs.shape != ours.shape {
            return Err(SnapshotError::WrongBase {
                reason: format!(
                    "base tensor `{}` is {} {:?}, the delta needs {} {:?}",
                    e.name, theirs.dtype, theirs.shape, ours.dtype, ours.shape
                ),
            });
        }
        Ok((base.header.file_range(theirs).0, theirs))
    }

    /// Decodes one LMC frame window by window ([`STREAM_WINDOW`]): each window is XORed with its
    /// base bytes (deltas), checksummed and handed to `sink`; with `last`, the tensor's checksums
    /// are verified before its final window is handed over. `slot` holds the reused buffers.
    fn stream_one(
        &self,
        w: &Work,
        base: Option<&BaseSource>,
        slot: &mut FrameSlot,
        verifier: &mut Verifier,
        last: bool,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        let e = &self.entries[w.tensor];
        let f = e.frames[w.frame];
        let frame_error = |source: bitlens_codecs::DecodeError| SnapshotError::Frame {
            tensor: e.name.clone(),
            frame: w.frame,
            offset: f.offset,
            source: source.into(),
        };
        let payload = self.payload(&f, &mut slot.payload)?;
        let mut dec = StreamDecoder::new(payload, f.raw_len as usize, None).map_err(frame_error)?;
        let mut off = 0u64;
        while dec
            .next_window(STREAM_WINDOW, &mut slot.window)
            .map_err(frame_error)?
        {
            let n = slot.window.len() as u64;
            let base_bytes = match (w.base_tensor, base) {
                (Some((start, _)), Some(b)) => {
                    let base_bytes = bytes_or_read(
                        b.src,
                        "base tensor",
                        start + w.offset + off,
                        n,
                        &mut slot.base,
                    )?;
                    for (o, b) in slot.window.iter_mut().zip(base_bytes) {
                        *o ^= b;
                    }
                    Some(base_bytes)
                }
                _ => None,
            };
            verifier.update(&slot.window, base_bytes);
            off += n;
            if last && off == f.raw_len {
                verifier.verify(e)?;
            }
            sink(&slot.window)?;
        }
        self.done_with(w, base);
        Ok(())
    }

    /// Tells the sources that frame `w` is decoded and handed over: the pass, in file order, is
    /// done with its payload and its base bytes and everything before them
    /// ([`bitlens_tensors::ReadAt::done_before`]).
    fn done_with(&self, w: &Work, base: Option<&BaseSource>) {
        let f = self.entries[w.tensor].frames[w.frame];
        self.src.done_before(f.end());
        if let (Some((start, _)), Some(b)) = (w.base_tensor, base) {
            b.src.done_before(start + w.offset + f.raw_len);
        }
    }

    /// The base bytes [`SnapshotReader::decode_one`] decoded frame `w` against (deltas): in place
    /// where the base source holds them, else as it read them into `read`.
    fn base_read<'a>(
        &self,
        w: &Work,
        base: Option<&'a BaseSource>,
        read: &'a [u8],
    ) -> Option<&'a [u8]> {
        let (start, _) = w.base_tensor?;
        let len = self.entries[w.tensor].frames[w.frame].raw_len as usize;
        Some(
            base.and_then(|b| b.src.bytes_at(start + w.offset, len))
                .unwrap_or(read),
        )
    }

    /// Frame `f`'s stored payload: in place when the source holds it in memory, else read into
    /// `buf`.
    fn payload<'a>(&'a self, f: &Frame, buf: &'a mut GrowBuf) -> Result<&'a [u8], SnapshotError> {
        bytes_or_read(&self.src, "frame", f.offset, f.stored_len, buf)
    }

    /// Decodes one frame into its slot (the base bytes, for deltas, and the output), reading its
    /// stored payload into `payload` unless the source holds it in memory.
    fn decode_one(
        &self,
        w: &Work,
        base: Option<&BaseSource>,
        payload: &mut GrowBuf,
        slot: &mut FrameSlot,
    ) -> Result<(), SnapshotError> {
        let e = &self.entries[w.tensor];
        let f = e.frames[w.frame];
        let payload = self.payload(&f, payload)?;
        let base_bytes = match (w.base_tensor, base) {
            (Some((start, _)), Some(b)) => Some(bytes_or_read(
                b.src,
                "base tensor",
                start + w.offset,
                f.raw_len,
                &mut slot.base,
            )?),
            _ => None,
        };
        e.codec
            .decode_frame_to(payload, f.raw_len as usize, base_bytes, &mut slot.out)
            .map_err(|source| SnapshotError::Frame {
                tensor: e.name.clone(),
                frame: w.frame,
                offset: f.offset,
                source,
            })
    }
}

/// Reused buffers for decoding one frame (and, [`SnapshotReader::stream_one`], its payload).
#[derive(Default)]
struct FrameSlot {
    /// The stored payload (frames decoded window by window only).
    payload: GrowBuf,
    /// The base tensor's bytes at the frame's position (deltas).
    base: GrowBuf,
    /// The decoded original bytes.
    out: GrowBuf,
    /// One window of a frame decoded window by window.
    window: Vec<u8>,
}

impl Slot for FrameSlot {
    fn trim(&mut self, keep: usize) {
        for b in [&mut self.payload, &mut self.base, &mut self.out] {
            b.trim(keep);
        }
        self.window.trim(keep);
    }
}

/// A decode of some of a snapshot's tensors, run in steps ([`SnapshotReader::decoding`]): each
/// [`Decoding::step`] decodes, in order, the next frames whose stored bytes end by a given file
/// offset, so that a caller that reads the frame section front to back (the page, reading a
/// `File` as a stream while the codec works) decodes each frame once its bytes are in.
pub struct Decoding<'r, R: Source> {
    reader: &'r SnapshotReader<R>,
    base: Option<&'r BaseSource<'r>>,
    /// Every frame to decode, in order.
    work: Vec<Work<'r>>,
    /// Frames of `work` decoded and handed over.
    done: usize,
    verifier: Verifier,
    /// The tensors not yet verified, in order.
    pending: VecDeque<usize>,
    slots: Vec<Vec<FrameSlot>>,
    /// The buffers of frames decoded window by window.
    window: FrameSlot,
}

impl<R: Source> Decoding<'_, R> {
    /// Where the stored bytes of the next frame to decode start and end (`None` when every frame
    /// is done): the reading caller may forget what lies before the start.
    pub fn next_frame(&self) -> Option<(u64, u64)> {
        self.work.get(self.done).map(|w| {
            let f = self.frame(w);
            (f.offset, f.end())
        })
    }

    /// The stored frame of `w`.
    fn frame(&self, w: &Work) -> Frame {
        self.reader.entries[w.tensor].frames[w.frame]
    }

    /// Decodes the next frames, in order, while their stored bytes end at or before `limit`,
    /// passing their original bytes to `sink` (a tensor's checksums verified before its last
    /// bytes are handed over).
    pub fn step(
        &mut self,
        limit: u64,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        let (reader, base) = (self.reader, self.base);
        let streamed = |w: &Work| {
            let e = &reader.entries[w.tensor];
            matches!(e.codec, Codec::Lmc { .. }) && e.frames[w.frame].raw_len > STREAM_WINDOW as u64
        };
        let beyond = |w: &Work| reader.entries[w.tensor].frames[w.frame].end() > limit;
        let raw_len = |w: &Work| reader.entries[w.tensor].frames[w.frame].raw_len;
        let Decoding {
            work,
            done,
            verifier,
            pending,
            slots,
            window,
            ..
        } = self;
        let work = &work[..];
        while *done < work.len() {
            verify_empty(reader, pending, verifier)?;
            if beyond(&work[*done]) {
                break;
            }
            if streamed(&work[*done]) {
                let w = &work[*done];
                let last = w.frame + 1 == reader.entries[w.tensor].frames.len();
                reader.stream_one(w, base, window, verifier, last, sink)?;
                if last {
                    pending.pop_front();
                }
                *done += 1;
                continue;
            }
            // The frames up to the next streamed one (or the next beyond the limit), as the
            // pipeline's items.
            let end = work[*done..]
                .iter()
                .position(|w| streamed(w) || beyond(w))
                .map_or(work.len(), |p| *done + p);
            let (items, bytes) = crate::pipeline::items(work[*done..end].iter().map(raw_len));
            let items = &items[..];
            let work = &work[*done..end];
            crate::pipeline::run(
                &bytes,
                slots,
                &|i, payload: &mut GrowBuf, slot: &mut Vec<FrameSlot>| {
                    let frames = &work[items[i].clone()];
                    if slot.len() < frames.len() {
                        slot.resize_with(frames.len(), FrameSlot::default);
                    }
                    frames
                        .iter()
                        .zip(slot.iter_mut())
                        .try_for_each(|(w, s)| reader.decode_one(w, base, payload, s))
                },
                &mut |i, slot| {
                    for (w, s) in work[items[i].clone()].iter().zip(slot.iter()) {
                        verify_empty(reader, pending, verifier)?;
                        let e = &reader.entries[w.tensor];
                        verifier.update(s.out.bytes(), reader.base_read(w, base, s.base.bytes()));
                        if w.frame + 1 == e.frames.len() {
                            verifier.verify(e)?;
                            pending.pop_front();
                        }
                        sink(s.out.bytes())?;
                        reader.done_with(w, base);
                    }
                    Ok(())
                },
            )?;
            *done = end;
        }
        Ok(())
    }

    /// Ends the decode: every frame must have been decoded ([`Decoding::step`] up to the last);
    /// the tensors with no frames left at the end are verified.
    pub fn finish(mut self) -> Result<(), SnapshotError> {
        if self.done < self.work.len() {
            return Err(SnapshotError::Misuse(format!(
                "decoding ended with {} of {} frames decoded",
                self.done,
                self.work.len()
            )));
        }
        verify_empty(self.reader, &mut self.pending, &mut self.verifier)
    }
}

/// Verifies the tensors with no frames (empty) at the front of `pending`, as soon as they come
/// up.
fn verify_empty<R: Source>(
    reader: &SnapshotReader<R>,
    pending: &mut VecDeque<usize>,
    verifier: &mut Verifier,
) -> Result<(), SnapshotError> {
    while let Some(&t) = pending.front() {
        if !reader.entries[t].frames.is_empty() {
            break;
        }
        verifier.verify(&reader.entries[t])?;
        pending.pop_front();
    }
    Ok(())
}

/// One frame to decode.
#[derive(Clone, Copy)]
struct Work<'b> {
    tensor: usize,
    frame: usize,
    offset: u64,
    base_tensor: Option<(u64, &'b TensorInfo)>,
}

/// Streaming checksums of the tensor being decoded and of its base.
#[derive(Default)]
struct Verifier {
    out: Xxh3,
    base: Xxh3,
}

impl Verifier {
    fn update(&mut self, out: &[u8], base: Option<&[u8]>) {
        self.out.update(out);
        if let Some(b) = base {
            self.base.update(b);
        }
    }

    fn verify(&mut self, e: &Entry) -> Result<(), SnapshotError> {
        let out = std::mem::take(&mut self.out).digest();
        let base = std::mem::take(&mut self.base).digest();
        if e.delta && base != e.base_checksum {
            return Err(SnapshotError::WrongBase {
                reason: format!(
                    "base tensor `{}` has checksum {base:016x}, the delta was made against {:016x}",
                    e.name, e.base_checksum
                ),
            });
        }
        if out != e.checksum {
            return Err(SnapshotError::ChecksumMismatch {
                tensor: e.name.clone(),
                expected: e.checksum,
                actual: out,
            });
        }
        Ok(())
    }
}
