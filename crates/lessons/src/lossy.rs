//! The lossy codecs measured on a tensor, for the `lossy` lesson (issue 14): each setting is a
//! real encode with the codec the CLI uses, decoded back, and the decoded values compared with the
//! input — the error is measured, never modelled — beside the bound the paper guarantees.
//!
//! - NeuZip lossy (paper 003 §2.3, [`bitlens_codecs::neuzip`]): k ∈ {0, 1, 3} mantissa bits kept,
//!   block-wise normalization with blocks of 32..=512 values. The paper's guarantee: relative
//!   error ≤ 2^-k; the encoder rounds to nearest, so it keeps ≤ 2^-(k+1) plus the format's own
//!   rounding of the decoded value ([`Measure::tight_bound`]).
//! - BitSnap cluster quantization (paper 001 §3.4, [`bitlens_codecs::bitsnap::encode_quant`]): K clusters
//!   with per-cluster min / max asymmetric uint8 codes and 4-bit labels, against naive uint8
//!   min / max quantization of the whole tensor ([`bitlens_codecs::bitsnap::naive_uint8`], the paper's
//!   baseline). Both guarantee an absolute error of half a code step of the widest range (their
//!   cluster's, or the tensor's) plus the format's rounding of the decoded value.
//!
//! [`survey`] measures every setting the lesson offers, for its size-vs-error curve.

use bitlens_codecs::bitsnap::{self, Clusters};
use bitlens_codecs::error::{DecodeError, SettingsError};
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::lesson_exports::float::exponent_bias;
use bitlens_codecs::neuzip::{self, Settings};

/// The mantissa bits lossy NeuZip keeps (paper §2.3: byte-aligned fields).
pub const NEUZIP_BITS: [u32; 3] = [0, 1, 3];
/// The normalization block sizes NeuZip offers (paper §2.3, Table 4).
pub const NEUZIP_BLOCKS: [usize; 5] = [32, 64, 128, 256, 512];
/// The cluster counts of BitSnap quantization the lesson offers (the paper uses 16).
pub const CLUSTERS: [usize; 5] = [1, 2, 4, 8, 16];
/// Bins of every error histogram.
pub const HISTOGRAM_BINS: usize = 64;
/// Bytes naive uint8 quantization stores besides one code per value: min and max as f32.
pub const NAIVE_HEADER_BYTES: u64 = 8;

/// A lossy setting (ordered as [`survey`] lists them).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(tag = "codec", rename_all = "kebab-case")]
pub enum Setting {
    /// NeuZip lossy: `k` mantissa bits, normalization blocks of `block` values.
    Neuzip {
        /// Mantissa bits kept.
        k: u32,
        /// Normalization block size.
        block: usize,
    },
    /// BitSnap cluster quantization with `clusters` clusters.
    Bitsnap {
        /// Cluster count.
        clusters: usize,
    },
    /// Naive uint8: one min / max for the whole tensor.
    NaiveUint8,
    // Inshrinkerator's non-uniform bins (paper 002, crate `bitlens-inshrink`, being built) join
    // here as a setting of their own once that codec exists.
}

/// Why a setting could not be measured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LossyError {
    /// The codec refuses the setting (a NeuZip k or block, or a cluster count, it does not take).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The codec's decoder rejected its own stream (a bug: the tests check it never happens).
    #[error("the decoder rejected the encoder's stream: {0}")]
    Decode(#[from] DecodeError),
}

/// Every setting the lesson offers, in survey order: NeuZip k of [`NEUZIP_BITS`] × block of
/// [`NEUZIP_BLOCKS`], BitSnap K of [`CLUSTERS`], naive uint8.
pub fn settings() -> Vec<Setting> {
    let neuzip = NEUZIP_BITS.iter().flat_map(|&k| {
        NEUZIP_BLOCKS
            .iter()
            .map(move |&block| Setting::Neuzip { k, block })
    });
    let bitsnap = CLUSTERS
        .iter()
        .map(|&clusters| Setting::Bitsnap { clusters });
    neuzip
        .chain(bitsnap)
        .chain(std::iter::once(Setting::NaiveUint8))
        .collect()
}

/// Measures one `setting` on a tensor: NeuZip on its values `data` of `format`, BitSnap and naive
/// uint8 on `wide`, the same values widened to f32 ([`widen_f32`]), their histograms over
/// `[-range, range]` (0: the setting's own bound).
pub fn measure(
    data: &[u8],
    format: FloatFormat,
    wide: &[u8],
    setting: Setting,
    range: f64,
) -> Result<Measure, LossyError> {
    Ok(match setting {
        Setting::Neuzip { k, block } => measure_neuzip(data, &Settings::lossy(format, k, block)?)?,
        Setting::Bitsnap { clusters } => {
            measure_bitsnap(wide, FloatFormat::F32, Clusters::new(clusters)?, range)?
        }
        Setting::NaiveUint8 => measure_naive(wide, FloatFormat::F32, range),
    })
}

/// How the error of a setting is bounded: relative to each value (NeuZip) or absolute
/// (quantization to uint8 codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BoundKind {
    /// |x̂ − x| / |x| ≤ bound.
    Relative,
    /// |x̂ − x| ≤ bound.
    Absolute,
}

/// A histogram of signed errors over `[lo, hi]` in equal bins (an error outside goes to the
/// nearest end bin and is counted in `outside` too).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Histogram {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Count per bin, from `lo` up.
    pub counts: Vec<u64>,
    /// Errors outside `[lo, hi]`.
    pub outside: u64,
}

impl Histogram {
    fn new(lo: f64, hi: f64, bins: usize) -> Histogram {
        Histogram {
            lo,
            hi,
            counts: vec![0; bins.max(1)],
            outside: 0,
        }
    }

    fn add(&mut self, e: f64) {
        let bins = self.counts.len();
        if e < self.lo || e > self.hi {
            self.outside += 1;
        }
        let t = if self.hi > self.lo {
            (e - self.lo) / (self.hi - self.lo)
        } else {
            0.5
        };
        let i = ((t * bins as f64).floor().max(0.0) as usize).min(bins - 1);
        self.counts[i] += 1;
    }
}

/// The errors of decoded values against the input.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Errors {
    /// Finite input values compared.
    pub values: u64,
    /// Largest |x̂ − x|.
    pub max_abs: f64,
    /// Mean of (x̂ − x)².
    pub mse: f64,
    /// √mse.
    pub rms: f64,
    /// Largest |x̂ − x| / |x| over the non-zero values.
    pub max_rel: f64,
    /// The signed error, relative ((x̂ − x) / x over non-zero x) or absolute (x̂ − x) as the
    /// setting's bound is.
    pub histogram: Histogram,
}

/// Compares the decoded values `back` with the input `data` (both of `format`); the histogram
/// covers `[-range, range]`.
fn errors(data: &[u8], back: &[u8], format: FloatFormat, kind: BoundKind, range: f64) -> Errors {
    let w = format.width();
    let mut h = Histogram::new(-range, range, HISTOGRAM_BINS);
    let (mut n, mut sq, mut max_abs, mut max_rel) = (0u64, 0.0, 0.0f64, 0.0f64);
    for (a, b) in data.chunks_exact(w).zip(back.chunks_exact(w)) {
        let x = format.value(a);
        if !x.is_finite() {
            continue;
        }
        let d = format.value(b) - x;
        n += 1;
        sq += d * d;
        max_abs = max_abs.max(d.abs());
        if x != 0.0 {
            max_rel = max_rel.max((d / x).abs());
        }
        match kind {
            BoundKind::Absolute => h.add(d),
            BoundKind::Relative if x != 0.0 => h.add(d / x),
            BoundKind::Relative => {}
        }
    }
    let mse = if n == 0 { 0.0 } else { sq / n as f64 };
    Errors {
        values: n,
        max_abs,
        mse,
        rms: mse.sqrt(),
        max_rel,
        histogram: h,
    }
}

/// One setting measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measure {
    /// The setting.
    pub setting: Setting,
    /// Bytes of the encoded stream (naive uint8: its codes and min / max).
    pub bytes: u64,
    /// 8 · bytes / values.
    pub bits_per_value: f64,
    /// What the bound bounds.
    pub bound_kind: BoundKind,
    /// The guarantee: the paper's (NeuZip 2^-k), or half the widest code step plus the format's
    /// rounding (quantization).
    pub bound: f64,
    /// The bound this encoder keeps (NeuZip: rounding to nearest, 2^-(k+1), plus the format's
    /// rounding of the decoded value; quantization: the same as `bound`). Never above `bound`.
    pub tight_bound: f64,
    /// The errors measured on the decoded values.
    pub errors: Errors,
}

impl Measure {
    /// The measured maximum of the kind the bound bounds.
    pub fn measured_max(&self) -> f64 {
        match self.bound_kind {
            BoundKind::Relative => self.errors.max_rel,
            BoundKind::Absolute => self.errors.max_abs,
        }
    }
}

fn bits_per_value(bytes: u64, values: usize) -> f64 {
    if values == 0 {
        0.0
    } else {
        8.0 * bytes as f64 / values as f64
    }
}

/// Encodes `data` with lossy NeuZip `settings` (the CLI's encoder), decodes it back and measures
/// the relative error against the paper's bound 2^-k.
pub fn measure_neuzip(data: &[u8], settings: &Settings) -> Result<Measure, DecodeError> {
    let f = settings.format();
    let k = settings.mantissa_bits();
    let stream = neuzip::encode(data, settings);
    let back = neuzip::decode(&stream, data.len())?;
    let bound = 2f64.powi(-(k as i32));
    let half = 2f64.powi(-(k as i32) - 1);
    let tight = (half + format_rounding(f) * (1.0 + half)).min(bound);
    let setting = Setting::Neuzip {
        k,
        block: settings.norm_block(),
    };
    let bounds = (BoundKind::Relative, bound, tight, bound);
    Ok(measured(setting, stream.len(), data, &back, f, bounds))
}

/// A measure of `setting` from its encoded size and its decoded values `back`; `bounds` are the
/// bound's kind, the bound, the tight bound and the histogram's range.
fn measured(
    setting: Setting,
    stream_len: usize,
    data: &[u8],
    back: &[u8],
    format: FloatFormat,
    bounds: (BoundKind, f64, f64, f64),
) -> Measure {
    let (kind, bound, tight_bound, range) = bounds;
    Measure {
        setting,
        bytes: stream_len as u64,
        bits_per_value: bits_per_value(stream_len as u64, data.len() / format.width()),
        bound_kind: kind,
        bound,
        tight_bound,
        errors: errors(data, back, format, kind, range),
    }
}

/// The relative rounding of a value into `format` (half an ulp, 2^-(M+1)), with room for the
/// f64 arithmetic of the decoders (a few units of 2^-53).
fn format_rounding(format: FloatFormat) -> f64 {
    2f64.powi(-(format.mantissa_bits() as i32) - 1) + 2f64.powi(-50)
}

/// The absolute error bound of a uint8 code over `[lo, hi]` decoded into `format`: half a code
/// step, the rounding of the decoded value into the format, and half its smallest subnormal.
fn code_bound(lo: f64, hi: f64, format: FloatFormat) -> f64 {
    let smallest = 2f64.powi(1 - exponent_bias(format) - format.mantissa_bits() as i32);
    (hi - lo) / 510.0 + lo.abs().max(hi.abs()) * format_rounding(format) + smallest / 2.0
}

/// Quantizes `data` with BitSnap's cluster quantizer (the CLI's encoder), decodes it back and
/// measures the absolute error; the histogram covers `[-range, range]` (0: the setting's bound).
pub fn measure_bitsnap(
    data: &[u8],
    format: FloatFormat,
    clusters: Clusters,
    range: f64,
) -> Result<Measure, DecodeError> {
    let stream = bitsnap::encode_quant(data, format, clusters);
    let back = bitsnap::decode_quant(&stream, data.len())?;
    let bound = bitsnap::quant_table(&stream)?
        .into_iter()
        .map(|(lo, hi)| code_bound(f64::from(lo), f64::from(hi), format))
        .fold(0.0, f64::max);
    let range = if range > 0.0 { range } else { bound };
    let setting = Setting::Bitsnap {
        clusters: clusters.get(),
    };
    let bounds = (BoundKind::Absolute, bound, bound, range);
    Ok(measured(setting, stream.len(), data, &back, format, bounds))
}

/// Naive uint8 quantization of `data` (one min / max over the finite values,
/// [`bitsnap::naive_uint8`]) decoded into `format`: the decoded bytes and the min and max.
/// Non-finite values are kept.
pub fn naive_uint8(data: &[u8], format: FloatFormat) -> (Vec<u8>, f64, f64) {
    let w = format.width();
    let values: Vec<f64> = data.chunks_exact(w).map(|b| format.value(b)).collect();
    let (lo, hi) = values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let mut out = data.to_vec();
    for (o, x) in out.chunks_exact_mut(w).zip(bitsnap::naive_uint8(&values)) {
        if x.is_finite() {
            format.put_value(x, o);
        }
    }
    (out, lo, hi)
}

/// Naive uint8 quantization of `data` measured: one code byte per value plus min and max as
/// f32 ([`NAIVE_HEADER_BYTES`]); the histogram covers `[-range, range]` (0: its bound).
pub fn measure_naive(data: &[u8], format: FloatFormat, range: f64) -> Measure {
    let n = data.len() / format.width();
    let (back, lo, hi) = naive_uint8(data, format);
    let bound = if lo <= hi {
        code_bound(lo, hi, format)
    } else {
        0.0
    };
    let range = if range > 0.0 { range } else { bound };
    let bounds = (BoundKind::Absolute, bound, bound, range);
    let bytes = n + NAIVE_HEADER_BYTES as usize;
    measured(Setting::NaiveUint8, bytes, data, &back, format, bounds)
}

/// `data` of `format` widened to f32 (exact: every bf16 and f16 value is an f32), the values
/// BitSnap quantizes (its optimizer states are fp32).
pub fn widen_f32(data: &[u8], format: FloatFormat) -> Vec<u8> {
    if format == FloatFormat::F32 {
        return data.to_vec();
    }
    data.chunks_exact(format.width())
        .flat_map(|b| (format.value(b) as f32).to_le_bytes())
        .collect()
}

/// Every setting of the lesson measured on one tensor.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Survey {
    /// Values of the tensor measured.
    pub values: u64,
    /// NeuZip, k of [`NEUZIP_BITS`] × block of [`NEUZIP_BLOCKS`], in that order.
    pub neuzip: Vec<Measure>,
    /// BitSnap, K of [`CLUSTERS`], on the values widened to f32; histograms over naive uint8's
    /// bound, so both are drawn on one axis.
    pub bitsnap: Vec<Measure>,
    /// Naive uint8 on the values widened to f32.
    pub naive: Measure,
}

impl Survey {
    /// A survey of `values` values holding naive uint8's measure, the baseline; the other
    /// settings are [`Survey::add`]ed.
    pub fn new(values: u64, naive: Measure) -> Survey {
        Survey {
            values,
            neuzip: Vec::new(),
            bitsnap: Vec::new(),
            naive,
        }
    }

    /// Adds (or replaces) a setting's measure, in survey order.
    pub fn add(&mut self, m: Measure) {
        let list = match m.setting {
            Setting::Neuzip { .. } => &mut self.neuzip,
            Setting::Bitsnap { .. } => &mut self.bitsnap,
            Setting::NaiveUint8 => {
                self.naive = m;
                return;
            }
        };
        list.retain(|old| old.setting != m.setting);
        list.push(m);
        list.sort_by_key(|m| m.setting);
    }

    /// Every measure: NeuZip, BitSnap, naive uint8.
    pub fn all(&self) -> impl Iterator<Item = &Measure> {
        self.neuzip
            .iter()
            .chain(&self.bitsnap)
            .chain(std::iter::once(&self.naive))
    }

    /// The measure of `setting`, if surveyed.
    pub fn find(&self, setting: Setting) -> Option<&Measure> {
        self.all().find(|m| m.setting == setting)
    }
}

/// Measures every setting of the lesson ([`settings`]) on `data` of `format`: NeuZip on the
/// values as they are, BitSnap and naive uint8 on them widened to f32 ([`widen_f32`]), BitSnap's
/// histograms over naive uint8's bound.
pub fn survey(data: &[u8], format: FloatFormat) -> Result<Survey, LossyError> {
    let wide = widen_f32(data, format);
    let naive = measure_naive(&wide, FloatFormat::F32, 0.0);
    let range = naive.bound;
    let mut s = Survey::new((data.len() / format.width()) as u64, naive);
    for setting in settings() {
        if setting != Setting::NaiveUint8 {
            s.add(measure(data, format, &wide, setting, range)?);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random normal-ish weights of `format` (sum of uniforms), with zeros, a subnormal
    /// and an infinity mixed in.
    fn weights(n: usize, format: FloatFormat, seed: u64) -> Vec<u8> {
        let mut r = crate::xorshift(seed);
        let mut out = vec![0u8; n * format.width()];
        for (i, o) in out.chunks_exact_mut(format.width()).enumerate() {
            let u: f64 = (0..4)
                .map(|_| (r() >> 11) as f64 / (1u64 << 53) as f64)
                .sum();
            let x = match i % 997 {
                0 => 0.0,
                1 => 1e-40,
                2 if format != FloatFormat::F16 => f64::INFINITY,
                _ => (u - 2.0) * 0.05,
            };
            format.put_value(x, o);
        }
        out
    }

    /// Every NeuZip setting keeps the paper's bound 2^-k and the encoder's tighter one, on every
    /// format; the bound is what the paper says, and the size is the encoder's stream.
    #[test]
    fn neuzip_error_never_exceeds_its_bounds() {
        for f in [FloatFormat::Bf16, FloatFormat::F16, FloatFormat::F32] {
            let data = weights(5000, f, 7);
            for k in NEUZIP_BITS {
                for b in NEUZIP_BLOCKS {
                    let s = Settings::lossy(f, k, b).unwrap();
                    let m = measure_neuzip(&data, &s).unwrap();
                    assert_eq!(m.bound, 1.0 / f64::from(1u32 << k));
                    assert!(m.tight_bound <= m.bound);
                    assert!(
                        m.errors.max_rel <= m.tight_bound,
                        "{f:?} k {k} block {b}: {} > {}",
                        m.errors.max_rel,
                        m.tight_bound
                    );
                    assert!(m.errors.max_rel > 0.0);
                    assert_eq!(m.bytes, neuzip::encode(&data, &s).len() as u64);
                    assert_eq!(m.errors.histogram.outside, 0);
                }
            }
        }
    }

    /// The errors are those of the decoded values, recomputed here element by element.
    #[test]
    fn errors_are_the_decoded_values_differences() {
        let f = FloatFormat::Bf16;
        let data = weights(3000, f, 3);
        let s = Settings::lossy(f, 1, 64).unwrap();
        let m = measure_neuzip(&data, &s).unwrap();
        let back = neuzip::decode(&neuzip::encode(&data, &s), data.len()).unwrap();
        let (mut n, mut sq, mut max_rel, mut rel_count) = (0u64, 0.0, 0.0f64, 0u64);
        for (a, b) in data.chunks_exact(2).zip(back.chunks_exact(2)) {
            let x = f64::from(half::bf16::from_le_bytes([a[0], a[1]]).to_f32());
            let y = f64::from(half::bf16::from_le_bytes([b[0], b[1]]).to_f32());
            if x.is_finite() {
                n += 1;
                sq += (y - x) * (y - x);
                if x != 0.0 {
                    max_rel = max_rel.max(((y - x) / x).abs());
                    rel_count += 1;
                }
            }
        }
        assert_eq!(m.errors.values, n);
        assert!((m.errors.mse - sq / n as f64).abs() <= 1e-12 * m.errors.mse);
        assert_eq!(m.errors.max_rel, max_rel);
        assert_eq!(m.errors.histogram.counts.iter().sum::<u64>(), rel_count);
    }

    /// Naive uint8 decodes to BitSnap's one-cluster quantization (the same min / max, codes and
    /// dequantization), and both keep the half-step bound.
    #[test]
    fn naive_uint8_is_bitsnap_with_one_cluster() {
        let data = widen_f32(&weights(4000, FloatFormat::Bf16, 11), FloatFormat::Bf16);
        let f = FloatFormat::F32;
        let (naive, lo, hi) = naive_uint8(&data, f);
        let one = Clusters::new(1).unwrap();
        let bs = bitsnap::decode_quant(&bitsnap::encode_quant(&data, f, one), data.len()).unwrap();
        assert_eq!(naive, bs);
        let m = measure_naive(&data, f, 0.0);
        assert_eq!(m.bytes, 4000 + NAIVE_HEADER_BYTES);
        assert!(m.errors.max_abs <= m.bound);
        assert!(m.bound >= (hi - lo) / 510.0 && m.bound <= (hi - lo) / 510.0 * 1.0001);
        assert!(
            m.errors.max_abs > (hi - lo) / 510.0 * 0.9,
            "codes fill the step"
        );
    }

    /// BitSnap keeps its bound for every K, more clusters lower the MSE below naive uint8's, and
    /// its size is the stream's: 12 bits a value plus the table (2.67× on fp32).
    #[test]
    fn bitsnap_beats_naive_uint8_within_its_bound() {
        let data = widen_f32(&weights(20_000, FloatFormat::Bf16, 5), FloatFormat::Bf16);
        let f = FloatFormat::F32;
        let naive = measure_naive(&data, f, 0.0);
        for k in CLUSTERS {
            let m = measure_bitsnap(&data, f, Clusters::new(k).unwrap(), naive.bound).unwrap();
            assert!(m.errors.max_abs <= m.bound, "K {k}");
            assert!(
                m.bound <= naive.bound * 1.0001,
                "K {k}: a cluster is within the range"
            );
            assert_eq!(m.errors.histogram.outside, 0);
            if k >= 4 {
                assert!(m.errors.mse < naive.errors.mse, "K {k}");
            }
        }
        let m16 = measure_bitsnap(&data, f, Clusters::MAX, 0.0).unwrap();
        let ratio = 32.0 / m16.bits_per_value;
        assert!((2.6..2.67).contains(&ratio), "ratio {ratio}");
    }

    /// The survey holds every offered setting once, each equal to its own measurement, and all
    /// of them within their bounds.
    #[test]
    fn survey_measures_every_setting() {
        let f = FloatFormat::Bf16;
        let data = weights(3000, f, 9);
        let s = survey(&data, f).unwrap();
        assert_eq!(s.values, 3000);
        assert_eq!(s.all().count(), 15 + 5 + 1);
        let listed: Vec<Setting> = s.all().map(|m| m.setting).collect();
        assert_eq!(listed, settings(), "in survey order");
        // Added one by one in any order, the survey comes out the same.
        let wide = widen_f32(&data, f);
        let mut again = Survey::new(3000, s.naive.clone());
        for &setting in settings().iter().rev().skip(1) {
            again.add(measure(&data, f, &wide, setting, s.naive.bound).unwrap());
        }
        assert_eq!(again, s);
        assert!(matches!(
            measure(&data, f, &wide, Setting::Neuzip { k: 2, block: 64 }, 0.0),
            Err(LossyError::Settings(_))
        ));
        let setting = Setting::Neuzip { k: 3, block: 128 };
        let direct = measure_neuzip(&data, &Settings::lossy(f, 3, 128).unwrap()).unwrap();
        assert_eq!(s.find(setting), Some(&direct));
        for m in s.all() {
            assert!(m.measured_max() <= m.bound, "{:?}", m.setting);
        }
    }

    /// On the real MiniLM weights (first MiB, bf16): every setting within its bound; 3-bit
    /// NeuZip under half the bf16 size (paper §3.2: "less than 50% memory").
    #[test]
    fn real_weights_stay_within_bounds() {
        let Some(data) = crate::real_bf16_megabyte() else {
            return;
        };
        let data = &data[..1 << 18];
        let s = survey(data, FloatFormat::Bf16).unwrap();
        for m in s.all() {
            assert!(m.measured_max() <= m.bound, "{:?}", m.setting);
        }
        let k3 = s.find(Setting::Neuzip { k: 3, block: 512 }).unwrap();
        assert!(k3.bits_per_value < 8.0, "{}", k3.bits_per_value);
        let b16 = s.find(Setting::Bitsnap { clusters: 16 }).unwrap();
        assert!(b16.errors.mse < s.naive.errors.mse);
    }
}
