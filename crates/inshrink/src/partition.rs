//! Prune / protect / quantize partition of Inshrinkerator §4.2–4.3: thresholds are read from the
//! importance sketches of a layer type ([`crate::sketch`]), then one pass over the tensor labels
//! every element. Protection wins over pruning; non-finite weights are always protected.

use crate::config::{Configuration, Metric};
use crate::sketch::Sketch;

/// Label of one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Set to zero.
    Prune,
    /// Stored exactly (original dtype or bf16).
    Protect,
    /// Quantized to a centroid.
    Quantize,
}

/// The importance sketches of one layer type.
#[derive(Debug, Clone)]
pub struct KindSketches {
    /// Sketch of `|w|`.
    pub magnitude: Sketch,
    /// Sketch of `|w|·sqrt(v)` when every tensor of the type has a second moment.
    pub sensitivity: Option<Sketch>,
}

/// The thresholds of one configuration for one layer type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Prune elements whose importance (by the configuration's metric) is at most this.
    pub prune: Option<f32>,
    /// Protect elements whose magnitude is at least this.
    pub protect_magnitude: Option<f32>,
    /// Protect elements whose sensitivity is at least this.
    pub protect_sensitivity: Option<f32>,
}

impl Thresholds {
    /// The thresholds of `config` from a layer type's sketches. Pruning by sensitivity without
    /// a sensitivity sketch falls back to magnitude.
    pub fn new(config: &Configuration, sketches: &KindSketches) -> Thresholds {
        let prune_sketch = match (config.metric, &sketches.sensitivity) {
            (Metric::Sensitivity, Some(s)) => s,
            _ => &sketches.magnitude,
        };
        let top = |s: &Sketch| {
            (config.protect > 0.0)
                .then(|| s.quantile(1.0 - f64::from(config.protect)))
                .flatten()
                .map(|t| t as f32)
        };
        Thresholds {
            prune: (config.prune > 0.0)
                .then(|| prune_sketch.quantile(f64::from(config.prune)))
                .flatten()
                .map(|t| t as f32),
            protect_magnitude: top(&sketches.magnitude),
            protect_sensitivity: sketches.sensitivity.as_ref().and_then(top),
        }
    }
}

/// Labels each weight in one pass. `sensitivity` is `|w|·sqrt(v)` per element when known; the
/// prune comparison uses it when `prune_metric` is sensitivity.
pub fn partition(
    weights: &[f32],
    sensitivity: Option<&[f32]>,
    prune_metric: Metric,
    t: &Thresholds,
) -> Vec<Class> {
    weights
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            let m = w.abs();
            let s = sensitivity.map(|s| s[i]);
            if !w.is_finite()
                || t.protect_magnitude.is_some_and(|p| m >= p)
                || matches!((t.protect_sensitivity, s), (Some(p), Some(s)) if s >= p)
            {
                return Class::Protect;
            }
            let imp = match (prune_metric, s) {
                (Metric::Sensitivity, Some(s)) => s,
                _ => m,
            };
            if t.prune.is_some_and(|p| imp <= p) {
                Class::Prune
            } else {
                Class::Quantize
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The protected and pruned fractions come out close to the configured ones, and the labels
    /// agree with the exact order: every protected magnitude exceeds every quantized one.
    #[test]
    fn fractions_and_order() {
        let w: Vec<f32> = (0..10_000)
            .map(|i| ((i * 7919 % 10_000) as f32 - 5000.0) / 1000.0)
            .collect();
        let mut s = Sketch::new(0.01).unwrap();
        s.extend(&crate::importance::magnitude(&w));
        let ks = KindSketches {
            magnitude: s,
            sensitivity: None,
        };
        let c = Configuration {
            bins: 8,
            prune: 0.3,
            metric: Metric::Magnitude,
            protect: 0.01,
        };
        let t = Thresholds::new(&c, &ks);
        let classes = partition(&w, None, Metric::Magnitude, &t);
        // The thresholds are within α of the exact quantiles of |w| (rank ⌊q·(n−1)⌋).
        let mut mags = crate::importance::magnitude(&w);
        mags.sort_by(f32::total_cmp);
        let exact = |q: f64| f64::from(mags[(q * (mags.len() - 1) as f64).floor() as usize]);
        let (tp, tk) = (t.prune.unwrap(), t.protect_magnitude.unwrap());
        assert!(
            (f64::from(tp) - exact(0.3)).abs() <= 0.01 * exact(0.3) + 1e-6,
            "{tp}"
        );
        assert!(
            (f64::from(tk) - exact(0.99)).abs() <= 0.01 * exact(0.99) + 1e-6,
            "{tk}"
        );
        // Each label is the one its thresholds imply.
        for (&x, &c) in w.iter().zip(&classes) {
            let want = if x.abs() >= tk {
                Class::Protect
            } else if x.abs() <= tp {
                Class::Prune
            } else {
                Class::Quantize
            };
            assert_eq!(c, want, "{x}");
        }
        let max_q = w
            .iter()
            .zip(&classes)
            .filter(|(_, &c)| c == Class::Quantize)
            .map(|(w, _)| w.abs())
            .fold(0.0, f32::max);
        let min_p = w
            .iter()
            .zip(&classes)
            .filter(|(_, &c)| c == Class::Protect)
            .map(|(w, _)| w.abs())
            .fold(f32::MAX, f32::min);
        let max_pr = w
            .iter()
            .zip(&classes)
            .filter(|(_, &c)| c == Class::Prune)
            .map(|(w, _)| w.abs())
            .fold(0.0, f32::max);
        assert!(min_p > max_q && max_q > max_pr, "{min_p} {max_q} {max_pr}");
    }
}
