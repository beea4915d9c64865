//! The two-step non-uniform quantizer of Inshrinkerator §4.4 (paper Algorithm 2) and a uniform
//! quantizer with the same interface (the paper's Table 7 baseline).
//!
//! Step 1 groups the values into a DDSketch-style log histogram ([`Sketch`], relative accuracy
//! `α`). Step 2 runs weighted k-means over the histogram's bucket representatives, initialised by
//! sample-weighted k-means++ (Algorithm 3) from a seeded generator, so the result is
//! deterministic. A bucket's sample weight mixes its normalised frequency with its normalised
//! magnitude, `β·count/Σcount + (1 − β)·|x|/Σ|x|` (sums over non-empty buckets): pure frequency
//! (`β = 1`) spends the centroids where the values are dense, near zero; the magnitude term keeps
//! resolution for the rare large values. The paper's value of `β` did not survive in our copy of
//! the text; [`NonUniform::DEFAULT_BALANCE`] was chosen by measurement on MiniLM (see its doc).

use crate::sketch::Sketch;

/// Sorted, distinct centroids; a value is quantized to the nearest one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Codebook {
    centroids: Vec<f32>,
}

impl Codebook {
    /// A codebook of `centroids`, sorted and deduplicated (non-finite entries dropped).
    pub fn new(mut centroids: Vec<f32>) -> Codebook {
        centroids.retain(|c| c.is_finite());
        centroids.sort_by(f32::total_cmp);
        centroids.dedup();
        Codebook { centroids }
    }

    /// The centroids, ascending.
    pub fn centroids(&self) -> &[f32] {
        &self.centroids
    }

    /// Number of centroids.
    pub fn len(&self) -> usize {
        self.centroids.len()
    }

    /// Whether there are no centroids.
    pub fn is_empty(&self) -> bool {
        self.centroids.is_empty()
    }

    /// Index of the centroid nearest to `x` (ties to the lower one); 0 for an empty codebook.
    pub fn assign(&self, x: f32) -> usize {
        let c = &self.centroids;
        let i = c.partition_point(|&v| v < x);
        if i == 0 {
            0
        } else if i == c.len() {
            c.len() - 1
        } else if x - c[i - 1] <= c[i] - x {
            i - 1
        } else {
            i
        }
    }
}

/// Fits a codebook of at most `bins` centroids to `values`.
pub trait Quantizer {
    /// The codebook for `values` (finite values only are considered).
    fn fit(&self, values: &[f32], bins: usize) -> Codebook;
}

/// Approximate k-means over a log histogram (Algorithm 2).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NonUniform {
    /// Relative accuracy of the histogram.
    pub alpha: f64,
    /// Weight `β` of frequency against magnitude in a bucket's sample weight, in [0, 1].
    pub balance: f64,
    /// Seed of the k-means++ generator.
    pub seed: u64,
    /// Lloyd iterations at most.
    pub max_iterations: usize,
}

impl NonUniform {
    /// Default histogram accuracy (1%, the paper's sketch accuracy).
    pub const DEFAULT_ALPHA: f64 = 0.01;
    /// Default `β`. Measured with `examples/ratio.rs` on MiniLM f32 (whole-model search under the
    /// per-tensor relative L2 budget, full streams): budget 0.1 gives ratio 6.63 / 7.25 / 6.86 /
    /// 6.67 for β = 1 / 0.5 / 0.9 / 0.99, budget 0.2 gives 8.58 / 9.10 / 8.88 (0.7) / 9.06 (0.9):
    /// the even mix was best at both.
    pub const DEFAULT_BALANCE: f64 = 0.5;
}

impl Default for NonUniform {
    fn default() -> Self {
        NonUniform {
            alpha: Self::DEFAULT_ALPHA,
            balance: Self::DEFAULT_BALANCE,
            seed: 0x1A5E_ED00,
            max_iterations: 100,
        }
    }
}

/// SplitMix64, a tiny deterministic generator.
struct SplitMix(u64);

impl SplitMix {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An index drawn with probability proportional to `weights` (all zero: the first).
    fn pick(&mut self, weights: &[f64]) -> usize {
        let total: f64 = weights.iter().sum();
        if total <= 0.0 {
            return 0;
        }
        let mut r = self.next_f64() * total;
        for (i, &w) in weights.iter().enumerate() {
            if r < w {
                return i;
            }
            r -= w;
        }
        weights.iter().rposition(|&w| w > 0.0).unwrap_or(0)
    }
}

/// Weighted k-means++ seeding (Algorithm 3) on sorted `points`.
fn kmeanspp(points: &[f64], weights: &[f64], k: usize, rng: &mut SplitMix) -> Vec<f64> {
    let mut centroids = vec![points[rng.pick(weights)]];
    let mut d2: Vec<f64> = points.iter().map(|p| (p - centroids[0]).powi(2)).collect();
    while centroids.len() < k {
        let score: Vec<f64> = weights.iter().zip(&d2).map(|(w, d)| w * d).collect();
        if score.iter().all(|&s| s <= 0.0) {
            break;
        }
        let c = points[rng.pick(&score)];
        centroids.push(c);
        for (d, p) in d2.iter_mut().zip(points) {
            *d = d.min((p - c).powi(2));
        }
    }
    centroids.sort_by(f64::total_cmp);
    centroids
}

/// Weighted Lloyd iterations in one dimension (`points` sorted ascending).
fn lloyd(points: &[f64], weights: &[f64], centroids: &mut [f64], max_iterations: usize) {
    let k = centroids.len();
    let mut sum = vec![0.0; k];
    let mut mass = vec![0.0; k];
    for _ in 0..max_iterations {
        sum.iter_mut().for_each(|s| *s = 0.0);
        mass.iter_mut().for_each(|s| *s = 0.0);
        let mut j = 0;
        for (&p, &w) in points.iter().zip(weights) {
            while j + 1 < k && (p - centroids[j]).abs() > (centroids[j + 1] - p).abs() {
                j += 1;
            }
            sum[j] += w * p;
            mass[j] += w;
        }
        let mut moved = false;
        for j in 0..k {
            if mass[j] > 0.0 {
                let c = sum[j] / mass[j];
                moved |= c != centroids[j];
                centroids[j] = c;
            }
        }
        centroids.sort_by(f64::total_cmp);
        if !moved {
            break;
        }
    }
}

impl Quantizer for NonUniform {
    fn fit(&self, values: &[f32], bins: usize) -> Codebook {
        let alpha = self
            .alpha
            .clamp(crate::sketch::MIN_ALPHA, crate::sketch::MAX_ALPHA);
        let Ok(mut hist) = Sketch::new(alpha) else {
            return Codebook::default();
        };
        hist.extend(values);
        let (points, counts): (Vec<f64>, Vec<f64>) =
            hist.iter().map(|(v, c)| (v, c as f64)).unzip();
        if points.is_empty() || bins == 0 {
            return Codebook::default();
        }
        if points.len() <= bins {
            return Codebook::new(points.iter().map(|&p| p as f32).collect());
        }
        let beta = self.balance.clamp(0.0, 1.0);
        let n: f64 = counts.iter().sum();
        let m: f64 = points.iter().map(|p| p.abs()).sum();
        let weights: Vec<f64> = points
            .iter()
            .zip(&counts)
            .map(|(p, c)| {
                beta * c / n
                    + if m > 0.0 {
                        (1.0 - beta) * p.abs() / m
                    } else {
                        0.0
                    }
            })
            .collect();
        let mut rng = SplitMix(self.seed);
        let mut centroids = kmeanspp(&points, &weights, bins, &mut rng);
        lloyd(&points, &weights, &mut centroids, self.max_iterations);
        Codebook::new(centroids.iter().map(|&c| c as f32).collect())
    }
}

/// Evenly spaced centroids from the smallest to the largest value.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Uniform;

impl Quantizer for Uniform {
    fn fit(&self, values: &[f32], bins: usize) -> Codebook {
        let (lo, hi) = values
            .iter()
            .filter(|x| x.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        if lo > hi || bins == 0 {
            return Codebook::default();
        }
        if bins == 1 || lo == hi {
            return Codebook::new(vec![(lo + hi) / 2.0]);
        }
        let step = (f64::from(hi) - f64::from(lo)) / (bins - 1) as f64;
        Codebook::new(
            (0..bins)
                .map(|k| (f64::from(lo) + step * k as f64) as f32)
                .collect(),
        )
    }
}

/// Relative L2 error `‖x − q(x)‖ / ‖x‖` of quantizing `values` to `codebook` (finite values).
pub fn quantization_error(values: &[f32], codebook: &Codebook) -> f64 {
    if codebook.is_empty() {
        return if values.iter().all(|&x| x == 0.0 || !x.is_finite()) {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let restored: Vec<f32> = values
        .iter()
        .map(|&x| codebook.centroids()[codebook.assign(x)])
        .collect();
    crate::levels::relative_l2(values, &restored)
}

/// The fewest bins (1..=`max_bins`) with which `quantizer` meets `max_error` on `values` (plain
/// quantization, no pruning or protection: the setting of the paper's Table 7), with that error;
/// `None` if even `max_bins` does not.
pub fn min_bins(
    quantizer: &dyn Quantizer,
    values: &[f32],
    max_error: f64,
    max_bins: usize,
) -> Option<(usize, f64)> {
    (1..=max_bins).find_map(|bins| {
        let e = quantization_error(values, &quantizer.fit(values, bins));
        (e <= max_error).then_some((bins, e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mse(values: &[f32], cb: &Codebook) -> f64 {
        values
            .iter()
            .map(|&x| (f64::from(x) - f64::from(cb.centroids()[cb.assign(x)])).powi(2))
            .sum::<f64>()
            / values.len() as f64
    }

    /// Gaussian-like weights: non-uniform bins beat uniform ones at the same count, and are
    /// deterministic for a seed.
    #[test]
    fn nonuniform_beats_uniform_and_is_deterministic() {
        let mut rng = SplitMix(7);
        let values: Vec<f32> = (0..20_000)
            .map(|_| {
                let s: f64 = (0..12).map(|_| rng.next_f64()).sum::<f64>() - 6.0;
                (s * 0.02) as f32
            })
            .collect();
        let q = NonUniform {
            balance: 1.0,
            ..NonUniform::default()
        };
        for bins in [4, 8, 16] {
            let a = q.fit(&values, bins);
            assert_eq!(a, q.fit(&values, bins));
            assert_eq!(a.len(), bins);
            let u = Uniform.fit(&values, bins);
            assert!(mse(&values, &a) < mse(&values, &u), "{bins} bins");
        }
    }

    #[test]
    fn assign_is_nearest() {
        let cb = Codebook::new(vec![1.0, -1.0, 0.5, 0.5]);
        assert_eq!(cb.centroids(), &[-1.0, 0.5, 1.0]);
        for x in [-3.0f32, -0.2, 0.0, 0.74, 0.76, 9.0] {
            let best = (0..3)
                .min_by(|&a, &b| {
                    (cb.centroids()[a] - x)
                        .abs()
                        .total_cmp(&(cb.centroids()[b] - x).abs())
                })
                .unwrap();
            assert_eq!(cb.assign(x), best, "{x}");
        }
        assert_eq!(Uniform.fit(&[2.0, 4.0], 3).centroids(), &[2.0, 3.0, 4.0]);
    }
}
