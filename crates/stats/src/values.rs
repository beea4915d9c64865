//! Value statistics: counts of zeros / NaN / Inf, min, max, mean, standard deviation and a
//! fixed-bin value histogram.
//!
//! For 8- and 16-bit types every statistic is computed exactly from the full histogram of bit
//! patterns. For wider types min / max / mean / std and the special-value counts are exact
//! (accumulated per element with Chan's parallel variance update, so partial results merge); the
//! value histogram is built from the top 16 bits of each value (sign, exponent and the leading
//! mantissa bits), so a value may land one bin off near a bin edge: it is marked `exact: false`.

use bitlens_tensors::Dtype;
use serde::{Deserialize, Serialize};

/// Number of bins of a [`ValueHistogram`].
pub const VALUE_BINS: usize = 64;

/// Summary of the values of a tensor (NaN and ±Inf are counted, never averaged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueStats {
    /// Values considered (for C64 both parts count; for F4 two values per byte).
    pub count: u64,
    /// Values that are neither NaN nor infinite.
    pub finite: u64,
    /// Values equal to zero (+0 or -0).
    pub zeros: u64,
    /// NaN values.
    pub nan: u64,
    /// +Inf values.
    pub pos_inf: u64,
    /// -Inf values.
    pub neg_inf: u64,
    /// Smallest finite value.
    pub min: Option<f64>,
    /// Largest finite value.
    pub max: Option<f64>,
    /// Mean of the finite values.
    pub mean: Option<f64>,
    /// Population standard deviation of the finite values.
    pub std: Option<f64>,
    /// Histogram of the finite values, if one can be built for this dtype.
    pub histogram: Option<ValueHistogram>,
}

/// A histogram of [`VALUE_BINS`] equal-width bins over `[lo, hi]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValueHistogram {
    /// Left edge of the first bin (the minimum).
    pub lo: f64,
    /// Right edge of the last bin (the maximum).
    pub hi: f64,
    /// Count per bin.
    pub counts: Vec<u64>,
    /// False when values were binned by their top 16 bits (wide types), see the module doc.
    pub exact: bool,
}

/// Decodes one bit pattern of an 8- or 16-bit lane (or the top 16 bits of a wider float lane,
/// left-aligned) into its value. `None` when the dtype has no scalar decoding here (packed F6,
/// wide integers).
pub(crate) fn decoder(dtype: Dtype) -> Option<fn(u64) -> f64> {
    Some(match dtype {
        Dtype::BOOL | Dtype::U8 | Dtype::U16 => |v| v as f64,
        Dtype::I8 => |v| (v as u8 as i8) as f64,
        Dtype::I16 => |v| (v as u16 as i16) as f64,
        Dtype::F16 => |v| half::f16::from_bits(v as u16).to_f64(),
        Dtype::BF16 => |v| half::bf16::from_bits(v as u16).to_f64(),
        Dtype::F8_E4M3 => |v| minifloat(v as u8, 4, 3, 7, Special::E4M3),
        Dtype::F8_E5M2 => |v| minifloat(v as u8, 5, 2, 15, Special::Ieee),
        Dtype::F8_E4M3FNUZ => |v| minifloat(v as u8, 4, 3, 8, Special::Fnuz),
        Dtype::F8_E5M2FNUZ => |v| minifloat(v as u8, 5, 2, 16, Special::Fnuz),
        Dtype::F8_E8M0 => |v| {
            if v == 0xFF {
                f64::NAN
            } else {
                (v as f64 - 127.0).exp2()
            }
        },
        Dtype::F4 => |v| minifloat(v as u8 & 0x0F, 2, 1, 1, Special::None),
        // Top 16 bits of wider floats.
        Dtype::F32 | Dtype::C64 => |v| f32::from_bits((v as u32) << 16) as f64,
        Dtype::F64 => |v| f64::from_bits(v << 48),
        _ => return None,
    })
}

#[derive(Clone, Copy)]
enum Special {
    /// No Inf, no NaN (FP4).
    None,
    /// IEEE: all-ones exponent is Inf (mantissa 0) or NaN.
    Ieee,
    /// OCP E4M3 "fn": only S.1111.111 is NaN, no Inf.
    E4M3,
    /// "fnuz": 0x80 is the only NaN, no Inf, no negative zero.
    Fnuz,
}

/// Decodes a small float with `e` exponent bits, `m` mantissa bits, a sign bit above them and the
/// given bias, following the special-value convention of its family.
fn minifloat(bits: u8, e: u32, m: u32, bias: i32, special: Special) -> f64 {
    let sign_bit = 1u8 << (e + m);
    let exp = ((bits >> m) & ((1 << e) - 1) as u8) as i32;
    let man = (bits & ((1 << m) - 1) as u8) as f64;
    let exp_max = (1 << e) - 1;
    match special {
        Special::Ieee if exp == exp_max => {
            return if man == 0.0 {
                if bits & sign_bit != 0 {
                    f64::NEG_INFINITY
                } else {
                    f64::INFINITY
                }
            } else {
                f64::NAN
            };
        }
        Special::E4M3 if exp == exp_max && man == ((1 << m) - 1) as f64 => return f64::NAN,
        Special::Fnuz if bits == 0x80 => return f64::NAN,
        _ => {}
    }
    let scale = (1u32 << m) as f64;
    let magnitude = if exp == 0 {
        man / scale * (1 - bias).pow_exp2()
    } else {
        (1.0 + man / scale) * (exp - bias).pow_exp2()
    };
    if bits & sign_bit != 0 {
        -magnitude
    } else {
        magnitude
    }
}

trait PowExp2 {
    fn pow_exp2(self) -> f64;
}
impl PowExp2 for i32 {
    fn pow_exp2(self) -> f64 {
        (self as f64).exp2()
    }
}

/// Bins the finite values of a bit-pattern histogram's non-empty bins (pattern, count) into [`VALUE_BINS`] bins over `[lo, hi]`.
pub(crate) fn value_histogram(
    bins: &[(u32, u64)],
    decode: fn(u64) -> f64,
    values_per_bin: u32,
    lo: f64,
    hi: f64,
    exact: bool,
) -> ValueHistogram {
    let mut counts = vec![0u64; VALUE_BINS];
    let width = hi - lo;
    let mut add = |v: f64, c: u64| {
        if v.is_finite() {
            let idx = if width > 0.0 {
                (((v - lo) / width) * VALUE_BINS as f64).floor()
            } else {
                0.0
            };
            counts[(idx.max(0.0) as usize).min(VALUE_BINS - 1)] += c;
        }
    };
    for &(bits, c) in bins {
        let bits = u64::from(bits);
        if values_per_bin == 2 {
            add(decode(bits & 0x0F), c);
            add(decode(bits >> 4), c);
        } else {
            add(decode(bits), c);
        }
    }
    ValueHistogram {
        lo,
        hi,
        counts,
        exact,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fp8_decoders_match_the_ocp_tables() {
        let e4m3 = decoder(Dtype::F8_E4M3).unwrap();
        assert_eq!(e4m3(0x7E), 448.0); // largest normal
        assert_eq!(e4m3(0x01), 2f64.powi(-9)); // smallest subnormal
        assert_eq!(e4m3(0x38), 1.0);
        assert!(e4m3(0x7F).is_nan() && e4m3(0xFF).is_nan());
        let e5m2 = decoder(Dtype::F8_E5M2).unwrap();
        assert_eq!(e5m2(0x7B), 57344.0);
        assert_eq!(e5m2(0x7C), f64::INFINITY);
        assert_eq!(e5m2(0xFC), f64::NEG_INFINITY);
        assert!(e5m2(0x7D).is_nan());
        assert_eq!(e5m2(0x3C), 1.0);
        let fnuz = decoder(Dtype::F8_E4M3FNUZ).unwrap();
        assert!(fnuz(0x80).is_nan());
        assert_eq!(fnuz(0x7F), 240.0);
        assert_eq!(fnuz(0x40), 1.0);
        let e5fnuz = decoder(Dtype::F8_E5M2FNUZ).unwrap();
        assert_eq!(e5fnuz(0x40), 1.0);
        assert_eq!(e5fnuz(0x7F), 57344.0);
        let e8m0 = decoder(Dtype::F8_E8M0).unwrap();
        assert_eq!(e8m0(127), 1.0);
        assert_eq!(e8m0(0), 2f64.powi(-127));
        assert!(e8m0(255).is_nan());
        let f4 = decoder(Dtype::F4).unwrap();
        let all: Vec<f64> = (0..16).map(f4).collect();
        assert_eq!(
            all,
            [
                0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0,
                -6.0
            ]
        );
    }
}
