//! The simplified, mergeable DDSketch of Inshrinkerator §4.3 (paper Algorithm 1, after Masson et
//! al. 2019): values are mapped to logarithmic buckets `i = ⌈log_γ |x|⌉` with
//! `γ = (1 + α) / (1 − α)`, counted, and a quantile is read by summing bucket counts up to its
//! rank. The bucket's representative `2γ^i / (γ + 1)` is within relative error `α` of every value
//! in `(γ^(i−1), γ^i]`, so `|q̃ − q| ≤ α·|q|` for every quantile. As in the paper there is no
//! bucket collapsing: the store grows to cover the values seen, which bounds memory by the value
//! range, at most `2·(⌈ln(max/min) / ln γ⌉ + 1)` buckets per sign (the factor 2 is the slack of
//! amortised growth towards smaller values; ≈ 192 / α for all finite f32 magnitudes). Negative
//! values go to a mirrored store and exact zeros to their own counter, so signed weights and zero
//! importances are both handled. Sketches with the same `α` merge by
//! adding counts (shards, threads, the tensors of one layer type).

use thiserror::Error;

/// Smallest accepted relative accuracy (keeps the store at most ≈ 2 M buckets per sign).
pub const MIN_ALPHA: f64 = 1e-4;
/// Largest accepted relative accuracy.
pub const MAX_ALPHA: f64 = 0.5;

/// Why a sketch could not be built or merged.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SketchError {
    /// `α` is outside [`MIN_ALPHA`, `MAX_ALPHA`] (or not a number).
    #[error("relative accuracy α = {alpha} outside [{MIN_ALPHA}, {MAX_ALPHA}]")]
    BadAlpha {
        /// The rejected accuracy.
        alpha: f64,
    },
    /// Two sketches with different accuracies cannot be merged.
    #[error("cannot merge sketches with α = {left} and α = {right}")]
    AlphaMismatch {
        /// Accuracy of the receiving sketch.
        left: f64,
        /// Accuracy of the merged-in sketch.
        right: f64,
    },
}

/// Counts of a contiguous range of bucket indices.
#[derive(Debug, Clone, Default, PartialEq)]
struct Store {
    /// Bucket index of `counts[0]`.
    offset: i32,
    counts: Vec<u64>,
}

impl Store {
    fn add(&mut self, index: i32, n: u64) {
        if self.counts.is_empty() {
            self.offset = index;
            self.counts.push(0);
        } else if index < self.offset {
            // Grow the front by at least the current length, so that values arriving in
            // decreasing order cost amortised O(1) each, not a shift of the whole store.
            let grow = ((self.offset - index) as usize).max(self.counts.len());
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.offset -= grow as i32;
        } else if (index - self.offset) as usize >= self.counts.len() {
            self.counts.resize((index - self.offset) as usize + 1, 0);
        }
        self.counts[(index - self.offset) as usize] += n;
    }

    fn merge(&mut self, other: &Store) {
        for (k, &c) in other.counts.iter().enumerate() {
            if c > 0 {
                self.add(other.offset + k as i32, c);
            }
        }
    }

    fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// A quantile sketch with relative accuracy `α` over finite `f32` values.
#[derive(Debug, Clone, PartialEq)]
pub struct Sketch {
    alpha: f64,
    gamma: f64,
    ln_gamma: f64,
    positive: Store,
    negative: Store,
    zeros: u64,
    skipped: u64,
}

impl Sketch {
    /// An empty sketch with relative accuracy `alpha` (in [`MIN_ALPHA`], [`MAX_ALPHA`]).
    pub fn new(alpha: f64) -> Result<Sketch, SketchError> {
        if !(MIN_ALPHA..=MAX_ALPHA).contains(&alpha) {
            return Err(SketchError::BadAlpha { alpha });
        }
        let gamma = (1.0 + alpha) / (1.0 - alpha);
        Ok(Sketch {
            alpha,
            gamma,
            ln_gamma: gamma.ln(),
            positive: Store::default(),
            negative: Store::default(),
            zeros: 0,
            skipped: 0,
        })
    }

    /// The relative accuracy `α`.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The bucket index `⌈log_γ x⌉` of a positive finite magnitude.
    pub fn index(&self, magnitude: f64) -> i32 {
        (magnitude.ln() / self.ln_gamma).ceil() as i32
    }

    /// The representative value `2γ^i / (γ + 1)` of positive bucket `i`.
    pub fn bucket_value(&self, index: i32) -> f64 {
        2.0 * (f64::from(index) * self.ln_gamma).exp() / (self.gamma + 1.0)
    }

    /// Counts one value. Zeros go to the zero counter, negatives to the mirrored store; NaN and
    /// infinities are not counted (see [`Sketch::skipped`]).
    pub fn insert(&mut self, x: f32) {
        if !x.is_finite() {
            self.skipped += 1;
        } else if x == 0.0 {
            self.zeros += 1;
        } else if x > 0.0 {
            let i = self.index(f64::from(x));
            self.positive.add(i, 1);
        } else {
            let i = self.index(-f64::from(x));
            self.negative.add(i, 1);
        }
    }

    /// Counts every value of `values` ([`Sketch::insert`]).
    pub fn extend(&mut self, values: &[f32]) {
        for &x in values {
            self.insert(x);
        }
    }

    /// Adds the counts of `other` (same `α`) to this sketch.
    pub fn merge(&mut self, other: &Sketch) -> Result<(), SketchError> {
        if other.alpha != self.alpha {
            return Err(SketchError::AlphaMismatch {
                left: self.alpha,
                right: other.alpha,
            });
        }
        self.positive.merge(&other.positive);
        self.negative.merge(&other.negative);
        self.zeros += other.zeros;
        self.skipped += other.skipped;
        Ok(())
    }

    /// Number of values counted (NaN and infinities excluded).
    pub fn count(&self) -> u64 {
        self.positive.total() + self.negative.total() + self.zeros
    }

    /// Number of NaN and infinite values seen and not counted.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Number of buckets held (both signs): the sketch's memory in `u64` counters.
    pub fn buckets(&self) -> usize {
        self.positive.counts.len() + self.negative.counts.len()
    }

    /// Non-empty buckets in ascending value order as `(representative value, count)`; exact
    /// zeros are one bucket of value 0.
    pub fn iter(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let neg = self
            .negative
            .counts
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, &c)| c > 0)
            .map(|(k, &c)| (-self.bucket_value(self.negative.offset + k as i32), c));
        let zero = (self.zeros > 0).then_some((0.0, self.zeros));
        let pos = self
            .positive
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(k, &c)| (self.bucket_value(self.positive.offset + k as i32), c));
        neg.chain(zero).chain(pos)
    }

    /// The value of rank `⌊q·(n − 1)⌋` (0-based, ascending) within relative error `α`, or `None`
    /// for an empty sketch. `q` is clamped to [0, 1].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = (q * (n - 1) as f64).floor() as u64;
        let mut seen = 0u64;
        for (value, c) in self.iter() {
            seen += c;
            if seen > rank {
                return Some(value);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn exact(sorted: &[f32], q: f64) -> f64 {
        f64::from(sorted[(q * (sorted.len() - 1) as f64).floor() as usize])
    }

    proptest! {
        /// Every quantile is within α relative error of the exact order statistic of the same
        /// rank, for mixed signs, zeros and magnitudes over 30 decades.
        #[test]
        fn quantiles_within_alpha(
            values in prop::collection::vec(
                prop_oneof![Just(0.0f32), (-15i32..15, -1.0f32..1.0).prop_map(|(e, m)| m * 10f32.powi(e))],
                1..400),
            alpha in 0.001f64..0.1,
            qs in prop::collection::vec(0.0f64..=1.0, 1..10),
        ) {
            let mut s = Sketch::new(alpha).unwrap();
            s.extend(&values);
            let mut sorted = values.clone();
            sorted.sort_by(f32::total_cmp);
            for q in qs {
                let est = s.quantile(q).unwrap();
                let ex = exact(&sorted, q);
                prop_assert!((est - ex).abs() <= alpha * ex.abs() * (1.0 + 1e-9),
                    "q {q}: estimate {est} exact {ex}");
            }
        }

        /// Merging sketches of two halves equals sketching the whole.
        #[test]
        fn merge_equals_whole(values in prop::collection::vec(-1e6f32..1e6, 0..300), cut in 0usize..300) {
            let cut = cut.min(values.len());
            let mut whole = Sketch::new(0.01).unwrap();
            whole.extend(&values);
            let mut a = Sketch::new(0.01).unwrap();
            a.extend(&values[..cut]);
            let mut b = Sketch::new(0.01).unwrap();
            b.extend(&values[cut..]);
            a.merge(&b).unwrap();
            prop_assert_eq!(a.count(), whole.count());
            prop_assert_eq!(a.iter().collect::<Vec<_>>(), whole.iter().collect::<Vec<_>>());
        }
    }

    #[test]
    fn memory_bounded_by_range() {
        let mut s = Sketch::new(0.01).unwrap();
        s.extend(&[
            f32::MIN_POSITIVE / 1e6,
            f32::MAX,
            -f32::MAX,
            f32::NAN,
            f32::INFINITY,
        ]);
        // ln(MAX / min subnormal) / ln γ with γ = 1.01/0.99: 19 161 buckets for the positive side.
        let per_side = ((f64::from(f32::MAX) / f64::from(f32::MIN_POSITIVE / 1e6)).ln()
            / (1.01f64 / 0.99).ln())
        .ceil() as usize
            + 1;
        assert!(s.buckets() <= 2 * per_side + 1, "{} buckets", s.buckets());
        // Decreasing magnitudes (the front-growth path) count like any order.
        let mut down = Sketch::new(0.01).unwrap();
        let xs: Vec<f32> = (0..20_000).map(|i| 1e10 * 0.999f32.powi(i)).collect();
        down.extend(&xs);
        let mut up = Sketch::new(0.01).unwrap();
        up.extend(&xs.iter().rev().copied().collect::<Vec<_>>());
        assert_eq!(
            down.iter().collect::<Vec<_>>(),
            up.iter().collect::<Vec<_>>()
        );
        assert!(down.buckets() <= 2 * up.buckets() + 1);
        assert_eq!(s.count(), 3);
        assert_eq!(s.skipped(), 2);
        assert!(Sketch::new(0.0).is_err());
        assert!(Sketch::new(0.01)
            .unwrap()
            .merge(&Sketch::new(0.02).unwrap())
            .is_err());
    }
}
