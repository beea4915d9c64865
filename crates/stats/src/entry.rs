//! Statistics of one tensor of any format, streamed in element order from its file by
//! [`bitlens_tensors::format::bytes`]: a plain-dtype tensor (a byte range, a deflated `.npz`
//! member, a PyTorch view) into one [`Accumulator`], a ggml block-quantized tensor into a
//! [`QuantAccumulator`] (stored bytes, dequantized values, scales and codes). The CLI runs it for
//! every tensor that is not a plain byte range (those it splits into parallel parts); the page's
//! workers run it for the tensors of GGUF, PyTorch and NumPy files, so both give the same numbers.
//!
//! [`EntryDiffer`] compares two checkpoints of one tensor the same way: both sides' bytes in
//! element order into a [`FlipAccumulator`] on the stored bytes (LMC Fig. 6, BitSnap's changed
//! fraction), and for a ggml block type also into a [`DequantDiffAccumulator`] on the dequantized
//! values. [`entry_diff`] feeds it both sides read in lockstep on one thread
//! ([`bytes::for_each_pair`]: the page's workers); `bitlens diff` feeds it each side read on a
//! thread of its own, for every pair that is not two plain byte ranges of a dtype.

use crate::dequant_diff::{DequantDiff, DequantDiffAccumulator};
use crate::quant::QuantError;
use crate::{Accumulator, FlipAccumulator, FlipStats, QuantAccumulator, StatsError, TensorStats};
use bitlens_tensors::format::bytes::{self, BytesError};
use bitlens_tensors::format::gguf::can_dequantize;
use bitlens_tensors::format::{ElementType, Entry};
use bitlens_tensors::{Dtype, ReadAt};
use serde::{Deserialize, Serialize};

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
    /// Two tensors of different element types were compared.
    #[error("tensors of element types {a:?} and {b:?} cannot be compared")]
    TypeMismatch {
        /// The first tensor's element type.
        a: ElementType,
        /// The second tensor's element type.
        b: ElementType,
    },
}

/// The lane type a tensor's stored bytes are compared and measured in: its dtype, or bytes (`U8`)
/// for a ggml block type.
pub fn lane_dtype(ty: ElementType) -> Dtype {
    match ty {
        ElementType::Dtype(d) => d,
        ElementType::Ggml(_) => Dtype::U8,
    }
}

/// How two checkpoints of one tensor differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryDiff {
    /// Bit flips and changed lanes of the stored bytes (a ggml block type: its raw blocks as `U8`).
    pub flips: FlipStats,
    /// For a ggml block type that dequantizes: how its dequantized values changed.
    pub dequantized: Option<DequantDiff>,
}

/// Streams two checkpoints of one tensor into an [`EntryDiff`]: the same byte windows of both
/// sides, in element order, however they are read ([`entry_diff`] reads them in lockstep on one
/// thread; the CLI reads each side on a thread of its own).
pub struct EntryDiffer {
    flips: FlipAccumulator,
    values: Option<DequantDiffAccumulator>,
    window: usize,
}

impl EntryDiffer {
    /// A differ for `a` and `b` (equal element type and byte length) read in windows of about
    /// `window` bytes ([`EntryDiffer::window`]: whole ggml blocks).
    pub fn new(a: &Entry, b: &Entry, window: usize) -> Result<EntryDiffer, EntryError> {
        let ty = a.ty;
        if b.ty != ty {
            return Err(EntryError::TypeMismatch { a: ty, b: b.ty });
        }
        let (len_a, len_b) = (bytes::byte_len(a), bytes::byte_len(b));
        if len_a != len_b {
            return Err(BytesError::LengthMismatch { a: len_a, b: len_b }.into());
        }
        let (values, window) = match ty {
            ElementType::Ggml(g) => {
                let bb = g.block_bytes().unwrap_or(1).max(1) as usize;
                let values = if can_dequantize(g) {
                    Some(DequantDiffAccumulator::new(g)?)
                } else {
                    None
                };
                (values, (window / bb).max(1) * bb)
            }
            ElementType::Dtype(_) => (None, window.max(1)),
        };
        Ok(EntryDiffer {
            flips: FlipAccumulator::new(lane_dtype(ty), len_a),
            values,
            window,
        })
    }

    /// The window size to read both sides in.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Feeds the same byte window of both sides (the next bytes in element order).
    pub fn update(&mut self, a: &[u8], b: &[u8]) -> Result<(), EntryError> {
        self.flips.update(a, b)?;
        if let Some(v) = &mut self.values {
            v.update(a, b)?;
        }
        Ok(())
    }

    /// The differences of the whole tensor pair.
    pub fn finish(self) -> Result<EntryDiff, EntryError> {
        Ok(EntryDiff {
            flips: self.flips.finish()?,
            dequantized: self
                .values
                .map(DequantDiffAccumulator::finish)
                .transpose()?,
        })
    }
}

/// Compares `a` and `b` (the same tensor in two checkpoints: equal element type and byte length),
/// both streamed in element order in lockstep windows of about `window` bytes
/// ([`bytes::for_each_pair`]); `progress(n)` after each pair of windows, `n` counting both sides'
/// bytes.
pub fn entry_diff(
    a: (&dyn ReadAt, &Entry),
    b: (&dyn ReadAt, &Entry),
    window: usize,
    mut progress: impl FnMut(u64),
) -> Result<EntryDiff, EntryError> {
    let mut differ = EntryDiffer::new(a.1, b.1, window)?;
    bytes::for_each_pair(a, b, differ.window(), |wa, wb| -> Result<(), EntryError> {
        differ.update(wa, wb)?;
        progress(2 * wa.len() as u64);
        Ok(())
    })?;
    differ.finish()
}

/// One tensor's statistics accumulated from its stored bytes in element order, whatever its element
/// type: a plain dtype into an [`Accumulator`], a ggml block type into a [`QuantAccumulator`]. What
/// [`entry_stats`] streams into, and what the page's workers feed window by window when a tensor's
/// bytes are one range of its file (safetensors, a GGUF of any block type).
///
/// Both are boxed: their states differ in size by hundreds of bytes, and there is one per tensor.
pub enum ElementAccumulator {
    /// A plain dtype.
    Plain(Box<Accumulator>),
    /// A ggml block type.
    Quant(Box<QuantAccumulator>),
}

impl ElementAccumulator {
    /// An accumulator for a tensor of element type `ty` whose stored bytes are `byte_len` long.
    pub fn new(ty: ElementType, byte_len: u64) -> Result<Self, EntryError> {
        Ok(match ty {
            ElementType::Dtype(dtype) => Self::Plain(Box::new(Accumulator::new(dtype, byte_len))),
            ElementType::Ggml(ty) => Self::Quant(Box::new(QuantAccumulator::new(ty, byte_len)?)),
        })
    }

    /// Feeds the next stored bytes (any length; a window may end inside an element or a block).
    pub fn update(&mut self, bytes: &[u8]) -> Result<(), EntryError> {
        match self {
            Self::Plain(a) => a.update(bytes)?,
            Self::Quant(a) => a.update(bytes)?,
        }
        Ok(())
    }

    /// The statistics, once every stored byte was fed.
    pub fn finish(self) -> Result<TensorStats, EntryError> {
        Ok(match self {
            Self::Plain(a) => (*a).finish()?,
            Self::Quant(a) => (*a).finish()?,
        })
    }
}

/// Statistics of `entry` of `src`, read in windows of about `window` bytes; `progress(n)` after each
/// window of `n` bytes.
pub fn entry_stats(
    src: &dyn ReadAt,
    entry: &Entry,
    window: usize,
    mut progress: impl FnMut(u64),
) -> Result<TensorStats, EntryError> {
    let mut acc = ElementAccumulator::new(entry.ty, bytes::byte_len(entry))?;
    bytes::for_each_window(src, entry, window, |w| -> Result<(), EntryError> {
        acc.update(w)?;
        progress(w.len() as u64);
        Ok(())
    })?;
    acc.finish()
}
