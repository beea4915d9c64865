//! BitSnap (001_97baaccfe380fe85): §3.3 bitmask sparsification of model-state deltas and §3.4
//! cluster-based uint8 quantization of optimizer states.
//!
//! ## Delta (lossless): [`encode_delta`] / [`decode_delta`]
//! Against a base tensor of the same shape, a packed bitmask marks the elements whose bits changed
//! and only the changed elements' *new* values are stored, so the round trip is exact. Sparse form
//! costs `n/8 + c·w` bytes for `c` changes of `w`-byte elements, dense form `n·w`; the encoder takes
//! the smaller, which for 2-byte elements is the paper's 93.75 % break-even (Eq. 2). The value
//! stream may additionally be entropy-coded with PLMC ([`crate::plmc`]).
//! ```text
//! "BSDL" | version u8 = 1 | width u8 | mode u8 (0 sparse, 1 dense) | values u8 (0 raw, 1 PLMC)
//! | n u64 (elements) | tail_len u8 | tail (bytes after the last whole element, new values)
//! | sparse: bitmask ⌈n/8⌉ bytes (element i ↔ bit i mod 8 of byte i / 8) | changed u64
//! | value stream: raw (changed·w or n·w bytes) or u64 length + PLMC stream
//! ```
//!
//! ## Cluster quantization (lossy): [`encode_quant`] / [`decode_quant`]
//! The tensor's mean μ and standard deviation σ place C ≤ 16 clusters at equal-probability
//! quantiles of N(μ, σ²) (boundaries μ + σ·Φ⁻¹(i/C)), so clusters are denser near the mean; each
//! value gets a 4-bit cluster label and a uint8 code under its cluster's min / max (asymmetric,
//! Dettmers-style, Eq. 3); dequantization is `min + q·(max − min)/255` (Eq. 4). Non-finite values
//! are kept exactly in an escape list. 12 bits per value: 2.67× on fp32.
//! ```text
//! "BSQ8" | version u8 = 1 | format u8 (0 bf16, 1 f16, 2 f32) | clusters u8 | n u64 | tail_len u8
//! | tail | clusters × (min f32, max f32) | labels ⌈n/2⌉ bytes (low nibble first) | codes n bytes
//! | escapes u32 | per escape: index u32, raw value (width bytes)
//! ```

use crate::cursor::Cursor;
use crate::error::{DecodeError, SettingsError};
use crate::float::FloatFormat;
use crate::lmc::Width;

const DELTA_MAGIC: [u8; 4] = *b"BSDL";
const QUANT_MAGIC: [u8; 4] = *b"BSQ8";
const VERSION: u8 = 1;
/// Most clusters (labels are 4 bits).
pub const MAX_CLUSTERS: usize = 16;

/// A cluster count of the quantization, 1..=[`MAX_CLUSTERS`]: valid by construction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Clusters(usize);

impl Clusters {
    /// [`MAX_CLUSTERS`] clusters, the most the 4-bit labels can tell apart.
    pub const MAX: Clusters = Clusters(MAX_CLUSTERS);

    /// `n` clusters, if `1 ≤ n ≤ 16`.
    pub fn new(n: usize) -> Result<Clusters, SettingsError> {
        if (1..=MAX_CLUSTERS).contains(&n) {
            Ok(Clusters(n))
        } else {
            Err(SettingsError::Clusters { value: n })
        }
    }

    /// The count.
    pub fn get(self) -> usize {
        self.0
    }
}

fn bad(offset: usize, field: &'static str, value: u64) -> DecodeError {
    DecodeError::BadHeader {
        offset: offset as u64,
        field,
        value,
    }
}

/// Encodes `new` as a delta against `base` (same length) of `width`-byte elements.
///
/// # Panics
/// If the lengths differ (a programming error: the base is the same tensor's).
pub fn encode_delta(new: &[u8], base: &[u8], width: Width, entropy_code: bool) -> Vec<u8> {
    assert_eq!(new.len(), base.len(), "delta needs equal lengths");
    let (w, width) = (width, width.bytes());
    let n = new.len() / width;
    let mut mask = vec![0u8; n.div_ceil(8)];
    let mut changed = Vec::new();
    let mut count = 0usize;
    for (i, (a, b)) in new
        .chunks_exact(width)
        .zip(base.chunks_exact(width))
        .enumerate()
    {
        if a != b {
            mask[i / 8] |= 1 << (i % 8);
            changed.extend_from_slice(a);
            count += 1;
        }
    }
    let dense = mask.len() + count * width >= n * width;
    let mut out = Vec::with_capacity(
        if dense {
            new.len()
        } else {
            mask.len() + changed.len()
        } + 32,
    );
    out.extend_from_slice(&DELTA_MAGIC);
    out.extend_from_slice(&[
        VERSION,
        width as u8,
        u8::from(dense),
        u8::from(entropy_code),
    ]);
    out.extend_from_slice(&(n as u64).to_le_bytes());
    let tail = &new[n * width..];
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    let values: &[u8] = if dense {
        &new[..n * width]
    } else {
        out.extend_from_slice(&mask);
        out.extend_from_slice(&(count as u64).to_le_bytes());
        &changed
    };
    if entropy_code {
        let stream = crate::encode(values, w, &crate::Options::default());
        out.extend_from_slice(&(stream.len() as u64).to_le_bytes());
        out.extend_from_slice(&stream);
    } else {
        out.extend_from_slice(values);
    }
    out
}

/// Decodes a delta against `base`; the result has `base.len()` bytes.
pub fn decode_delta(stream: &[u8], base: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let mut c = Cursor::new(stream);
    if c.take(4)? != DELTA_MAGIC {
        return Err(bad(0, "BitSnap delta magic", 0));
    }
    let h = c.take(4)?;
    if h[0] != VERSION {
        return Err(bad(4, "BitSnap version", u64::from(h[0])));
    }
    let width = usize::from(h[1]);
    if ![1, 2, 4, 8].contains(&width) || h[2] > 1 || h[3] > 1 {
        return Err(bad(
            5,
            "width / mode / value coding",
            u64::from(u32::from_le_bytes([h[0], h[1], h[2], h[3]])),
        ));
    }
    let (dense, entropy_coded) = (h[2] == 1, h[3] == 1);
    let n = c.u64()?;
    let tail_len = usize::from(c.take(1)?[0]);
    if n.checked_mul(width as u64)
        .and_then(|b| b.checked_add(tail_len as u64))
        != Some(base.len() as u64)
        || tail_len >= width
    {
        return Err(DecodeError::LengthMismatch {
            expected: base.len() as u64,
            actual: n
                .saturating_mul(width as u64)
                .saturating_add(tail_len as u64),
        });
    }
    let n = n as usize;
    let tail = c.take(tail_len)?;
    let mut out = base.to_vec();
    out[n * width..].copy_from_slice(tail);
    let (mask, count) = if dense {
        (None, n)
    } else {
        let mask = c.take(n.div_ceil(8))?;
        let count = c.u64()?;
        let set: u64 = mask.iter().map(|b| u64::from(b.count_ones())).sum();
        if set != count || (!n.is_multiple_of(8) && mask.last().is_some_and(|&b| b >> (n % 8) != 0))
        {
            return Err(bad(c.pos - 8, "changed count vs bitmask", count));
        }
        (Some(mask), count as usize)
    };
    let values_len = count * width;
    let decoded;
    let values: &[u8] = if entropy_coded {
        let len = c.u64()?;
        let s = c.take(usize::try_from(len).unwrap_or(usize::MAX))?;
        decoded = crate::decode(s, values_len)?;
        &decoded
    } else {
        c.take(values_len)?
    };
    c.finish()?;
    match mask {
        None => out[..n * width].copy_from_slice(values),
        Some(mask) => {
            let mut v = values.chunks_exact(width);
            for i in 0..n {
                if mask[i / 8] >> (i % 8) & 1 == 1 {
                    let src = v.next().expect("count matches the mask");
                    out[i * width..i * width + width].copy_from_slice(src);
                }
            }
        }
    }
    Ok(out)
}

/// Inverse of the standard normal CDF (Acklam's rational approximation, |rel. error| < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let p_low = 0.02425;
    if p < p_low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - p_low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

/// Cluster boundaries at the equal-probability quantiles of N(μ, σ²).
pub fn cluster_boundaries(mean: f64, std: f64, clusters: usize) -> Vec<f64> {
    (1..clusters)
        .map(|i| mean + std * normal_quantile(i as f64 / clusters as f64))
        .collect()
}

/// Quantizes floats of `format` to 4-bit cluster labels + uint8 codes.
pub fn encode_quant(data: &[u8], format: FloatFormat, clusters: Clusters) -> Vec<u8> {
    let clusters = clusters.get();
    let w = format.width();
    let n = data.len() / w;
    let values: Vec<f64> = data.chunks_exact(w).map(|b| format.value(b)).collect();
    let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    let mean = finite.iter().sum::<f64>() / finite.len().max(1) as f64;
    let std = (finite.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>()
        / finite.len().max(1) as f64)
        .sqrt();
    let bounds = cluster_boundaries(mean, std, clusters);
    let label = |x: f64| bounds.partition_point(|&b| b <= x);
    let mut lo = vec![f64::INFINITY; clusters];
    let mut hi = vec![f64::NEG_INFINITY; clusters];
    for &x in &finite {
        let l = label(x);
        lo[l] = lo[l].min(x);
        hi[l] = hi[l].max(x);
    }
    // Cluster bounds are stored as f32; widen outward so every member stays inside.
    let lo32: Vec<f32> = lo
        .iter()
        .map(|&v| if v.is_finite() { round_down(v) } else { 0.0 })
        .collect();
    let hi32: Vec<f32> = hi
        .iter()
        .map(|&v| if v.is_finite() { round_up(v) } else { 0.0 })
        .collect();
    let mut out = Vec::with_capacity(n * 3 / 2 + 64);
    out.extend_from_slice(&QUANT_MAGIC);
    out.extend_from_slice(&[VERSION, format.code(), clusters as u8]);
    out.extend_from_slice(&(n as u64).to_le_bytes());
    let tail = &data[n * w..];
    out.push(tail.len() as u8);
    out.extend_from_slice(tail);
    for c in 0..clusters {
        out.extend_from_slice(&lo32[c].to_le_bytes());
        out.extend_from_slice(&hi32[c].to_le_bytes());
    }
    let mut labels = vec![0u8; n.div_ceil(2)];
    let mut codes = vec![0u8; n];
    let mut escapes = Vec::new();
    for (i, &x) in values.iter().enumerate() {
        if !x.is_finite() {
            escapes.push(i);
            continue;
        }
        let l = label(x);
        labels[i / 2] |= (l as u8) << (4 * (i % 2));
        let (a, b) = (f64::from(lo32[l]), f64::from(hi32[l]));
        codes[i] = if b > a {
            ((x - a) / (b - a) * 255.0).round().clamp(0.0, 255.0) as u8
        } else {
            0
        };
    }
    out.extend_from_slice(&labels);
    out.extend_from_slice(&codes);
    out.extend_from_slice(&(escapes.len() as u32).to_le_bytes());
    for i in escapes {
        out.extend_from_slice(&(i as u32).to_le_bytes());
        out.extend_from_slice(&data[i * w..i * w + w]);
    }
    out
}

fn round_down(v: f64) -> f32 {
    let f = v as f32;
    if f64::from(f) > v {
        f.next_down()
    } else {
        f
    }
}

fn round_up(v: f64) -> f32 {
    let f = v as f32;
    if f64::from(f) < v {
        f.next_up()
    } else {
        f
    }
}

/// The cluster table of a cluster-quantized stream: each cluster's (min, max), as the decoder
/// dequantizes with them.
pub fn quant_table(stream: &[u8]) -> Result<Vec<(f32, f32)>, DecodeError> {
    let mut c = Cursor::new(stream);
    if c.take(4)? != QUANT_MAGIC {
        return Err(bad(0, "BitSnap quant magic", 0));
    }
    let h = c.take(3)?;
    let clusters = usize::from(h[2]);
    if h[0] != VERSION || !(1..=MAX_CLUSTERS).contains(&clusters) {
        return Err(bad(4, "BitSnap version / cluster count", u64::from(h[2])));
    }
    c.u64()?;
    let tail_len = usize::from(c.take(1)?[0]);
    c.take(tail_len)?;
    Ok(c.take(8 * clusters)?
        .chunks_exact(8)
        .map(|b| {
            (
                f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
                f32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            )
        })
        .collect())
}

/// Dequantizes a cluster-quantized stream that must hold `expected_len` bytes.
pub fn decode_quant(stream: &[u8], expected_len: usize) -> Result<Vec<u8>, DecodeError> {
    let mut c = Cursor::new(stream);
    if c.take(4)? != QUANT_MAGIC {
        return Err(bad(0, "BitSnap quant magic", 0));
    }
    let h = c.take(3)?;
    if h[0] != VERSION {
        return Err(bad(4, "BitSnap version", u64::from(h[0])));
    }
    let format =
        FloatFormat::from_code(h[1]).ok_or_else(|| bad(5, "float format", u64::from(h[1])))?;
    let clusters = usize::from(h[2]);
    if !(1..=MAX_CLUSTERS).contains(&clusters) {
        return Err(bad(6, "cluster count", clusters as u64));
    }
    let w = format.width();
    let n = c.u64()?;
    let tail_len = usize::from(c.take(1)?[0]);
    if tail_len >= w
        || n.checked_mul(w as u64)
            .and_then(|b| b.checked_add(tail_len as u64))
            != Some(expected_len as u64)
    {
        return Err(DecodeError::LengthMismatch {
            expected: expected_len as u64,
            actual: n.saturating_mul(w as u64).saturating_add(tail_len as u64),
        });
    }
    let n = n as usize;
    // Labels and codes need 1.5 bytes per value: check before allocating the output.
    if (n as u128) * 3 / 2 > stream.len() as u128 {
        return Err(DecodeError::TooLarge {
            declared: expected_len as u64,
            bound: stream.len() as u64 * 2 / 3 * w as u64,
            stream_len: stream.len() as u64,
        });
    }
    let tail = c.take(tail_len)?;
    let table = c.take(8 * clusters)?;
    let bounds: Vec<(f64, f64)> = table
        .as_chunks::<8>()
        .0
        .iter()
        .map(|&[a0, a1, a2, a3, b0, b1, b2, b3]| {
            (
                f64::from(f32::from_le_bytes([a0, a1, a2, a3])),
                f64::from(f32::from_le_bytes([b0, b1, b2, b3])),
            )
        })
        .collect();
    let labels = c.take(n.div_ceil(2))?;
    let codes = c.take(n)?;
    let mut out = vec![0u8; expected_len];
    for i in 0..n {
        let l = usize::from(labels[i / 2] >> (4 * (i % 2)) & 0x0F);
        let (a, b) = *bounds
            .get(l)
            .ok_or_else(|| bad(i, "cluster label", l as u64))?;
        let x = a + f64::from(codes[i]) * (b - a) / 255.0;
        format.put_value(x, &mut out[i * w..i * w + w]);
    }
    let escapes = c.u32()? as usize;
    if escapes > n {
        return Err(bad(c.pos - 4, "escape count", escapes as u64));
    }
    for _ in 0..escapes {
        let rec = c.take(4 + w)?;
        let i = u32::from_le_bytes(rec[..4].try_into().expect("4")) as usize;
        if i >= n {
            return Err(bad(c.pos - 4 - w, "escape index", i as u64));
        }
        out[i * w..i * w + w].copy_from_slice(&rec[4..]);
    }
    out[n * w..].copy_from_slice(tail);
    c.finish()?;
    Ok(out)
}

/// Naive global uint8 quantization (one min / max for the whole tensor), the baseline the paper's
/// Table 3 compares against: returns the dequantized values.
pub fn naive_uint8(values: &[f64]) -> Vec<f64> {
    let finite = values.iter().copied().filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    values
        .iter()
        .map(|&x| {
            if !x.is_finite() || hi <= lo {
                return if x.is_finite() { lo } else { x };
            }
            let q = ((x - lo) / (hi - lo) * 255.0).round();
            lo + q * (hi - lo) / 255.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1..=16 clusters (4-bit labels); 0 and 17 are refused by name.
    #[test]
    fn clusters_are_1_to_16() {
        assert_eq!(Clusters::new(1).unwrap().get(), 1);
        assert_eq!(Clusters::new(16), Ok(Clusters::MAX));
        for n in [0, 17, 255] {
            assert_eq!(Clusters::new(n), Err(SettingsError::Clusters { value: n }));
        }
    }

    /// The cluster table read back is the encoder's: every value lies within its cluster's
    /// range; cut or foreign streams are refused by name.
    #[test]
    fn quant_table_reads_the_clusters_ranges() {
        let values: Vec<f32> = (0..1000).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
        let data: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let stream = encode_quant(&data, FloatFormat::F32, Clusters::new(4).unwrap());
        let table = quant_table(&stream).unwrap();
        assert_eq!(table.len(), 4);
        assert_eq!(table[0].0, -50.0);
        assert_eq!(table[3].1, 50.0);
        assert!(table.windows(2).all(|w| w[0].1 <= w[1].0));
        assert!(matches!(
            quant_table(&stream[..20]),
            Err(DecodeError::Truncated { .. })
        ));
        assert!(matches!(
            quant_table(b"BSDL\x01\x02\x04"),
            Err(DecodeError::BadHeader { .. })
        ));
    }
}
