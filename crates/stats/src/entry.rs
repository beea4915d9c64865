//! Statistics of one tensor of any format, streamed in element order from its file by
//! [`bitlens_tensors::format::bytes`]: a plain-dtype tensor (a byte range, a deflated `.npz`
//! member, a PyTorch view) into one [`Accumulator`], a ggml block-quantized tensor into a
//! [`QuantAccumulator`] (stored bytes, dequantized values, scales and codes). The CLI runs it for
//! every tensor that is not a plain byte range (those it splits into parallel parts); the page's
//! workers run it for the tensors of GGUF, PyTorch and NumPy files, so both give the same numbers.

use crate::quant::QuantError;
use crate::{Accumulator, QuantAccumulator, StatsError, TensorStats};
use bitlens_tensors::format::bytes::{self, BytesError};
use bitlens_tensors::format::{ElementType, Entry};
use bitlens_tensors::ReadAt;

/// Why a tensor's statistics failed: its bytes could not be read, or the accumulators refused them.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    /// Reading (or inflating, or gathering) the bytes failed.
    #[error(transparent)]
    Bytes(#[from] BytesError),
    /// The plain accumulators refused the bytes.
    #[error(transparent)]
    Stats(#[from] StatsError),
    /// The quantized accumulators refused the bytes.
    #[error(transparent)]
    Quant(#[from] QuantError),
}

/// Statistics of `entry` of `src`, read in windows of about `window` bytes; `progress(n)` after each
/// window of `n` bytes.
pub fn entry_stats(
    src: &dyn ReadAt,
    entry: &Entry,
    window: usize,
    progress: impl FnMut(u64),
) -> Result<TensorStats, EntryError> {
    let len = bytes::byte_len(entry);
    match entry.ty {
        ElementType::Dtype(dtype) => {
            let mut acc = Accumulator::new(dtype, len);
            stream(src, entry, window, progress, |w| Ok(acc.update(w)?))?;
            Ok(acc.finish()?)
        }
        ElementType::Ggml(ty) => {
            let mut acc = QuantAccumulator::new(ty, len)?;
            stream(src, entry, window, progress, |w| Ok(acc.update(w)?))?;
            Ok(acc.finish()?)
        }
    }
}

/// Streams `entry`'s bytes in element order into `update`, counting them with `progress`.
fn stream(
    src: &dyn ReadAt,
    entry: &Entry,
    window: usize,
    mut progress: impl FnMut(u64),
    mut update: impl FnMut(&[u8]) -> Result<(), EntryError>,
) -> Result<(), EntryError> {
    bytes::for_each_window(src, entry, window, |w| -> Result<(), EntryError> {
        update(w)?;
        progress(w.len() as u64);
        Ok(())
    })
}
