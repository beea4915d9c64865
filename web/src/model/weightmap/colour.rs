//! The weight map's colours: a [`Normalizer`] puts each pixel's value on the colour scale (from
//! −1 to 1 around zero for signed quantities, 0 to 1 over the range shown for the others;
//! linear, symmetric log, or by rank), the diverging (blue – light – red) and sequential
//! (viridis) ramps, and the legend's ticks. Both ramps keep their lightness monotone on each
//! side, so a map reads in grey too.

use super::{Quantity, Scale};

/// The diverging ramp from −1 to 1 (ColorBrewer RdBu, 7 stops: blue for negative, red for
/// positive, near-white at zero).
const DIVERGING: [[u8; 3]; 7] = [
    [33, 102, 172],
    [103, 169, 207],
    [209, 229, 240],
    [247, 247, 247],
    [253, 219, 199],
    [239, 138, 98],
    [178, 24, 43],
];

/// The sequential ramp from 0 to 1 (viridis, 6 stops).
const SEQUENTIAL: [[u8; 3]; 6] = [
    [68, 1, 84],
    [65, 68, 135],
    [42, 120, 142],
    [34, 168, 132],
    [122, 209, 81],
    [253, 231, 37],
];

/// Linear interpolation along a ramp, `t` in [0, 1].
fn ramp(stops: &[[u8; 3]], t: f32) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0) * (stops.len() - 1) as f32;
    let i = (t.floor() as usize).min(stops.len() - 2);
    let f = t - i as f32;
    let mix = |a: u8, b: u8| (f32::from(a) + (f32::from(b) - f32::from(a)) * f).round() as u8;
    let (a, b) = (stops[i], stops[i + 1]);
    [mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2])]
}

/// The colour of scale position `t`: in [−1, 1] when `diverging`, else [0, 1].
pub fn rgb(t: f32, diverging: bool) -> [u8; 3] {
    if diverging {
        ramp(&DIVERGING, (t + 1.0) / 2.0)
    } else {
        ramp(&SEQUENTIAL, t)
    }
}

/// How values become scale positions for one picture.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalizer {
    scale: Scale,
    diverging: bool,
    /// Sequential: the range's low end; diverging: 0.
    lo: f32,
    /// Sequential: the range's high end; diverging: the largest magnitude.
    hi: f32,
    /// Symmetric log: where the linear part ends (a thousandth of the span).
    linear: f32,
    /// Quantile: the sorted values (diverging: magnitudes).
    sorted: Vec<f32>,
    /// The ramp's colours at [`STEPS`] + 1 evenly spaced positions over its range.
    lut: Vec<[u8; 3]>,
}

/// Steps of the colour table a picture is drawn with (finer than a screen tells apart).
const STEPS: usize = 1024;

impl Normalizer {
    /// The normalizer of `values` (the pixels shown) for `q` on `scale`.
    pub fn new(values: &[f32], q: Quantity, scale: Scale) -> Normalizer {
        let diverging = q.diverging();
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let (lo, hi) = if diverging {
            (0.0, finite.clone().fold(0.0f32, |m, v| m.max(v.abs())))
        } else if let Some(r) = q.fixed_range() {
            r
        } else {
            finite
                .clone()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| {
                    (a.min(v), b.max(v))
                })
        };
        let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 0.0) };
        let span = hi - lo;
        let linear = (span * 1e-3).max(f32::MIN_POSITIVE);
        let sorted = if scale == Scale::Quantile {
            let mut s: Vec<f32> = finite
                .map(|v| if diverging { v.abs() } else { v })
                .collect();
            s.sort_by(f32::total_cmp);
            s
        } else {
            Vec::new()
        };
        let lut = (0..=STEPS)
            .map(|i| {
                let u = i as f32 / STEPS as f32;
                rgb(if diverging { u * 2.0 - 1.0 } else { u }, diverging)
            })
            .collect();
        Normalizer {
            scale,
            diverging,
            lo,
            hi,
            linear,
            sorted,
            lut,
        }
    }

    /// The colour drawn for `v` (None for NaN): the ramp at its position, to 1/1024 of the range.
    pub fn colour(&self, v: f32) -> Option<[u8; 3]> {
        if let Some(linear) = self.linear_steps() {
            return (!v.is_nan()).then(|| self.linear_colour(linear, v));
        }
        let t = self.position(v)?;
        let u = if self.diverging { (t + 1.0) / 2.0 } else { t };
        // Rounded by adding one half (the position is not negative): `f32::round` is a call
        // in WebAssembly, once per pixel.
        Some(self.lut[((u * STEPS as f32).clamp(0.0, STEPS as f32) + 0.5) as usize])
    }

    /// True when positions run from −1 to 1 around zero.
    pub fn diverging(&self) -> bool {
        self.diverging
    }

    /// The position of a magnitude `m` (diverging: |v|; sequential: v − lo) in [0, 1].
    fn unit(&self, m: f32, raw: f32) -> f32 {
        let span = self.hi - self.lo;
        if span <= 0.0 {
            return if self.diverging { 0.0 } else { 0.5 };
        }
        match self.scale {
            Scale::Linear => m / span,
            Scale::SymLog => (1.0 + m / self.linear).ln() / (1.0 + span / self.linear).ln(),
            Scale::Quantile => {
                // The share of the values shown below this one (ties at their lowest rank, so
                // zero stays at the centre).
                let below = self.sorted.partition_point(|&s| s < raw);
                below as f32 / (self.sorted.len().max(2) - 1) as f32
            }
        }
        .clamp(0.0, 1.0)
    }

    /// The position of `v` (None for NaN).
    pub fn position(&self, v: f32) -> Option<f32> {
        if v.is_nan() {
            return None;
        }
        Some(if self.diverging {
            let m = v.abs().min(self.hi);
            self.unit(m, m).copysign(v)
        } else {
            let c = v.clamp(self.lo, self.hi);
            self.unit(c - self.lo, c)
        })
    }

    /// The value at position `t` (the legend's ticks).
    pub fn value_at(&self, t: f32) -> f32 {
        let span = self.hi - self.lo;
        let m = t.abs().min(1.0);
        let inner = match self.scale {
            Scale::Linear => m * span,
            Scale::SymLog => ((1.0 + span / self.linear).powf(m) - 1.0) * self.linear,
            Scale::Quantile => {
                if self.sorted.is_empty() {
                    0.0
                } else {
                    let i = (m * (self.sorted.len() - 1) as f32).round() as usize;
                    let s = self.sorted[i];
                    if self.diverging {
                        s
                    } else {
                        s - self.lo
                    }
                }
            }
        };
        if self.diverging {
            inner.copysign(t)
        } else {
            self.lo + inner
        }
    }

    /// The legend's ticks: (position, value), from the low end to the high end.
    pub fn ticks(&self) -> Vec<(f32, f32)> {
        let ts: &[f32] = if self.diverging {
            &[-1.0, -0.5, 0.0, 0.5, 1.0]
        } else {
            &[0.0, 0.25, 0.5, 0.75, 1.0]
        };
        ts.iter().map(|&t| (t, self.value_at(t))).collect()
    }

    /// The RGBA pixels of `values` (transparent where NaN).
    pub fn pixels(&self, values: &[f32]) -> Vec<u8> {
        let mut out = vec![0u8; values.len() * 4];
        match self.linear_steps() {
            // The linear scale's table index in one multiply-add per pixel.
            Some(linear) => {
                for (p, &v) in out.chunks_exact_mut(4).zip(values) {
                    if !v.is_nan() {
                        let [r, g, b] = self.linear_colour(linear, v);
                        p.copy_from_slice(&[r, g, b, 255]);
                    }
                }
            }
            None => {
                for (p, &v) in out.chunks_exact_mut(4).zip(values) {
                    if let Some([r, g, b]) = self.colour(v) {
                        p.copy_from_slice(&[r, g, b, 255]);
                    }
                }
            }
        }
        out
    }

    /// The colour of `v` (not NaN) on a linear scale ([`Normalizer::linear_steps`]).
    fn linear_colour(&self, (offset, per_unit): (f32, f32), v: f32) -> [u8; 3] {
        let i = ((v - offset) * per_unit).clamp(0.0, STEPS as f32) + 0.5;
        self.lut[i as usize]
    }

    /// On a linear scale with a range, `(offset, per_unit)` such that the colour table's index
    /// of a value `v` is `(v − offset) · per_unit`, clamped to the table and rounded.
    fn linear_steps(&self) -> Option<(f32, f32)> {
        let span = self.hi - self.lo;
        if self.scale != Scale::Linear || span <= 0.0 {
            return None;
        }
        let steps = STEPS as f32;
        Some(if self.diverging {
            // u = (v / hi + 1) / 2 = (v + hi) / (2 hi)
            (-self.hi, steps / (2.0 * self.hi))
        } else {
            (self.lo, steps / span)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Aggregate;
    use super::*;
    use bitlens_stats::weightmap::Layer;

    const MEAN: Quantity = Quantity {
        layer: Layer::Values,
        aggregate: Aggregate::Mean,
    };

    #[test]
    fn zero_is_the_centre_and_the_ends_are_the_largest_magnitude() {
        let values = [-2.0, -0.5, 0.0, 1.0, f32::NAN];
        for scale in Scale::ALL {
            let n = Normalizer::new(&values, MEAN, scale);
            assert_eq!(n.position(0.0), Some(0.0), "{scale:?}");
            assert_eq!(n.position(-2.0), Some(-1.0), "{scale:?}");
            assert_eq!(n.position(f32::NAN), None);
            assert!(n.position(1.0).unwrap() > 0.0 && n.position(1.0).unwrap() < 1.0);
            assert!(n.position(-0.5).unwrap() > -1.0 && n.position(-0.5).unwrap() < 0.0);
            assert_eq!(n.ticks()[2], (0.0, 0.0));
        }
        assert_eq!(rgb(0.0, true), DIVERGING[3]);
        assert_eq!(rgb(-1.0, true), DIVERGING[0]);
        assert_eq!(rgb(1.0, false), SEQUENTIAL[5]);
    }

    #[test]
    fn linear_colours_follow_the_position() {
        let values: Vec<f32> = (0..5000)
            .map(|i| ((i as f32) * 0.37).sin() * 3.0 + if i % 7 == 0 { 1.5 } else { 0.0 })
            .chain([f32::NAN, 0.0, -0.0, 1e-30, f32::INFINITY, f32::NEG_INFINITY])
            .collect();
        let range = Quantity {
            layer: Layer::Values,
            aggregate: Aggregate::Range,
        };
        for q in [MEAN, range] {
            let n = Normalizer::new(&values, q, Scale::Linear);
            assert!(n.linear_steps().is_some());
            let drawn = n.pixels(&values);
            for (i, &v) in values.iter().enumerate() {
                let want = n.colour(v).map_or([0, 0, 0, 0], |[r, g, b]| [r, g, b, 255]);
                assert_eq!(drawn[i * 4..i * 4 + 4], want, "{v}");
                // The table index the position gives, up to the last bit of the arithmetic.
                if let Some(t) = n.position(v) {
                    let u = if n.diverging() { (t + 1.0) / 2.0 } else { t };
                    let by_position =
                        rgb(if n.diverging() { u * 2.0 - 1.0 } else { u }, n.diverging());
                    let close = by_position
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.abs_diff(*b) <= 2);
                    assert!(close, "{v}: {by_position:?} vs {want:?}");
                }
            }
        }
    }

    #[test]
    fn symlog_ticks_invert_positions_and_quantiles_follow_rank() {
        let values: Vec<f32> = (0..1000).map(|i| (i as f32 - 500.0).powi(3)).collect();
        let n = Normalizer::new(&values, MEAN, Scale::SymLog);
        for t in [-0.9f32, -0.3, 0.2, 0.7] {
            let v = n.value_at(t);
            assert!((n.position(v).unwrap() - t).abs() < 1e-3, "{t} → {v}");
        }
        let q = Normalizer::new(&values, MEAN, Scale::Quantile);
        // Half the magnitudes lie below the median magnitude.
        let median = q.value_at(0.5);
        assert!((q.position(median).unwrap() - 0.5).abs() < 0.01);
        let zeros = Quantity {
            layer: Layer::Values,
            aggregate: Aggregate::Zeros,
        };
        let z = Normalizer::new(&[0.1, 0.2], zeros, Scale::Linear);
        assert_eq!(z.position(0.5), Some(0.5));
        assert_eq!(z.pixels(&[f32::NAN]), [0, 0, 0, 0]);
    }
}
