//! Order-0 entropy of symbol histograms (LMC §4.1).

/// Information content of a histogram in bits: `Σ cᵢ · log2(n / cᵢ)`, the size an ideal order-0
/// entropy coder would need for the symbols counted.
pub fn cost_bits<C: Copy + Into<u64>>(hist: &[C]) -> f64 {
    let n: u64 = hist.iter().map(|&c| c.into()).sum();
    if n == 0 {
        return 0.0;
    }
    let log_n = (n as f64).log2();
    hist.iter()
        .map(|&c| c.into())
        .filter(|&c| c > 0)
        .map(|c| {
            let c = c as f64;
            c * (log_n - c.log2())
        })
        .sum::<f64>()
        .max(0.0)
}

/// Entropy of a histogram in bits per symbol (0 for an empty histogram).
pub fn bits_per_symbol<C: Copy + Into<u64>>(hist: &[C]) -> f64 {
    let n: u64 = hist.iter().map(|&c| c.into()).sum();
    if n == 0 {
        0.0
    } else {
        cost_bits(hist) / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        assert_eq!(bits_per_symbol::<u64>(&[]), 0.0);
        assert_eq!(bits_per_symbol(&[5u64, 0, 0]), 0.0);
        assert!((bits_per_symbol(&[1u64, 1]) - 1.0).abs() < 1e-12);
        assert!((bits_per_symbol(&[1u64; 256]) - 8.0).abs() < 1e-12);
        // p = (1/2, 1/4, 1/4) → 1.5 bits
        assert!((bits_per_symbol(&[2u32, 1, 1]) - 1.5).abs() < 1e-12);
        assert!((cost_bits(&[2u32, 1, 1]) - 6.0).abs() < 1e-12);
    }
}
