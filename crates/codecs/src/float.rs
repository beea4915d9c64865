//! The IEEE-style float formats that the float codecs take apart into sign, exponent and mantissa
//! (NeuZip paper 003 §2; the BitSnap quantization of paper 001 §3.4 reads and writes values
//! through them too): field widths, bit patterns and exact conversions to and from `f64`.

/// The float formats of the float codecs (NeuZip, BitSnap quantization).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatFormat {
    /// bfloat16: 1 sign, 8 exponent, 7 mantissa bits.
    Bf16,
    /// IEEE half: 1, 5, 10.
    F16,
    /// IEEE single: 1, 8, 23.
    F32,
}

impl FloatFormat {
    /// Bytes per value.
    pub fn width(self) -> usize {
        match self {
            FloatFormat::Bf16 | FloatFormat::F16 => 2,
            FloatFormat::F32 => 4,
        }
    }

    /// Exponent bits.
    pub fn exponent_bits(self) -> u32 {
        match self {
            FloatFormat::F16 => 5,
            _ => 8,
        }
    }

    /// Mantissa bits.
    pub fn mantissa_bits(self) -> u32 {
        match self {
            FloatFormat::Bf16 => 7,
            FloatFormat::F16 => 10,
            FloatFormat::F32 => 23,
        }
    }

    /// The format's code byte in NeuZip and BitSnap streams: 0 bf16, 1 f16, 2 f32.
    pub fn code(self) -> u8 {
        match self {
            FloatFormat::Bf16 => 0,
            FloatFormat::F16 => 1,
            FloatFormat::F32 => 2,
        }
    }

    /// The format of a code byte ([`FloatFormat::code`]), if it names one.
    pub fn from_code(c: u8) -> Option<FloatFormat> {
        [FloatFormat::Bf16, FloatFormat::F16, FloatFormat::F32]
            .into_iter()
            .find(|f| f.code() == c)
    }

    /// The exponent bias (127 for bf16 and f32, 15 for f16).
    pub(crate) fn bias(self) -> i32 {
        (1 << (self.exponent_bits() - 1)) - 1
    }

    /// Bytes of a NeuZip normalization coefficient: the mantissa field, rounded up to bytes.
    pub(crate) fn coef_bytes(self) -> usize {
        self.mantissa_bits().div_ceil(8) as usize
    }

    /// The value of one little-endian element (`width()` bytes) as `f64` (exact).
    pub fn value(self, b: &[u8]) -> f64 {
        self.to_f64(self.read(b))
    }

    /// Writes `x` rounded to this format (to nearest, ties to even) as `width()` little-endian
    /// bytes.
    pub fn put_value(self, x: f64, out: &mut [u8]) {
        self.write(self.bits_of(x), out)
    }

    /// The bit pattern of one little-endian element (`width()` bytes).
    pub(crate) fn read(self, b: &[u8]) -> u32 {
        match self.width() {
            2 => u32::from(u16::from_le_bytes([b[0], b[1]])),
            _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        }
    }

    /// Writes bit pattern `v` as `width()` little-endian bytes.
    pub(crate) fn write(self, v: u32, out: &mut [u8]) {
        match self.width() {
            2 => out.copy_from_slice(&(v as u16).to_le_bytes()),
            _ => out.copy_from_slice(&v.to_le_bytes()),
        }
    }

    /// (sign, biased exponent, mantissa) of a bit pattern.
    pub(crate) fn split(self, v: u32) -> (u32, u32, u32) {
        let m = self.mantissa_bits();
        let e = self.exponent_bits();
        (
            v >> (m + e) & 1,
            v >> m & ((1 << e) - 1),
            v & ((1 << m) - 1),
        )
    }

    /// The bit pattern of (sign, biased exponent, mantissa).
    pub(crate) fn join(self, s: u32, e: u32, m: u32) -> u32 {
        (s << (self.mantissa_bits() + self.exponent_bits())) | (e << self.mantissa_bits()) | m
    }

    /// The value of a bit pattern as `f64` (exact).
    pub(crate) fn to_f64(self, v: u32) -> f64 {
        match self {
            FloatFormat::Bf16 => f64::from(f32::from_bits(v << 16)),
            FloatFormat::F16 => half::f16::from_bits(v as u16).to_f64(),
            FloatFormat::F32 => f64::from(f32::from_bits(v)),
        }
    }

    /// The bit pattern of `x` rounded to this format (to nearest, ties to even).
    #[inline]
    pub(crate) fn bits_of(self, x: f64) -> u32 {
        match self {
            FloatFormat::Bf16 => u32::from(half::bf16::from_f64(x).to_bits()),
            FloatFormat::F16 => u32::from(half::f16::from_f64(x).to_bits()),
            FloatFormat::F32 => (x as f32).to_bits(),
        }
    }
}
