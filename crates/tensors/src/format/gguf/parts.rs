//! What a block of each ggml block type is made of: its scales and its quant codes (the sub-byte
//! integers), split out of the block as dequantization reads them. Their statistics (the scale
//! distribution, the codes' histogram and entropy) are `bitlens-stats`' (`quant` module).
//!
//! Covered: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, TQ1_0,
//! TQ2_0, IQ4_NL, IQ4_XS, MXFP4, NVFP4. Not covered: the grid types (IQ1_*, IQ2_*, IQ3_*),
//! whose codes index 256–2048-row code books rather than levels.
//!
//! A block's *scales* are the factors its codes are multiplied by, as dequantization computes
//! them (`d` for the legacy types; `d · sc` per sub-block for the K-quants and IQ4_XS; the
//! E8M0/E4M3 scale, halved like the doubled code book, for MXFP4/NVFP4). Mins (Q4_1, Q5_1,
//! Q2_K, Q4_K, Q5_K) are not scales and are left out. *Codes* are unsigned: a Q4_0 nibble
//! 0..16, a Q8_0 int8's byte, a Q3_K `code − 4`, a TQ `code − 1`.

use super::dequant::kquants::{
    crumbs, iq4_xs_scales, k_nibbles, q3_k_codes, q3_k_scales, q5_k_codes, q6_k_codes,
    scale_min_k4, tq1_0_codes,
};
use super::dequant::legacy::{e8m0_half, nibbles, nvfp4_codes, q5_codes, ue4m3_half};
use super::dequant::{half, u16_at, u32_at, whole_blocks, DequantError};
use crate::format::GgmlType;

/// Scale and code buffers of one block.
struct Parts {
    scales: [f32; 16],
    codes: [u8; 256],
    n_scales: usize,
    n_codes: usize,
}

impl Parts {
    fn set_scales(&mut self, s: impl IntoIterator<Item = f32>) {
        self.n_scales = 0;
        for (o, s) in self.scales.iter_mut().zip(s) {
            *o = s;
            self.n_scales += 1;
        }
    }

    fn set_codes(&mut self, c: &[u8]) {
        self.codes[..c.len()].copy_from_slice(c);
        self.n_codes = c.len();
    }
}

/// Bits of one code of `ty` (so the entropy can be read against it), or `None` when `ty` is
/// not covered.
pub fn code_bits(ty: GgmlType) -> Option<u32> {
    Some(match ty {
        GgmlType::Q2_K | GgmlType::TQ1_0 | GgmlType::TQ2_0 => 2,
        GgmlType::Q3_K => 3,
        GgmlType::Q4_0 | GgmlType::Q4_1 | GgmlType::Q4_K | GgmlType::IQ4_NL => 4,
        GgmlType::IQ4_XS | GgmlType::MXFP4 | GgmlType::NVFP4 => 4,
        GgmlType::Q5_0 | GgmlType::Q5_1 | GgmlType::Q5_K => 5,
        GgmlType::Q6_K => 6,
        GgmlType::Q8_0 | GgmlType::Q8_1 | GgmlType::Q8_K => 8,
        _ => return None,
    })
}

/// Where a block's codes lie when they are its bytes (or their nibbles, or their 2-bit crumbs) as
/// they stand: the bytes `range` of every block, each byte holding [`CodeBytes::per_byte`] codes
/// of `8 / per_byte` bits. Then the codes' histogram is that of those bytes, folded
/// ([`CodeBytes::codes_of`]), whatever order the codes are taken from the bytes in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeBytes {
    /// The code bytes within a block.
    pub range: std::ops::Range<usize>,
    /// Codes per byte: 1 (a byte), 2 (its low and high nibble) or 4 (its four crumbs).
    pub per_byte: u32,
}

impl CodeBytes {
    /// Calls `f(code)` for each code byte `byte` holds.
    #[inline]
    pub fn codes_of(&self, byte: u8, mut f: impl FnMut(u8)) {
        let bits = 8 / self.per_byte;
        let mask = ((1u16 << bits) - 1) as u8;
        for k in 0..self.per_byte {
            f((byte >> (k * bits)) & mask);
        }
    }
}

/// The code bytes of `ty` when its codes are whole bytes, plain nibbles or plain crumbs of one
/// byte range (Q4_0, Q4_1, IQ4_NL, MXFP4, Q4_K, IQ4_XS, NVFP4, Q2_K, TQ2_0, Q8_0, Q8_1, Q8_K);
/// `None` for the types whose codes are assembled from several fields.
pub fn code_bytes(ty: GgmlType) -> Option<CodeBytes> {
    let (range, per_byte) = match ty {
        GgmlType::Q4_0 | GgmlType::IQ4_NL => (2..18, 2),
        GgmlType::Q4_1 => (4..20, 2),
        GgmlType::MXFP4 => (1..17, 2),
        GgmlType::Q4_K => (16..144, 2),
        GgmlType::IQ4_XS => (8..136, 2),
        GgmlType::NVFP4 => (4..36, 2),
        GgmlType::Q2_K => (16..80, 4),
        GgmlType::TQ2_0 => (0..64, 4),
        GgmlType::Q8_0 => (2..34, 1),
        GgmlType::Q8_1 => (4..36, 1),
        GgmlType::Q8_K => (4..260, 1),
        _ => return None,
    };
    Some(CodeBytes { range, per_byte })
}

/// Calls `f(scales)` for each whole block of `ty` in `bytes`: [`block_parts`]' scales without
/// taking the codes apart.
pub fn block_scales_each(
    ty: GgmlType,
    bytes: &[u8],
    mut f: impl FnMut(&[f32]),
) -> Result<(), DequantError> {
    let (block_bytes, mut p) = blocks_and_parts(ty, bytes.len())?;
    for b in bytes.chunks_exact(block_bytes) {
        scales(ty, b, &mut p);
        f(&p.scales[..p.n_scales]);
    }
    Ok(())
}

/// Fills `p` with block `b`'s scales and codes.
fn parts(ty: GgmlType, b: &[u8], p: &mut Parts) {
    scales(ty, b, p);
    codes(ty, b, p);
}

/// The byte offset of a block's one scale when it is a plain little-endian f16 (`d`): Q4_0,
/// Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, IQ4_NL, TQ1_0 and TQ2_0; `None` for the types with several
/// scales or scales of another encoding.
pub fn f16_scale_offset(ty: GgmlType) -> Option<usize> {
    match ty {
        GgmlType::Q4_0
        | GgmlType::IQ4_NL
        | GgmlType::Q4_1
        | GgmlType::Q5_0
        | GgmlType::Q5_1
        | GgmlType::Q8_0
        | GgmlType::Q8_1 => Some(0),
        GgmlType::TQ1_0 => Some(52),
        GgmlType::TQ2_0 => Some(64),
        _ => None,
    }
}

/// Calls `f(bits)` with the f16 scale of each whole block of `ty` in `bytes`, for a type with
/// an [`f16_scale_offset`]: the scales [`block_scales_each`] gives, as their bits, without
/// taking a block apart. Errors for other types, or a partial block.
pub fn block_f16_scales_each(
    ty: GgmlType,
    bytes: &[u8],
    mut f: impl FnMut(u16),
) -> Result<(), DequantError> {
    let at = f16_scale_offset(ty).ok_or(DequantError::Unsupported(ty.name().unwrap_or("?")))?;
    let (block_bytes, _) = blocks_and_parts(ty, bytes.len())?;
    for b in bytes.chunks_exact(block_bytes) {
        f(u16_at(b, at));
    }
    Ok(())
}

/// Fills `p`'s scales with block `b`'s.
#[inline]
fn scales(ty: GgmlType, b: &[u8], p: &mut Parts) {
    if let Some(at) = f16_scale_offset(ty) {
        p.set_scales([half(b, at)]);
        return;
    }
    match ty {
        GgmlType::Q8_K => p.set_scales([f32::from_le_bytes([b[0], b[1], b[2], b[3]])]),
        GgmlType::MXFP4 => p.set_scales([e8m0_half(b[0])]),
        GgmlType::NVFP4 => p.set_scales(b[..4].iter().map(|&x| ue4m3_half(x))),
        GgmlType::Q2_K => {
            let d = half(b, 80);
            p.set_scales(b[..16].iter().map(|&s| d * f32::from(s & 0x0F)));
        }
        GgmlType::Q3_K => {
            let d = half(b, 108);
            p.set_scales(q3_k_scales(&b[96..108]).map(|s| d * f32::from(s)));
        }
        GgmlType::Q4_K | GgmlType::Q5_K => {
            let d = half(b, 0);
            p.set_scales(scale_min_k4(&b[4..16]).0.map(|s| d * f32::from(s)));
        }
        GgmlType::Q6_K => {
            let d = half(b, 208);
            p.set_scales(b[192..208].iter().map(|&s| d * f32::from(s as i8)));
        }
        GgmlType::IQ4_XS => {
            let d = half(b, 0);
            p.set_scales(iq4_xs_scales(u16_at(b, 2), &b[4..8]).map(|s| d * f32::from(s)));
        }
        _ => p.n_scales = 0,
    }
}

/// Fills `p`'s codes with block `b`'s.
fn codes(ty: GgmlType, b: &[u8], p: &mut Parts) {
    match ty {
        GgmlType::Q4_0 | GgmlType::IQ4_NL => p.set_codes(&nibbles(&b[2..])),
        GgmlType::Q4_1 => p.set_codes(&nibbles(&b[4..])),
        GgmlType::Q5_0 => p.set_codes(&q5_codes(u32_at(b, 2), &b[6..])),
        GgmlType::Q5_1 => p.set_codes(&q5_codes(u32_at(b, 4), &b[8..])),
        GgmlType::Q8_0 => p.set_codes(&b[2..34]),
        GgmlType::Q8_1 => p.set_codes(&b[4..36]),
        GgmlType::Q8_K => p.set_codes(&b[4..260]),
        GgmlType::MXFP4 => p.set_codes(&nibbles(&b[1..])),
        GgmlType::NVFP4 => {
            for k in 0..4 {
                p.codes[16 * k..16 * k + 16].copy_from_slice(&nvfp4_codes(&b[4 + 8 * k..]));
            }
            p.n_codes = 64;
        }
        GgmlType::Q2_K => p.set_codes(&crumbs(&b[16..80])),
        GgmlType::Q3_K => p.set_codes(&q3_k_codes(&b[..32], &b[32..96])),
        GgmlType::Q4_K => p.set_codes(&k_nibbles(&b[16..])),
        GgmlType::Q5_K => p.set_codes(&q5_k_codes(&b[16..48], &b[48..])),
        GgmlType::Q6_K => p.set_codes(&q6_k_codes(&b[..128], &b[128..192])),
        GgmlType::TQ1_0 => p.set_codes(&tq1_0_codes(b)),
        GgmlType::TQ2_0 => p.set_codes(&crumbs(&b[..64])),
        GgmlType::IQ4_XS => {
            for k in 0..8 {
                p.codes[32 * k..32 * k + 32].copy_from_slice(&nibbles(&b[8 + 16 * k..]));
            }
            p.n_codes = 256;
        }
        _ => p.n_codes = 0,
    }
}

/// The block size of `ty` once `len` bytes are checked to be whole blocks of a type whose codes
/// are known, and empty [`Parts`] to fill block by block.
fn blocks_and_parts(ty: GgmlType, len: usize) -> Result<(usize, Parts), DequantError> {
    let (_, block_bytes, _) = whole_blocks(ty, len)?;
    if code_bits(ty).is_none() {
        return Err(DequantError::Unsupported(ty.name().unwrap_or("?")));
    }
    let p = Parts {
        scales: [0.0; 16],
        codes: [0; 256],
        n_scales: 0,
        n_codes: 0,
    };
    Ok((block_bytes, p))
}

/// Calls `f(scales, codes)` for each whole block of `ty` in `bytes` (see the module doc for
/// what they are). Errors for a type [`code_bits`] does not cover, or a partial block.
pub fn block_parts(
    ty: GgmlType,
    bytes: &[u8],
    mut f: impl FnMut(&[f32], &[u8]),
) -> Result<(), DequantError> {
    let (block_bytes, mut p) = blocks_and_parts(ty, bytes.len())?;
    for b in bytes.chunks_exact(block_bytes) {
        parts(ty, b, &mut p);
        f(&p.scales[..p.n_scales], &p.codes[..p.n_codes]);
    }
    Ok(())
}

/// Every block's scales, in order.
pub fn block_scales(ty: GgmlType, bytes: &[u8]) -> Result<Vec<f32>, DequantError> {
    let mut out = Vec::new();
    block_parts(ty, bytes, |s, _| out.extend_from_slice(s))?;
    Ok(out)
}

/// Every element's code, in element order.
pub fn quant_codes(ty: GgmlType, bytes: &[u8]) -> Result<Vec<u8>, DequantError> {
    let mut out = Vec::new();
    block_parts(ty, bytes, |_, c| out.extend_from_slice(c))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_bytes_hold_the_codes_block_parts_gives_and_scales_each_its_scales() {
        let mut with_layout = 0;
        for ty in GgmlType::all().filter(|&t| code_bits(t).is_some()) {
            let bb = ty.block_bytes().unwrap() as usize;
            let bytes = bitlens_test_support::rng::bytes(99 + u64::from(ty.0), bb * 9);
            let (mut codes, mut scales) = (Vec::new(), Vec::new());
            block_parts(ty, &bytes, |s, c| {
                scales.extend_from_slice(s);
                codes.extend_from_slice(c);
            })
            .unwrap();
            let mut only = Vec::new();
            block_scales_each(ty, &bytes, |s| only.extend_from_slice(s)).unwrap();
            let bits = |v: &[f32]| v.iter().map(|s| s.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&only), bits(&scales), "{ty:?} scales");
            let Some(layout) = code_bytes(ty) else {
                continue;
            };
            // The codes' multiset (a histogram) is the code bytes' (or their nibbles').
            let mut want = [0u64; 256];
            codes.iter().for_each(|&c| want[usize::from(c)] += 1);
            let mut got = [0u64; 256];
            for b in bytes.chunks_exact(bb) {
                for &x in &b[layout.range.clone()] {
                    layout.codes_of(x, |c| got[usize::from(c)] += 1);
                }
            }
            assert_eq!(got, want, "{ty:?} codes");
            with_layout += 1;
        }
        assert_eq!(with_layout, 12);
    }

    #[test]
    fn dequantizing_with_codes_gives_the_values_and_the_block_parts_codes() {
        use super::super::dequant::{can_dequantize_with_codes, dequantize, dequantize_with_codes};
        let mut coded = 0;
        for ty in GgmlType::all().filter(|&t| can_dequantize_with_codes(t)) {
            let (bb, be) = (
                ty.block_bytes().unwrap() as usize,
                ty.block_elems().unwrap(),
            );
            let bytes = bitlens_test_support::rng::bytes(4242 + u64::from(ty.0), bb * 11);
            let n = 11 * be as usize;
            let (mut want, mut got, mut codes) = (vec![0.0; n], vec![0.0; n], vec![0; n]);
            dequantize(ty, &bytes, &mut want).unwrap();
            dequantize_with_codes(ty, &bytes, &mut got, &mut codes).unwrap();
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{ty:?} values");
            assert_eq!(codes, quant_codes(ty, &bytes).unwrap(), "{ty:?} codes");
            // A codes buffer of the wrong length is refused, not half filled.
            let err = dequantize_with_codes(ty, &bytes, &mut got, &mut codes[1..]).unwrap_err();
            assert!(matches!(err, DequantError::OutputLength { .. }), "{ty:?}");
            coded += 1;
        }
        assert_eq!(coded, 6);
        let q4 = GgmlType::from_name("Q4_0").unwrap();
        let err = dequantize_with_codes(q4, &[0; 18], &mut [0.0; 32], &mut [0; 32]).unwrap_err();
        assert!(matches!(err, DequantError::Unsupported("Q4_0")));
    }
}
