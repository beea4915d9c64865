//! What the lossy lesson's Inshrinkerator view shows (issue 14, lesson `lossy`; paper 002 §4.4
//! and Table 7): the non-uniform bins of Algorithm 2 ([`NonUniform`]) against evenly spaced bins
//! ([`Uniform`]) on one real tensor — where the centroids sit over the values' histogram, the
//! relative L2 and largest absolute error of each at [`MIN_BINS`]..=[`MAX_BINS`] bins (the
//! configuration search's range), and the fewest bins each needs for the error the non-uniform
//! bins reach at a given count (Table 7's comparison: plain quantization, no pruning or
//! protection). Everything is measured with Inshrinkerator's own quantizers (crate
//! `bitlens-inshrink`) and [`quantization_error`]'s metric.

use bitlens_inshrink::levels::relative_l2;
use bitlens_inshrink::quantize::{quantization_error, Codebook, NonUniform, Quantizer, Uniform};

/// The fewest bins the view offers (the configuration search's range, §5).
pub const MIN_BINS: usize = 4;
/// The most bins the view offers.
pub const MAX_BINS: usize = 32;
/// The most uniform bins tried when looking for the count that meets an error: beyond it the
/// uniform quantizer is said not to meet it (as the paper's Uniform fails strict thresholds).
pub const UNIFORM_LIMIT: usize = 256;
/// Bars of the values' histogram.
pub const HISTOGRAM_BARS: usize = 96;

/// One codebook fitted to the values and its error.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The centroids, ascending.
    pub centroids: Vec<f32>,
    /// `‖x − q(x)‖ / ‖x‖` over the finite values.
    pub rel_l2: f64,
    /// Largest `|x − q(x)|` over the finite values.
    pub max_abs: f64,
}

/// Both quantizers at one bin count.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The bin count asked for.
    pub bins: usize,
    /// Algorithm 2's bins.
    pub nonuniform: Fit,
    /// Evenly spaced bins from the smallest to the largest value.
    pub uniform: Fit,
}

/// The fewest bins each quantizer needs for one error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fewest {
    /// The non-uniform bin count whose error is the target.
    pub bins: usize,
    /// The target: the non-uniform relative L2 error at `bins`.
    pub error: f64,
    /// The fewest non-uniform bins meeting it (at most `bins`).
    pub nonuniform: usize,
    /// The fewest uniform bins meeting it; `None` if [`UNIFORM_LIMIT`] do not.
    pub uniform: Option<usize>,
}

impl Fewest {
    /// Uniform bins per non-uniform bin, when the uniform quantizer meets the error.
    pub fn ratio(&self) -> Option<f64> {
        self.uniform.map(|u| u as f64 / self.nonuniform as f64)
    }
}

/// Equal-width counts of the finite values from `lo` to `hi`.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// The smallest value.
    pub lo: f64,
    /// The largest value.
    pub hi: f64,
    /// Values per bar, [`HISTOGRAM_BARS`] bars (none without finite values).
    pub counts: Vec<u64>,
}

/// Everything the view shows for one tensor and one `β`.
#[derive(Debug, Clone, PartialEq)]
pub struct BinsLesson {
    /// Values measured.
    pub values: usize,
    /// The non-uniform quantizer's `β` ([`NonUniform::balance`]).
    pub balance: f64,
    /// The values' histogram.
    pub histogram: Histogram,
    /// Both quantizers at [`MIN_BINS`]..=[`MAX_BINS`] bins.
    pub rows: Vec<Row>,
    /// For each of those counts, the fewest bins each needs for the non-uniform error there.
    pub fewest: Vec<Fewest>,
}

/// `codebook` fitted to `values`: its relative L2 error (as [`quantization_error`] measures it)
/// and its largest absolute error.
pub fn measure(values: &[f32], codebook: Codebook) -> Fit {
    let c = codebook.centroids();
    let restored: Vec<f32> = if c.is_empty() {
        vec![0.0; values.len()]
    } else {
        values.iter().map(|&x| c[codebook.assign(x)]).collect()
    };
    let max_abs = values
        .iter()
        .zip(&restored)
        .filter(|(x, _)| x.is_finite())
        .map(|(&x, &r)| (f64::from(x) - f64::from(r)).abs())
        .fold(0.0, f64::max);
    Fit {
        rel_l2: relative_l2(values, &restored),
        max_abs,
        centroids: codebook.centroids().to_vec(),
    }
}

/// The histogram of the finite `values`.
pub fn histogram(values: &[f32]) -> Histogram {
    let finite = values
        .iter()
        .filter(|x| x.is_finite())
        .map(|&x| f64::from(x));
    let (lo, hi) = finite
        .clone()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
    if lo > hi {
        return Histogram {
            lo: 0.0,
            hi: 0.0,
            counts: Vec::new(),
        };
    }
    let mut counts = vec![0u64; HISTOGRAM_BARS];
    let width = (hi - lo) / HISTOGRAM_BARS as f64;
    for x in finite {
        let i = if width > 0.0 {
            (((x - lo) / width) as usize).min(HISTOGRAM_BARS - 1)
        } else {
            0
        };
        counts[i] += 1;
    }
    Histogram { lo, hi, counts }
}

/// The fewest of `errors` (the error at 1, 2, … bins) that is at most `target`, as a bin count.
fn first_meeting(errors: &[f64], target: f64) -> Option<usize> {
    errors.iter().position(|&e| e <= target).map(|i| i + 1)
}

/// The view's figures for `values` with the non-uniform quantizer `quantizer` (its `balance`
/// is the `β` shown).
pub fn bins_lesson(values: &[f32], quantizer: &NonUniform) -> BinsLesson {
    let fits: Vec<Fit> = (1..=MAX_BINS)
        .map(|b| measure(values, quantizer.fit(values, b)))
        .collect();
    let uniform: Vec<Fit> = (1..=MAX_BINS)
        .map(|b| measure(values, Uniform.fit(values, b)))
        .collect();
    // Beyond MAX_BINS only the error matters.
    let uniform_errors: Vec<f64> = uniform
        .iter()
        .map(|f| f.rel_l2)
        .chain(
            (MAX_BINS + 1..=UNIFORM_LIMIT)
                .map(|b| quantization_error(values, &Uniform.fit(values, b))),
        )
        .collect();
    let errors: Vec<f64> = fits.iter().map(|f| f.rel_l2).collect();
    let fewest = (MIN_BINS..=MAX_BINS)
        .map(|bins| {
            let error = errors[bins - 1];
            Fewest {
                bins,
                error,
                nonuniform: first_meeting(&errors[..bins], error).unwrap_or(bins),
                uniform: first_meeting(&uniform_errors, error),
            }
        })
        .collect();
    let rows = fits
        .into_iter()
        .zip(uniform)
        .enumerate()
        .skip(MIN_BINS - 1)
        .map(|(i, (nonuniform, uniform))| Row {
            bins: i + 1,
            nonuniform,
            uniform,
        })
        .collect();
    BinsLesson {
        values: values.len(),
        balance: quantizer.balance,
        histogram: histogram(values),
        rows,
        fewest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_inshrink::quantize::min_bins;

    /// Heavy-tailed weights: a Gaussian-like bulk and a few large values.
    fn weights(n: usize) -> Vec<f32> {
        let mut state = bitlens_test_support::rng::xorshift(0x5EED);
        let mut next = || (state() >> 11) as f64 / (1u64 << 53) as f64;
        (0..n)
            .map(|i| {
                let g: f64 = (0..6).map(|_| next()).sum::<f64>() - 3.0;
                let scale = if i % 97 == 0 { 0.2 } else { 0.02 };
                (g * scale) as f32
            })
            .collect()
    }

    #[test]
    fn figures_equal_the_quantizers_own() {
        let v = weights(6000);
        let q = NonUniform::default();
        let l = bins_lesson(&v, &q);
        assert_eq!(l.values, v.len());
        assert_eq!(l.rows.len(), MAX_BINS - MIN_BINS + 1);
        for r in &l.rows {
            let nu = q.fit(&v, r.bins);
            assert_eq!(r.nonuniform.centroids, nu.centroids());
            assert_eq!(r.nonuniform.rel_l2, quantization_error(&v, &nu));
            let u = Uniform.fit(&v, r.bins);
            assert_eq!(r.uniform.centroids, u.centroids());
            assert_eq!(r.uniform.rel_l2, quantization_error(&v, &u));
            // The largest error, from the definition.
            let max = v
                .iter()
                .map(|&x| {
                    nu.centroids()
                        .iter()
                        .map(|&c| (f64::from(x) - f64::from(c)).abs())
                        .fold(f64::INFINITY, f64::min)
                })
                .fold(0.0, f64::max);
            assert!((r.nonuniform.max_abs - max).abs() <= 1e-12, "{}", r.bins);
        }
    }

    #[test]
    fn fewest_bins_equal_min_bins() {
        let v = weights(4000);
        let q = NonUniform::default();
        let l = bins_lesson(&v, &q);
        for f in l.fewest.iter().filter(|f| [4, 9, 16, 32].contains(&f.bins)) {
            assert_eq!(
                Some(f.nonuniform),
                min_bins(&q, &v, f.error, f.bins).map(|m| m.0)
            );
            assert_eq!(
                f.uniform,
                min_bins(&Uniform, &v, f.error, UNIFORM_LIMIT).map(|m| m.0)
            );
            assert!(f.nonuniform <= f.bins);
        }
        // On heavy-tailed weights the uniform bins need more for the same error.
        let f16 = l.fewest.iter().find(|f| f.bins == 16).unwrap();
        assert!(f16.ratio().is_none_or(|r| r > 1.0), "{f16:?}");
    }

    #[test]
    fn histogram_counts_every_finite_value() {
        let v = [1.0f32, -1.0, 0.0, f32::NAN, 0.5, f32::INFINITY];
        let h = histogram(&v);
        assert_eq!((h.lo, h.hi), (-1.0, 1.0));
        assert_eq!(h.counts.iter().sum::<u64>(), 4);
        assert_eq!(h.counts[0], 1);
        assert_eq!(h.counts[HISTOGRAM_BARS - 1], 1);
        assert_eq!(histogram(&[f32::NAN]).counts, Vec::<u64>::new());
        assert_eq!(histogram(&[2.0, 2.0]).counts[0], 2);
    }

    #[test]
    fn empty_and_constant_values() {
        let l = bins_lesson(&[], &NonUniform::default());
        assert_eq!(l.values, 0);
        assert!(l.rows.iter().all(|r| r.nonuniform.rel_l2 == 0.0));
        let c = bins_lesson(&[0.5; 100], &NonUniform::default());
        assert!(c
            .rows
            .iter()
            .all(|r| r.uniform.rel_l2 == 0.0 && r.uniform.max_abs == 0.0));
    }
}
