//! Dequantization of ggml tensor types to f32, ported from gguf-py's `quants.py` (the `gguf`
//! package 0.19.0, llama.cpp's reference Python implementation) so that every value is
//! bit-for-bit what its `dequantize` returns: each product and sum is done in f32 in the same
//! order as numpy does it (Rust never fuses them into FMAs).
//!
//! Covered (every type gguf-py dequantizes): F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
//! Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, TQ1_0, TQ2_0, MXFP4, NVFP4, IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS,
//! IQ2_S, IQ3_XXS, IQ3_S, IQ4_NL, IQ4_XS. Also, from ggml's `ggml-quants.c` (gguf-py has no
//! dequantizer for them): Q8_1 and Q8_K (`d · q`), and the plain F64/I8/I16/I32/I64 converted
//! with `as f32`. Not covered: Q1_0.
//!
//! [`dequantize`] works on whole blocks, so a streaming caller feeds windows of whole blocks.

mod iq;
pub(crate) mod kquants;
pub(crate) mod legacy;
pub(crate) mod tables;

use crate::format::GgmlType;

/// Why a dequantization was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DequantError {
    /// The type id is not a ggml type.
    #[error("ggml type id {0} is unknown")]
    UnknownType(u32),
    /// The type is known but has no dequantizer here.
    #[error("dequantizing {0} is not supported")]
    Unsupported(&'static str),
    /// The input is not a whole number of blocks.
    #[error("{len} bytes are not whole {name} blocks of {block_bytes} bytes")]
    PartialBlock {
        /// The type.
        name: &'static str,
        /// Input length.
        len: usize,
        /// Bytes per block.
        block_bytes: u32,
    },
    /// The output does not hold exactly the input's values.
    #[error("the output holds {got} values; {expected} blocks' worth expected")]
    OutputLength {
        /// Values the input decodes to.
        expected: usize,
        /// Length of the output.
        got: usize,
    },
}

/// One type's dequantizer over whole blocks (the input and output lengths already checked).
type Kernel = fn(&[u8], &mut [f32]);

fn kernel(ty: GgmlType) -> Option<Kernel> {
    Some(match ty {
        GgmlType::F32 => f32_kernel,
        GgmlType::F16 => f16_kernel,
        GgmlType::BF16 => bf16_kernel,
        GgmlType::F64 => f64_kernel,
        GgmlType::I8 => i8_kernel,
        GgmlType::I16 => i16_kernel,
        GgmlType::I32 => i32_kernel,
        GgmlType::I64 => i64_kernel,
        GgmlType::Q4_0 => legacy::q4_0,
        GgmlType::Q4_1 => legacy::q4_1,
        GgmlType::Q5_0 => |s, o| legacy::q5_0(s, o, &mut []),
        GgmlType::Q5_1 => |s, o| legacy::q5_1(s, o, &mut []),
        GgmlType::Q8_0 => legacy::q8_0,
        GgmlType::Q8_1 => legacy::q8_1,
        GgmlType::MXFP4 => legacy::mxfp4,
        GgmlType::NVFP4 => legacy::nvfp4,
        GgmlType::IQ4_NL => legacy::iq4_nl,
        GgmlType::Q2_K => kquants::q2_k,
        GgmlType::Q3_K => |s, o| kquants::q3_k(s, o, &mut []),
        GgmlType::Q4_K => kquants::q4_k,
        GgmlType::Q5_K => |s, o| kquants::q5_k(s, o, &mut []),
        GgmlType::Q6_K => |s, o| kquants::q6_k(s, o, &mut []),
        GgmlType::Q8_K => kquants::q8_k,
        GgmlType::TQ1_0 => |s, o| kquants::tq1_0(s, o, &mut []),
        GgmlType::TQ2_0 => kquants::tq2_0,
        GgmlType::IQ4_XS => kquants::iq4_xs,
        GgmlType::IQ2_XXS => iq::iq2_xxs,
        GgmlType::IQ2_XS => iq::iq2_xs,
        GgmlType::IQ2_S => iq::iq2_s,
        GgmlType::IQ3_XXS => iq::iq3_xxs,
        GgmlType::IQ3_S => iq::iq3_s,
        GgmlType::IQ1_S => iq::iq1_s,
        GgmlType::IQ1_M => iq::iq1_m,
        _ => return None,
    })
}

/// A kernel that also writes each value's quant code (as [`super::parts`] defines it) into a
/// buffer of one byte per value, or writes none when that buffer is empty.
type CodedKernel = fn(&[u8], &mut [f32], &mut [u8]);

/// The types whose codes are assembled from several fields of a block (so that reading them
/// apart from dequantization would decode each value's bits twice).
fn coded_kernel(ty: GgmlType) -> Option<CodedKernel> {
    Some(match ty {
        GgmlType::Q5_0 => legacy::q5_0,
        GgmlType::Q5_1 => legacy::q5_1,
        GgmlType::Q3_K => kquants::q3_k,
        GgmlType::Q5_K => kquants::q5_k,
        GgmlType::Q6_K => kquants::q6_k,
        GgmlType::TQ1_0 => kquants::tq1_0,
        _ => return None,
    })
}

/// True when [`dequantize_with_codes`] handles `ty`.
pub fn can_dequantize_with_codes(ty: GgmlType) -> bool {
    coded_kernel(ty).is_some()
}

/// [`dequantize`], also writing each value's quant code into `codes` (one byte per value, the
/// codes [`super::parts::quant_codes`] gives), in one pass over the blocks: for the types whose
/// codes are assembled from several fields (Q5_0, Q5_1, Q3_K, Q5_K, Q6_K, TQ1_0); any other
/// type is [`DequantError::Unsupported`].
pub fn dequantize_with_codes(
    ty: GgmlType,
    bytes: &[u8],
    out: &mut [f32],
    codes: &mut [u8],
) -> Result<(), DequantError> {
    let kernel = checked(ty, bytes.len(), coded_kernel(ty), &[out.len(), codes.len()])?;
    kernel(bytes, out, codes);
    Ok(())
}

/// True when [`dequantize`] handles `ty`.
pub fn can_dequantize(ty: GgmlType) -> bool {
    kernel(ty).is_some()
}

/// Checks that `len` bytes are whole blocks of `ty`; returns (blocks, block bytes, block elems).
pub(crate) fn whole_blocks(
    ty: GgmlType,
    len: usize,
) -> Result<(usize, usize, usize), DequantError> {
    let name = ty.name().ok_or(DequantError::UnknownType(ty.0))?;
    let (Some(bytes), Some(elems)) = (ty.block_bytes(), ty.block_elems()) else {
        return Err(DequantError::UnknownType(ty.0));
    };
    if !len.is_multiple_of(bytes as usize) {
        return Err(DequantError::PartialBlock {
            name,
            len,
            block_bytes: bytes,
        });
    }
    Ok((len / bytes as usize, bytes as usize, elems as usize))
}

/// `kernel` once `len` input bytes are checked to be whole blocks of `ty`, the type to have a
/// kernel, and each of `outputs` (lengths) to hold exactly one entry per value, in that order.
fn checked<K>(
    ty: GgmlType,
    len: usize,
    kernel: Option<K>,
    outputs: &[usize],
) -> Result<K, DequantError> {
    let (blocks, _, elems) = whole_blocks(ty, len)?;
    let kernel = kernel.ok_or(DequantError::Unsupported(ty.name().unwrap_or("?")))?;
    let expected = blocks * elems;
    match outputs.iter().find(|&&got| got != expected) {
        Some(&got) => Err(DequantError::OutputLength { expected, got }),
        None => Ok(kernel),
    }
}

/// Dequantizes whole blocks of `ty` from `bytes` into `out`, which must hold exactly their values
/// (`bytes.len() / block_bytes × block_elems`).
pub fn dequantize(ty: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<(), DequantError> {
    let kernel = checked(ty, bytes.len(), kernel(ty), &[out.len()])?;
    kernel(bytes, out);
    Ok(())
}

/// Dequantizes whole blocks of `ty` into a new vector.
pub fn dequantize_to_vec(ty: GgmlType, bytes: &[u8]) -> Result<Vec<f32>, DequantError> {
    let (blocks, _, elems) = whole_blocks(ty, bytes.len())?;
    let mut out = vec![0.0; blocks * elems];
    dequantize(ty, bytes, &mut out)?;
    Ok(out)
}

/// Defines the kernel of a plain type of `$n` bytes per value.
macro_rules! plain_kernel {
    ($name:ident, $n:literal, |$b:ident| $value:expr) => {
        fn $name(src: &[u8], out: &mut [f32]) {
            for (c, o) in src.chunks_exact($n).zip(out.iter_mut()) {
                let mut $b = [0u8; $n];
                $b.copy_from_slice(c);
                *o = $value;
            }
        }
    };
}

plain_kernel!(f32_kernel, 4, |b| f32::from_le_bytes(b));
plain_kernel!(f16_kernel, 2, |b| f16_to_f32(u16::from_le_bytes(b)));
plain_kernel!(bf16_kernel, 2, |b| f32::from_bits(
    u32::from(u16::from_le_bytes(b)) << 16
));
plain_kernel!(f64_kernel, 8, |b| f64::from_le_bytes(b) as f32);
plain_kernel!(i8_kernel, 1, |b| f32::from(b[0] as i8));
plain_kernel!(i16_kernel, 2, |b| f32::from(i16::from_le_bytes(b)));
plain_kernel!(i32_kernel, 4, |b| i32::from_le_bytes(b) as f32);
plain_kernel!(i64_kernel, 8, |b| i64::from_le_bytes(b) as f32);

/// IEEE half to single precision, exactly (NaN payloads kept, as numpy's `astype` does).
#[inline]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from(h >> 10) & 0x1f;
    let man = u32::from(h & 0x3ff);
    if exp == 0 {
        // Zero or subnormal: man · 2^-24, exact in f32.
        let v = man as f32 * (1.0 / 16_777_216.0);
        return if sign != 0 { -v } else { v };
    }
    let bits = if exp == 0x1f {
        0x7f80_0000 | (man << 13)
    } else {
        ((exp + 112) << 23) | (man << 13)
    };
    f32::from_bits(sign | bits)
}

/// The little-endian f16 at `b[i..i + 2]` as f32.
#[inline]
pub(crate) fn half(b: &[u8], i: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[i], b[i + 1]]))
}

/// The little-endian u16 at `b[i..i + 2]`.
#[inline]
pub(crate) fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

/// The little-endian u32 at `b[i..i + 4]`.
#[inline]
pub(crate) fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Runs `f` on each block of `B` bytes and its `E` output values; `f` returns the block's `E`
/// codes, which go into `codes` when it is not empty (it then holds one code per value).
#[inline(always)]
pub(crate) fn for_coded_blocks<const B: usize, const E: usize>(
    src: &[u8],
    out: &mut [f32],
    codes: &mut [u8],
    mut f: impl FnMut(&[u8; B], &mut [f32; E]) -> [u8; E],
) {
    if codes.is_empty() {
        for_blocks::<B, E>(src, out, |b, o| {
            f(b, o);
        });
        return;
    }
    let blocks = src.chunks_exact(B).zip(out.chunks_exact_mut(E));
    for ((b, o), c) in blocks.zip(codes.chunks_exact_mut(E)) {
        if let (Ok(b), Ok(o)) = (<&[u8; B]>::try_from(b), <&mut [f32; E]>::try_from(o)) {
            c.copy_from_slice(&f(b, o));
        }
    }
}

/// Runs `f` on each block of `B` bytes and its `E` output values.
#[inline(always)]
pub(crate) fn for_blocks<const B: usize, const E: usize>(
    src: &[u8],
    out: &mut [f32],
    mut f: impl FnMut(&[u8; B], &mut [f32; E]),
) {
    for (b, o) in src.chunks_exact(B).zip(out.chunks_exact_mut(E)) {
        if let (Ok(b), Ok(o)) = (<&[u8; B]>::try_from(b), <&mut [f32; E]>::try_from(o)) {
            f(b, o);
        }
    }
}
