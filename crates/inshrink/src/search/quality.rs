//! The quality check of Inshrinkerator's search (§5): a [`Trial`] (the whole checkpoint under a
//! candidate plan) judged by a [`Quality`] — the user's evaluation command, or [`L2Budget`], the
//! model-free proxy.

use super::TensorInput;
use crate::config::{Group, Plan, Setting};
use crate::importance::LayerKind;
use crate::levels::{relative_l2, Quantized};
use thiserror::Error;

/// A candidate the quality check judges: the whole checkpoint under `plan`.
pub struct Trial<'t> {
    /// The candidate plan.
    pub plan: Plan,
    /// The group whose setting this trial varies (the other is already accepted or exact).
    pub changed: Group,
    /// The checkpoint's tensors.
    pub tensors: &'t [TensorInput<'t>],
    /// Their layer types.
    pub kinds: &'t [LayerKind],
    /// Every tensor under `plan`; [`Quantized::restore`] gives its values.
    pub quantized: &'t [Quantized],
}

impl Trial<'_> {
    /// Tensor `i` as restored under the plan: raw little-endian bytes of its dtype (what an
    /// evaluation command reads back from a candidate checkpoint).
    pub fn restored_bytes(&self, i: usize) -> Vec<u8> {
        self.quantized[i].restore_bytes()
    }
}

/// The judgement of one trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Whether the trial meets the threshold.
    pub accepted: bool,
    /// Its quality score, lower is better (degradation, or the largest error).
    pub score: f64,
}

/// A quality check that could not run (an evaluation command failed, say).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("quality check failed: {0}")]
pub struct QualityError(pub String);

/// The quality threshold of the search.
pub trait Quality {
    /// A name for reports (e.g. "relative L2 ≤ 0.05", "eval-cmd degradation ≤ 1%").
    fn name(&self) -> String;
    /// Judges a trial.
    fn check(&mut self, trial: &Trial<'_>) -> Result<Verdict, QualityError>;
    /// A budget every lossy tensor must meet on its own (relative L2 error), when the check is
    /// one: then a tensor that misses it under its group's setting is given more bins (up to
    /// [`crate::config::MAX_BINS`]) or stored exactly on its own, instead of the group going
    /// exact. `None` (the default, and the paper's `--eval-cmd`): the group's setting stands.
    fn tensor_budget(&self) -> Option<f64> {
        None
    }
}

/// The model-free proxy: every lossy tensor of the changed group has relative L2 error
/// `‖w − ŵ‖ / ‖w‖` at most `max_error`. Score: the largest error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct L2Budget {
    /// The per-tensor budget.
    pub max_error: f64,
}

impl Quality for L2Budget {
    fn name(&self) -> String {
        format!("per-tensor relative L2 error ≤ {}", self.max_error)
    }

    fn tensor_budget(&self) -> Option<f64> {
        Some(self.max_error)
    }

    fn check(&mut self, trial: &Trial<'_>) -> Result<Verdict, QualityError> {
        let mut worst = 0.0f64;
        for (i, q) in trial.quantized.iter().enumerate() {
            if Group::of(trial.kinds[i]) != trial.changed || q.setting == Setting::Exact {
                continue;
            }
            worst = worst.max(relative_l2(trial.tensors[i].values, &q.restore()));
            if worst > self.max_error {
                return Ok(Verdict {
                    accepted: false,
                    score: worst,
                });
            }
        }
        Ok(Verdict {
            accepted: true,
            score: worst,
        })
    }
}
