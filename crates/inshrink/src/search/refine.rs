//! Per-tensor decisions under a per-tensor budget ([`super::Quality::tensor_budget`]): a tensor
//! that misses the budget under its group's setting — or whose group found no passing setting —
//! gets the smallest setting of its own that meets it, with more bins than the paper's grid when
//! needed ([`WIDE_BINS`]), or is stored exactly. Its group's other tensors keep the group's
//! setting, so one hard tensor no longer sends the whole group to exact storage.
//!
//! Along each line (fixed pruning, protection and metric) error is assumed to fall as bins grow,
//! so the smallest passing bin count is found by bisection; every candidate is still measured,
//! so an accepted setting never exceeds the budget even where the assumption fails.

use super::Prepared;
use crate::config::{Configuration, Metric, Setting, BINS, PROTECT, WIDE_BINS};
use crate::levels::{relative_l2, Quantized};

/// Why a tensor's setting differs from its group's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Override {
    /// The group's setting missed the budget (or the group found none): more bins on its own.
    MoreBins,
    /// No setting up to the largest bin count met the budget: stored exactly (lossless).
    Exact,
}

impl Override {
    /// The reason, as reports say it.
    pub fn reason(self) -> &'static str {
        match self {
            Override::MoreBins => "missed the budget at its group's setting: more bins on its own",
            Override::Exact => "no setting up to 253 bins met the budget: stored lossless",
        }
    }
}

/// Every bin count a tensor may get, ascending.
fn all_bins() -> Vec<u8> {
    let mut b: Vec<u8> = BINS.iter().chain(&WIDE_BINS).copied().collect();
    b.sort_unstable();
    b.dedup();
    b
}

/// Tensor `i` under `config` with its error, when the error is within `budget`.
fn passing(prep: &Prepared<'_>, i: usize, config: Configuration, budget: f64) -> Option<Quantized> {
    let q = prep.quantize(i, Setting::Quantized(config));
    let e = relative_l2(prep.tensors()[i].values, &q.restore());
    (e <= budget).then_some(q)
}

/// The smallest passing bin count of `bins` along the line of `line` (its bins ignored).
fn bisect(
    prep: &Prepared<'_>,
    i: usize,
    line: Configuration,
    bins: &[u8],
    budget: f64,
) -> Option<Quantized> {
    let (mut lo, mut hi) = (0usize, bins.len());
    let mut best = None;
    while lo < hi {
        let mid = (lo + hi) / 2;
        match passing(
            prep,
            i,
            Configuration {
                bins: bins[mid],
                ..line
            },
            budget,
        ) {
            Some(q) => {
                best = Some(q);
                hi = mid;
            }
            None => lo = mid + 1,
        }
    }
    best
}

/// Tensor `i` decided on its own: `group` is it under its group's setting. Returns the tensor to
/// store and, when it differs from the group's, why.
pub fn refine(
    prep: &Prepared<'_>,
    i: usize,
    group: Quantized,
    budget: f64,
) -> (Quantized, Option<Override>) {
    let values = prep.tensors()[i].values;
    let base = match group.setting {
        Setting::Quantized(c) => {
            if relative_l2(values, &group.restore()) <= budget {
                return (group, None);
            }
            c
        }
        Setting::Exact => Configuration {
            bins: 0,
            prune: 0.0,
            metric: Metric::Magnitude,
            protect: PROTECT[0],
        },
    };
    let bins: Vec<u8> = all_bins().into_iter().filter(|&b| b > base.bins).collect();
    let mut lines = vec![base];
    for protect in [base.protect, PROTECT[PROTECT.len() - 1]] {
        let line = Configuration {
            prune: 0.0,
            protect,
            ..base
        };
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    let exact_bytes = prep.quantize(i, Setting::Exact).estimated_bytes();
    let best = lines
        .into_iter()
        .filter_map(|line| bisect(prep, i, line, &bins, budget))
        .filter(|q| q.estimated_bytes() < exact_bytes)
        .min_by(|a, b| a.estimated_bytes().total_cmp(&b.estimated_bytes()));
    match best {
        Some(q) => (q, Some(Override::MoreBins)),
        None => (prep.quantize(i, Setting::Exact), Some(Override::Exact)),
    }
}
