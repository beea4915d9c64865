//! The 32-element block types (gguf-py `quants.py`: `Q4_0`, `Q4_1`, `Q5_0`, `Q5_1`, `Q8_0`,
//! `IQ4_NL`, `MXFP4`; `NVFP4` with its 64-element blocks; ggml's `Q8_1`). In every one the
//! first 16 values of a block come from the low nibbles and the last 16 from the high nibbles
//! of the same 16 bytes.

use super::tables::{FP4_VALUES, IQ4NL_VALUES};
use super::{for_blocks, for_coded_blocks, half, u32_at};

/// Splits `out.len() / 2` bytes of `qs` into nibbles in ggml's order: all the low nibbles,
/// then all the high nibbles.
#[inline(always)]
fn split_nibbles(qs: &[u8], out: &mut [u8]) {
    let (lo, hi) = out.split_at_mut(out.len() / 2);
    for ((l, h), &x) in lo.iter_mut().zip(hi.iter_mut()).zip(qs) {
        *l = x & 0x0F;
        *h = x >> 4;
    }
}

/// The 32 nibbles of 16 bytes (a Q4_0/Q4_1/IQ4_NL/MXFP4 block's codes).
#[inline(always)]
pub(crate) fn nibbles(qs: &[u8]) -> [u8; 32] {
    let mut q = [0u8; 32];
    split_nibbles(qs, &mut q);
    q
}

/// Q5's 32 codes: the nibbles plus bit `i` of the little-endian `qh` as bit 4 of code `i`.
#[inline(always)]
pub(crate) fn q5_codes(qh: u32, qs: &[u8]) -> [u8; 32] {
    let mut q = nibbles(qs);
    for (i, c) in q.iter_mut().enumerate() {
        *c |= (((qh >> i) & 1) as u8) << 4;
    }
    q
}

pub(super) fn q4_0(src: &[u8], out: &mut [f32]) {
    for_blocks::<18, 32>(src, out, |b, o| {
        let d = half(b, 0);
        for (o, q) in o.iter_mut().zip(nibbles(&b[2..])) {
            *o = d * f32::from(q as i8 - 8);
        }
    });
}

pub(super) fn q4_1(src: &[u8], out: &mut [f32]) {
    for_blocks::<20, 32>(src, out, |b, o| {
        let (d, m) = (half(b, 0), half(b, 2));
        for (o, q) in o.iter_mut().zip(nibbles(&b[4..])) {
            *o = d * f32::from(q) + m;
        }
    });
}

pub(super) fn q5_0(src: &[u8], out: &mut [f32], codes: &mut [u8]) {
    for_coded_blocks::<22, 32>(src, out, codes, |b, o| {
        let d = half(b, 0);
        let q = q5_codes(u32_at(b, 2), &b[6..]);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = d * f32::from(q as i8 - 16);
        }
        q
    });
}

pub(super) fn q5_1(src: &[u8], out: &mut [f32], codes: &mut [u8]) {
    for_coded_blocks::<24, 32>(src, out, codes, |b, o| {
        let (d, m) = (half(b, 0), half(b, 2));
        let q = q5_codes(u32_at(b, 4), &b[8..]);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = d * f32::from(q) + m;
        }
        q
    });
}

pub(super) fn q8_0(src: &[u8], out: &mut [f32]) {
    for_blocks::<34, 32>(src, out, |b, o| {
        let d = half(b, 0);
        for (o, &q) in o.iter_mut().zip(&b[2..]) {
            *o = f32::from(q as i8) * d;
        }
    });
}

/// ggml's `block_q8_1`: f16 `d`, f16 `s` (= d·Σq, unused here), 32 int8.
pub(super) fn q8_1(src: &[u8], out: &mut [f32]) {
    for_blocks::<36, 32>(src, out, |b, o| {
        let d = half(b, 0);
        for (o, &q) in o.iter_mut().zip(&b[4..]) {
            *o = f32::from(q as i8) * d;
        }
    });
}

pub(super) fn iq4_nl(src: &[u8], out: &mut [f32]) {
    for_blocks::<18, 32>(src, out, |b, o| {
        let d = half(b, 0);
        for (o, q) in o.iter_mut().zip(nibbles(&b[2..])) {
            *o = d * f32::from(IQ4NL_VALUES[usize::from(q)]);
        }
    });
}

/// `MXFP4.e8m0_to_fp32_half`: 2^(e - 128), the E8M0 scale halved (the code book is doubled).
#[inline]
pub(crate) fn e8m0_half(e: u8) -> f32 {
    let e = u32::from(e);
    f32::from_bits(if e < 2 {
        0x0020_0000 << e
    } else {
        (e - 1) << 23
    })
}

pub(super) fn mxfp4(src: &[u8], out: &mut [f32]) {
    for_blocks::<17, 32>(src, out, |b, o| {
        let d = e8m0_half(b[0]);
        for (o, q) in o.iter_mut().zip(nibbles(&b[1..])) {
            *o = d * f32::from(FP4_VALUES[usize::from(q)]);
        }
    });
}

/// `NVFP4.ue4m3_to_fp32`: an unsigned E4M3 scale (bias 7; 0 and 0x7F read as 0), halved. The
/// sign bit is ignored, as there.
#[inline]
pub(crate) fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0x0F);
    let man = f32::from(x & 7);
    let raw = if exp == 0 {
        man * (1.0 / 512.0)
    } else {
        (1.0 + man / 8.0) * f32::from_bits(((exp - 7 + 127) as u32) << 23)
    };
    raw * 0.5
}

/// The 16 codes of one NVFP4 sub-block of 8 bytes: low nibbles, then high nibbles.
#[inline(always)]
pub(crate) fn nvfp4_codes(qs: &[u8]) -> [u8; 16] {
    let mut q = [0u8; 16];
    split_nibbles(qs, &mut q);
    q
}

pub(super) fn nvfp4(src: &[u8], out: &mut [f32]) {
    for_blocks::<36, 64>(src, out, |b, o| {
        for (k, o) in o.chunks_exact_mut(16).enumerate() {
            let d = ue4m3_half(b[k]);
            let qs = &b[4 + 8 * k..12 + 8 * k];
            for (o, q) in o.iter_mut().zip(nvfp4_codes(qs)) {
                *o = d * f32::from(FP4_VALUES[usize::from(q)]);
            }
        }
    });
}
