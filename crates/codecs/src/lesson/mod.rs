//! Computations of the `grouping`, `delta` and `lossy` lessons (issue 14), on the bytes of real
//! tensors:
//!
//! - [`grouping`]: where the entropy of a float tensor lives (LMC paper 000 §3–4): the set ratio
//!   of every bit, the order-0 entropy of the interleaved bytes and of each byte group (whole and
//!   per 64 KiB block), and the sizes LMC and peer codecs reach on both layouts.
//! - [`delta`]: two checkpoints of the same tensor (BitSnap paper 001 §3, LMC's XOR deltas): the
//!   bits that flip per position, the changed fraction, and the BitSnap bitmask delta against
//!   XOR + LMC as the changed fraction varies, with the bitmask's break-even.
//! - [`lossy`]: the lossy codecs on a tensor (NeuZip paper 003 §2.3, BitSnap paper 001 §3.4):
//!   every setting encoded, decoded back and its error measured beside the paper's bound.

pub mod delta;
pub mod grouping;
pub mod lossy;

use thiserror::Error;

/// Why a lesson's computation was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum LessonError {
    /// The two tensors of a delta differ in length.
    #[error("the two checkpoints' tensors differ in length: {base} bytes (base) vs {new} bytes")]
    LengthMismatch {
        /// Bytes of the base tensor.
        base: usize,
        /// Bytes of the new tensor.
        new: usize,
    },
    /// A changed fraction outside 0..=100 %.
    #[error("changed fraction {0} % is outside 0..=100")]
    Percent(u32),
}
