//! One tensor under one [`Setting`]: partition (§4.2), quantize the rest (§4.4), and the level
//! array that the stream and the delta (§6) work on. Level 0 is pruned, level 1 protected and
//! level `2 + k` is centroid `k`, so pruned and protected are levels of their own as §6 needs.

use crate::config::{Metric, Setting};
use crate::partition::{partition, Class, Thresholds};
use crate::quantize::{Codebook, Quantizer};
use crate::values;
use bitlens_stats::entropy::cost_bits;
use bitlens_tensors::Dtype;

/// Level of a pruned element.
pub const PRUNED: u8 = 0;
/// Level of a protected element.
pub const PROTECTED: u8 = 1;
/// Level of centroid 0.
pub const FIRST_BIN: u8 = 2;

/// How protected values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtectStorage {
    /// In the tensor's own dtype: bit-exact.
    #[default]
    Original,
    /// In bf16, as the paper does (exact for bf16 tensors).
    Bf16,
}

impl ProtectStorage {
    /// The dtype protected values of a `dtype` tensor are written in.
    pub fn dtype(self, dtype: Dtype) -> Dtype {
        match self {
            ProtectStorage::Original => dtype,
            ProtectStorage::Bf16 => Dtype::BF16,
        }
    }
}

/// Rounds `x` through `dtype` (f32, f16 or bf16).
pub fn round_to(x: f32, dtype: Dtype) -> f32 {
    match dtype {
        Dtype::F16 => half::f16::from_f32(x).to_f32(),
        Dtype::BF16 => half::bf16::from_f32(x).to_f32(),
        _ => x,
    }
}

/// A tensor reduced to levels, a codebook and its protected values.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    /// The tensor's dtype.
    pub dtype: Dtype,
    /// The setting it was made with.
    pub setting: Setting,
    /// How its protected values are stored ([`ProtectStorage::Original`] for exact tensors).
    pub storage: ProtectStorage,
    /// One level per element.
    pub levels: Vec<u8>,
    /// Centroids, ascending, each representable in `dtype`.
    pub codebook: Vec<f32>,
    /// Protected values in element order, as they are restored (storage-rounded).
    pub protected: Vec<f32>,
}

impl Quantized {
    /// Number of levels (`codebook.len() + 2`).
    pub fn level_count(&self) -> u8 {
        self.codebook.len() as u8 + FIRST_BIN
    }

    /// The restored values, each representable in `dtype` (what decoding gives back).
    pub fn restore(&self) -> Vec<f32> {
        let mut p = self.protected.iter();
        self.levels
            .iter()
            .map(|&l| match l {
                PRUNED => 0.0,
                PROTECTED => round_to(p.next().copied().unwrap_or(0.0), self.dtype),
                k => self.codebook[usize::from(k - FIRST_BIN)],
            })
            .collect()
    }

    /// The restored values as raw little-endian bytes of `dtype`.
    pub fn restore_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.levels.len() * 4);
        for x in self.restore() {
            values::push(x, self.dtype, &mut out);
        }
        out
    }

    /// Estimated encoded size in bytes: order-0 entropy of the levels, the protected values and
    /// the codebook (what the search maximises the ratio with; the stream is usually close).
    pub fn estimated_bytes(&self) -> f64 {
        let mut hist = [0u64; 256];
        for &l in &self.levels {
            hist[usize::from(l)] += 1;
        }
        let bits = cost_bits(&hist);
        let width = values::width(self.storage.dtype(self.dtype)).unwrap_or(4) as f64;
        bits / 8.0 + self.protected.len() as f64 * width + self.codebook.len() as f64 * 4.0 + 48.0
    }
}

/// Applies `setting` to one tensor: `weights` (its f32 values, of `dtype`), the per-element
/// sensitivity when known, and the layer type's thresholds for the setting (ignored when exact).
pub fn quantize_tensor(
    weights: &[f32],
    dtype: Dtype,
    sensitivity: Option<&[f32]>,
    setting: Setting,
    thresholds: &Thresholds,
    quantizer: &dyn Quantizer,
    storage: ProtectStorage,
) -> Quantized {
    let Setting::Quantized(config) = setting else {
        return Quantized {
            dtype,
            setting,
            storage: ProtectStorage::Original,
            levels: vec![PROTECTED; weights.len()],
            codebook: Vec::new(),
            protected: weights.to_vec(),
        };
    };
    let metric = if sensitivity.is_some() {
        config.metric
    } else {
        Metric::Magnitude
    };
    let classes = partition(weights, sensitivity, metric, thresholds);
    let to_quantize: Vec<f32> = weights
        .iter()
        .zip(&classes)
        .filter(|(_, &c)| c == Class::Quantize)
        .map(|(&w, _)| w)
        .collect();
    let fitted = quantizer.fit(
        &to_quantize,
        usize::from(config.bins.clamp(1, crate::config::MAX_BINS)),
    );
    let codebook = Codebook::new(
        fitted
            .centroids()
            .iter()
            .map(|&c| round_to(c, dtype))
            .collect(),
    );
    let sdt = storage.dtype(dtype);
    let mut protected = Vec::new();
    let levels = weights
        .iter()
        .zip(&classes)
        .map(|(&w, &c)| match c {
            Class::Prune => PRUNED,
            Class::Quantize if !codebook.is_empty() => FIRST_BIN + codebook.assign(w) as u8,
            _ => {
                protected.push(round_to(w, sdt));
                PROTECTED
            }
        })
        .collect();
    Quantized {
        dtype,
        setting,
        storage,
        levels,
        codebook: codebook.centroids().to_vec(),
        protected,
    }
}

/// `‖w − ŵ‖₂ / ‖w‖₂` over finite elements of `original` (0 when both are zero, infinite when only
/// the original is).
pub fn relative_l2(original: &[f32], restored: &[f32]) -> f64 {
    // Eight independent accumulators: one would serialise the additions on their latency.
    const LANES: usize = 8;
    let (mut num, mut den) = ([0.0f64; LANES], [0.0f64; LANES]);
    let mut add = |lane: usize, a: f32, b: f32| {
        if a.is_finite() {
            num[lane] += (f64::from(a) - f64::from(b)).powi(2);
            den[lane] += f64::from(a).powi(2);
        }
    };
    let n = original.len().min(restored.len());
    let (head, tail) = (n / LANES * LANES, n % LANES);
    for (a, b) in original[..head]
        .chunks_exact(LANES)
        .zip(restored[..head].chunks_exact(LANES))
    {
        for lane in 0..LANES {
            add(lane, a[lane], b[lane]);
        }
    }
    for k in 0..tail {
        add(k, original[head + k], restored[head + k]);
    }
    let (num, den): (f64, f64) = (num.iter().sum(), den.iter().sum());
    if num == 0.0 {
        0.0
    } else if den == 0.0 {
        f64::INFINITY
    } else {
        (num / den).sqrt()
    }
}
