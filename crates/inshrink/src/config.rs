//! A quantization configuration and the search grid of Inshrinkerator §5, Table 2 (embedding
//! layers' bins from Appendix Table 9), plus the per-layer-group plan the search produces.

use crate::importance::LayerKind;

/// The ranking used for pruning (§4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// `|w|`.
    Magnitude,
    /// `|w|·sqrt(v)` from Adam's second moment (see [`crate::importance`]).
    Sensitivity,
}

impl Metric {
    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Magnitude => "magnitude",
            Metric::Sensitivity => "sensitivity",
        }
    }

    /// The stream code (0 magnitude, 1 sensitivity).
    pub fn code(self) -> u8 {
        match self {
            Metric::Magnitude => 0,
            Metric::Sensitivity => 1,
        }
    }

    /// The metric of a stream code.
    pub fn of_code(code: u8) -> Option<Metric> {
        match code {
            0 => Some(Metric::Magnitude),
            1 => Some(Metric::Sensitivity),
            _ => None,
        }
    }
}

/// Number of bins, Table 2.
pub const BINS: [u8; 6] = [4, 6, 8, 12, 16, 32];
/// Number of bins for embedding layers, Table 9.
pub const EMBEDDING_BINS: [u8; 2] = [16, 32];
/// Bins beyond the paper's grid that a per-tensor budget ([`crate::Quality::tensor_budget`]) may
/// give a tensor on its own: the paper's 32 bins leave ~5 % relative L2 error on Gaussian-like
/// matrices (its threshold is the model's loss, which tolerates that), so a stricter per-tensor
/// L2 budget needs more levels, up to [`MAX_BINS`] (codes still one byte).
pub const WIDE_BINS: [u8; 9] = [40, 48, 64, 96, 128, 160, 192, 224, MAX_BINS];
/// Pruning fractions, Table 2.
pub const PRUNE: [f32; 6] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5];
/// Protection fractions, Table 2.
pub const PROTECT: [f32; 3] = [0.0005, 0.005, 0.01];
/// Largest bin count a stream can hold: with pruned and protected, 255 levels, one byte each
/// (above 128 levels the level sections are coded without run lengths, see [`crate::delta`]).
pub const MAX_BINS: u8 = 253;

/// How one tensor is compressed: prune the `prune` least important fraction (by `metric`),
/// protect the `protect` most important fraction (by magnitude and, when available,
/// sensitivity), quantize the rest to `bins` centroids.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Configuration {
    /// Number of quantization bins (centroids), 1..=[`MAX_BINS`].
    pub bins: u8,
    /// Fraction pruned to zero, in [0, 1).
    pub prune: f32,
    /// Pruning metric.
    pub metric: Metric,
    /// Fraction protected, in [0, 1].
    pub protect: f32,
}

impl std::fmt::Display for Configuration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bins, prune {:.0}% by {}, protect {:.2}%",
            self.bins,
            self.prune * 100.0,
            self.metric.name(),
            self.protect * 100.0
        )
    }
}

/// What a layer group gets: a lossy configuration, or every element stored exactly (the
/// fallback when no configuration of the grid meets the quality threshold).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Setting {
    /// Prune / protect / quantize.
    Quantized(Configuration),
    /// All elements protected in the original dtype.
    Exact,
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Setting::Quantized(c) => c.fmt(f),
            Setting::Exact => f.write_str("exact"),
        }
    }
}

/// The two groups the search configures separately (§5: one configuration for all layers except
/// embeddings, which are more sensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Group {
    /// Embedding tensors.
    Embedding,
    /// Everything else (attention, linear/conv, norm/bias; thresholds still per layer type).
    Main,
}

impl Group {
    /// The group of a layer kind.
    pub fn of(kind: LayerKind) -> Group {
        if kind == LayerKind::Embedding {
            Group::Embedding
        } else {
            Group::Main
        }
    }

    /// Short name.
    pub fn name(self) -> &'static str {
        match self {
            Group::Embedding => "embedding",
            Group::Main => "main",
        }
    }

    /// The bins axis searched for this group.
    pub fn bins_axis(self) -> &'static [u8] {
        match self {
            Group::Embedding => &EMBEDDING_BINS,
            Group::Main => &BINS,
        }
    }
}

/// The settings of both groups.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plan {
    /// Setting of non-embedding tensors.
    pub main: Setting,
    /// Setting of embedding tensors.
    pub embedding: Setting,
}

impl Plan {
    /// Everything exact.
    pub const EXACT: Plan = Plan {
        main: Setting::Exact,
        embedding: Setting::Exact,
    };

    /// The setting of a group.
    pub fn get(&self, group: Group) -> Setting {
        match group {
            Group::Main => self.main,
            Group::Embedding => self.embedding,
        }
    }

    /// Replaces the setting of a group.
    pub fn with(mut self, group: Group, setting: Setting) -> Plan {
        match group {
            Group::Main => self.main = setting,
            Group::Embedding => self.embedding = setting,
        }
        self
    }
}

/// A point of the configuration cube (indices into the axes of a group). Ordered by its fields
/// in order (bins, prune, protect, metric): the search breaks exact ties between plans by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GridPoint {
    /// Index into [`Group::bins_axis`].
    pub bins: usize,
    /// Index into [`PRUNE`].
    pub prune: usize,
    /// Index into [`PROTECT`].
    pub protect: usize,
    /// Pruning metric.
    pub metric: Metric,
}

impl GridPoint {
    /// The configuration at this point of `group`'s cube.
    pub fn configuration(self, group: Group) -> Configuration {
        Configuration {
            bins: group.bins_axis()[self.bins],
            prune: PRUNE[self.prune],
            metric: self.metric,
            protect: PROTECT[self.protect],
        }
    }

    /// The grid point of a configuration, if it lies on `group`'s grid.
    pub fn of(c: &Configuration, group: Group) -> Option<GridPoint> {
        Some(GridPoint {
            bins: group.bins_axis().iter().position(|&b| b == c.bins)?,
            prune: PRUNE.iter().position(|&p| p == c.prune)?,
            protect: PROTECT.iter().position(|&p| p == c.protect)?,
            metric: c.metric,
        })
    }
}
