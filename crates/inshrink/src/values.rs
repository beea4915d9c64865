//! Raw little-endian tensor bytes of the float dtypes Inshrinkerator handles (f32, f16, bf16) to
//! and from `f32` working values, and the one-byte dtype code of the stream (`stream`).

use bitlens_tensors::Dtype;
use half::{bf16, f16};
use thiserror::Error;

/// A tensor dtype this codec does not compress, or bytes that are not whole elements.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ValuesError {
    /// Only F32, F16 and BF16 are supported.
    #[error("dtype {0} is not supported by inshrink (f32, f16, bf16 only)")]
    Unsupported(&'static str),
    /// The byte length is not a multiple of the element size.
    #[error("{len} bytes are not whole {dtype} elements")]
    Ragged {
        /// The dtype's name.
        dtype: &'static str,
        /// The byte length given.
        len: usize,
    },
}

/// The element size in bytes of a supported dtype.
pub fn width(dtype: Dtype) -> Result<usize, ValuesError> {
    match dtype {
        Dtype::F32 => Ok(4),
        Dtype::F16 | Dtype::BF16 => Ok(2),
        other => Err(ValuesError::Unsupported(other.name())),
    }
}

/// The stream's code of a supported dtype (0 f32, 1 f16, 2 bf16).
pub fn dtype_code(dtype: Dtype) -> Result<u8, ValuesError> {
    match dtype {
        Dtype::F32 => Ok(0),
        Dtype::F16 => Ok(1),
        Dtype::BF16 => Ok(2),
        other => Err(ValuesError::Unsupported(other.name())),
    }
}

/// The dtype of a stream code, if it is one.
pub fn dtype_of_code(code: u8) -> Option<Dtype> {
    match code {
        0 => Some(Dtype::F32),
        1 => Some(Dtype::F16),
        2 => Some(Dtype::BF16),
        _ => None,
    }
}

/// Decodes raw little-endian elements of `dtype` to `f32` (exact for all three dtypes).
pub fn to_f32(bytes: &[u8], dtype: Dtype) -> Result<Vec<f32>, ValuesError> {
    let w = width(dtype)?;
    if !bytes.len().is_multiple_of(w) {
        return Err(ValuesError::Ragged {
            dtype: dtype.name(),
            len: bytes.len(),
        });
    }
    Ok(match dtype {
        Dtype::F32 => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dtype::F16 => bytes
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        _ => bytes
            .chunks_exact(2)
            .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
    })
}

/// Appends `x` rounded to nearest in `dtype` as little-endian bytes.
pub fn push(x: f32, dtype: Dtype, out: &mut Vec<u8>) {
    match dtype {
        Dtype::F16 => out.extend_from_slice(&f16::from_f32(x).to_le_bytes()),
        Dtype::BF16 => out.extend_from_slice(&bf16::from_f32(x).to_le_bytes()),
        _ => out.extend_from_slice(&x.to_le_bytes()),
    }
}

/// Encodes `values` as raw little-endian elements of `dtype` (rounding to nearest).
pub fn from_f32(values: &[f32], dtype: Dtype) -> Result<Vec<u8>, ValuesError> {
    let mut out = Vec::with_capacity(values.len() * width(dtype)?);
    for &x in values {
        push(x, dtype, &mut out);
    }
    Ok(out)
}
