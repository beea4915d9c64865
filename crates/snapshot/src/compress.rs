//! Compressing a whole safetensors source (or, [`compress_pieces`], a file of any format cut into
//! pieces) into a snapshot: the routines the CLI and the web app
//! share. It reads the source (and the base, for deltas) through [`bitlens_tensors::ReadAt`]: LMC
//! frames larger than [`STREAM_WINDOW`] a window at a time, smaller frames in batches of up to one
//! window coded in parallel, so memory stays at about one window plus one frame's compressed
//! payload whatever the file size.
use crate::choice::{CodecChoice, CodecKind};
use crate::codec::Codec;
use crate::error::SnapshotError;
use crate::format::{Entry, FRAME_BYTES, STREAM_WINDOW};
use crate::layout::{Pieces, Shifted};
use crate::reader::{BaseSource, Source};
use crate::writer::{FrameJob, SnapshotWriter, TensorPlan};
use bitlens_tensors::{Header, TensorInfo};
use std::io::Write;

/// The frames of one batch: which tensor each belongs to and whether it has base bytes, with
/// their bytes in buffers that are reused from batch to batch (a frame never lands in fresh
/// memory after the first batch: in this project's VM a first touch costs ~1.6 µs per 4 KiB
/// page, more than compressing the page).
#[derive(Default)]
struct Batch {
    /// (tensor index, has base bytes) per frame.
    frames: Vec<(usize, bool)>,
    /// Original bytes per frame (the first `frames.len()` are in use).
    raw: Vec<Vec<u8>>,
    /// Base bytes per frame, for deltas.
    base: Vec<Vec<u8>>,
    /// Raw bytes gathered.
    bytes: u64,
}

impl Batch {
    /// A buffer of `n` bytes for the next frame's original and (if `with_base`) base bytes.
    fn push(&mut self, tensor: usize, n: usize, with_base: bool) -> (&mut [u8], &mut [u8]) {
        let k = self.frames.len();
        self.frames.push((tensor, with_base));
        if self.raw.len() == k {
            self.raw.push(Vec::new());
            self.base.push(Vec::new());
        }
        self.bytes += n as u64;
        self.raw[k].resize(n, 0);
        self.base[k].resize(if with_base { n } else { 0 }, 0);
        (&mut self.raw[k][..], &mut self.base[k][..])
    }
}

/// Most raw bytes in one batch of frames (encoded in parallel with feature `parallel`). LMC
/// frames larger than a window are streamed on their own ([`STREAM_WINDOW`]); batches gather the
/// smaller frames, up to one window, which bounds memory at one window of input plus its output.
const BATCH_BYTES: u64 = STREAM_WINDOW as u64;

/// Where the base has tensor `t` with the same name, dtype and shape: its first byte's offset.
fn base_start(t: &TensorInfo, base: Option<&BaseSource>) -> Option<u64> {
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
/// they are. `progress` is called with the number of input bytes done after each batch.
pub fn compress<W: Write>(
    src: &dyn Source,
    header: &Header,
    base: Option<&BaseSource>,
    codec_for: &dyn Fn(&TensorInfo) -> Codec,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>), SnapshotError> {
    let plans = plans(header, base, codec_for);
    let base_ref = base_ref(&plans, base);
    let mut prefix = vec![0u8; header.data_start() as usize];
    src.read_exact_at(0, &mut prefix)?;
    let writer = SnapshotWriter::new(out, &prefix, plans, base_ref)?;
    write_tensors(src, header, base, writer, progress)
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
/// its XOR with the base's piece, coded with `choice`'s codec for bytes.
pub fn compress_pieces<W: Write>(
    src: &dyn Source,
    pieces: &Pieces,
    base: Option<(&dyn Source, &Pieces)>,
    choice: &CodecChoice,
    out: W,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>), SnapshotError> {
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
    for ((plan, t), piece) in plans.iter_mut().zip(&header.tensors).zip(&pieces.pieces) {
        let plain = piece.info.dtype(piece.len);
        plan.codec = match plain {
            Some(d) if !plan.delta => choice.codec_for(d),
            _ if plan.delta => choice.codec_for(t.dtype),
            _ if choice.kind == CodecKind::Stored => Codec::Stored,
            _ => lmc_if_smaller(src, piece.offset, piece.len, &mut sample)?,
        };
    }
    let base_ref = base_ref(&plans, base_source.as_ref());
    let writer =
        SnapshotWriter::new_pieces(out, &pieces.kind, &table, pieces.file_size, plans, base_ref)?;
    write_tensors(&shifted, &header, base_source.as_ref(), writer, progress)
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

/// Feeds every tensor's frames of `src` (as `header` lays it out) to `writer` and finishes it.
fn write_tensors<W: Write>(
    src: &dyn Source,
    header: &Header,
    base: Option<&BaseSource>,
    mut writer: SnapshotWriter<W>,
    progress: &mut dyn FnMut(u64),
) -> Result<(W, Vec<Entry>), SnapshotError> {
    let mut batch = Batch::default();
    for (i, t) in header.tensors.iter().enumerate() {
        let (start, end) = header.file_range(t);
        let base_start = base_start(t, base).zip(base);
        let mut pos = start;
        while pos < end {
            let n = (end - pos).min(FRAME_BYTES as u64) as usize;
            if batch.bytes > 0 && batch.bytes + n as u64 > BATCH_BYTES {
                flush(&mut writer, &mut batch, progress)?;
            }
            if n > STREAM_WINDOW && matches!(writer.codec_of(i), Some(Codec::Lmc { .. })) {
                let frame_start = pos;
                writer.write_streamed_frame(i, n, &mut |off, raw, base_bytes| {
                    src.read_exact_at(frame_start + off, raw)?;
                    if let (Some((b_start, b)), Some(bb)) = (base_start, base_bytes) {
                        b.src
                            .read_exact_at(b_start + (frame_start - start) + off, bb)?;
                    }
                    Ok(())
                })?;
                progress(n as u64);
                pos += n as u64;
                continue;
            }
            let (raw, base_bytes) = batch.push(i, n, base_start.is_some());
            src.read_exact_at(pos, raw)?;
            if let Some((b_start, b)) = base_start {
                b.src.read_exact_at(b_start + (pos - start), base_bytes)?;
            }
            pos += n as u64;
        }
    }
    flush(&mut writer, &mut batch, progress)?;
    writer.finish()
}

fn flush<W: Write>(
    writer: &mut SnapshotWriter<W>,
    batch: &mut Batch,
    progress: &mut dyn FnMut(u64),
) -> Result<(), SnapshotError> {
    let jobs: Vec<FrameJob> = batch
        .frames
        .iter()
        .zip(batch.raw.iter().zip(&batch.base))
        .map(|(&(tensor, with_base), (raw, base))| FrameJob {
            tensor,
            raw,
            base: with_base.then_some(&base[..]),
        })
        .collect();
    writer.write_frames(&jobs)?;
    progress(batch.bytes);
    batch.frames.clear();
    batch.bytes = 0;
    Ok(())
}
