//! Element types of the safetensors format and their bit layouts.
//!
//! The names and bit sizes follow the reference `safetensors` crate (0.8): sub-byte types (F4, F6)
//! are packed, so a tensor's byte length is `elements × bits / 8` and must be a whole number.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// One element type of the safetensors spec.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Dtype {
    /// Boolean, one byte per element.
    BOOL,
    /// MX FP4 (E2M1), two elements per byte.
    F4,
    /// MX FP6 (E2M3), four elements per three bytes.
    F6_E2M3,
    /// MX FP6 (E3M2), four elements per three bytes.
    F6_E3M2,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// FP8 with 5 exponent and 2 mantissa bits (IEEE-like, has Inf).
    F8_E5M2,
    /// FP8 with 4 exponent and 3 mantissa bits (no Inf; NaN is S.1111.111).
    F8_E4M3,
    /// FP8 scale type: 8 exponent bits, no sign, no mantissa (0xFF is NaN).
    F8_E8M0,
    /// FP8 E4M3 "FNUZ" (no negative zero; 0x80 is NaN; bias 8).
    F8_E4M3FNUZ,
    /// FP8 E5M2 "FNUZ" (no negative zero; 0x80 is NaN; bias 16).
    F8_E5M2FNUZ,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 16-bit integer.
    U16,
    /// IEEE half precision.
    F16,
    /// bfloat16 (the top half of an f32).
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// IEEE single precision.
    F32,
    /// Complex number of two f32 parts (real, imaginary).
    C64,
    /// IEEE double precision.
    F64,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 64-bit integer.
    U64,
}

/// Sign / exponent / mantissa widths of a floating-point element (most significant field first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloatLayout {
    /// 1 when the format has a sign bit, else 0.
    pub sign_bits: u32,
    /// Width of the exponent field.
    pub exponent_bits: u32,
    /// Width of the mantissa (fraction) field.
    pub mantissa_bits: u32,
}

impl FloatLayout {
    const fn new(sign_bits: u32, exponent_bits: u32, mantissa_bits: u32) -> Self {
        Self {
            sign_bits,
            exponent_bits,
            mantissa_bits,
        }
    }

    /// Total bits of one value.
    pub const fn bits(&self) -> u32 {
        self.sign_bits + self.exponent_bits + self.mantissa_bits
    }
}

impl Dtype {
    /// Every dtype, in the order of the spec (increasing alignment).
    pub const ALL: [Dtype; 22] = [
        Dtype::BOOL,
        Dtype::F4,
        Dtype::F6_E2M3,
        Dtype::F6_E3M2,
        Dtype::U8,
        Dtype::I8,
        Dtype::F8_E5M2,
        Dtype::F8_E4M3,
        Dtype::F8_E8M0,
        Dtype::F8_E4M3FNUZ,
        Dtype::F8_E5M2FNUZ,
        Dtype::I16,
        Dtype::U16,
        Dtype::F16,
        Dtype::BF16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::C64,
        Dtype::F64,
        Dtype::I64,
        Dtype::U64,
    ];

    /// Size of one element in bits.
    pub const fn bits(self) -> u32 {
        match self {
            Dtype::F4 => 4,
            Dtype::F6_E2M3 | Dtype::F6_E3M2 => 6,
            Dtype::BOOL
            | Dtype::U8
            | Dtype::I8
            | Dtype::F8_E5M2
            | Dtype::F8_E4M3
            | Dtype::F8_E8M0
            | Dtype::F8_E4M3FNUZ
            | Dtype::F8_E5M2FNUZ => 8,
            Dtype::I16 | Dtype::U16 | Dtype::F16 | Dtype::BF16 => 16,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 32,
            Dtype::C64 | Dtype::F64 | Dtype::I64 | Dtype::U64 => 64,
        }
    }

    /// The unit that byte grouping and bit statistics work on, in bytes: the element size for
    /// byte-sized types, 1 for packed sub-byte types, and 4 for C64 (each part is an f32).
    pub const fn lane_bytes(self) -> usize {
        match self {
            Dtype::C64 => 4,
            _ if self.bits() < 8 => 1,
            _ => (self.bits() / 8) as usize,
        }
    }

    /// The sign / exponent / mantissa layout of one lane, for floating-point types.
    ///
    /// For C64 this is the layout of each f32 part; for F4 it is one 4-bit value.
    pub const fn float_layout(self) -> Option<FloatLayout> {
        Some(match self {
            Dtype::F4 => FloatLayout::new(1, 2, 1),
            Dtype::F6_E2M3 => FloatLayout::new(1, 2, 3),
            Dtype::F6_E3M2 => FloatLayout::new(1, 3, 2),
            Dtype::F8_E5M2 | Dtype::F8_E5M2FNUZ => FloatLayout::new(1, 5, 2),
            Dtype::F8_E4M3 | Dtype::F8_E4M3FNUZ => FloatLayout::new(1, 4, 3),
            Dtype::F8_E8M0 => FloatLayout::new(0, 8, 0),
            Dtype::F16 => FloatLayout::new(1, 5, 10),
            Dtype::BF16 => FloatLayout::new(1, 8, 7),
            Dtype::F32 | Dtype::C64 => FloatLayout::new(1, 8, 23),
            Dtype::F64 => FloatLayout::new(1, 11, 52),
            _ => return None,
        })
    }

    /// True for the signed integer types.
    pub const fn is_signed_int(self) -> bool {
        matches!(self, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64)
    }

    /// The spec's name of this dtype (`"BF16"`, `"F8_E4M3"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Dtype::BOOL => "BOOL",
            Dtype::F4 => "F4",
            Dtype::F6_E2M3 => "F6_E2M3",
            Dtype::F6_E3M2 => "F6_E3M2",
            Dtype::U8 => "U8",
            Dtype::I8 => "I8",
            Dtype::F8_E5M2 => "F8_E5M2",
            Dtype::F8_E4M3 => "F8_E4M3",
            Dtype::F8_E8M0 => "F8_E8M0",
            Dtype::F8_E4M3FNUZ => "F8_E4M3FNUZ",
            Dtype::F8_E5M2FNUZ => "F8_E5M2FNUZ",
            Dtype::I16 => "I16",
            Dtype::U16 => "U16",
            Dtype::F16 => "F16",
            Dtype::BF16 => "BF16",
            Dtype::I32 => "I32",
            Dtype::U32 => "U32",
            Dtype::F32 => "F32",
            Dtype::C64 => "C64",
            Dtype::F64 => "F64",
            Dtype::I64 => "I64",
            Dtype::U64 => "U64",
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The string was not the name of a safetensors dtype.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{0}`")]
pub struct UnknownDtype(pub String);

impl FromStr for Dtype {
    type Err = UnknownDtype;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dtype::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDtype(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_serde_agrees() {
        for d in Dtype::ALL {
            assert_eq!(d.name().parse::<Dtype>().unwrap(), d);
            assert_eq!(
                serde_json::to_string(&d).unwrap(),
                format!("\"{}\"", d.name())
            );
        }
        assert!("bf16".parse::<Dtype>().is_err());
    }

    #[test]
    fn float_layouts_fill_their_lane() {
        for d in Dtype::ALL {
            if let Some(l) = d.float_layout() {
                let lane_bits = if d.bits() < 8 {
                    d.bits()
                } else {
                    8 * d.lane_bytes() as u32
                };
                assert_eq!(l.bits(), lane_bits, "{d}");
            }
        }
    }
}
