//! The block scales and quant codes of a ggml block-quantized tensor (what
//! [`bitlens_tensors::format::gguf::parts`] splits each block into, per type): [`QuantStats`], a
//! streaming, mergeable accumulator of the scales' distribution (a log2 histogram) and the codes'
//! histogram and order-0 entropy ([`crate::entropy`]), and [`QuantSummary`], its report.

use crate::entropy::bits_per_symbol;
use bitlens_tensors::format::gguf::parts::{
    block_f16_scales_each, block_parts, block_scales_each, code_bits, code_bytes, f16_scale_offset,
    CodeBytes,
};
use bitlens_tensors::format::gguf::DequantError;
use bitlens_tensors::format::GgmlType;
use serde::{Deserialize, Serialize};

/// Lowest binary exponent of the scale histogram (|scale| < 2^-32 counts in the first bin).
pub const SCALE_LOG2_MIN: i32 = -32;
/// Highest binary exponent (|scale| ≥ 2^16 counts in the last bin).
pub const SCALE_LOG2_MAX: i32 = 16;
/// Histogram bins per octave.
pub const SCALE_BINS_PER_OCTAVE: u32 = 4;
const SCALE_BINS: usize =
    ((SCALE_LOG2_MAX - SCALE_LOG2_MIN) as u32 * SCALE_BINS_PER_OCTAVE) as usize;

/// A streaming summary of a quantized tensor's scales and codes, fed windows of whole blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantStats {
    ty: GgmlType,
    bits: u32,
    /// Blocks seen.
    pub blocks: u64,
    /// Finite scales seen.
    pub scales: u64,
    /// Smallest finite scale (+∞ when none).
    pub scale_min: f32,
    /// Largest finite scale (−∞ when none).
    pub scale_max: f32,
    scale_sum: f64,
    /// Scales that are exactly zero.
    pub scale_zero: u64,
    /// Negative finite scales.
    pub scale_negative: u64,
    /// NaN or infinite scales.
    pub scale_nonfinite: u64,
    /// Histogram of log2 |scale| of the non-zero finite scales: bin `i` covers
    /// `[2^(MIN + i/PER_OCTAVE), 2^(MIN + (i+1)/PER_OCTAVE))`, the ends clamped.
    pub scale_hist: Vec<u64>,
    /// How often each code occurs (index = code).
    pub code_hist: Vec<u64>,
}

impl QuantStats {
    /// An empty summary for `ty`, or `None` when `ty` is not covered.
    pub fn new(ty: GgmlType) -> Option<QuantStats> {
        Some(QuantStats {
            ty,
            bits: code_bits(ty)?,
            blocks: 0,
            scales: 0,
            scale_min: f32::INFINITY,
            scale_max: f32::NEG_INFINITY,
            scale_sum: 0.0,
            scale_zero: 0,
            scale_negative: 0,
            scale_nonfinite: 0,
            scale_hist: vec![0; SCALE_BINS],
            code_hist: vec![0; 1 << code_bits(ty)?],
        })
    }

    /// The type summarised.
    pub fn ty(&self) -> GgmlType {
        self.ty
    }

    /// Bits per code.
    pub fn code_bits(&self) -> u32 {
        self.bits
    }

    /// Adds whole blocks: their scales and their codes.
    pub fn add(&mut self, bytes: &[u8]) -> Result<(), DequantError> {
        let mut counts = [[0u64; 256]; 4];
        match code_bytes(self.ty) {
            // Codes that are the blocks' bytes, nibbles or crumbs: count the bytes, fold them.
            Some(layout) => {
                self.add_scales(bytes)?;
                count_code_bytes(&mut counts, bytes, self.ty, &layout);
                self.add_code_byte_counts(&lane_sums(&counts));
            }
            None => {
                let ty = self.ty;
                let mut scales = self.scale_sink();
                let mut blocks = 0;
                block_parts(ty, bytes, |s, c| {
                    blocks += 1;
                    s.iter().for_each(|&s| scales.add(s));
                    count_in_fours(&mut counts, c);
                })?;
                scales.finish(blocks);
                self.add_code_counts(&counts);
            }
        }
        Ok(())
    }

    /// Adds whole blocks' scales (and the blocks), not their codes: those come from
    /// [`QuantStats::add_codes`] or [`QuantStats::add_code_byte_counts`].
    pub fn add_scales(&mut self, bytes: &[u8]) -> Result<(), DequantError> {
        let ty = self.ty;
        let mut scales = self.scale_sink();
        let mut blocks = 0;
        if f16_scale_offset(ty).is_some() {
            // One f16 scale a block: binned by its bits, without a block taken apart.
            let bins = f16_scale_bins();
            block_f16_scales_each(ty, bytes, |h| {
                blocks += 1;
                scales.add_f16(h, bins);
            })?;
        } else {
            block_scales_each(ty, bytes, |s| {
                blocks += 1;
                s.iter().for_each(|&s| scales.add(s));
            })?;
        }
        scales.finish(blocks);
        Ok(())
    }

    /// Adds codes read out already, one byte per value (as
    /// [`bitlens_tensors::format::gguf::dequantize_with_codes`] gives them while dequantizing),
    /// so that the blocks are not taken apart a second time.
    pub fn add_codes(&mut self, codes: &[u8]) {
        let mut counts = [[0u64; 256]; 4];
        count_in_fours(&mut counts, codes);
        self.add_code_counts(&counts);
    }

    /// Adds the codes held by code bytes counted elsewhere, for a type with a [`code_bytes`]
    /// layout (`counts[b]`: how many code bytes are `b`); the codes of other types are not
    /// bytes, and nothing is added for them.
    pub fn add_code_byte_counts(&mut self, counts: &[u64; 256]) {
        let Some(layout) = code_bytes(self.ty) else {
            return;
        };
        for byte in 0..=255u8 {
            let c = counts[usize::from(byte)];
            if c > 0 {
                layout.codes_of(byte, |code| self.code_hist[usize::from(code)] += c);
            }
        }
    }

    /// Adds four interleaved code histograms.
    fn add_code_counts(&mut self, counts: &[[u64; 256]; 4]) {
        // Codes are < 2^bits by construction: the bins past `code_hist` stay empty.
        for (h, c) in self.code_hist.iter_mut().zip(lane_sums(counts)) {
            *h += c;
        }
    }

    /// A sink for this summary's next scales.
    fn scale_sink(&mut self) -> ScaleSink<'_> {
        ScaleSink {
            n: 0,
            min: self.scale_min,
            max: self.scale_max,
            sum: 0.0,
            zero: 0,
            neg: 0,
            nonfinite: 0,
            bins: scale_bin_starts(),
            q: self,
        }
    }

    /// Adds another summary of the same type (from another window or worker).
    pub fn merge(&mut self, other: &QuantStats) {
        self.blocks += other.blocks;
        self.scales += other.scales;
        self.scale_min = self.scale_min.min(other.scale_min);
        self.scale_max = self.scale_max.max(other.scale_max);
        self.scale_sum += other.scale_sum;
        self.scale_zero += other.scale_zero;
        self.scale_negative += other.scale_negative;
        self.scale_nonfinite += other.scale_nonfinite;
        for (a, b) in self.scale_hist.iter_mut().zip(&other.scale_hist) {
            *a += b;
        }
        for (a, b) in self.code_hist.iter_mut().zip(&other.code_hist) {
            *a += b;
        }
    }

    /// Mean of the finite scales (`None` when there are none).
    pub fn scale_mean(&self) -> Option<f64> {
        (self.scales > 0).then(|| self.scale_sum / self.scales as f64)
    }

    /// The lower edge of scale histogram bin `i`, as a power of two's exponent.
    pub fn scale_bin_log2(i: usize) -> f64 {
        f64::from(SCALE_LOG2_MIN) + i as f64 / f64::from(SCALE_BINS_PER_OCTAVE)
    }

    /// Shannon entropy of the codes in bits per code (0 when there are none).
    pub fn code_entropy(&self) -> f64 {
        bits_per_symbol(&self.code_hist)
    }
}

/// The four interleaved histograms of [`count_in_fours`] as one.
fn lane_sums(counts: &[[u64; 256]; 4]) -> [u64; 256] {
    std::array::from_fn(|i| counts.iter().map(|h| h[i]).sum())
}

/// Adds `values`, value `i` into histogram `i % 4`.
#[inline]
fn count_in_fours(counts: &mut [[u64; 256]; 4], values: &[u8]) {
    let mut quads = values.chunks_exact(4);
    for q in quads.by_ref() {
        for (h, &v) in counts.iter_mut().zip(q) {
            h[usize::from(v)] += 1;
        }
    }
    for (h, &v) in counts.iter_mut().zip(quads.remainder()) {
        h[usize::from(v)] += 1;
    }
}

/// Counts the code bytes (`layout`) of the whole blocks of `ty` in `bytes`.
fn count_code_bytes(counts: &mut [[u64; 256]; 4], bytes: &[u8], ty: GgmlType, layout: &CodeBytes) {
    let bb = ty.block_bytes().unwrap_or(1).max(1) as usize;
    for b in bytes.chunks_exact(bb) {
        count_in_fours(counts, &b[layout.range.clone()]);
    }
}

/// Scales being added to a [`QuantStats`], in locals (so that the loop over blocks keeps them in
/// registers), written back by [`ScaleSink::finish`].
struct ScaleSink<'a> {
    q: &'a mut QuantStats,
    n: u64,
    min: f32,
    max: f32,
    sum: f64,
    zero: u64,
    neg: u64,
    nonfinite: u64,
    bins: &'static [f32; SCALE_STARTS],
}

impl ScaleSink<'_> {
    #[inline]
    fn add(&mut self, s: f32) {
        let bins = self.bins;
        self.add_binned(s, || bin_of(bins, s));
    }

    /// [`ScaleSink::add`] of the f16 scale `h` (its bits), its bin read from `bins`
    /// ([`f16_scale_bins`]).
    #[inline]
    fn add_f16(&mut self, h: u16, bins: &[u8; F16_FINITE]) {
        let s = half::f16::from_bits(h).to_f32();
        self.add_binned(s, || usize::from(bins[usize::from(h & 0x7FFF)]));
    }

    /// Adds scale `s`; `bin()` is its histogram bin, asked only for a non-zero finite `s`.
    #[inline]
    fn add_binned(&mut self, s: f32, bin: impl FnOnce() -> usize) {
        if !s.is_finite() {
            self.nonfinite += 1;
            return;
        }
        self.n += 1;
        self.min = self.min.min(s);
        self.max = self.max.max(s);
        self.sum += f64::from(s);
        self.neg += u64::from(s < 0.0);
        if s == 0.0 {
            self.zero += 1;
        } else {
            self.q.scale_hist[bin()] += 1;
        }
    }

    /// Writes the scales of `blocks` blocks back.
    fn finish(self, blocks: u64) {
        let q = self.q;
        q.blocks += blocks;
        q.scales += self.n;
        (q.scale_min, q.scale_max) = (self.min, self.max);
        q.scale_sum += self.sum;
        q.scale_zero += self.zero;
        q.scale_negative += self.neg;
        q.scale_nonfinite += self.nonfinite;
    }
}

/// The histogram bin of a non-zero finite scale: the rule, by `log2 |s|` in `f64`.
fn scale_bin(s: f32) -> usize {
    let l = f64::from(s.abs()).log2();
    let i = ((l - f64::from(SCALE_LOG2_MIN)) * f64::from(SCALE_BINS_PER_OCTAVE)).floor();
    i.clamp(0.0, (SCALE_BINS - 1) as f64) as usize
}

/// Bin starts kept by [`scale_bin_starts`]: one per bin after the first, then four +∞ (so that
/// [`bin_of`] reads four starts from any bin without a bounds test).
const SCALE_STARTS: usize = SCALE_BINS - 1 + 4;

/// `starts[k − 1]` is the smallest positive `f32` that [`scale_bin`] puts in bin `k` or above,
/// found once by bisection over the bit patterns of the positive finite `f32`s ([`scale_bin`]
/// is monotone in |s|), so that [`bin_of`] gives [`scale_bin`]'s bin without a logarithm. The
/// last four are +∞.
fn scale_bin_starts() -> &'static [f32; SCALE_STARTS] {
    static STARTS: std::sync::OnceLock<[f32; SCALE_STARTS]> = std::sync::OnceLock::new();
    STARTS.get_or_init(|| {
        let mut starts = [f32::INFINITY; SCALE_STARTS];
        for (k, start) in starts[..SCALE_BINS - 1].iter_mut().enumerate() {
            // The smallest bit pattern in 1..=f32::MAX whose bin is ≥ k + 1 (f32::MAX's is the
            // last bin, so one exists).
            let (mut lo, mut hi) = (1u32, f32::MAX.to_bits());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if scale_bin(f32::from_bits(mid)) > k {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            *start = f32::from_bits(lo);
        }
        starts
    })
}

/// Bit patterns of |f16| below +∞: the finite magnitudes (0x0000..0x7C00).
const F16_FINITE: usize = 0x7C00;

/// The histogram bin ([`bin_of`]) of every non-zero finite f16 scale, by its magnitude's bits
/// (31 KiB, made once): the bin of a one-f16-scale block type's scale (Q8_0, Q4_0, …) is one
/// load where [`bin_of`] took four comparisons after the block was taken apart; `bitlens
/// inspect` of those types is 3–5 % faster on one thread (BENCHMARKS.md, "one-f16-scale blocks'
/// scales by a table"). Entry 0 (zero) is unused.
fn f16_scale_bins() -> &'static [u8; F16_FINITE] {
    static BINS: std::sync::OnceLock<[u8; F16_FINITE]> = std::sync::OnceLock::new();
    const { assert!(SCALE_BINS <= 256) };
    BINS.get_or_init(|| {
        let starts = scale_bin_starts();
        let mut bins = [0u8; F16_FINITE];
        for (h, bin) in bins.iter_mut().enumerate().skip(1) {
            *bin = bin_of(starts, half::f16::from_bits(h as u16).to_f32()) as u8;
        }
        bins
    })
}

/// [`scale_bin`] of a non-zero finite scale: the number of bin starts at or below |s|. With
/// `e` its binary exponent, log2 |s| (rounded to `f64`, which keeps powers of two exact and
/// the order) lies in `[e, e + 1]`, so its bin lies between `g`, the bin of `2^e`, and `g + 4`:
/// every start below `g` is at most `2^e`, every start from `g + 4` on is above `2^(e+1)`, and
/// the bin is `g` plus how many of the four starts from `g` on are at most |s| (subnormal and
/// tiny scales clamp to bin 0, huge ones to the last bin, where the +∞ starts count none).
#[inline]
fn bin_of(starts: &[f32; SCALE_STARTS], s: f32) -> usize {
    let a = s.abs();
    let exp = (a.to_bits() >> 23) as i32 - 127;
    let g = ((exp - SCALE_LOG2_MIN) * SCALE_BINS_PER_OCTAVE as i32).clamp(0, SCALE_BINS as i32 - 1);
    let g = g as usize;
    let four: &[f32; 4] = starts[g..g + 4].try_into().unwrap_or(&[f32::INFINITY; 4]);
    g + four.iter().map(|&t| usize::from(t <= a)).sum::<usize>()
}

/// A quantized tensor's block scales and quant codes, as reported (see
/// [`bitlens_tensors::format::gguf::parts`] for what scales and codes are per type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantSummary {
    /// Blocks seen.
    pub blocks: u64,
    /// Finite scales seen.
    pub scales: u64,
    /// Smallest finite scale.
    pub scale_min: Option<f32>,
    /// Largest finite scale.
    pub scale_max: Option<f32>,
    /// Mean of the finite scales.
    pub scale_mean: Option<f64>,
    /// Scales exactly zero.
    pub scale_zero: u64,
    /// Negative finite scales.
    pub scale_negative: u64,
    /// NaN or infinite scales.
    pub scale_nonfinite: u64,
    /// log2 of the lower edge of the first bin of `scale_hist`.
    pub scale_hist_log2_min: f64,
    /// log2 width of one bin of `scale_hist`.
    pub scale_hist_log2_step: f64,
    /// Histogram of log2 |scale| of the non-zero finite scales (ends clamped).
    pub scale_hist: Vec<u64>,
    /// Bits per quant code.
    pub code_bits: u32,
    /// How often each code occurs (index = code).
    pub code_hist: Vec<u64>,
    /// Shannon entropy of the codes, bits per code.
    pub code_entropy: f64,
}

impl QuantSummary {
    /// The report of an accumulator.
    pub fn of(q: &QuantStats) -> QuantSummary {
        let finite = q.scales > 0;
        QuantSummary {
            blocks: q.blocks,
            scales: q.scales,
            scale_min: finite.then_some(q.scale_min),
            scale_max: finite.then_some(q.scale_max),
            scale_mean: q.scale_mean(),
            scale_zero: q.scale_zero,
            scale_negative: q.scale_negative,
            scale_nonfinite: q.scale_nonfinite,
            scale_hist_log2_min: QuantStats::scale_bin_log2(0),
            scale_hist_log2_step: QuantStats::scale_bin_log2(1) - QuantStats::scale_bin_log2(0),
            scale_hist: q.scale_hist.clone(),
            code_bits: q.code_bits(),
            code_hist: q.code_hist.clone(),
            code_entropy: q.code_entropy(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_tensors::format::gguf::parts::quant_codes;

    #[test]
    fn quant_stats_of_q4_0_blocks() {
        // Two Q4_0 blocks: d = 1 and d = 0.25; codes 0..16 twice, then all 8.
        let mut bytes = [0u8; 36];
        bytes[..2].copy_from_slice(&0x3C00u16.to_le_bytes());
        for j in 0..16 {
            bytes[2 + j] = (j as u8) | ((j as u8) << 4);
        }
        bytes[18..20].copy_from_slice(&0x3400u16.to_le_bytes());
        bytes[20..36].fill(0x88);
        let mut s = QuantStats::new(GgmlType::Q4_0).unwrap();
        s.add(&bytes[..18]).unwrap();
        let mut t = QuantStats::new(GgmlType::Q4_0).unwrap();
        t.add(&bytes[18..]).unwrap();
        s.merge(&t);
        assert_eq!(
            (s.blocks, s.scales, s.scale_min, s.scale_max),
            (2, 2, 0.25, 1.0)
        );
        assert_eq!(s.scale_mean(), Some(0.625));
        assert_eq!(s.scale_hist.iter().sum::<u64>(), 2);
        assert_eq!(s.code_hist[8], 2 + 32);
        // 16 codes twice each and 8 another 32 times: p(8) = 34/64, others 2/64.
        let p = [34.0 / 64.0].into_iter().chain([2.0 / 64.0; 15]);
        let h: f64 = -p.map(|p: f64| p * p.log2()).sum::<f64>();
        assert!((s.code_entropy() - h).abs() < 1e-12);
        assert!(QuantStats::new(GgmlType::IQ2_XXS).is_none());
    }

    #[test]
    fn scale_bins_by_their_starts_are_the_bins_by_log2() {
        let starts = scale_bin_starts();
        let same = |s: f32| {
            assert_eq!(
                bin_of(starts, s),
                scale_bin(s),
                "{s:e} ({:#x})",
                s.to_bits()
            )
        };
        // Around every bin start, the bisection's step: proof for a monotone rule.
        for &t in &starts[..SCALE_BINS - 1] {
            let b = t.to_bits();
            for bits in b.saturating_sub(3)..=b + 3 {
                same(f32::from_bits(bits));
                same(-f32::from_bits(bits));
            }
        }
        // Every f16 (the legacy types' scales), also as the table of f16 bins reads it, and the
        // ends of the f32 range.
        let f16_bins = f16_scale_bins();
        for h in 1..0x7C00u16 {
            let s = half::f16::from_bits(h).to_f32();
            same(s);
            assert_eq!(
                usize::from(f16_bins[usize::from(h)]),
                scale_bin(s),
                "{h:#x}"
            );
        }
        for s in [
            f32::MIN_POSITIVE,
            1e-45,
            2f32.powi(-32),
            2f32.powi(16),
            f32::MAX,
        ] {
            same(s);
        }
        // Seeded random f32 bit patterns (finite, non-zero).
        let bytes = bitlens_test_support::rng::bytes(2828, 4 << 16);
        for w in bytes.chunks_exact(4) {
            let s = f32::from_le_bytes(w.try_into().unwrap());
            if s.is_finite() && s != 0.0 {
                same(s);
            }
        }
    }

    /// [`QuantStats::add`] by [`block_parts`] alone: every scale and code as the block gives it.
    fn reference(ty: GgmlType, bytes: &[u8]) -> QuantStats {
        let mut r = QuantStats::new(ty).unwrap();
        block_parts(ty, bytes, |scales, codes| {
            r.blocks += 1;
            for &s in scales {
                if !s.is_finite() {
                    r.scale_nonfinite += 1;
                    continue;
                }
                r.scales += 1;
                r.scale_min = r.scale_min.min(s);
                r.scale_max = r.scale_max.max(s);
                r.scale_sum += f64::from(s);
                r.scale_negative += u64::from(s < 0.0);
                if s == 0.0 {
                    r.scale_zero += 1;
                } else {
                    r.scale_hist[scale_bin(s)] += 1;
                }
            }
            for &c in codes {
                r.code_hist[usize::from(c)] += 1;
            }
        })
        .unwrap();
        r
    }

    #[test]
    fn quant_stats_are_the_blocks_parts_for_every_type_and_odd_scale() {
        // Random blocks, and the same with their first f16 field (or their one f16 scale) set
        // to special scales (zero, -0, subnormal, the largest, ±Inf, NaN) — for every covered
        // type, whichever path it takes (one f16 scale a block, code bytes or block parts).
        let specials: [u16; 8] = [0, 0x8000, 0x0001, 0x03FF, 0x7BFF, 0x7C00, 0xFC00, 0x7E00];
        for ty in GgmlType::all().filter(|&t| code_bits(t).is_some()) {
            let bb = ty.block_bytes().unwrap() as usize;
            let mut bytes = bitlens_test_support::rng::bytes(777 + u64::from(ty.0), bb * 40);
            let at = f16_scale_offset(ty).unwrap_or(0);
            for (i, b) in bytes.chunks_mut(bb).enumerate().skip(20) {
                b[at..at + 2].copy_from_slice(&specials[i % specials.len()].to_le_bytes());
            }
            let (mut s, mut r) = (QuantStats::new(ty).unwrap(), QuantStats::new(ty).unwrap());
            for part in bytes.chunks(bb * 7) {
                s.add(part).unwrap();
                r.merge(&reference(ty, part));
            }
            assert_eq!(s, r, "{ty:?}");
        }
    }

    #[test]
    fn quant_stats_cover_the_main_families() {
        for ty in GgmlType::all().filter(|&t| code_bits(t).is_some()) {
            let n = ty.block_bytes().unwrap() as usize * 3;
            let bytes = bitlens_test_support::rng::bytes(12345 + u64::from(ty.0), n);
            let mut s = QuantStats::new(ty).unwrap();
            s.add(&bytes).unwrap();
            assert_eq!(s.code_hist.len(), 1 << s.code_bits(), "{ty:?}");
            let codes = quant_codes(ty, &bytes).unwrap();
            assert_eq!(s.code_hist.iter().sum::<u64>(), codes.len() as u64);
            assert!(s.code_entropy() <= f64::from(s.code_bits()) + 1e-9);
        }
    }
}
