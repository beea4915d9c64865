//! The anatomy against the references: `half` and `as f32` for the IEEE formats (every bf16 /
//! fp16 pattern, every tie between neighbours, random `f64`s), the OFP8 spec's table and
//! `ml_dtypes` (fp8_ml_dtypes.txt) for fp8.

// fp8 patterns are written sign.exponent.mantissa (0b0_1111_110), as the spec writes them.
#![allow(clippy::unusual_byte_groupings)]

use super::*;
use crate::xorshift;
use proptest::prelude::*;

/// The reference rounding of the IEEE formats: the cast for f32; for bf16 and f16 `half`'s
/// conversion from `f32` (correctly rounded) when `x` is an `f32`, else from `f64` when that is
/// correctly rounded: when the low 32 bits of `x` are zero (`half` drops them, and its F16C path
/// rounds through `f32`; see `half_from_f64_is_not_correctly_rounded`). `None`: no reference.
fn reference_bits(x: f64, f: Format) -> Option<u32> {
    let is_f32 = f64::from(x as f32).to_bits() == x.to_bits() || x.is_nan();
    let clean = x.to_bits() as u32 == 0;
    Some(match f {
        Format::F32 => (x as f32).to_bits(),
        Format::Bf16 if is_f32 => u32::from(half::bf16::from_f32(x as f32).to_bits()),
        Format::F16 if is_f32 => u32::from(half::f16::from_f32(x as f32).to_bits()),
        Format::Bf16 if clean => u32::from(half::bf16::from_f64(x).to_bits()),
        Format::F16 if clean => u32::from(half::f16::from_f64(x).to_bits()),
        _ => return None,
    })
}

/// The reference value of an IEEE pattern.
fn reference_value(bits: u32, f: Format) -> f64 {
    match f {
        Format::F32 => f64::from(f32::from_bits(bits)),
        Format::Bf16 => half::bf16::from_bits(bits as u16).to_f64(),
        Format::F16 => half::f16::from_bits(bits as u16).to_f64(),
        _ => unreachable!("no crate reference for fp8"),
    }
}

const IEEE: [Format; 3] = [Format::F32, Format::Bf16, Format::F16];

/// Checks `encode(x)` against the reference (NaN: any NaN); returns whether there was one.
fn check_ieee(x: f64, f: Format) -> bool {
    let got = encode(x, f, Overflow::NonSaturating);
    let Some(want) = reference_bits(x, f) else {
        return false;
    };
    if x.is_nan() {
        assert_eq!(got.decomposed.class, Class::Nan, "{x} in {f:?}");
        assert!(reference_value(want, f).is_nan());
    } else {
        assert_eq!(got.bits, want, "{x:e} ({:#x}) in {f:?}", x.to_bits());
        assert_eq!(
            got.decomposed.value.to_bits(),
            reference_value(want, f).to_bits()
        );
    }
    true
}

#[test]
fn every_bf16_and_f16_pattern_decodes_as_half_does() {
    for f in [Format::Bf16, Format::F16] {
        for bits in 0..=u16::MAX as u32 {
            let d = decompose(bits, f);
            let r = reference_value(bits, f);
            if r.is_nan() {
                assert_eq!(d.class, Class::Nan, "{bits:#x}");
            } else {
                assert_eq!(d.value.to_bits(), r.to_bits(), "{bits:#x} in {f:?}");
                let min_normal = decompose(1 << f.mantissa_bits(), f).value;
                let class = if r == 0.0 {
                    Class::Zero
                } else if r.is_infinite() {
                    Class::Infinity
                } else if r.abs() < min_normal {
                    Class::Subnormal
                } else {
                    Class::Normal
                };
                assert_eq!(d.class, class, "{bits:#x} in {f:?}");
                // Encoding a stored value gives the pattern back.
                assert_eq!(encode(d.value, f, Overflow::NonSaturating).bits, bits);
            }
        }
    }
}

#[test]
fn every_tie_and_its_neighbours_round_as_half_does() {
    for f in [Format::Bf16, Format::F16] {
        for bits in 0..0x7FFFu32 {
            let (a, b) = (reference_value(bits, f), reference_value(bits + 1, f));
            if !a.is_finite() || b.is_nan() {
                continue;
            }
            // b may be +∞: the tie is then max + ulp / 2, which overflows.
            let b = if b.is_infinite() {
                2.0 * a - reference_value(bits - 1, f)
            } else {
                b
            };
            let mid = (a + b) / 2.0;
            assert!(check_ieee(mid, f) && check_ieee(-mid, f));
            // Just past the tie: the nearer neighbour (`half` has no correct answer here).
            let above = encode(mid.next_up(), f, Overflow::NonSaturating);
            let below = encode(mid.next_down(), f, Overflow::NonSaturating);
            assert_eq!(below.bits, bits, "{mid:e} − 1 ulp in {f:?}");
            assert_eq!(above.bits, bits + 1, "{mid:e} + 1 ulp in {f:?}");
            let neg = encode(-mid.next_up(), f, Overflow::NonSaturating);
            assert_eq!(neg.bits, (bits + 1) | f.sign_bit());
        }
    }
}

/// `half`'s `from_f64` is not correctly rounded: bf16 drops the low 32 bits of the `f64` before
/// rounding (even of an `f32` value), and f16 on F16C hardware rounds through `f32`. The anatomy
/// rounds the exact value; these are the cases where the two differ.
#[test]
fn half_from_f64_is_not_correctly_rounded() {
    // 1 + 2^-8 + 2^-23 (an f32): just above the bf16 tie between 1 and 1 + 2^-7.
    let x = f64::from(f32::from_bits(0x3F80_8001));
    assert_eq!(
        encode(x, Format::Bf16, Overflow::NonSaturating).bits,
        0x3F81
    );
    assert_eq!(half::bf16::from_f32(x as f32).to_bits(), 0x3F81);
    assert_eq!(half::bf16::from_f64(x).to_bits(), 0x3F80, "half truncates");
    // 1 + 2^-11 + 2^-40: just above the f16 tie between 1 and 1 + 2^-10.
    let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
    assert_eq!(encode(x, Format::F16, Overflow::NonSaturating).bits, 0x3C01);
}

#[test]
fn f32_rounds_as_the_cast_does() {
    // Ties between neighbours over the whole range, sampled, and random f64 patterns.
    let mut r = xorshift(0x1234_5678_9abc_def1);
    for _ in 0..200_000 {
        let bits = (r() as u32) & 0x7F7F_FFFF;
        let a = f64::from(f32::from_bits(bits));
        let b = f64::from(f32::from_bits(bits + 1));
        let mid = (a + b) / 2.0;
        for x in [mid, mid.next_up(), mid.next_down(), f64::from_bits(r())] {
            check_ieee(x, Format::F32);
            check_ieee(-x, Format::F32);
        }
    }
    let max = f64::from(f32::MAX);
    let ulp = max - f64::from(f32::from_bits(f32::MAX.to_bits() - 1));
    for x in [
        max + ulp / 2.0,
        (max + ulp / 2.0).next_down(),
        1e39,
        1e-46,
        7e-46,
        1e-45,
    ] {
        check_ieee(x, Format::F32);
        check_ieee(-x, Format::F32);
    }
}

#[test]
fn special_values_round_as_the_references_do() {
    let specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        65504.0,
        65519.99,
        65520.0,
        1.0 / 3.0,
    ];
    for f in IEEE {
        for x in specials {
            check_ieee(x, f);
        }
    }
    let e = encode(65520.0, Format::F16, Overflow::NonSaturating);
    assert!(e.overflowed && !e.saturated && e.decomposed.class == Class::Infinity);
    let e = encode(65520.0, Format::F16, Overflow::Saturating);
    assert!(e.overflowed && e.saturated && e.decomposed.value == 65504.0);
    let e = encode(1e-9, Format::F16, Overflow::NonSaturating);
    assert!(e.underflowed && e.bits == 0 && e.rel_error == 1.0);
}

proptest! {
    #[test]
    fn any_f64_rounds_as_the_references_do(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        for f in IEEE {
            check_ieee(x, f);
        }
    }

    #[test]
    fn any_f32_rounds_as_half_does(bits in any::<u32>()) {
        let x = f64::from(f32::from_bits(bits));
        for f in IEEE {
            prop_assert!(check_ieee(x, f));
        }
    }

    #[test]
    fn values_near_one_round_as_the_references_do(x in -70000.0f64..70000.0) {
        for f in IEEE {
            check_ieee(x, f);
        }
    }

    #[test]
    fn flipping_a_bit_twice_gives_the_value_back(bits in any::<u32>(), bit in 0u32..32) {
        for f in Format::ALL {
            let Some(once) = flip_bit(bits, bit, f) else {
                prop_assert!(bit >= f.bits());
                continue;
            };
            prop_assert_eq!(once.after.bits.count_ones().abs_diff(once.before.bits.count_ones()), 1);
            let twice = flip_bit(once.after.bits, bit, f).unwrap();
            prop_assert_eq!(twice.after.bits, once.before.bits);
        }
    }
}

#[test]
fn flipped_bits_give_the_values_half_and_f32_give() {
    let mut r = xorshift(0xfeed_beef_1234_5678);
    for _ in 0..20_000 {
        let bits = r() as u32;
        for f in IEEE {
            for bit in 0..f.bits() {
                let fl = flip_bit(bits, bit, f).unwrap();
                let want = reference_value(fl.after.bits, f);
                if want.is_nan() {
                    assert!(fl.after.value.is_nan());
                } else {
                    assert_eq!(fl.after.value.to_bits(), want.to_bits());
                }
                let field = match bit {
                    b if b == f.bits() - 1 => "sign",
                    b if b >= f.mantissa_bits() => "exponent",
                    _ => "mantissa",
                };
                assert_eq!(fl.field, field);
            }
        }
    }
    // Flipping the top exponent bit of 1.0 in bf16 gives 2^-127 · ... no: 0x3F80 → 0x7F80 = +∞.
    let fl = flip_bit(0x3F80, 14, Format::Bf16).unwrap();
    assert_eq!(fl.after.class, Class::Infinity);
    assert!(flip_bit(0, 16, Format::Bf16).is_none());
    assert!(flip_bit(0, 8, Format::E4m3).is_none());
}

/// The OFP8 spec's (rev. 1.0, table 1) defining values.
#[test]
fn fp8_matches_the_ofp8_spec_table() {
    let p2 = |k| 2f64.powi(k);
    // (format, bias, largest finite, [(pattern, value, what)]).
    type Spec = (Format, i32, f64, [(u32, f64, &'static str); 4]);
    let spec: [Spec; 2] = [
        (
            Format::E4m3,
            7,
            448.0,
            [
                (0b0_0001_000, p2(-6), "min normal"),
                (0b0_0000_111, 0.875 * p2(-6), "max subnormal"),
                (0b0_0000_001, p2(-9), "min subnormal"),
                (0b0_1111_000, 256.0, "S.1111.000 is normal"),
            ],
        ),
        (
            Format::E5m2,
            15,
            57344.0,
            [
                (0b0_00001_00, p2(-14), "min normal"),
                (0b0_00000_11, 0.75 * p2(-14), "max subnormal"),
                (0b0_00000_01, p2(-16), "min subnormal"),
                (0b0_11110_11, 57344.0, "max normal"),
            ],
        ),
    ];
    for (f, bias, max, values) in spec {
        assert_eq!((f.bias(), f.max_finite()), (bias, max), "{f:?}");
        for (bits, value, what) in values {
            assert_eq!(decompose(bits, f).value, value, "{f:?} {what}");
        }
        assert_eq!(decompose(0x80, f).class, Class::Zero, "{f:?} −0");
    }
    let f = Format::E4m3;
    assert_eq!(f.max_finite_bits(), 0b0_1111_110);
    assert_eq!(decompose(0b0_1111_111, f).class, Class::Nan);
    assert_eq!(decompose(0b1_1111_111, f).class, Class::Nan);
    assert!(f.infinity_bits().is_none());
    let f = Format::E5m2;
    assert_eq!(decompose(0b0_11111_00, f).class, Class::Infinity);
    assert_eq!(decompose(0b1_11111_00, f).value, f64::NEG_INFINITY);
    for m in 1..4 {
        assert_eq!(decompose(0b0_11111_00 | m, f).class, Class::Nan);
    }
    // Every pattern: NaN count (spec: 2 in E4M3, 6 in E5M2), and the patterns in order of value.
    for (f, nans) in [(Format::E4m3, 2), (Format::E5m2, 6)] {
        let all: Vec<Decomposed> = (0..256).map(|b| decompose(b, f)).collect();
        assert_eq!(all.iter().filter(|d| d.class == Class::Nan).count(), nans);
        let positive: Vec<f64> = all[..128]
            .iter()
            .filter(|d| d.class != Class::Nan)
            .map(|d| d.value)
            .collect();
        assert!(positive.windows(2).all(|w| w[0] < w[1]), "{f:?} increasing");
    }
}

/// fp8 against `ml_dtypes` (see scripts/gen/fp8_ml_dtypes.py): every pattern's value, and the
/// rounding of every tie, its neighbours, overflow and random values.
#[test]
fn fp8_matches_ml_dtypes() {
    let text = include_str!("fp8_ml_dtypes.txt");
    let (mut decodes, mut encodes, mut double_rounded) = (0, 0, 0);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let w: Vec<&str> = line.split(' ').collect();
        let f = Format::from_name(w[1]).unwrap();
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        match w[0] {
            "decode" => {
                let (bits, want) = (hex(w[2]) as u32, f64::from_bits(hex(w[3])));
                let d = decompose(bits, f);
                if want.is_nan() {
                    assert_eq!(d.class, Class::Nan, "{line}");
                } else {
                    assert_eq!(d.value.to_bits(), want.to_bits(), "{line}");
                }
                decodes += 1;
            }
            _ => {
                let (x, want) = (f64::from_bits(hex(w[2])), hex(w[3]) as u32);
                let got = encode(x, f, Overflow::NonSaturating);
                if f64::from(x as f32) != x && !x.is_nan() {
                    // ml_dtypes rounds an f64 through f32 first (double rounding): its answer
                    // is that of the f32, which may differ from the exact value's.
                    let via_f32 = encode(f64::from(x as f32), f, Overflow::NonSaturating);
                    assert_eq!(via_f32.bits, want, "{line}: {x:e} via f32");
                    double_rounded += usize::from(got.bits != want);
                } else if x.is_nan() {
                    assert_eq!(got.decomposed.class, Class::Nan, "{line}");
                } else {
                    assert_eq!(got.bits, want, "{line}: {x:e}");
                }
                encodes += 1;
            }
        }
    }
    assert_eq!(decodes, 512);
    assert!(encodes > 3000, "{encodes}");
    // The f64 neighbours of the ties (one f64 ulp off) are where the double rounding shows.
    assert!(double_rounded > 0, "{double_rounded}");
}

#[test]
fn fp8_overflow_and_saturation() {
    let e = encode(464.0, Format::E4m3, Overflow::NonSaturating);
    assert_eq!(
        (e.bits, e.overflowed),
        (0x7E, false),
        "a tie rounds to even 448"
    );
    let e = encode(465.0, Format::E4m3, Overflow::NonSaturating);
    assert!(e.overflowed && e.decomposed.class == Class::Nan);
    let e = encode(465.0, Format::E4m3, Overflow::Saturating);
    assert!(e.overflowed && e.saturated && e.decomposed.value == 448.0);
    let e = encode(f64::NEG_INFINITY, Format::E4m3, Overflow::Saturating);
    assert!(e.saturated && e.decomposed.value == -448.0);
    let e = encode(f64::INFINITY, Format::E4m3, Overflow::NonSaturating);
    assert_eq!(e.decomposed.class, Class::Nan);
    let e = encode(61440.0, Format::E5m2, Overflow::NonSaturating);
    assert!(e.overflowed && e.decomposed.class == Class::Infinity);
    let e = encode(61439.0, Format::E5m2, Overflow::NonSaturating);
    assert!(!e.overflowed && e.decomposed.value == 57344.0);
    assert_eq!(e.abs_error, 61439.0 - 57344.0);
    let e = encode(f64::INFINITY, Format::E5m2, Overflow::Saturating);
    assert!(!e.saturated && e.decomposed.class == Class::Infinity);
}

#[test]
fn the_anatomy_of_known_values() {
    let d = decompose(0x4040_0000, Format::F32); // 3.0
    assert_eq!(
        (d.sign, d.exponent_field, d.mantissa_field),
        (0, 128, 1 << 22)
    );
    assert_eq!((d.exponent, d.significand, d.value), (1, 1.5, 3.0));
    assert_eq!(d.bit_string, "0.10000000.10000000000000000000000");
    assert_eq!(
        d.formula.text,
        "+1 × 2^(128 − 127) × (1 + 4194304/8388608) = 3"
    );
    let d = decompose(0x8001, Format::F16); // −2^-24
    assert_eq!(d.class, Class::Subnormal);
    assert_eq!((d.exponent, d.value), (-14, -(2f64.powi(-24))));
    assert_eq!(d.formula.scale, "2^(1 − 15)");
    assert_eq!(d.formula.significand, "1/1024");
    let e = encode(0.1, Format::Bf16, Overflow::NonSaturating);
    assert_eq!(e.bits, 0x3DCD);
    assert!((e.abs_error - (0.1 - e.decomposed.value).abs()).abs() == 0.0);
    assert!(e.rel_error > 0.0 && e.rel_error < 2f64.powi(-8));
    for f in Format::ALL {
        assert_eq!(Format::from_name(&format!("{f:?}")), Some(f));
        assert_eq!(decompose(f.nan_bits(), f).class, Class::Nan);
        assert!(decompose(f.max_finite_bits(), f).value.is_finite());
        let next = decompose(f.max_finite_bits() + 1, f).class;
        assert!(matches!(next, Class::Infinity | Class::Nan), "{f:?}");
    }
}
