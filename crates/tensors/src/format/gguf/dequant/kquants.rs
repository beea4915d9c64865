//! The 256-element super-block types with sub-block scales (gguf-py `quants.py`: `Q2_K`,
//! `Q3_K`, `Q4_K`, `Q5_K`, `Q6_K`, `IQ4_XS`, and the ternary `TQ1_0`, `TQ2_0`; ggml's `Q8_K`).
//! Field order and bit packing as in ggml's `ggml-common.h` block structs.

use super::tables::IQ4NL_VALUES;
use super::{for_blocks, for_coded_blocks, half, u16_at};

/// Q2_K/TQ2_0's 256 2-bit codes from 64 bytes: two halves of 128 values, each four 32-value
/// rows from bits 0-1, 2-3, 4-5, 6-7 of the half's 32 bytes.
#[inline(always)]
pub(crate) fn crumbs(qs: &[u8]) -> [u8; 256] {
    let mut q = [0u8; 256];
    // One loop per shift, so that each is a constant and the loops run as vectors.
    for c in 0..2 {
        let (qs, q) = (&qs[c * 32..c * 32 + 32], &mut q[c * 128..c * 128 + 128]);
        for j in 0..32 {
            q[j] = qs[j] & 3;
            q[32 + j] = (qs[j] >> 2) & 3;
            q[64 + j] = (qs[j] >> 4) & 3;
            q[96 + j] = qs[j] >> 6;
        }
    }
    q
}

/// Sets bit `bit` of code `i` from bit `i / 32` of `mask[i % 32]`, for the 256 codes of a
/// super-block (Q3_K's `hmask`, Q5_K's `qh`): one loop per mask bit, so that its shift is a
/// constant.
#[inline(always)]
fn or_mask_bits(q: &mut [u8; 256], mask: &[u8], bit: u32) {
    let mask = &mask[..32];
    for (s, row) in q.chunks_exact_mut(32).enumerate() {
        for (c, &m) in row.iter_mut().zip(mask) {
            *c |= ((m >> s) & 1) << bit;
        }
    }
}

/// Q4_K/Q5_K's 256 4-bit codes from 128 bytes: four 64-value chunks, low then high nibbles of
/// the chunk's 32 bytes.
#[inline(always)]
pub(crate) fn k_nibbles(qs: &[u8]) -> [u8; 256] {
    let mut q = [0u8; 256];
    for c in 0..4 {
        for j in 0..32 {
            q[c * 64 + j] = qs[c * 32 + j] & 0x0F;
            q[c * 64 + 32 + j] = qs[c * 32 + j] >> 4;
        }
    }
    q
}

/// `Q4_K.get_scale_min`: eight 6-bit scales and eight 6-bit mins from 12 bytes.
#[inline(always)]
pub(crate) fn scale_min_k4(s: &[u8]) -> ([u8; 8], [u8; 8]) {
    let (mut sc, mut m) = ([0u8; 8], [0u8; 8]);
    for j in 0..4 {
        sc[j] = s[j] & 0x3F;
        m[j] = s[4 + j] & 0x3F;
        sc[4 + j] = (s[8 + j] & 0x0F) | ((s[j] >> 2) & 0x30);
        m[4 + j] = (s[8 + j] >> 4) | ((s[4 + j] >> 2) & 0x30);
    }
    (sc, m)
}

/// Q3_K's sixteen signed 6-bit scales from 12 bytes.
#[inline(always)]
pub(crate) fn q3_k_scales(s: &[u8]) -> [i8; 16] {
    let mut out = [0i8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let l = if i < 8 { s[i] & 0x0F } else { s[i - 8] >> 4 };
        let h = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        *o = (l | (h << 4)) as i8 - 32;
    }
    out
}

/// Q3_K's 256 3-bit codes (0..8; the value is `code - 4`): 2 low bits from `qs`, the high bit
/// from `hmask`.
#[inline(always)]
pub(crate) fn q3_k_codes(hmask: &[u8], qs: &[u8]) -> [u8; 256] {
    let mut q = crumbs(qs);
    or_mask_bits(&mut q, hmask, 2);
    q
}

/// Q5_K's 256 5-bit codes: the nibbles, bit 4 from bit `i / 32` of `qh[i % 32]`.
#[inline(always)]
pub(crate) fn q5_k_codes(qh: &[u8], qs: &[u8]) -> [u8; 256] {
    let mut q = k_nibbles(qs);
    or_mask_bits(&mut q, qh, 4);
    q
}

/// Q6_K's 256 6-bit codes (0..64; the value is `code - 32`).
#[inline(always)]
pub(crate) fn q6_k_codes(ql: &[u8], qh: &[u8]) -> [u8; 256] {
    let mut q = [0u8; 256];
    // Each half: rows 0..4 of 32 codes take the low nibbles of `ql[0..32]`, `ql[32..64]`,
    // then their high nibbles, and bits 0-1, 2-3, 4-5, 6-7 of `qh[0..32]` on top.
    for c in 0..2 {
        let (ql, qh) = (&ql[c * 64..c * 64 + 64], &qh[c * 32..c * 32 + 32]);
        let q = &mut q[c * 128..c * 128 + 128];
        for j in 0..32 {
            q[j] = (ql[j] & 0x0F) | ((qh[j] & 3) << 4);
            q[32 + j] = (ql[32 + j] & 0x0F) | (((qh[j] >> 2) & 3) << 4);
            q[64 + j] = (ql[j] >> 4) | (((qh[j] >> 4) & 3) << 4);
            q[96 + j] = (ql[32 + j] >> 4) | ((qh[j] >> 6) << 4);
        }
    }
    q
}

/// TQ1_0's 256 ternary codes (0..3; the value is `code - 1`), base-3 digits packed five (four
/// for `qh`) to a byte, read with gguf-py's wrapping u8 products.
#[inline(always)]
pub(crate) fn tq1_0_codes(b: &[u8]) -> [u8; 256] {
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    let digit = |x: u8, p: usize| ((u16::from(x.wrapping_mul(POW3[p])) * 3) >> 8) as u8;
    let mut q = [0u8; 256];
    for p in 0..5 {
        for j in 0..32 {
            q[p * 32 + j] = digit(b[j], p);
        }
        for j in 0..16 {
            q[160 + p * 16 + j] = digit(b[32 + j], p);
        }
    }
    for p in 0..4 {
        for j in 0..4 {
            q[240 + p * 4 + j] = digit(b[48 + j], p);
        }
    }
    q
}

/// IQ4_XS's eight signed 6-bit scales: low nibbles from 4 bytes, high 2 bits from a u16.
#[inline(always)]
pub(crate) fn iq4_xs_scales(high: u16, low: &[u8]) -> [i8; 8] {
    let mut out = [0i8; 8];
    for (k, o) in out.iter_mut().enumerate() {
        let l = (low[k / 2] >> (4 * (k % 2))) & 0x0F;
        let h = ((high >> (2 * k)) & 3) as u8;
        *o = (l | (h << 4)) as i8 - 32;
    }
    out
}

pub(super) fn q2_k(src: &[u8], out: &mut [f32]) {
    for_blocks::<84, 256>(src, out, |b, o| {
        let (d, dmin) = (half(b, 80), half(b, 82));
        let q = crumbs(&b[16..80]);
        for (i, (o, q)) in o.chunks_exact_mut(16).zip(q.chunks_exact(16)).enumerate() {
            let dl = d * f32::from(b[i] & 0x0F);
            let ml = dmin * f32::from(b[i] >> 4);
            for (o, &q) in o.iter_mut().zip(q) {
                *o = dl * f32::from(q) - ml;
            }
        }
    });
}

pub(super) fn q3_k(src: &[u8], out: &mut [f32], codes: &mut [u8]) {
    for_coded_blocks::<110, 256>(src, out, codes, |b, o| {
        let d = half(b, 108);
        let scales = q3_k_scales(&b[96..108]);
        let q = q3_k_codes(&b[..32], &b[32..96]);
        for ((o, q), &s) in o.chunks_exact_mut(16).zip(q.chunks_exact(16)).zip(&scales) {
            let dl = d * f32::from(s);
            for (o, &q) in o.iter_mut().zip(q) {
                *o = dl * f32::from(q as i8 - 4);
            }
        }
        q
    });
}

pub(super) fn q4_k(src: &[u8], out: &mut [f32]) {
    for_blocks::<144, 256>(src, out, |b, o| {
        let (d, dmin) = (half(b, 0), half(b, 2));
        let (sc, m) = scale_min_k4(&b[4..16]);
        let q = k_nibbles(&b[16..]);
        for (k, (o, q)) in o.chunks_exact_mut(32).zip(q.chunks_exact(32)).enumerate() {
            let (dl, ml) = (d * f32::from(sc[k]), dmin * f32::from(m[k]));
            for (o, &q) in o.iter_mut().zip(q) {
                *o = dl * f32::from(q) - ml;
            }
        }
    });
}

pub(super) fn q5_k(src: &[u8], out: &mut [f32], codes: &mut [u8]) {
    for_coded_blocks::<176, 256>(src, out, codes, |b, o| {
        let (d, dmin) = (half(b, 0), half(b, 2));
        let (sc, m) = scale_min_k4(&b[4..16]);
        let q = q5_k_codes(&b[16..48], &b[48..]);
        for (k, (o, q)) in o.chunks_exact_mut(32).zip(q.chunks_exact(32)).enumerate() {
            let (dl, ml) = (d * f32::from(sc[k]), dmin * f32::from(m[k]));
            for (o, &q) in o.iter_mut().zip(q) {
                *o = dl * f32::from(q) - ml;
            }
        }
        q
    });
}

pub(super) fn q6_k(src: &[u8], out: &mut [f32], codes: &mut [u8]) {
    for_coded_blocks::<210, 256>(src, out, codes, |b, o| {
        let d = half(b, 208);
        let q = q6_k_codes(&b[..128], &b[128..192]);
        for (i, (o, q)) in o.chunks_exact_mut(16).zip(q.chunks_exact(16)).enumerate() {
            let dl = d * f32::from(b[192 + i] as i8);
            for (o, &q) in o.iter_mut().zip(q) {
                *o = dl * f32::from(q as i8 - 32);
            }
        }
        q
    });
}

/// ggml's `block_q8_K`: f32 `d`, 256 int8, 16 i16 block sums (unused here).
pub(super) fn q8_k(src: &[u8], out: &mut [f32]) {
    for_blocks::<292, 256>(src, out, |b, o| {
        let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        for (o, &q) in o.iter_mut().zip(&b[4..260]) {
            *o = d * f32::from(q as i8);
        }
    });
}

pub(super) fn tq1_0(src: &[u8], out: &mut [f32], codes: &mut [u8]) {
    for_coded_blocks::<54, 256>(src, out, codes, |b, o| {
        let d = half(b, 52);
        let q = tq1_0_codes(b);
        for (o, &q) in o.iter_mut().zip(&q) {
            *o = d * f32::from(q as i8 - 1);
        }
        q
    });
}

pub(super) fn tq2_0(src: &[u8], out: &mut [f32]) {
    for_blocks::<66, 256>(src, out, |b, o| {
        let d = half(b, 64);
        for (o, q) in o.iter_mut().zip(crumbs(&b[..64])) {
            *o = d * f32::from(q as i8 - 1);
        }
    });
}

pub(super) fn iq4_xs(src: &[u8], out: &mut [f32]) {
    for_blocks::<136, 256>(src, out, |b, o| {
        let d = half(b, 0);
        let scales = iq4_xs_scales(u16_at(b, 2), &b[4..8]);
        for (k, o) in o.chunks_exact_mut(32).enumerate() {
            let dl = d * f32::from(scales[k]);
            let qs = &b[8 + 16 * k..24 + 16 * k];
            for (j, &x) in qs.iter().enumerate() {
                o[j] = dl * f32::from(IQ4NL_VALUES[usize::from(x & 0x0F)]);
                o[j + 16] = dl * f32::from(IQ4NL_VALUES[usize::from(x >> 4)]);
            }
        }
    });
}
