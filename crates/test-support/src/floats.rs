//! Float bit patterns for tests: the special values (NaN, ±Inf, the smallest subnormal, -0) of
//! bf16, f16 and f32, and bf16 made from f32 the way the tests make it (truncation).

/// The bit patterns of one float format's special values, in the low bits of a `u32` (16 bits
/// for bf16 and f16). Write one as `bits.to_le_bytes()[..width]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Specials {
    /// The canonical quiet NaN (sign 0, top mantissa bit set, the rest 0).
    pub nan: u32,
    /// Positive infinity.
    pub inf: u32,
    /// Negative infinity.
    pub neg_inf: u32,
    /// The smallest positive subnormal (bit pattern 1).
    pub min_subnormal: u32,
    /// Negative zero.
    pub neg_zero: u32,
}

/// bfloat16 (1 sign, 8 exponent, 7 mantissa bits).
pub const BF16: Specials = Specials {
    nan: 0x7FC0,
    inf: 0x7F80,
    neg_inf: 0xFF80,
    min_subnormal: 1,
    neg_zero: 0x8000,
};

/// IEEE 754 half precision (1 sign, 5 exponent, 10 mantissa bits).
pub const F16: Specials = Specials {
    nan: 0x7E00,
    inf: 0x7C00,
    neg_inf: 0xFC00,
    min_subnormal: 1,
    neg_zero: 0x8000,
};

/// IEEE 754 single precision (1 sign, 8 exponent, 23 mantissa bits).
pub const F32: Specials = Specials {
    nan: 0x7FC0_0000,
    inf: 0x7F80_0000,
    neg_inf: 0xFF80_0000,
    min_subnormal: 1,
    neg_zero: 0x8000_0000,
};

/// The bf16 bits of `v` by truncation: the top 16 bits of its f32 bits (not rounded to nearest,
/// unlike a real cast; NaN stays NaN only if its payload has a bit in the top half).
pub fn bf16_bits(v: f32) -> u16 {
    (v.to_bits() >> 16) as u16
}

/// `n` bf16 values shaped like Adam's second moment as the codecs meet it (little-endian bytes):
/// positive, in a narrow band of exponents, with uniform 7-bit mantissas, so that with the sign
/// rotated to bit 0 (always 0) their low bytes are the 128 even bytes, a flat code of evenly
/// spaced symbols (`huffman::encode_stride` / `decode_stride` in the codecs). Seeded.
pub fn second_moment_bf16(n: usize, seed: u64) -> Vec<u8> {
    let mut next = crate::rng::xorshift(seed);
    (0..n)
        .flat_map(|_| (0x3400u16 | (next() as u16 & 0x03ff)).to_le_bytes())
        .collect()
}

/// The seed, length and expected LMC snapshot (its length and xxh3-64) of the one-tensor file
/// `exp_avg_sq` = [`second_moment_bf16`]`(SECOND_MOMENT.0, SECOND_MOMENT.1)`, as the native
/// encoder writes it: the wasm tests assert that the page's workers write the same bytes.
pub const SECOND_MOMENT: (usize, u64, (usize, u64)) = (
    150_001,
    0x2545_f491_4f6c_dd1d,
    (187_901, 0x549a_783d_1a75_e093),
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f32_specials_are_the_values_they_name() {
        assert!(f32::from_bits(F32.nan).is_nan());
        assert_eq!(F32.nan, f32::NAN.to_bits());
        assert_eq!(f32::from_bits(F32.inf), f32::INFINITY);
        assert_eq!(f32::from_bits(F32.neg_inf), f32::NEG_INFINITY);
        assert_eq!(f32::from_bits(F32.min_subnormal), f32::from_bits(1));
        assert_eq!(F32.neg_zero, (-0.0f32).to_bits());
    }

    /// bf16 is the top half of f32, so truncating the f32 patterns gives the bf16 ones.
    #[test]
    fn bf16_specials_are_truncated_f32_specials() {
        assert_eq!(u32::from(bf16_bits(f32::from_bits(F32.nan))), BF16.nan);
        assert_eq!(u32::from(bf16_bits(f32::INFINITY)), BF16.inf);
        assert_eq!(u32::from(bf16_bits(f32::NEG_INFINITY)), BF16.neg_inf);
        assert_eq!(u32::from(bf16_bits(-0.0)), BF16.neg_zero);
        assert_eq!(bf16_bits(1.0), 0x3F80);
        assert_eq!(bf16_bits(f32::from_bits(0x3F80_FFFF)), 0x3F80, "truncates");
    }
}
