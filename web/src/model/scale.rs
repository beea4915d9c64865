//! Linear scales from data to SVG coordinates, and "nice" tick positions (1, 2, 5 × 10ᵏ steps).

/// Maps the data interval `[d0, d1]` onto the pixel interval `[r0, r1]` (either may be reversed).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    /// Data start.
    pub d0: f64,
    /// Data end.
    pub d1: f64,
    /// Pixel position of `d0`.
    pub r0: f64,
    /// Pixel position of `d1`.
    pub r1: f64,
}

impl Linear {
    /// A scale; a degenerate data interval is widened so every value maps to the middle.
    pub fn new(d0: f64, d1: f64, r0: f64, r1: f64) -> Self {
        let (d0, d1) = if (d1 - d0).abs() < f64::EPSILON * d0.abs().max(1.0) {
            (d0 - 0.5, d0 + 0.5)
        } else {
            (d0, d1)
        };
        Linear { d0, d1, r0, r1 }
    }

    /// The pixel position of a data value.
    pub fn map(&self, x: f64) -> f64 {
        self.r0 + (x - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)
    }
}

/// About `target` tick values covering `[lo, hi]`, on a 1 / 2 / 5 × 10ᵏ grid.
pub fn ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    if !lo.is_finite() || !hi.is_finite() || target == 0 {
        return Vec::new();
    }
    let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
    if hi - lo < f64::EPSILON * lo.abs().max(1.0) {
        return vec![lo];
    }
    let raw = (hi - lo) / target as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    // Snap float noise such as 0.6000000000000001 to the step's decimals.
    let decimals = (-step.log10().floor()).max(0.0) as i32 + 1;
    let unit = 10f64.powi(decimals);
    (first..=last)
        .map(|i| (i as f64 * step * unit).round() / unit)
        .collect()
}

/// `[lo, hi]` widened to the enclosing tick grid, for axes that should start and end on a tick.
pub fn nice_domain(lo: f64, hi: f64, target: usize) -> (f64, f64) {
    let t = ticks(lo, hi, target);
    match (t.first(), t.last(), t.get(1)) {
        (Some(&a), Some(&b), Some(&second)) => {
            let step = second - a;
            let lo2 = if a > lo { a - step } else { a };
            let hi2 = if b < hi { b + step } else { b };
            (lo2, hi2)
        }
        _ => (lo, hi),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_linearly_and_reversed() {
        let s = Linear::new(0.0, 1.0, 200.0, 0.0);
        assert_eq!(s.map(0.0), 200.0);
        assert_eq!(s.map(1.0), 0.0);
        assert_eq!(s.map(0.25), 150.0);
        let flat = Linear::new(3.0, 3.0, 0.0, 100.0);
        assert_eq!(flat.map(3.0), 50.0);
    }

    #[test]
    fn ticks_are_nice() {
        assert_eq!(ticks(0.0, 1.0, 5), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(ticks(0.0, 8.0, 4), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(ticks(-0.13, 0.11, 4), vec![-0.1, 0.0, 0.1]);
        assert_eq!(ticks(5.0, 5.0, 4), vec![5.0]);
        assert!(ticks(f64::NAN, 1.0, 4).is_empty());
        assert_eq!(nice_domain(0.03, 0.97, 5), (0.0, 1.0));
    }
}
