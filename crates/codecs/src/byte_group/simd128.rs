//! Byte grouping's kernels in WebAssembly's 128-bit SIMD (the page's workers; LMC paper §4.1's
//! byte grouping, the sign rotation of [`super::Transform::SignRotate`]): per 16 elements, byte
//! shuffles gather byte `k` of every element into group `k` (split) and interleave the groups
//! back (merge), and the rotation is two lane shifts. Loads and stores go through 64-bit lanes
//! of slices, so there is no `unsafe`; elements past the last 16 go through the scalar loops of
//! [`super`].

use std::arch::wasm32::*;

/// Width 2 split: 16 elements' two bytes, rotated left by one bit, into 16 bytes of each group;
/// the tail through [`super::split2_swar`].
#[inline(always)]
pub(super) fn split2<const ROT: bool>(src: &[u8], g0: &mut [u8], g1: &mut [u8]) {
    let (chunks, _) = src.as_chunks::<32>();
    for (i, c) in chunks.iter().enumerate() {
        let [v0, v1] = [0, 16].map(|at| {
            let v = load16(&c[at..at + 16]);
            if ROT {
                v128_or(u16x8_shl(v, 1), u16x8_shr(v, 15))
            } else {
                v
            }
        });
        let at = i * 16..i * 16 + 16;
        store16(
            &mut g0[at.clone()],
            i8x16_shuffle::<0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30>(v0, v1),
        );
        store16(
            &mut g1[at],
            i8x16_shuffle::<1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31>(v0, v1),
        );
    }
    let done = chunks.len() * 16;
    super::split2_swar::<ROT>(&src[2 * done..], &mut g0[done..], &mut g1[done..]);
}

/// Width 2 merge, the inverse of [`split2`]; the tail through [`super::merge2_swar`].
#[inline(always)]
pub(super) fn merge2<const ROT: bool>(g0: &[u8], g1: &[u8], dst: &mut [u8]) {
    let (chunks, _) = dst.as_chunks_mut::<32>();
    let done = chunks.len() * 16;
    for (i, c) in chunks.iter_mut().enumerate() {
        let (a, b) = (
            load16(&g0[i * 16..i * 16 + 16]),
            load16(&g1[i * 16..i * 16 + 16]),
        );
        let halves = [zip_low(a, b), zip_high(a, b)];
        for (k, v) in halves.into_iter().enumerate() {
            let v = if ROT {
                v128_or(u16x8_shr(v, 1), u16x8_shl(v, 15))
            } else {
                v
            };
            store16(&mut c[16 * k..16 * k + 16], v);
        }
    }
    super::merge2_swar::<ROT>(&g0[done..], &g1[done..], &mut dst[2 * done..]);
}

/// The bytes of the low halves of `a` and `b`, interleaved: `a0 b0 a1 b1 … a7 b7`.
#[inline(always)]
fn zip_low(a: v128, b: v128) -> v128 {
    i8x16_shuffle::<0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23>(a, b)
}

/// The bytes of the high halves of `a` and `b`, interleaved: `a8 b8 … a15 b15`.
#[inline(always)]
fn zip_high(a: v128, b: v128) -> v128 {
    i8x16_shuffle::<8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31>(a, b)
}

/// 16 bytes of `b` as a vector (two 64-bit loads, which LLVM joins; no `unsafe`).
#[inline(always)]
fn load16(b: &[u8]) -> v128 {
    let half = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    u64x2(half(0), half(8))
}

/// Stores vector `v` into the 16 bytes of `b`.
#[inline(always)]
fn store16(b: &mut [u8], v: v128) {
    b[..8].copy_from_slice(&u64x2_extract_lane::<0>(v).to_le_bytes());
    b[8..16].copy_from_slice(&u64x2_extract_lane::<1>(v).to_le_bytes());
}

/// Width 4 split with WebAssembly's 128-bit SIMD (the page's workers encoding fp32): per 16
/// elements the sign rotation is two shifts, and two rounds of byte shuffles gather byte `k` of
/// every element (byte pairs of 8 elements, then the 16 of each group); the tail goes through
/// [`super::split4_vec`]'s scalar loop.
#[inline(always)]
pub(super) fn split4<const ROT: bool>(src: &[u8], g: [&mut [u8]; 4]) {
    let (chunks, _) = src.as_chunks::<64>();
    let [g0, g1, g2, g3] = g;
    for (i, c) in chunks.iter().enumerate() {
        let v: [v128; 4] = std::array::from_fn(|k| {
            let v = load16(&c[16 * k..16 * k + 16]);
            if ROT {
                v128_or(u32x4_shl(v, 1), u32x4_shr(v, 31))
            } else {
                v
            }
        });
        // Bytes 0 and 1 (`lo`), 2 and 3 (`hi`) of 8 elements each.
        let lo = |x: v128, y: v128| {
            i8x16_shuffle::<0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29>(x, y)
        };
        let hi = |x: v128, y: v128| {
            i8x16_shuffle::<2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15, 19, 23, 27, 31>(x, y)
        };
        let (p_lo, p_hi, q_lo, q_hi) = (
            lo(v[0], v[1]),
            hi(v[0], v[1]),
            lo(v[2], v[3]),
            hi(v[2], v[3]),
        );
        let first = |x: v128, y: v128| {
            i8x16_shuffle::<0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23>(x, y)
        };
        let second = |x: v128, y: v128| {
            i8x16_shuffle::<8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31>(x, y)
        };
        let at = i * 16..i * 16 + 16;
        store16(&mut g0[at.clone()], first(p_lo, q_lo));
        store16(&mut g1[at.clone()], second(p_lo, q_lo));
        store16(&mut g2[at.clone()], first(p_hi, q_hi));
        store16(&mut g3[at], second(p_hi, q_hi));
    }
    let (done, rest) = (chunks.len() * 16, chunks.len() * 64);
    super::split4_vec::<ROT>(
        &src[rest..],
        [
            &mut g0[done..],
            &mut g1[done..],
            &mut g2[done..],
            &mut g3[done..],
        ],
    );
}

/// Width 4 merged with WebAssembly's 128-bit SIMD (the page's workers decoding fp32): per 16
/// elements, two rounds of byte shuffles interleave the four groups' 16 bytes (bytes into
/// 16-bit pairs, pairs into 32-bit elements), and the sign rotation is two shifts; the tail goes
/// through [`super::merge4_vec`]'s scalar loop.
#[inline(always)]
pub(super) fn merge4<const ROT: bool>(g: [&[u8]; 4], dst: &mut [u8]) {
    let (chunks, _) = dst.as_chunks_mut::<64>();
    let done = chunks.len();
    for (i, c) in chunks.iter_mut().enumerate() {
        let [a, b, cc, d] = g.map(|g| load16(&g[i * 16..i * 16 + 16]));
        let (ab_lo, ab_hi) = (zip_low(a, b), zip_high(a, b));
        let (cd_lo, cd_hi) = (zip_low(cc, d), zip_high(cc, d));
        let low = |x: v128, y: v128| {
            i8x16_shuffle::<0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23>(x, y)
        };
        let high = |x: v128, y: v128| {
            i8x16_shuffle::<8, 9, 24, 25, 10, 11, 26, 27, 12, 13, 28, 29, 14, 15, 30, 31>(x, y)
        };
        let elems = [
            low(ab_lo, cd_lo),
            high(ab_lo, cd_lo),
            low(ab_hi, cd_hi),
            high(ab_hi, cd_hi),
        ];
        for (k, v) in elems.into_iter().enumerate() {
            let v = if ROT {
                v128_or(u32x4_shr(v, 1), u32x4_shl(v, 31))
            } else {
                v
            };
            store16(&mut c[16 * k..16 * k + 16], v);
        }
    }
    let rest = done * 16;
    let g = g.map(|g| &g[rest..]);
    super::merge4_vec::<ROT>(g, &mut dst[done * 64..]);
}
