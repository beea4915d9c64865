//! The entropy estimates of LMC paper §4.1 the encoder decides by (whether a split pays, whether
//! a sampled block is stored Raw): fast and approximate (`log2_approx`) by design, so they are not
//! the exact order-0 entropy of `bitlens_stats::entropy`, and changing them changes the bytes the
//! encoder writes.

use super::SPLIT_LEAF;

/// Fast log2 for positive integers as f64 (error < 2e-4; only used for estimates): the
/// exponent of the `f32`, plus a polynomial for the natural log of its mantissa `m ∈ [1, 2)`
/// scaled by `log2(e)`.
#[inline]
fn log2_approx(c: u32) -> f64 {
    let x = c as f32;
    let b = x.to_bits();
    let e = ((b >> 23) as i32 - 127) as f32;
    let m = f32::from_bits((b & 0x007F_FFFF) | 0x3F80_0000);
    let ln_m = -1.741_793_9
        + (2.821_202_6 + (-1.469_956_8 + (0.447_179_55 - 0.056_570_85 * m) * m) * m) * m;
    (e + ln_m * std::f32::consts::LOG2_E) as f64
}

/// `Σ c · log2(c)` over the counts `c > 0` of `h` (from which the order-0 entropy of `n` bytes
/// is `log2(n) − Σ / n` bits per byte), and how many counts are nonzero.
#[inline]
fn sum_c_log2_c(h: &[u32; 256]) -> (f64, usize) {
    let mut s = 0f64;
    let mut used = 0usize;
    for &c in h {
        if c > 0 {
            used += 1;
            s += c as f64 * log2_approx(c);
        }
    }
    (s, used)
}

/// Estimated coded size in bytes of a block with histogram `h` of `n` bytes: the cheaper of Raw,
/// Run and a Huffman block costed at its order-0 entropy plus a table of ~`8 + used / 3` bytes.
#[inline]
pub(super) fn estimate_bytes(h: &[u32; 256], n: usize) -> f64 {
    let (s, used) = sum_c_log2_c(h);
    if used <= 1 {
        return 2.0;
    }
    let bits = n as f64 * log2_approx(n as u32) - s;
    let huffman = bits / 8.0 + 17.0 + used as f64 / 3.0;
    huffman.min(n as f64 + 1.0)
}

/// Smallest share of a block that entropy coding must save, judged on a sample, before the
/// encoder builds a code for it; below it the block is stored raw without a full histogram.
/// Near-random byte groups (the low mantissa bytes of weights) then cost one pass less to
/// encode and nothing to decode. Measured on the real MiniLM weights (ratio of the data
/// section at 0 / this threshold): see the module docs.
const MIN_SAMPLED_SAVING: f64 = 1.0 / 64.0;

/// Whether a sample of `block` (4 KiB of it: the first 8 bytes of every `len / 512`-byte
/// stretch) has an order-0 entropy so close to 8 bits that coding would save less than
/// [`MIN_SAMPLED_SAVING`] (see [`sample_says_raw`]).
#[inline]
pub(super) fn looks_incompressible(block: &[u8]) -> bool {
    if block.len() < 4 * SPLIT_LEAF {
        return false;
    }
    let stride = block.len() / SAMPLE_WORDS;
    let mut h = [[0u32; 256]; 4];
    let mut count = 0usize;
    for w in block.chunks_exact(stride) {
        let w: &[u8; 8] = w[..8].try_into().expect("stride ≥ 128");
        for k in 0..4 {
            h[k][w[k] as usize] += 1;
            h[k][w[4 + k] as usize] += 1;
        }
        count += 1;
    }
    let total = std::array::from_fn(|i| h[0][i] + h[1][i] + h[2][i] + h[3][i]);
    sample_says_raw(&total, count * 8)
}

/// Whether a sample of `n` bytes with histogram `h` has an order-0 entropy within
/// [`MIN_SAMPLED_SAVING`] of 8 bits (see [`looks_incompressible`]).
///
/// The plug-in entropy of a sample is biased low by about `(m − 1) / (2 n ln 2)` bits for `m`
/// symbols seen (0.045 bit for uniform bytes at 4 KiB); the Miller–Madow term adds that back, so
/// the threshold means the same at any sample size. A 4 KiB sample compresses bf16 3 % faster
/// than the 16 KiB one before (`lmc_speed --loop compress`, 8 alternating runs: median
/// 1920 → 1967 MB/s, with the `log2_approx` fix that came with it).
#[inline]
pub(super) fn sample_says_raw(h: &[u32; 256], n: usize) -> bool {
    let (s, seen) = sum_c_log2_c(h);
    // Entropy in bits per byte: log2(n) − Σ c·log2(c) / n, plus the bias correction.
    let plug_in = log2_approx(n as u32) - s / n as f64;
    let entropy = plug_in + (seen.max(1) - 1) as f64 / (2.0 * n as f64 * std::f64::consts::LN_2);
    entropy > 8.0 * (1.0 - MIN_SAMPLED_SAVING)
}

/// 8-byte words in the sample of [`looks_incompressible`] (4 KiB).
pub(super) const SAMPLE_WORDS: usize = 512;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_approx_is_close() {
        for c in (1..70_000u32).chain([1 << 20, 3 << 20, 131_071, 131_072, u32::MAX]) {
            let err = (log2_approx(c) - (c as f64).log2()).abs();
            assert!(err < 2e-4, "log2({c}): error {err}");
        }
    }

    #[test]
    fn the_raw_decision_corrects_the_small_sample_bias() {
        // Bytes uniform over `k` values have an entropy of log2(k) bits: 240 values (7.907)
        // save less than 1/64 (threshold 7.875) and go Raw; 224 values (7.807) do not. The
        // plug-in estimate of the 4 KiB sample alone (~7.865 for 240) would code them.
        let mut random = crate::xorshift(0x2545_f491_4f6c_dd1d);
        let mut next = move || random() >> 24;
        let mut block =
            |k: u64| -> Vec<u8> { (0..128 << 10).map(|_| (next() % k) as u8).collect() };
        assert!(looks_incompressible(&block(256)));
        assert!(looks_incompressible(&block(240)));
        assert!(!looks_incompressible(&block(224)));
        assert!(
            !looks_incompressible(&block(240)[..60 << 10]),
            "below 64 KiB nothing is sampled"
        );
    }
}
