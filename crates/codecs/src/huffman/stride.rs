//! What the flat stride coders ([`super::decode_stride`], [`super::encode_stride`]) share: the
//! masks that spread a word's `l`-bit fields one per byte and gather them back, and the
//! WebAssembly builds' four words through two 128-bit registers (LMC paper §4.2's canonical
//! codes; an implementation choice).

/// The masks of the three halvings that spread a word's eight `l`-bit fields one per byte (and,
/// encoding, gather them back), finest first: the fields of every 16-bit unit, the 2l-bit halves
/// of every 32-bit one, the 4l-bit halves of the word.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_feature = "simd128")),
    allow(dead_code)
)]
pub(super) fn spread_masks(l: u32) -> [u64; 3] {
    let ones = |width: u32, every: u32| {
        let field = (1u64 << width) - 1;
        (0..64 / every).fold(0, |m, i| m | field << (i * every))
    };
    [ones(l, 16), ones(2 * l, 32), ones(4 * l, 64)]
}

/// Four words through a function of two-word vectors, two at a time (WebAssembly's 128-bit
/// SIMD: the stride coders' lanes 0–1, then 2–3).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
#[inline(always)]
pub(super) fn two_by_two(
    [x0, x1, x2, x3]: [u64; 4],
    f: impl Fn(std::arch::wasm32::v128) -> std::arch::wasm32::v128,
) -> [u64; 4] {
    use std::arch::wasm32::{u64x2, u64x2_extract_lane};
    let (a, b) = (f(u64x2(x0, x1)), f(u64x2(x2, x3)));
    [
        u64x2_extract_lane::<0>(a),
        u64x2_extract_lane::<1>(a),
        u64x2_extract_lane::<0>(b),
        u64x2_extract_lane::<1>(b),
    ]
}
