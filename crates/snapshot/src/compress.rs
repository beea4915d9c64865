//! Compressing a whole safetensors source into a snapshot: the one routine the CLI and the web app
//! share. It reads the source (and the base, for deltas) through [`bitlens_tensors::ReadAt`]: LMC
//! frames larger than [`STREAM_WINDOW`] a window at a time, smaller frames in batches of up to one
//! window coded in parallel, so memory stays at about one window plus one frame's compressed
//! payload whatever the file size.
use crate::codec::Codec;
use crate::error::SnapshotError;
use crate::format::{Entry, FRAME_BYTES, STREAM_WINDOW};
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
    let base_range = |t: &TensorInfo| -> Option<u64> {
        let b = base?;
        let theirs = b.header.tensor(&t.name)?;
        (theirs.dtype == t.dtype && theirs.shape == t.shape).then(|| b.header.file_range(theirs).0)
    };
    let plans: Vec<TensorPlan> = header
        .tensors
        .iter()
        .map(|t| TensorPlan {
            name: t.name.clone(),
            codec: codec_for(t),
            raw_len: t.byte_len(),
            delta: base_range(t).is_some(),
        })
        .collect();
    let base_ref = base
        .filter(|_| plans.iter().any(|p| p.delta))
        .map(BaseSource::reference);
    let mut prefix = vec![0u8; header.data_start() as usize];
    src.read_exact_at(0, &mut prefix)?;
    let mut writer = SnapshotWriter::new(out, &prefix, plans, base_ref)?;
    let mut batch = Batch::default();
    for (i, t) in header.tensors.iter().enumerate() {
        let (start, end) = header.file_range(t);
        let base_start = base_range(t).zip(base);
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
