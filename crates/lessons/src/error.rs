//! Why a lesson's computation was refused: the errors of the `grouping` and `delta` lessons'
//! inputs (LMC paper 000 §4, BitSnap paper 001 §3).

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
