//! NeuZip (003_0b9b778434341b6c): floats split into sign, exponent and mantissa; the low-entropy
//! exponents are rANS-coded ([`crate::rans`], §2.2), sign and mantissa are stored packed and raw.
//!
//! - **Lossless** (`mantissa_bits` = the format's full mantissa): bf16, f16 and f32 round-trip
//!   byte for byte. Size ≈ exponent block entropy + (1 + M) raw bits per value.
//! - **Lossy** (§2.3, inference snapshots): the mantissa is *rounded* (to nearest, ties away) to
//!   k ∈ {0, 1, 3} bits, and sign + kept mantissa are packed into (1 + k)-bit fields, 8 / 4 / 2 per
//!   byte (Fig. 8b). Block-wise normalization: each block of B ∈ 32..=512 values is divided by the
//!   significand `1.m` of its largest-magnitude value, so that value becomes a power of two and
//!   survives rounding exactly; the coefficient is the max's mantissa field (1 byte for bf16 — the
//!   paper's 8-bit coefficient — 2 for f16, 3 for f32, so the maximum is exact for every format).
//!   Every finite value then has relative error ≤ 2^-(k+1) + 2^-(M+1) ≤ 2^-k. Values the scheme
//!   cannot bound (NaN, ±Inf, subnormals, values that normalize to a subnormal) are kept exactly in
//!   an escape list.
//!
//! ## Stream layout (little-endian)
//! ```text
//! "NZIP" | version u8 = 1 | format u8 (0 bf16, 1 f16, 2 f32) | k u8 (kept mantissa bits)
//! | norm_log2 u8 (0 = no normalization; else B = 2^norm_log2, 5..=9) | n u64 (values)
//! | tail_len u8 | tail bytes (input bytes after the last whole value, verbatim)
//! | ⌈n·(1+k) / 8⌉ bytes: (sign << k | mantissa) fields of 1 + k bits, LSB-first
//! | if norm_log2 > 0: ⌈n / B⌉ coefficients of ⌈M / 8⌉ bytes (the max's mantissa field)
//! |                   u32 escapes, then per escape: u32 value index, raw value (width bytes)
//! | ⌈n / 65536⌉ rANS blocks of biased exponents (crate::rans layout), 65536 values each
//! ```
//! Everything of known size comes first, so the decoder combines each exponent block with its
//! fields in a single pass.

use crate::cursor::Cursor;
use crate::error::{DecodeError, SettingsError};
use crate::float::FloatFormat;
use crate::rans;

/// Values per rANS block of exponents.
pub const EXPONENT_BLOCK: usize = 65536;
const MAGIC: [u8; 4] = *b"NZIP";
const VERSION: u8 = 1;

/// Encoder settings, valid by construction ([`Settings::lossless`], [`Settings::lossy`],
/// [`Settings::new`]): the encoder never meets a value it cannot code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    format: FloatFormat,
    mantissa_bits: u32,
    norm_block: usize,
}

impl Settings {
    /// Lossless NeuZip for a format.
    pub fn lossless(format: FloatFormat) -> Self {
        Settings {
            format,
            mantissa_bits: format.mantissa_bits(),
            norm_block: 0,
        }
    }

    /// Lossy NeuZip (§2.3): `mantissa_bits` ∈ {0, 1, 3} kept, normalized in blocks of
    /// `norm_block` ∈ {32, 64, 128, 256, 512} values.
    pub fn lossy(
        format: FloatFormat,
        mantissa_bits: u32,
        norm_block: usize,
    ) -> Result<Self, SettingsError> {
        if ![0, 1, 3].contains(&mantissa_bits) {
            return Err(SettingsError::MantissaBits {
                format,
                value: mantissa_bits,
            });
        }
        if !(32..=512).contains(&norm_block) || !norm_block.is_power_of_two() {
            return Err(SettingsError::NormBlock { value: norm_block });
        }
        Ok(Settings {
            format,
            mantissa_bits,
            norm_block,
        })
    }

    /// Lossless when `mantissa_bits` is the format's full mantissa (`norm_block` is then not
    /// used), else [`Settings::lossy`].
    pub fn new(
        format: FloatFormat,
        mantissa_bits: u32,
        norm_block: usize,
    ) -> Result<Self, SettingsError> {
        if mantissa_bits == format.mantissa_bits() {
            Ok(Settings::lossless(format))
        } else {
            Settings::lossy(format, mantissa_bits, norm_block)
        }
    }

    /// The float format of the input.
    pub fn format(&self) -> FloatFormat {
        self.format
    }

    /// Kept mantissa bits: the format's full mantissa for lossless, or 0, 1 or 3.
    pub fn mantissa_bits(&self) -> u32 {
        self.mantissa_bits
    }

    /// Normalization block size of lossy settings (32..=512, a power of two); 0 for lossless.
    pub fn norm_block(&self) -> usize {
        self.norm_block
    }

    /// True when decoding is not exact.
    pub fn is_lossy(&self) -> bool {
        self.mantissa_bits < self.format.mantissa_bits()
    }
}

/// LSB-first writer of fixed-width bit fields.
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    bits: u32,
}

impl BitWriter {
    fn push(&mut self, v: u32, width: u32) {
        self.acc |= u64::from(v) << self.bits;
        self.bits += width;
        while self.bits >= 8 {
            self.out.push(self.acc as u8);
            self.acc >>= 8;
            self.bits -= 8;
        }
    }

    fn finish(mut self) -> Vec<u8> {
        if self.bits > 0 {
            self.out.push(self.acc as u8);
        }
        self.out
    }
}

/// Encodes `data` (values of `settings.format()`, little-endian) into a NeuZip stream. For lossy
/// settings, also returns nothing about the error; use [`decode`] to see the reconstruction.
pub fn encode(data: &[u8], settings: &Settings) -> Vec<u8> {
    let f = settings.format;
    let w = f.width();
    let n = data.len() / w;
    let k = settings.mantissa_bits;
    let lossy = settings.is_lossy();
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(f.code());
    out.push(k as u8);
    out.push(if lossy {
        settings.norm_block.trailing_zeros() as u8
    } else {
        0
    });
    out.extend_from_slice(&(n as u64).to_le_bytes());
    let tail = &data[n * w..];
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);

    let mut exponents = vec![0u8; n];
    let mut fields = BitWriter {
        out: Vec::with_capacity(n * (1 + k as usize) / 8 + 8),
        acc: 0,
        bits: 0,
    };
    let mut coefs = Vec::new();
    let mut escapes: Vec<(u32, u32)> = Vec::new();
    if !lossy {
        if f == FloatFormat::Bf16 {
            let mut sm = Vec::with_capacity(n);
            for (e, v) in exponents.iter_mut().zip(data.chunks_exact(2)) {
                let v = u16::from_le_bytes([v[0], v[1]]);
                *e = (v >> 7) as u8;
                sm.push(((v >> 8) as u8 & 0x80) | (v as u8 & 0x7F));
            }
            fields.out = sm;
        } else {
            for (e, v) in exponents.iter_mut().zip(data.chunks_exact(w)) {
                let (s, ex, m) = f.split(f.read(v));
                *e = ex as u8;
                fields.push((s << k) | m, 1 + k);
            }
        }
    } else {
        let b = settings.norm_block;
        let values: Vec<u32> = data.chunks_exact(w).map(|v| f.read(v)).collect();
        for (bi, block) in values.chunks(b).enumerate() {
            let coef_m = block_coefficient(f, block);
            let c = 1.0 + f64::from(coef_m) / f64::from(1u32 << f.mantissa_bits());
            coefs.extend_from_slice(&coef_m.to_le_bytes()[..f.coef_bytes()]);
            for (j, &v) in block.iter().enumerate() {
                let i = bi * b + j;
                match quantize(f, v, c, k) {
                    Some((s, e, m)) => {
                        exponents[i] = e as u8;
                        fields.push((s << k) | m, 1 + k);
                    }
                    None => {
                        escapes.push((i as u32, v));
                        fields.push(0, 1 + k);
                    }
                }
            }
        }
    }
    out.extend_from_slice(&fields.finish());
    if lossy {
        out.extend_from_slice(&coefs);
        out.extend_from_slice(&(escapes.len() as u32).to_le_bytes());
        for (i, v) in escapes {
            out.extend_from_slice(&i.to_le_bytes());
            let mut raw = [0u8; 4];
            f.write(v, &mut raw[..w]);
            out.extend_from_slice(&raw[..w]);
        }
    }
    for block in exponents.chunks(EXPONENT_BLOCK) {
        rans::encode_block(block, &mut out);
    }
    out
}

/// The mantissa field of the block's largest finite, normal magnitude (0 if none).
fn block_coefficient(f: FloatFormat, block: &[u32]) -> u32 {
    let mut best: Option<(f64, u32)> = None;
    for &v in block {
        let (_, e, m) = f.split(v);
        if e == 0 || e == (1 << f.exponent_bits()) - 1 {
            continue; // zero / subnormal / non-finite: escaped or exact anyway
        }
        let a = f.to_f64(v).abs();
        if best.is_none_or(|(b, _)| a > b) {
            best = Some((a, m));
        }
    }
    best.map_or(0, |(_, m)| m)
}

/// Normalizes by `c` and rounds to `k` mantissa bits: (sign, biased exponent, kept mantissa), or
/// `None` when the value must be escaped (non-finite, subnormal, or normalizing to a subnormal).
fn quantize(f: FloatFormat, v: u32, c: f64, k: u32) -> Option<(u32, u32, u32)> {
    let (s, e, _) = f.split(v);
    if e == (1 << f.exponent_bits()) - 1 {
        return None;
    }
    let x = f.to_f64(v);
    if x == 0.0 {
        return Some((s, 0, 0));
    }
    if e == 0 {
        return None;
    }
    let a = x.abs() / c;
    let exp = a.log2().floor() as i32;
    // Guard against log2 rounding at binade edges.
    let exp = if a < 2f64.powi(exp) {
        exp - 1
    } else if a >= 2f64.powi(exp + 1) {
        exp + 1
    } else {
        exp
    };
    let frac = a / 2f64.powi(exp) - 1.0;
    let mut m = (frac * f64::from(1u32 << k)).round() as u32;
    let mut exp = exp;
    if m == 1 << k {
        m = 0;
        exp += 1;
    }
    let biased = exp + f.bias();
    if biased <= 0 || biased >= (1 << f.exponent_bits()) - 1 {
        return None;
    }
    Some((s, biased as u32, m))
}

fn bad(offset: usize, field: &'static str, value: u64) -> DecodeError {
    DecodeError::BadHeader {
        offset: offset as u64,
        field,
        value,
    }
}

/// What a NeuZip stream declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The settings it was written with (`norm_block` 0 for lossless).
    pub settings: Settings,
    /// Values coded.
    pub values: u64,
}

/// Decodes a NeuZip stream that must hold exactly `expected_len` bytes. The declared size is
/// checked against what the stream can hold before anything is allocated.
pub fn decode(stream: &[u8], expected_len: usize) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::new();
    decode_with(stream, expected_len, |len| {
        out = vec![0u8; len];
        &mut out[..]
    })?;
    Ok(out)
}

/// [`decode`] into a caller-owned buffer, whose length is the expected output length (repeated
/// calls then touch no fresh memory).
pub fn decode_into(stream: &[u8], out: &mut [u8]) -> Result<(), DecodeError> {
    let len = out.len();
    decode_with(stream, len, |_| out)
}

/// [`decode`] into a reused `Vec`: resized to `expected_len` only once the stream is known to
/// justify it (its capacity is kept between calls).
pub fn decode_into_vec(
    stream: &[u8],
    expected_len: usize,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    decode_with(stream, expected_len, |len| {
        out.resize(len, 0);
        &mut out[..]
    })
}

/// Decodes after all checks on the declared length; `alloc(len)` provides the output buffer only
/// once the stream is known to justify `len` bytes.
fn decode_with<'o>(
    stream: &[u8],
    expected_len: usize,
    alloc: impl FnOnce(usize) -> &'o mut [u8],
) -> Result<(), DecodeError> {
    let mut c = Cursor::new(stream);
    let magic: [u8; 4] = c.array()?;
    if magic != MAGIC {
        return Err(bad(0, "NeuZip magic", u64::from(u32::from_le_bytes(magic))));
    }
    let head = c.take(4)?;
    if head[0] != VERSION {
        return Err(bad(4, "NeuZip version", u64::from(head[0])));
    }
    let settings = header_settings(head)?;
    let (f, k) = (settings.format, settings.mantissa_bits);
    let n = c.u64()?;
    let tail_len = c.take(1)?[0] as usize;
    let w = f.width();
    if tail_len >= w {
        return Err(bad(16, "tail length", tail_len as u64));
    }
    let declared = n
        .checked_mul(w as u64)
        .and_then(|b| b.checked_add(tail_len as u64));
    if declared != Some(expected_len as u64) {
        return Err(DecodeError::LengthMismatch {
            expected: expected_len as u64,
            actual: declared.unwrap_or(u64::MAX),
        });
    }
    let n = n as usize;
    // The packed fields alone need n·(1+k)/8 bytes: a cheap bound before allocating n values.
    let field_bytes = (n as u128 * u128::from(1 + k)).div_ceil(8);
    if field_bytes > stream.len() as u128 {
        return Err(DecodeError::TooLarge {
            declared: expected_len as u64,
            bound: (stream.len() as u64).saturating_mul(8 / (1 + u64::from(k)).max(1)) * w as u64,
            stream_len: stream.len() as u64,
        });
    }
    let tail = c.take(tail_len)?;
    let fields = c.take(field_bytes as usize)?;
    let width = 1 + k;
    let out = alloc(expected_len);
    let blocks = n.div_ceil(EXPONENT_BLOCK);
    // One 64 Ki exponent block at a time (L2-resident), combined with its fields right after.
    let mut exps = vec![0u8; n.min(EXPONENT_BLOCK)];
    if !settings.is_lossy() {
        for b in 0..blocks {
            let first = b * EXPONENT_BLOCK;
            let count = (n - first).min(EXPONENT_BLOCK);
            let at = c.pos;
            let exps = &mut exps[..count];
            c.pos += rans::decode_block(&stream[at..], exps, at)?;
            check_exponents(f, exps, at)?;
            let dst = &mut out[w * first..w * (first + count)];
            if f == FloatFormat::Bf16 {
                let sms = &fields[first..first + count];
                for ((o, &e), &sm) in dst.chunks_exact_mut(2).zip(exps.iter()).zip(sms) {
                    let v =
                        (u16::from(sm & 0x80) << 8) | (u16::from(e) << 7) | u16::from(sm & 0x7F);
                    o.copy_from_slice(&v.to_le_bytes());
                }
            } else {
                for (i, (o, &e)) in dst.chunks_exact_mut(w).zip(exps.iter()).enumerate() {
                    let field = read_field(fields, (first + i) as u64 * u64::from(width), width);
                    f.write(f.join(field >> k, u32::from(e), field & ((1 << k) - 1)), o);
                }
            }
        }
    } else {
        let b = settings.norm_block;
        let cb = f.coef_bytes();
        let coefs = c.take(n.div_ceil(b) * cb)?;
        let coef = |block: usize| {
            let mut cm = [0u8; 4];
            cm[..cb].copy_from_slice(&coefs[block * cb..block * cb + cb]);
            u32::from_le_bytes(cm)
        };
        if let Some(bad_block) = (0..n.div_ceil(b)).find(|&i| coef(i) >= 1 << f.mantissa_bits()) {
            return Err(bad(
                c.pos,
                "normalization coefficient",
                u64::from(coef(bad_block)),
            ));
        }
        let count = c.u32()? as usize;
        if count > n {
            return Err(bad(c.pos - 4, "escape count", count as u64));
        }
        let escapes = c.take(count * (4 + w))?;
        let scale = f64::from(1u32 << f.mantissa_bits());
        let coef_values: Vec<f64> = (0..n.div_ceil(b))
            .map(|i| 1.0 + f64::from(coef(i)) / scale)
            .collect();
        let pow2: Vec<f64> = (0..1i32 << f.exponent_bits())
            .map(|e| 2f64.powi(e - f.bias()))
            .collect();
        let mant: Vec<f64> = (0..1u32 << k)
            .map(|m| 1.0 + f64::from(m) / f64::from(1u32 << k))
            .collect();
        for bi in 0..blocks {
            let first = bi * EXPONENT_BLOCK;
            let count = (n - first).min(EXPONENT_BLOCK);
            let dst = &mut out[w * first..w * (first + count)];
            let at = c.pos;
            let exps = &mut exps[..count];
            c.pos += rans::decode_block(&stream[at..], exps, at)?;
            check_exponents(f, exps, at)?;
            for (i, (o, &e)) in dst.chunks_exact_mut(w).zip(exps.iter()).enumerate() {
                let gi = first + i;
                let field = read_field(fields, gi as u64 * u64::from(width), width);
                let (s, m) = (field >> k, field & ((1 << k) - 1));
                let v = if e == 0 {
                    f.join(s, 0, 0)
                } else {
                    let c = coef_values[gi / b];
                    let a = mant[m as usize] * pow2[usize::from(e)] * c;
                    f.bits_of(if s == 1 { -a } else { a })
                };
                f.write(v, o);
            }
        }
        for rec in escapes.chunks_exact(4 + w) {
            let i = u32::from_le_bytes(rec[..4].try_into().expect("4")) as usize;
            if i >= n {
                return Err(bad(c.pos, "escape index", i as u64));
            }
            out[i * w..i * w + w].copy_from_slice(&rec[4..]);
        }
    }
    out[n * w..].copy_from_slice(tail);
    c.finish()
}

/// A corrupt exponent block may decode symbols that do not fit the format's exponent field
/// (above 31 for f16; every byte fits bf16 and f32): that is an error, never a wrong value.
fn check_exponents(f: FloatFormat, exps: &[u8], at: usize) -> Result<(), DecodeError> {
    if f.exponent_bits() >= 8 {
        return Ok(());
    }
    match exps
        .iter()
        .find(|&&e| u32::from(e) >> f.exponent_bits() != 0)
    {
        Some(&e) => Err(bad(at, "exponent", u64::from(e))),
        None => Ok(()),
    }
}

fn read_field(bytes: &[u8], bit: u64, width: u32) -> u32 {
    let byte = (bit / 8) as usize;
    let mut acc = 0u64;
    for (j, &b) in bytes[byte..(byte + 5).min(bytes.len())].iter().enumerate() {
        acc |= u64::from(b) << (8 * j);
    }
    ((acc >> (bit % 8)) & ((1u64 << width) - 1)) as u32
}

/// Reads the header of a stream; its settings are checked as [`decode`] checks them.
pub fn read_header(stream: &[u8]) -> Result<Header, DecodeError> {
    let mut c = Cursor::new(stream);
    let magic = c.take(4)?;
    if magic != MAGIC {
        return Err(bad(0, "NeuZip magic", 0));
    }
    let settings = header_settings(c.take(4)?)?;
    let n = c.u64()?;
    Ok(Header {
        settings,
        values: n,
    })
}

/// The settings that header bytes 4..8 (version, format, k, norm_log2) declare: valid
/// [`Settings`] whose normalization block is given exactly when they are lossy.
fn header_settings(head: &[u8]) -> Result<Settings, DecodeError> {
    let f = FloatFormat::from_code(head[1])
        .ok_or_else(|| bad(5, "float format", u64::from(head[1])))?;
    let k = u32::from(head[2]);
    let norm_log2 = u32::from(head[3]);
    let norm_block = if norm_log2 == 0 {
        0
    } else {
        1usize.checked_shl(norm_log2).unwrap_or(0)
    };
    match Settings::new(f, k, norm_block) {
        Ok(s) if s.is_lossy() == (norm_log2 > 0) => Ok(s),
        _ => Err(bad(
            6,
            "mantissa bits / normalization block",
            u64::from(k) << 8 | u64::from(norm_log2),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lossy settings keep 0, 1 or 3 mantissa bits; any other count is refused by name.
    #[test]
    fn lossy_mantissa_bits_are_0_1_or_3() {
        for k in [0, 1, 3] {
            let s = Settings::lossy(FloatFormat::Bf16, k, 512).unwrap();
            assert_eq!((s.mantissa_bits(), s.is_lossy()), (k, true));
        }
        for (format, k) in [
            (FloatFormat::Bf16, 2),
            (FloatFormat::F16, 7),
            (FloatFormat::F32, 4),
        ] {
            assert_eq!(
                Settings::lossy(format, k, 512),
                Err(SettingsError::MantissaBits { format, value: k })
            );
        }
    }

    /// The normalization block is a power of two in 32..=512.
    #[test]
    fn lossy_norm_block_is_a_power_of_two_in_32_to_512() {
        for b in [32, 64, 128, 256, 512] {
            assert_eq!(
                Settings::lossy(FloatFormat::F32, 1, b)
                    .unwrap()
                    .norm_block(),
                b
            );
        }
        for b in [0, 16, 48, 1024] {
            assert_eq!(
                Settings::lossy(FloatFormat::F32, 1, b),
                Err(SettingsError::NormBlock { value: b })
            );
        }
    }

    /// `new` is lossless exactly at the format's full mantissa (the block then does not
    /// matter); more bits than the format has are refused.
    #[test]
    fn new_is_lossless_at_the_full_mantissa_and_refuses_more() {
        for f in [FloatFormat::Bf16, FloatFormat::F16, FloatFormat::F32] {
            let full = f.mantissa_bits();
            assert_eq!(Settings::new(f, full, 7), Ok(Settings::lossless(f)));
            assert_eq!(
                Settings::new(f, full + 1, 512),
                Err(SettingsError::MantissaBits {
                    format: f,
                    value: full + 1
                })
            );
        }
        // 7 bits is bf16's whole mantissa but a lossy width f16 cannot take.
        assert!(Settings::new(FloatFormat::F16, 7, 512).is_err());
        assert!(Settings::new(FloatFormat::F16, 3, 512).unwrap().is_lossy());
    }
}
