//! Compressing a whole safetensors source into a snapshot: the one routine the CLI and the web app
//! share. It reads the source (and the base, for deltas) frame by frame through [`ReadAt`], so memory
//! stays at a few frames whatever the file size, and encodes batches of frames in parallel.

use crate::codec::Codec;
use crate::error::SnapshotError;
use crate::format::{Entry, FRAME_BYTES};
use crate::reader::{BaseSource, Source};
use crate::writer::{FrameJob, SnapshotWriter, TensorPlan};
use bitlens_tensors::{Header, TensorInfo};
use std::io::Write;

/// A frame read from the source: tensor index, original bytes, base bytes (deltas).
type PendingFrame = (usize, Vec<u8>, Option<Vec<u8>>);

/// Raw bytes gathered before a batch of frames is encoded (in parallel with feature `parallel`).
const BATCH_BYTES: u64 = 2 * FRAME_BYTES as u64;

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
    let mut batch: Vec<PendingFrame> = Vec::new();
    let mut batch_bytes = 0u64;
    for (i, t) in header.tensors.iter().enumerate() {
        let (start, end) = header.file_range(t);
        let base_start = base_range(t);
        let mut pos = start;
        while pos < end {
            let n = (end - pos).min(FRAME_BYTES as u64) as usize;
            let mut raw = vec![0u8; n];
            src.read_exact_at(pos, &mut raw)?;
            let base_bytes = match (base_start, base) {
                (Some(b_start), Some(b)) => {
                    let mut v = vec![0u8; n];
                    b.src.read_exact_at(b_start + (pos - start), &mut v)?;
                    Some(v)
                }
                _ => None,
            };
            batch_bytes += n as u64;
            batch.push((i, raw, base_bytes));
            pos += n as u64;
            if batch_bytes >= BATCH_BYTES {
                flush(&mut writer, &mut batch, progress)?;
                batch_bytes = 0;
            }
        }
    }
    flush(&mut writer, &mut batch, progress)?;
    writer.finish()
}

fn flush<W: Write>(
    writer: &mut SnapshotWriter<W>,
    batch: &mut Vec<PendingFrame>,
    progress: &mut dyn FnMut(u64),
) -> Result<(), SnapshotError> {
    let jobs: Vec<FrameJob> = batch
        .iter()
        .map(|(tensor, raw, base)| FrameJob {
            tensor: *tensor,
            raw,
            base: base.as_deref(),
        })
        .collect();
    writer.write_frames(&jobs)?;
    progress(batch.iter().map(|b| b.1.len() as u64).sum());
    batch.clear();
    Ok(())
}
