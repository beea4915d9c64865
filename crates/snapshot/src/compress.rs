//! Compressing a whole safetensors source (or, [`compress_pieces`], a file of any format cut into
//! pieces) into a snapshot: the routines the CLI and the web app share. It reads the source (and
//! the base, for deltas) through [`bitlens_tensors::ReadAt`] frame by frame on the ordered
//! pipeline ([`crate::pipeline`], issue 16): every thread of the pool reads and encodes frames
//! into a ring of buffers reused from frame to frame while the calling thread checksums and
//! appends them in order, so memory stays at a few frames whatever the file size, and a 1 MiB LMC
//! frame stays in cache from its read to its write.
use crate::auto::AutoChoice;
use crate::choice::{CodecChoice, CodecKind};
use crate::codec::Codec;
use crate::error::SnapshotError;
use crate::format::{frame_bytes, Entry};
use crate::layout::{Pieces, Shifted};
use crate::pipeline::Slot;
use crate::reader::{BaseSource, Source};
use crate::writer::{encode_frame, Encoded, FrameJob, SnapshotWriter, TensorPlan};
use bitlens_tensors::{Header, TensorInfo};
use std::io::Write;

/// Where a frame comes from.
struct FrameAt {
    /// Index of its tensor.
    tensor: usize,
    /// Offset of its bytes in the source.
    offset: u64,
    /// Its length.
    len: usize,
    /// Offset of its base bytes in the base, for deltas.
    base_offset: Option<u64>,
}

/// A frame read and encoded, in buffers reused from frame to frame (a frame never lands in fresh
/// memory after the first few: in this project's VM a first touch costs ~1.6 µs per 4 KiB page,
/// more than compressing the page).
#[derive(Default)]
struct FrameSlot {
    /// Its original bytes.
    raw: Vec<u8>,
    /// Its base bytes, for deltas.
    base: Vec<u8>,
    /// What the writer appends.
    encoded: Encoded,
}

impl Slot for FrameSlot {
    fn trim(&mut self, keep: usize) {
        for b in [&mut self.raw, &mut self.base] {
            b.trim(keep);
        }
        self.encoded.trim(keep);
    }
}

impl FrameAt {
    /// Where its bytes end in the source.
    fn end(&self) -> u64 {
        self.offset + self.len as u64
    }

    /// Reads the frame's bytes into `slot.raw` and, for deltas, its base bytes into `slot.base`,
    /// each unless its source holds them in memory ([`ReadAt::bytes_at`]: a mapped file), where
    /// [`FrameAt::job`] takes them in place.
    fn read(
        &self,
        src: &dyn Source,
        base: Option<&BaseSource>,
        slot: &mut FrameSlot,
    ) -> Result<(), SnapshotError> {
        if src.bytes_at(self.offset, self.len).is_none() {
            slot.raw.resize(self.len, 0);
            src.read_exact_at(self.offset, &mut slot.raw)?;
        }
        if let (Some(at), Some(b)) = (self.base_offset, base) {
            if b.src.bytes_at(at, self.len).is_none() {
                slot.base.resize(self.len, 0);
                b.src.read_exact_at(at, &mut slot.base)?;
            }
        }
        Ok(())
    }

    /// The frame as the writer takes it: its bytes (and its base's) in place where the sources
    /// hold them, else as [`FrameAt::read`] left them in a slot's `raw` and `base_read`.
    fn job<'a>(
        &self,
        src: &'a dyn Source,
        base: Option<&'a BaseSource>,
        raw: &'a [u8],
        base_read: &'a [u8],
    ) -> FrameJob<'a> {
        FrameJob {
            tensor: self.tensor,
            raw: src.bytes_at(self.offset, self.len).unwrap_or(raw),
            base: self.base_offset.map(|at| {
                base.and_then(|b| b.src.bytes_at(at, self.len))
                    .unwrap_or(base_read)
            }),
        }
    }
}

/// Where the base has tensor `t` with the same name, dtype and shape: its first byte's offset.
pub(crate) fn base_start(t: &TensorInfo, base: Option<&BaseSource>) -> Option<u64> {
    let b = base?;
    let theirs = b.header.tensor(&t.name)?;
    (theirs.dtype == t.dtype && theirs.shape == t.shape).then(|| b.header.file_range(theirs).0)
}

/// One plan per tensor of `header`: its codec, and a delta where the base has the same tensor.
fn plans(
    header: &Header,
    base: Option<&BaseSource>,
    codec_for: &dyn Fn(&TensorInfo) -> Codec,
) -> Vec<TensorPlan> {
    header
        .tensors
        .iter()
        .map(|t| TensorPlan {
            name: t.name.clone(),
            codec: codec_for(t),
            raw_len: t.byte_len(),
            delta: base_start(t, base).is_some(),
        })
        .collect()
}

/// The base reference to record: only when some tensor is a delta.
fn base_ref(plans: &[TensorPlan], base: Option<&BaseSource>) -> Option<crate::BaseRef> {
    base.filter(|_| plans.iter().any(|p| p.delta))
        .map(BaseSource::reference)
}

/// Compresses the safetensors file `src` (whose parsed header is `header`) into `out`.
///
/// `codec_for` picks each tensor's codec. With a `base`, every tensor that the base also has with the
/// same name, dtype and shape is stored as its XOR with the base tensor; the others are stored as
/// they are. `progress` is called with the number of input bytes done after each group of frames
/// is written (a frame, or a few small tensors' frames).
pub fn compress<W: Write>(
    src: &dyn Source,
    header: &Header,
    base: Option<&BaseSource>,
    codec_for: &dyn Fn(&TensorInfo) -> Codec,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>), SnapshotError> {
    let plans = plans(header, base, codec_for);
    compress_plans(src, header, base, plans, out, progress)
}

/// [`compress`] with `--codec auto` ([`crate::auto`]): each tensor takes the smallest lossless
/// encoding predicted from a sample of it (and of its base tensor, with a `base`): LMC, NeuZip,
/// stored, or against the base LMC on the XOR or BitSnap's bitmask delta. Returns, with the output and
/// the index entries (whose stored lengths are the achieved sizes), each tensor's choice with
/// the predictions it was made from.
pub fn compress_auto<W: Write>(
    src: &dyn Source,
    header: &Header,
    base: Option<&BaseSource>,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>, Vec<AutoChoice>), SnapshotError> {
    let choices = crate::auto::choose_all(src, header, base)?;
    let mut plans = plans(header, base, &|_| Codec::Stored);
    follow(&mut plans, &choices);
    let (out, entries) = compress_plans(src, header, base, plans, out, progress)?;
    Ok((out, entries, choices))
}

/// Sets each plan's codec and delta to its tensor's auto choice.
fn follow(plans: &mut [TensorPlan], choices: &[AutoChoice]) {
    for (plan, c) in plans.iter_mut().zip(choices) {
        plan.codec = c.codec();
        plan.delta = c.chosen.is_delta();
    }
}

/// Writes a snapshot of the safetensors file `src` with one plan per tensor.
fn compress_plans<W: Write>(
    src: &dyn Source,
    header: &Header,
    base: Option<&BaseSource>,
    plans: Vec<TensorPlan>,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>), SnapshotError> {
    start_plans(src, header, base, plans, out)?.to_end(progress)
}

/// The [`Encoding`] of the safetensors file `src` with one plan per tensor (its stored header
/// already written).
fn start_plans<'a, W: Write>(
    src: &'a dyn Source,
    header: &'a Header,
    base: Option<&'a BaseSource<'a>>,
    plans: Vec<TensorPlan>,
    out: W,
) -> Result<Encoding<'a, W>, SnapshotError> {
    let base_ref = base_ref(&plans, base);
    let deltas: Vec<bool> = plans.iter().map(|p| p.delta).collect();
    let mut prefix = vec![0u8; header.data_start() as usize];
    src.read_exact_at(0, &mut prefix)?;
    let writer = SnapshotWriter::new(out, &prefix, plans, base_ref)?;
    Encoding::new(src, header, base, &deltas, writer)
}

/// Bytes of a piece that decide between LMC and stored for gaps and quantized blocks: one PLMC
/// segment.
pub const SAMPLE_BYTES: u64 = 1 << 20;

/// Compresses a file of any format, cut into `pieces` ([`crate::layout::pieces`]), into a version 3
/// snapshot.
///
/// Tensor pieces of a plain dtype take `choice`'s codec for that dtype. Gaps, deflated streams and
/// quantized (ggml block) tensors take LMC on their bytes if it shrinks their first
/// [`SAMPLE_BYTES`], else stored (always stored with the stored choice). With a `base` (the same
/// format, its pieces), every piece the base has with the same name, type and length is stored as
/// its XOR with the base's piece, coded with `choice`'s codec for bytes. With the auto choice,
/// every piece takes what [`compress_pieces_auto`] chooses.
pub fn compress_pieces<W: Write>(
    src: &dyn Source,
    pieces: &Pieces,
    base: Option<(&dyn Source, &Pieces)>,
    choice: &CodecChoice,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>), SnapshotError> {
    let (out, entries, _) = pieces_with(src, pieces, base, choice, out, progress)?;
    Ok((out, entries))
}

/// [`compress_pieces`] with `--codec auto` ([`crate::auto`]): each piece takes the smallest
/// lossless encoding predicted from a sample of it — tensor pieces of a plain dtype as in
/// [`compress_auto`], gaps, deflated streams and ggml blocks as bytes (LMC, or against the base's
/// piece LMC on the XOR, BitSnap, unchanged). Returns each piece's choice too.
pub fn compress_pieces_auto<W: Write>(
    src: &dyn Source,
    pieces: &Pieces,
    base: Option<(&dyn Source, &Pieces)>,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>, Vec<AutoChoice>), SnapshotError> {
    let choice = CodecChoice::new(CodecKind::Auto);
    pieces_with(src, pieces, base, &choice, out, progress)
}

/// [`compress_pieces`], returning the auto choices (none for other codecs).
fn pieces_with<W: Write>(
    src: &dyn Source,
    pieces: &Pieces,
    base: Option<(&dyn Source, &Pieces)>,
    choice: &CodecChoice,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>, Vec<AutoChoice>), SnapshotError> {
    let table = pieces.table();
    let header = crate::layout::piece_header(&table, pieces.file_size)?;
    let shifted = Shifted {
        src,
        shift: header.data_start(),
    };
    let base_header = base.map(|(_, p)| p.header()).transpose()?;
    let base_shifted = base.zip(base_header.as_ref()).map(|((b, _), h)| Shifted {
        src: b,
        shift: h.data_start(),
    });
    let base_source = base_shifted
        .as_ref()
        .zip(base_header.as_ref())
        .map(|(src, header)| BaseSource { src, header });
    let mut sample = Vec::new();
    let mut plans = plans(&header, base_source.as_ref(), &|_| Codec::Stored);
    let mut choices = Vec::new();
    if choice.kind == CodecKind::Auto {
        choices = crate::auto::choose_all(&shifted, &header, base_source.as_ref())?;
        follow(&mut plans, &choices);
    } else {
        for ((plan, t), piece) in plans.iter_mut().zip(&header.tensors).zip(&pieces.pieces) {
            let plain = piece.info.dtype(piece.len);
            plan.codec = match plain {
                Some(d) if !plan.delta => choice.codec_for(d),
                _ if plan.delta => choice.codec_for(t.dtype),
                _ if choice.kind == CodecKind::Stored => Codec::Stored,
                _ => lmc_if_smaller(src, piece.offset, piece.len, &mut sample)?,
            };
        }
    }
    let base_ref = base_ref(&plans, base_source.as_ref());
    let deltas: Vec<bool> = plans.iter().map(|p| p.delta).collect();
    let writer =
        SnapshotWriter::new_pieces(out, &pieces.kind, &table, pieces.file_size, plans, base_ref)?;
    let (out, entries) = Encoding::new(&shifted, &header, base_source.as_ref(), &deltas, writer)?
        .to_end(progress)?;
    Ok((out, entries, choices))
}

/// LMC on bytes if it shrinks the first [`SAMPLE_BYTES`] of `len` bytes at `offset`, else stored.
fn lmc_if_smaller(
    src: &dyn Source,
    offset: u64,
    len: u64,
    sample: &mut Vec<u8>,
) -> Result<Codec, SnapshotError> {
    let lmc = Codec::lmc_for_width(1);
    sample.resize(len.min(SAMPLE_BYTES) as usize, 0);
    src.read_exact_at(offset, sample)?;
    let (mut payload, mut scratch) = (Vec::new(), Vec::new());
    lmc.encode_frame_with(sample, None, &mut payload, &mut scratch);
    Ok(if payload.len() < sample.len() {
        lmc
    } else {
        Codec::Stored
    })
}

/// [`compress`] in steps ([`Encoding::step`]), so that a caller reading the input as it arrives
/// can encode each part as soon as it is there.
pub fn encoding<'a, W: Write>(
    src: &'a dyn Source,
    header: &'a Header,
    base: Option<&'a BaseSource<'a>>,
    codec_for: &dyn Fn(&TensorInfo) -> Codec,
    out: W,
) -> Result<Encoding<'a, W>, SnapshotError> {
    start_plans(src, header, base, plans(header, base, codec_for), out)
}

/// A snapshot being written from a file's tensors, in steps: each [`Encoding::step`] encodes and
/// appends, in order, the next frames whose input bytes end by a given offset, on the ordered
/// pipeline ([`crate::pipeline`]): every thread of the pool reads and encodes frames (small
/// tensors' frames grouped) into a ring of reused buffers, and the calling thread checksums and
/// appends them in order, encoding too whenever the next frame is not ready.
pub struct Encoding<'a, W: Write> {
    src: &'a dyn Source,
    header: &'a Header,
    base: Option<&'a BaseSource<'a>>,
    writer: SnapshotWriter<W>,
    /// Every frame to encode, in order.
    frames: Vec<FrameAt>,
    /// Each tensor's codec.
    codecs: Vec<Codec>,
    /// Frames of `frames` appended.
    done: usize,
    slots: Vec<Vec<FrameSlot>>,
}

impl<'a, W: Write> Encoding<'a, W> {
    /// The frames of every tensor of `src` (as `header` lays it out; with the base's bytes for
    /// the tensors `deltas` marks), for `writer`.
    fn new(
        src: &'a dyn Source,
        header: &'a Header,
        base: Option<&'a BaseSource<'a>>,
        deltas: &[bool],
        writer: SnapshotWriter<W>,
    ) -> Result<Self, SnapshotError> {
        let mut frames = Vec::new();
        let mut codecs = Vec::with_capacity(header.tensors.len());
        for (i, t) in header.tensors.iter().enumerate() {
            let (start, end) = header.file_range(t);
            let base_start = base_start(t, base).filter(|_| deltas[i]);
            let codec = writer
                .codec_of(i)
                .ok_or_else(|| SnapshotError::Misuse(format!("no plan for tensor `{}`", t.name)))?;
            codecs.push(codec);
            let frame = frame_bytes(&codec) as u64;
            let mut pos = start;
            while pos < end {
                let len = (end - pos).min(frame) as usize;
                frames.push(FrameAt {
                    tensor: i,
                    offset: pos,
                    len,
                    base_offset: base_start.map(|b| b + (pos - start)),
                });
                pos += len as u64;
            }
        }
        Ok(Encoding {
            src,
            header,
            base,
            writer,
            frames,
            codecs,
            done: 0,
            slots: Vec::new(),
        })
    }

    /// Where the input bytes of the next frame to encode start and end (`None` when every frame
    /// is done): the reading caller may forget what lies before the start.
    pub fn next_frame(&self) -> Option<(u64, u64)> {
        self.frames.get(self.done).map(|f| (f.offset, f.end()))
    }

    /// Encodes and appends the next frames, in order, while their input bytes end at or before
    /// `limit`; `progress` gets the input bytes of every group of frames appended.
    pub fn step(&mut self, limit: u64, progress: &mut dyn FnMut(u64)) -> Result<(), SnapshotError> {
        let (src, header, base) = (self.src, self.header, self.base);
        let end = self.frames[self.done..]
            .iter()
            .position(|f| f.end() > limit)
            .map_or(self.frames.len(), |p| self.done + p);
        let frames = &self.frames[self.done..end];
        let (items, bytes) = crate::pipeline::items(frames.iter().map(|f| f.len as u64));
        let (items, codecs, writer) = (&items[..], &self.codecs[..], &mut self.writer);
        crate::pipeline::run(
            &bytes,
            &mut self.slots,
            &|i, scratch: &mut Vec<u8>, slot: &mut Vec<FrameSlot>| {
                let group = &frames[items[i].clone()];
                if slot.len() < group.len() {
                    slot.resize_with(group.len(), FrameSlot::default);
                }
                group.iter().zip(slot.iter_mut()).try_for_each(|(f, s)| {
                    f.read(src, base, s)?;
                    let t = &header.tensors[f.tensor];
                    let job = f.job(src, base, &s.raw, &s.base);
                    encode_frame(&codecs[f.tensor], &t.name, &job, &mut s.encoded, scratch)
                })
            },
            &mut |i, slot| {
                for (f, s) in frames[items[i].clone()].iter().zip(slot.iter()) {
                    writer.append_frame(&f.job(src, base, &s.raw, &s.base), &s.encoded)?;
                    // Written in file order: the pass is done with the frame and what is before it.
                    src.done_before(f.end());
                    if let (Some(at), Some(b)) = (f.base_offset, base) {
                        b.src.done_before(at + f.len as u64);
                    }
                }
                progress(bytes[i]);
                Ok(())
            },
        )?;
        self.done = end;
        Ok(())
    }

    /// Encodes every frame left and finishes the snapshot (the whole of [`compress`] in one
    /// step). `progress` gets the input bytes of every group of frames appended.
    pub fn to_end(
        mut self,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(W, Vec<Entry>), SnapshotError> {
        self.step(u64::MAX, progress)?;
        self.finish()
    }

    /// Finishes the snapshot (index and trailer): every frame must have been appended
    /// ([`Encoding::step`] up to the last). Returns the output and the index entries.
    pub fn finish(self) -> Result<(W, Vec<Entry>), SnapshotError> {
        if self.done < self.frames.len() {
            return Err(SnapshotError::Misuse(format!(
                "encoding ended with {} of {} frames appended",
                self.done,
                self.frames.len()
            )));
        }
        self.writer.finish()
    }
}
