//! Whether BG4 should help a chunk: the hub's KL-divergence test (xet-core
//! `xet_core_structures/src/xorb_object/byte_grouping/bg4_prediction.rs`, `BG4Predictor::
//! add_data_reference` and `bg4_recommended`).
//!
//! For each byte position modulo 4 it counts the bytes by their number of set bits (0..=8: four
//! histograms of nine bins). The four are summed into a base histogram whose bins start at 1 (so
//! none is zero); for each position `i` it computes the Kullback–Leibler divergence
//! `Σ_j p_ij · ln(p_ij / q_j)` of that position's distribution `p_i` from the base's `q`, and
//! recommends BG4 when the largest of the four exceeds 0.02.
//!
//! Reproduced to the letter, quirk included: a position with an empty bin has a term `0 · ln 0`,
//! which is NaN in IEEE arithmetic, so its divergence is NaN and `f64::max` passes over it. Such a
//! position (typically the sign-and-exponent byte of floats, whose popcounts never reach some
//! bins) does not count; when every position has an empty bin, or the chunk has fewer than four
//! bytes, the answer is "no" (plain LZ4).

/// The divergence above which BG4 is recommended (the hub's constant).
pub const KL_THRESHOLD: f64 = 0.02;

/// The four popcount histograms of `data` (position `i % 4`, bin = set bits of the byte).
pub fn histograms(data: &[u8]) -> [[u32; 9]; 4] {
    let mut h = [[0u32; 9]; 4];
    for (i, &b) in data.iter().enumerate() {
        h[i % 4][b.count_ones() as usize] += 1;
    }
    h
}

/// The largest divergence of a position from the base, NaN positions passed over (0 when all are).
pub fn max_divergence(h: &[[u32; 9]; 4]) -> f64 {
    let mut base = [1u32; 9];
    let mut totals = [0u32; 4];
    for (i, row) in h.iter().enumerate() {
        for (j, &c) in row.iter().enumerate() {
            base[j] += c;
            totals[i] += c;
        }
    }
    let base_total: u32 = totals.iter().sum();
    let mut max = 0f64;
    for (row, &total) in h.iter().zip(&totals) {
        let mut kl = 0f64;
        for (&c, &b) in row.iter().zip(&base) {
            let p = f64::from(c) / f64::from(total);
            let q = f64::from(b) / f64::from(base_total);
            kl += p * (p / q).ln();
        }
        max = max.max(kl);
    }
    max
}

/// Whether the hub would compress `chunk` with BG4-LZ4 rather than plain LZ4.
pub fn bg4_recommended(chunk: &[u8]) -> bool {
    max_divergence(&histograms(chunk)) > KL_THRESHOLD
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value once per position: four equal distributions, no divergence.
    #[test]
    fn equal_positions_recommend_plain_lz4() {
        let data: Vec<u8> = (0..1024u32).map(|i| (i / 4) as u8).collect();
        let h = histograms(&data);
        assert!(h.iter().all(|row| row == &h[0]));
        assert!(max_divergence(&h) < 1e-3);
        assert!(!bg4_recommended(&data));
    }

    /// Position 3 holds one byte of each popcount and 247 of four set bits, among positions
    /// that take every byte value once: its divergence, computed here from the counts, is far
    /// above the threshold and the largest.
    #[test]
    fn one_skewed_position_recommends_bg4() {
        let data: Vec<u8> = (0..1024u32)
            .map(|i| match (i % 4, i / 4) {
                (3, k @ 0..=8) => ((1u16 << k) - 1) as u8,
                (3, _) => 0x0f,
                (_, k) => k as u8,
            })
            .collect();
        let h = histograms(&data);
        // Positions 0..2: the binomial counts C(8, j) of 256 bytes.
        let binom = [1u32, 8, 28, 56, 70, 56, 28, 8, 1];
        assert_eq!(h[0], binom);
        assert_eq!(h[3], [1, 1, 1, 1, 248, 1, 1, 1, 1]);
        // The base: a prior of 1 per bin plus every position's count, over the 1024 bytes.
        let q = |j: usize| f64::from(1 + 3 * binom[j] + h[3][j]) / 1024.0;
        let kl3: f64 = (0..9)
            .map(|j| {
                let p = f64::from(h[3][j]) / 256.0;
                p * (p / q(j)).ln()
            })
            .sum();
        assert!(kl3 > 0.3, "{kl3}");
        assert!((max_divergence(&h) - kl3).abs() < 1e-12, "{kl3}");
        assert!(bg4_recommended(&data));
    }

    /// The published quirk: a position with an empty bin gives NaN and is passed over, so the
    /// same skew with bins left empty everywhere recommends plain LZ4.
    #[test]
    fn positions_with_empty_bins_do_not_count() {
        let data: Vec<u8> = (0..1024u32)
            .map(|i| if i % 4 == 3 { 0xff } else { 0x0f })
            .collect();
        let h = histograms(&data);
        assert_eq!(h[3][8], 256);
        assert_eq!(max_divergence(&h), 0.0);
        assert!(!bg4_recommended(&data));
        assert!(!bg4_recommended(&[1, 2, 3]));
        assert!(!bg4_recommended(&[]));
    }
}
