//! Anatomy of a floating-point number, for the `float` lesson: the sign, exponent and mantissa
//! fields of a bit pattern in fp32, bf16, fp16 and the two OCP fp8 formats, the value they make
//! (with the formula written out), rounding a real number into a format, and flipping one bit.
//!
//! This is the background of the papers: the LMC paper (000) §2 "Floating-Point Representations"
//! (its Figure 3: fp32, fp16, bf16 fields) and §3 (which bits of real checkpoints are
//! predictable), and NeuZip (003) §2.1 (the exponent field holds less than 3 of its 8 bits of
//! entropy, the mantissa nearly all of its bits); the byte grouping of LMC §4 and NeuZip's
//! exponent coding both rest on it. [`bitlens_codecs::float::FloatFormat`] is the codecs' own (bf16,
//! fp16, fp32) view of the same fields.
//!
//! ## Formats
//! - fp32, bf16, fp16: IEEE 754 binary32 / bfloat16 / binary16 (subnormals, ±∞ at the all-ones
//!   exponent with mantissa 0, NaN with any other mantissa).
//! - fp8 E5M2: OCP "8-bit Floating Point Specification (OFP8)" rev. 1.0, IEEE-like: bias 15,
//!   ±∞ = S.11111.00, NaN = S.11111.{01, 10, 11}; largest finite 57344.
//! - fp8 E4M3 (`float8_e4m3fn`): the same spec, "fn" = finite and NaN only: bias 7, no
//!   infinities, the only NaNs are S.1111.111, so S.1111.000–110 are normal numbers; largest
//!   finite 448.
//!
//! ## Rounding ([`encode`])
//! Round to nearest, ties to even, on the exact `f64` value (no double rounding). The tests check
//! it against `x as f32` for fp32 (any `f64`), `half`'s `from_f32` for bf16 / fp16 (any `f32`, and
//! every tie between neighbours), and `ml_dtypes` for fp8 (any `f32`). Two references round an
//! `f64` that is not an `f32` differently, so they are not used there: `half`'s `from_f64` drops
//! the low 32 bits of the `f64` first (bf16) or rounds through `f32` (fp16 with F16C), and
//! `ml_dtypes` rounds through `f32`; both can then miss a value just past a tie by one unit (the
//! tests show the cases). A value whose rounded magnitude passes the largest finite number
//! overflows: to ±∞, or NaN in E4M3, which has no ∞ ([`Overflow::NonSaturating`], as IEEE 754,
//! `ml_dtypes` and PyTorch casts), or to ± the largest finite number ([`Overflow::Saturating`],
//! the OFP8 spec's saturation mode).

/// The formats the lesson shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// IEEE single: 1 sign, 8 exponent, 23 mantissa bits.
    F32,
    /// bfloat16: 1, 8, 7.
    Bf16,
    /// IEEE half: 1, 5, 10.
    F16,
    /// OCP fp8 E4M3 ("fn": finite and NaN only): 1, 4, 3.
    E4m3,
    /// OCP fp8 E5M2 (IEEE-like): 1, 5, 2.
    E5m2,
}

impl Format {
    /// Every format, widest first.
    pub const ALL: [Format; 5] = [
        Format::F32,
        Format::Bf16,
        Format::F16,
        Format::E4m3,
        Format::E5m2,
    ];

    /// The format of a name: `f32`, `bf16`, `f16`, `e4m3`, `e5m2` (any case; the safetensors
    /// names `F8_E4M3` and `F8_E5M2` too).
    pub fn from_name(name: &str) -> Option<Format> {
        match name.to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" => Some(Format::F32),
            "bf16" | "bfloat16" => Some(Format::Bf16),
            "f16" | "fp16" | "float16" => Some(Format::F16),
            "e4m3" | "f8_e4m3" | "fp8_e4m3" | "float8_e4m3fn" => Some(Format::E4m3),
            "e5m2" | "f8_e5m2" | "fp8_e5m2" | "float8_e5m2" => Some(Format::E5m2),
            _ => None,
        }
    }

    /// Exponent field width in bits.
    pub fn exponent_bits(self) -> u32 {
        match self {
            Format::F32 | Format::Bf16 => 8,
            Format::F16 | Format::E5m2 => 5,
            Format::E4m3 => 4,
        }
    }

    /// Mantissa (fraction) field width in bits.
    pub fn mantissa_bits(self) -> u32 {
        match self {
            Format::F32 => 23,
            Format::Bf16 => 7,
            Format::F16 => 10,
            Format::E4m3 => 3,
            Format::E5m2 => 2,
        }
    }

    /// Total bits: 1 + exponent + mantissa.
    pub fn bits(self) -> u32 {
        1 + self.exponent_bits() + self.mantissa_bits()
    }

    /// The exponent bias, `2^(exponent bits − 1) − 1`.
    pub fn bias(self) -> i32 {
        (1 << (self.exponent_bits() - 1)) - 1
    }

    /// Whether the format has infinities (all but E4M3).
    pub fn has_infinity(self) -> bool {
        self != Format::E4m3
    }

    /// The all-ones exponent field.
    fn exponent_max(self) -> u32 {
        (1 << self.exponent_bits()) - 1
    }

    /// The bit pattern of the largest finite positive value.
    pub fn max_finite_bits(self) -> u32 {
        let m = self.mantissa_bits();
        match self {
            // S.1111.110
            Format::E4m3 => (self.exponent_max() << m) | ((1 << m) - 2),
            _ => ((self.exponent_max() - 1) << m) | ((1 << m) - 1),
        }
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f64 {
        decompose(self.max_finite_bits(), self).value
    }

    /// The bit pattern of the canonical NaN (positive, quiet: S.1111.111 in E4M3, the top
    /// mantissa bit set elsewhere).
    pub fn nan_bits(self) -> u32 {
        let m = self.mantissa_bits();
        match self {
            Format::E4m3 => (self.exponent_max() << m) | ((1 << m) - 1),
            _ => (self.exponent_max() << m) | (1 << (m - 1)),
        }
    }

    /// The bit pattern of +∞, if the format has one.
    pub fn infinity_bits(self) -> Option<u32> {
        self.has_infinity()
            .then(|| self.exponent_max() << self.mantissa_bits())
    }

    /// The sign bit.
    fn sign_bit(self) -> u32 {
        1 << (self.bits() - 1)
    }
}

/// What kind of number a bit pattern is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// ±0: exponent and mantissa fields 0.
    Zero,
    /// Exponent field 0, mantissa not: `0.m × 2^(1 − bias)`, no implicit leading 1.
    Subnormal,
    /// `1.m × 2^(e − bias)`.
    Normal,
    /// ±∞.
    Infinity,
    /// Not a number.
    Nan,
}

/// The formula of a value as text, in three factors: `sign × scale × significand`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Formula {
    /// `+1` or `−1`.
    pub sign: String,
    /// The power of two, e.g. `2^(130 − 127)` (or `2^(1 − 127)` for subnormals); empty for
    /// zero, ∞ and NaN.
    pub scale: String,
    /// The significand, e.g. `1 + 4194304/8388608` (or `5/1024` for subnormals); empty for
    /// zero, ∞ and NaN.
    pub significand: String,
    /// The whole formula with its value, e.g. `+1 × 2^(128 − 127) × (1 + 4194304/8388608) = 3`.
    pub text: String,
}

/// One bit pattern taken apart.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Decomposed {
    /// The format.
    pub format: Format,
    /// The bit pattern (in the low [`Format::bits`] bits).
    pub bits: u32,
    /// The sign bit (1 = negative).
    pub sign: u32,
    /// The exponent field, as stored (the biased exponent).
    pub exponent_field: u32,
    /// The mantissa field, as stored.
    pub mantissa_field: u32,
    /// The bits as text, most significant first, fields separated by dots: `0.10000000.1000000`.
    pub bit_string: String,
    /// The exponent bias.
    pub bias: i32,
    /// The power of two the significand is scaled by: `exponent_field − bias`, or `1 − bias`
    /// for zero and subnormals; 0 for ∞ and NaN.
    pub exponent: i32,
    /// The significand: `1 + mantissa / 2^M` for normal numbers, `mantissa / 2^M` for zero and
    /// subnormals; NaN for ∞ and NaN.
    pub significand: f64,
    /// What kind of number this is.
    pub class: Class,
    /// The exact value (every value of these formats is an `f64`).
    pub value: f64,
    /// The value's formula.
    pub formula: Formula,
}

/// Takes the low [`Format::bits`] bits of `bits` apart (higher bits are ignored).
pub fn decompose(bits: u32, format: Format) -> Decomposed {
    let (e_bits, m_bits) = (format.exponent_bits(), format.mantissa_bits());
    let bits = bits & ((1u64 << format.bits()) - 1) as u32;
    let sign = bits >> (e_bits + m_bits);
    let exponent_field = (bits >> m_bits) & format.exponent_max();
    let mantissa_field = bits & ((1 << m_bits) - 1);
    let bias = format.bias();
    let all_ones = exponent_field == format.exponent_max();
    let class = match (exponent_field, mantissa_field) {
        (0, 0) => Class::Zero,
        (0, _) => Class::Subnormal,
        _ if format == Format::E4m3 && all_ones && mantissa_field == (1 << m_bits) - 1 => {
            Class::Nan
        }
        _ if format != Format::E4m3 && all_ones && mantissa_field == 0 => Class::Infinity,
        _ if format != Format::E4m3 && all_ones => Class::Nan,
        _ => Class::Normal,
    };
    let frac = f64::from(mantissa_field) / f64::from(1u32 << m_bits);
    let (exponent, significand) = match class {
        Class::Zero | Class::Subnormal => (1 - bias, frac),
        Class::Normal => (exponent_field as i32 - bias, 1.0 + frac),
        Class::Infinity | Class::Nan => (0, f64::NAN),
    };
    let magnitude = match class {
        Class::Infinity => f64::INFINITY,
        Class::Nan => f64::NAN,
        // Exact: a significand of at most 24 bits times a power of two in f64's normal range.
        _ => significand * pow2(exponent),
    };
    let value = if sign == 1 { -magnitude } else { magnitude };
    let field = |v: u32, n: u32| format!("{v:0width$b}", width = n as usize);
    let bit_string = format!(
        "{sign}.{}.{}",
        field(exponent_field, e_bits),
        field(mantissa_field, m_bits)
    );
    let formula = formula(
        sign,
        class,
        exponent_field,
        mantissa_field,
        bias,
        m_bits,
        value,
    );
    Decomposed {
        format,
        bits,
        sign,
        exponent_field,
        mantissa_field,
        bit_string,
        bias,
        exponent,
        significand,
        class,
        value,
        formula,
    }
}

/// The formula text of a decomposed value (see [`Formula`]).
fn formula(sign: u32, class: Class, e: u32, m: u32, bias: i32, m_bits: u32, value: f64) -> Formula {
    let s = if sign == 1 { "−1" } else { "+1" }.to_string();
    let denom = 1u32 << m_bits;
    let (scale, significand) = match class {
        Class::Normal => (format!("2^({e} − {bias})"), format!("1 + {m}/{denom}")),
        Class::Subnormal => (format!("2^(1 − {bias})"), format!("{m}/{denom}")),
        _ => (String::new(), String::new()),
    };
    let shown = match class {
        Class::Infinity if sign == 1 => "−∞".to_string(),
        Class::Infinity => "+∞".to_string(),
        Class::Nan => "NaN".to_string(),
        Class::Zero if sign == 1 => "−0".to_string(),
        // Tiny and huge values in scientific notation, the others in full.
        _ if value.abs() < 1e-5 || value.abs() >= 1e16 => format!("{value:e}"),
        _ => format!("{value}"),
    };
    let text = match class {
        Class::Normal => format!("{s} × {scale} × ({significand}) = {shown}"),
        Class::Subnormal => format!("{s} × {scale} × {significand} = {shown}"),
        Class::Zero => format!("{s} × 0 = {shown}"),
        Class::Infinity => format!("exponent all ones, mantissa 0: {shown}"),
        Class::Nan => "exponent all ones, mantissa not a ∞ pattern: NaN".to_string(),
    };
    Formula {
        sign: s,
        scale,
        significand,
        text,
    }
}

/// What happens to a value too large for the format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// ±∞, or NaN in E4M3 (IEEE 754, `ml_dtypes`, PyTorch casts).
    #[default]
    NonSaturating,
    /// ± the largest finite value (the OFP8 saturation mode; ±∞ inputs stay ±∞ where the
    /// format has them and saturate in E4M3).
    Saturating,
}

/// A real number rounded into a format.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Encoded {
    /// The value asked for.
    pub input: f64,
    /// The bit pattern it rounds to.
    pub bits: u32,
    /// The pattern taken apart (its `value` is the stored value).
    pub decomposed: Decomposed,
    /// `|stored − input|` (0 when both are the same ∞; NaN when either is NaN or the result
    /// overflowed to ∞ or NaN).
    pub abs_error: f64,
    /// `abs_error / |input|` (NaN for input 0 unless the error is 0).
    pub rel_error: f64,
    /// The rounded magnitude of a finite input passed the largest finite value.
    pub overflowed: bool,
    /// The result was clamped to ± the largest finite value ([`Overflow::Saturating`]).
    pub saturated: bool,
    /// A nonzero finite input rounded to ±0.
    pub underflowed: bool,
}

/// Rounds `x` into `format` (to nearest, ties to even; see the module docs).
pub fn encode(x: f64, format: Format, overflow: Overflow) -> Encoded {
    let (bits, overflowed, saturated) = round(x, format, overflow);
    let decomposed = decompose(bits, format);
    let stored = decomposed.value;
    let abs_error = if x.is_infinite() && stored == x {
        0.0
    } else {
        (stored - x).abs()
    };
    let rel_error = if abs_error == 0.0 {
        0.0
    } else {
        abs_error / x.abs()
    };
    Encoded {
        input: x,
        bits,
        underflowed: x != 0.0 && x.is_finite() && stored == 0.0,
        decomposed,
        abs_error,
        rel_error,
        overflowed,
        saturated,
    }
}

/// The bit pattern of `x` in `format`, and whether it overflowed and saturated.
fn round(x: f64, format: Format, overflow: Overflow) -> (u32, bool, bool) {
    let sign = if x.is_sign_negative() {
        format.sign_bit()
    } else {
        0
    };
    let saturating = overflow == Overflow::Saturating;
    if x.is_nan() {
        return (sign | format.nan_bits(), false, false);
    }
    if x.is_infinite() {
        return match format.infinity_bits() {
            Some(inf) => (sign | inf, false, false),
            None if saturating => (sign | format.max_finite_bits(), false, true),
            None => (sign | format.nan_bits(), false, false),
        };
    }
    let a = x.abs();
    if a == 0.0 {
        return (sign, false, false);
    }
    let m = format.mantissa_bits() as i32;
    let emin = 1 - format.bias();
    // floor(log2 a), or anything below emin for f64 subnormals (all far below every emin here).
    let e = ((a.to_bits() >> 52) as i32 - 1023).max(emin);
    // The quantum (one unit in the last place) at a's binade: a = n · 2^q with n < 2^(m+1).
    let q = e - m;
    // Exact: scaling by a power of two, and n is at most 2^24 (no bits lost in rounding it).
    let n = (a * pow2(-q)).round_ties_even() as u64;
    if n == 0 {
        return (sign, false, false);
    }
    // Renormalize a carry (n = 2^(m+1) becomes 2^m one binade up).
    let (n, q) = if n >> (m + 1) != 0 {
        (n >> 1, q + 1)
    } else {
        (n, q)
    };
    let magnitude = if n >> m == 0 {
        // Subnormal (q is emin − m): exponent field 0.
        n as u32
    } else {
        let field = (q + m + format.bias()) as u32;
        (field << m) | (n as u32 & ((1 << m) - 1))
    };
    let max = format.max_finite_bits();
    // Past the largest finite value: a larger exponent field, or the E4M3 NaN pattern.
    let past_max = (q + m + format.bias()) as u32 > (max >> m) || magnitude > max;
    if !past_max {
        return (sign | magnitude, false, false);
    }
    match (saturating, format.infinity_bits()) {
        (true, _) => (sign | max, true, true),
        (false, Some(inf)) => (sign | inf, true, false),
        (false, None) => (sign | format.nan_bits(), true, false),
    }
}

/// A bit flipped.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Flipped {
    /// The pattern before.
    pub before: Decomposed,
    /// The pattern with bit `bit` flipped.
    pub after: Decomposed,
    /// The bit flipped (0 = least significant mantissa bit).
    pub bit: u32,
    /// Which field it belongs to: `sign`, `exponent` or `mantissa`.
    pub field: &'static str,
}

/// Flips bit `bit` (0 = the lowest mantissa bit, `bits − 1` = the sign) of `bits`; `None` if the
/// format has no such bit.
pub fn flip_bit(bits: u32, bit: u32, format: Format) -> Option<Flipped> {
    if bit >= format.bits() {
        return None;
    }
    let before = decompose(bits, format);
    let after = decompose(before.bits ^ (1 << bit), format);
    let m = format.mantissa_bits();
    let field = if bit == format.bits() - 1 {
        "sign"
    } else if bit >= m {
        "exponent"
    } else {
        "mantissa"
    };
    Some(Flipped {
        before,
        after,
        bit,
        field,
    })
}

/// `2^k` exactly, for `k` in f64's normal exponent range (−1022..=1023).
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

#[cfg(test)]
mod tests;
