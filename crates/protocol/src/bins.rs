//! What the worker returns for the lossy lesson's Inshrinkerator view
//! ([`WorkerRequest::InshrinkBins`](crate::WorkerRequest::InshrinkBins)): the figures of
//! `bitlens_lessons::bins::bins_lesson` (paper 002 §4.4, Table 7) as plain data — non-uniform
//! against uniform bins on one tensor. The page only draws them; the inshrink crate stays out of
//! the page's module.

use serde::{Deserialize, Serialize};

/// One codebook fitted to the values and its error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinsFit {
    /// The centroids, ascending.
    pub centroids: Vec<f32>,
    /// `‖x − q(x)‖ / ‖x‖`.
    pub rel_l2: f64,
    /// Largest `|x − q(x)|`.
    pub max_abs: f64,
}

/// Both quantizers at one bin count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinsRow {
    /// The bin count.
    pub bins: u32,
    /// The non-uniform bins (Algorithm 2).
    pub nonuniform: BinsFit,
    /// Evenly spaced bins.
    pub uniform: BinsFit,
}

/// The fewest bins each quantizer needs for the non-uniform error at `bins`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BinsFewest {
    /// The non-uniform bin count whose error is the target.
    pub bins: u32,
    /// The target relative L2 error.
    pub error: f64,
    /// The fewest non-uniform bins meeting it.
    pub nonuniform: u32,
    /// The fewest uniform bins meeting it, if at most `uniform_limit` do.
    pub uniform: Option<u32>,
}

/// The lesson's figures for one tensor and one `β`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinsReport {
    /// Values measured (the tensor's first ones).
    pub values: u64,
    /// The non-uniform quantizer's `β` (frequency against magnitude).
    pub balance: f64,
    /// The most uniform bins tried for [`BinsFewest::uniform`].
    pub uniform_limit: u32,
    /// The smallest value (the histogram's left edge).
    pub lo: f64,
    /// The largest value (its right edge).
    pub hi: f64,
    /// Equal-width counts of the values from `lo` to `hi`.
    pub histogram: Vec<u64>,
    /// Both quantizers at each bin count of the view, ascending.
    pub rows: Vec<BinsRow>,
    /// The fewest bins for the non-uniform error at each of those counts.
    pub fewest: Vec<BinsFewest>,
}

impl BinsReport {
    /// The row of `bins` bins.
    pub fn row(&self, bins: u32) -> Option<&BinsRow> {
        self.rows.iter().find(|r| r.bins == bins)
    }

    /// The fewest bins for the non-uniform error at `bins`.
    pub fn fewest(&self, bins: u32) -> Option<&BinsFewest> {
        self.fewest.iter().find(|f| f.bins == bins)
    }
}
