//! The numbers the Quantization part of a block-quantized tensor's detail derives from
//! [`bitlens_stats::QuantSummary`]: the size of its codes stored and at their entropy, and the
//! used part of its log2 |scale| histogram (see `ui::views::quant`).

use bitlens_stats::QuantSummary;

/// What the codes of a quantized tensor take, stored and at their entropy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CodeSizes {
    /// Codes counted.
    pub codes: u64,
    /// Bytes they take at `code_bits` each.
    pub stored: f64,
    /// Bytes they would take at their (order-0) entropy.
    pub at_entropy: f64,
    /// The tensor's bytes with its codes at their entropy and every other byte (scales, mins) as
    /// stored.
    pub implied: f64,
}

impl CodeSizes {
    /// The sizes of `q`'s codes in a tensor of `total` stored bytes.
    pub fn of(q: &QuantSummary, total: u64) -> CodeSizes {
        let codes: u64 = q.code_hist.iter().sum();
        let stored = codes as f64 * f64::from(q.code_bits) / 8.0;
        let at_entropy = codes as f64 * q.code_entropy / 8.0;
        CodeSizes {
            codes,
            stored,
            at_entropy,
            implied: (total as f64 - stored).max(0.0) + at_entropy,
        }
    }
}

/// One bin of the log2 |scale| histogram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScaleBin {
    /// Index in [`QuantSummary::scale_hist`].
    pub index: usize,
    /// log2 of its lower edge.
    pub lo: f64,
    /// log2 of its upper edge.
    pub hi: f64,
    /// Scales in it.
    pub count: u64,
    /// The first bin (which also counts every smaller scale).
    pub first: bool,
    /// The last bin (which also counts every larger scale).
    pub last: bool,
}

/// The used bins of `q`'s scale histogram, with one empty bin either side (none when there is no
/// non-zero finite scale).
pub fn scale_bins(q: &QuantSummary) -> Vec<ScaleBin> {
    let h = &q.scale_hist;
    let (Some(first), Some(last)) = (
        h.iter().position(|&c| c > 0),
        h.iter().rposition(|&c| c > 0),
    ) else {
        return Vec::new();
    };
    let edge = |i: usize| q.scale_hist_log2_min + i as f64 * q.scale_hist_log2_step;
    (first.saturating_sub(1)..=(last + 1).min(h.len() - 1))
        .map(|i| ScaleBin {
            index: i,
            lo: edge(i),
            hi: edge(i + 1),
            count: h[i],
            first: i == 0,
            last: i == h.len() - 1,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(scale_hist: Vec<u64>) -> QuantSummary {
        let mut code_hist = vec![0; 16];
        code_hist[3] = 32;
        code_hist[4] = 32;
        QuantSummary {
            blocks: 2,
            scales: 2,
            scale_min: Some(0.5),
            scale_max: Some(1.0),
            scale_mean: Some(0.75),
            scale_zero: 0,
            scale_negative: 0,
            scale_nonfinite: 0,
            scale_hist_log2_min: -32.0,
            scale_hist_log2_step: 0.25,
            scale_hist,
            code_bits: 4,
            code_hist,
            code_entropy: 1.0,
        }
    }

    #[test]
    fn code_sizes_keep_the_other_bytes_and_shrink_the_codes() {
        // Q4_0: 2 blocks of 18 bytes, 64 codes of 4 bits = 32 bytes, 4 bytes of scales.
        let s = CodeSizes::of(&summary(vec![0; 192]), 36);
        assert_eq!((s.codes, s.stored, s.at_entropy), (64, 32.0, 8.0));
        assert_eq!(s.implied, 4.0 + 8.0);
    }

    #[test]
    fn scale_bins_are_the_used_range_and_one_either_side() {
        assert!(scale_bins(&summary(vec![0; 192])).is_empty());
        let mut h = vec![0; 192];
        h[124] = 1; // [2^-1, 2^-0.75)
        h[128] = 1; // [2^0, 2^0.25)
        let bins = scale_bins(&summary(h));
        assert_eq!(bins.len(), 7);
        assert_eq!((bins[0].index, bins[0].lo, bins[0].count), (123, -1.25, 0));
        assert_eq!((bins[1].lo, bins[1].hi, bins[1].count), (-1.0, -0.75, 1));
        assert_eq!((bins[5].lo, bins[5].count), (0.0, 1));
        assert!(!bins[0].first && !bins[6].last);
        let mut ends = vec![0; 192];
        ends[0] = 2;
        ends[191] = 3;
        let bins = scale_bins(&summary(ends));
        assert_eq!(bins.len(), 192);
        assert!(bins[0].first && bins[191].last);
    }
}
