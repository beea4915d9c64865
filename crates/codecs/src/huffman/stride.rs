//! What the flat stride coders ([`super::decode_stride`], [`super::encode_stride`]) share: the
//! code they run on ([`Stride`]), the nibble tables that reverse a field's bits, the masks that
//! spread a word's `l`-bit fields one per byte and gather them back, and the WebAssembly builds'
//! four words through two 128-bit registers (LMC paper §4.2's canonical codes; an
//! implementation choice).

/// A flat canonical code of evenly spaced symbols: every used byte `len` bits long (1–7), the
/// `k`-th used byte `first + (k << shift)`, so its code is `k` written bit-reversed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stride {
    /// The code length `l`.
    pub(super) len: u32,
    /// The smallest symbol.
    pub(super) first: u8,
    /// log2 of the spacing.
    pub(super) shift: u32,
}

impl Stride {
    /// The two byte-shuffle tables of the code, for a field's low and high nibble: the nibble's
    /// bits reversed into its place among the field's `l` reversed bits, moved left by `shift`
    /// when `spaced` (decoding: the symbol's part from those bits), else not (encoding: the
    /// index's part).
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_feature = "simd128")),
        allow(dead_code)
    )]
    pub(super) fn nibble_tables(&self, spaced: bool) -> ([u8; 16], [u8; 16]) {
        let shift = if spaced { self.shift } else { 0 };
        let place = |v: u32| (((v >> (8 - self.len)) << shift) & 0xff) as u8;
        let rev4 = |n: usize| u32::from((n as u8).reverse_bits() >> 4);
        (
            std::array::from_fn(|n| place(rev4(n) << 4)),
            std::array::from_fn(|n| place(rev4(n))),
        )
    }
}

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
