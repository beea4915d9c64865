//! What Inshrinkerator's search (§5) found: the plan, every tensor under it, and the report of
//! each group's search and each tensor's error and size.

use crate::config::{Group, Plan, Setting};
use crate::importance::LayerKind;
use crate::levels::Quantized;

/// How a group's setting was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    /// The group has no tensors.
    Empty,
    /// Guided exhaustive search.
    Exhaustive,
    /// Delta-neighbourhood search around the previous setting.
    Neighbourhood,
    /// The neighbourhood had no passing configuration; exhaustive search ran.
    NeighbourhoodThenExhaustive,
}

/// The outcome for one group.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupReport {
    /// The group.
    pub group: Group,
    /// The chosen setting.
    pub setting: Setting,
    /// How it was found.
    pub mode: SearchMode,
    /// Quality checks run.
    pub trials: usize,
    /// The accepted trial's score (0 for exact).
    pub score: f64,
    /// The largest relative L2 error of the group's tensors under the chosen setting.
    pub max_error: f64,
}

/// The outcome for one tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorReport {
    /// Tensor name.
    pub name: String,
    /// Layer type.
    pub kind: LayerKind,
    /// Its setting.
    pub setting: Setting,
    /// Relative L2 error of the restored tensor.
    pub error: f64,
    /// Estimated encoded bytes (full, not delta).
    pub estimated_bytes: f64,
    /// Original bytes.
    pub original_bytes: u64,
    /// Why its setting differs from its group's, when it was decided on its own (per-tensor
    /// budgets only, [`super::refine`]).
    pub own: Option<super::refine::Override>,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchReport {
    /// The quality check's name.
    pub quality: String,
    /// The chosen plan.
    pub plan: Plan,
    /// Per group.
    pub groups: Vec<GroupReport>,
    /// Per tensor.
    pub tensors: Vec<TensorReport>,
}

/// The plan, every tensor under it, and the report.
pub struct SearchOutcome {
    /// The chosen plan.
    pub plan: Plan,
    /// Every tensor under the plan, in input order.
    pub quantized: Vec<Quantized>,
    /// The report.
    pub report: SearchReport,
}
