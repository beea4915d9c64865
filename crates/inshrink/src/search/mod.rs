//! The configuration search of Inshrinkerator §5 under a quality check.
//!
//! Two groups are configured separately: embeddings and everything else (§5; thresholds are still
//! per layer type, §4.2). Per group:
//! * **Guided exhaustive search** (first checkpoint, Algorithm 4's idea): quality is assumed
//!   monotone along each axis of the configuration cube (more bins, less pruning, more protection
//!   are never worse). For each metric and protection fraction the search walks the
//!   (pruning × bins) face as a staircase: starting from the fewest bins, raise bins until the
//!   check passes, then raise pruning and continue from the same bin count, so each face costs at
//!   most `|bins| + |prune|` checks instead of `|bins|·|prune|`. Every passing point is a
//!   candidate; the one with the smallest estimated size (highest ratio) wins.
//! * **Delta-neighbourhood search** (later checkpoints): the previous configuration is first tried
//!   with the other pruning metric, which is adopted when its score is markedly better (below
//!   [`METRIC_SWITCH`] of the old one). Then all configurations at most `δ` steps away on each
//!   axis that are not more aggressive than the previous one (the paper rules those out: models
//!   get more sensitive as they train) are ordered by estimated size and checked until one passes
//!   (the paper's early exit). If none passes, the exhaustive search runs.
//!
//! When nothing on the grid passes, the group is stored exactly, so an accepted result never
//! violates the check. Under a per-tensor budget ([`Quality::tensor_budget`], the model-free
//! `--max-error`), each tensor is then decided on its own ([`refine`]): one that misses the budget
//! at its group's setting (or whose group went exact) gets more bins, beyond the paper's grid up
//! to 253, or exact storage, without changing the group's other tensors. The check is a [`Quality`] callback: the CLI runs the user's evaluation
//! command on the restored checkpoint; [`L2Budget`] is the model-free proxy (every lossy tensor's
//! relative L2 error within a budget).

use crate::config::{GridPoint, Group, Metric, Plan, Setting, PROTECT, PRUNE};
use crate::importance::{self, LayerKind};
use crate::levels::{quantize_tensor, relative_l2, ProtectStorage, Quantized};
use crate::partition::{KindSketches, Thresholds};
use crate::quantize::NonUniform;
use crate::sketch::{Sketch, SketchError};
use bitlens_tensors::Dtype;
use std::collections::BTreeMap;

mod outcome;
mod quality;
pub mod refine;

pub use outcome::{GroupReport, SearchMode, SearchOutcome, SearchReport, TensorReport};
pub use quality::{L2Budget, Quality, QualityError, Trial, Verdict};

/// A neighbour's score must be below this fraction of the current metric's to switch metric.
pub const METRIC_SWITCH: f64 = 0.9;

/// One tensor of a checkpoint.
#[derive(Debug, Clone, Copy)]
pub struct TensorInput<'a> {
    /// Its name (classified by [`LayerKind::classify`]).
    pub name: &'a str,
    /// Its dtype (f32, f16 or bf16).
    pub dtype: Dtype,
    /// Its values as f32 ([`crate::values::to_f32`]).
    pub values: &'a [f32],
    /// Adam's second moment for it, same length, when an optimizer state is given.
    pub second_moment: Option<&'a [f32]>,
}

/// Knobs that are not searched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Relative accuracy of the importance sketches.
    pub alpha: f64,
    /// The quantizer.
    pub quantizer: NonUniform,
    /// How protected values are stored.
    pub storage: ProtectStorage,
    /// Neighbourhood radius `δ` in grid steps.
    pub delta: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.01,
            quantizer: NonUniform::default(),
            storage: ProtectStorage::Original,
            delta: 1,
        }
    }
}

/// A checkpoint ranked and sketched, ready to be quantized under any plan.
pub struct Prepared<'a> {
    tensors: Vec<TensorInput<'a>>,
    kinds: Vec<LayerKind>,
    sensitivity: Vec<Option<Vec<f32>>>,
    sketches: BTreeMap<LayerKind, KindSketches>,
    options: Options,
}

impl<'a> Prepared<'a> {
    /// Ranks every tensor and sketches the importances per layer type (one pass each). A second
    /// moment of the wrong length is ignored.
    pub fn new(
        tensors: Vec<TensorInput<'a>>,
        options: Options,
    ) -> Result<Prepared<'a>, SketchError> {
        let kinds: Vec<LayerKind> = tensors
            .iter()
            .map(|t| LayerKind::classify(t.name))
            .collect();
        let sensitivity: Vec<Option<Vec<f32>>> = tensors
            .iter()
            .map(|t| importance::importance(t.values, t.second_moment, Metric::Sensitivity))
            .collect();
        let mut sketches = BTreeMap::new();
        for kind in LayerKind::ALL {
            let members: Vec<usize> = (0..tensors.len()).filter(|&i| kinds[i] == kind).collect();
            if members.is_empty() {
                continue;
            }
            let mut magnitude = Sketch::new(options.alpha)?;
            for &i in &members {
                for &w in tensors[i].values {
                    magnitude.insert(w.abs());
                }
            }
            let sensitivity = if members.iter().all(|&i| sensitivity[i].is_some()) {
                let mut s = Sketch::new(options.alpha)?;
                for &i in &members {
                    s.extend(sensitivity[i].as_deref().unwrap_or(&[]));
                }
                Some(s)
            } else {
                None
            };
            sketches.insert(
                kind,
                KindSketches {
                    magnitude,
                    sensitivity,
                },
            );
        }
        Ok(Prepared {
            tensors,
            kinds,
            sensitivity,
            sketches,
            options,
        })
    }

    /// The tensors.
    pub fn tensors(&self) -> &[TensorInput<'a>] {
        &self.tensors
    }

    /// The layer type of tensor `i`.
    pub fn kind(&self, i: usize) -> LayerKind {
        self.kinds[i]
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Whether every tensor of `group` has a sensitivity (so the sensitivity metric applies).
    pub fn has_sensitivity(&self, group: Group) -> bool {
        let mut members = self.members(group).peekable();
        members.peek().is_some() && members.all(|i| self.sensitivity[i].is_some())
    }

    /// Indices of the tensors of `group`.
    pub fn members(&self, group: Group) -> impl Iterator<Item = usize> + '_ {
        (0..self.tensors.len()).filter(move |&i| Group::of(self.kinds[i]) == group)
    }

    /// Tensor `i` under `setting`.
    pub fn quantize(&self, i: usize, setting: Setting) -> Quantized {
        let t = &self.tensors[i];
        let thresholds = match (setting, self.sketches.get(&self.kinds[i])) {
            (Setting::Quantized(c), Some(s)) => Thresholds::new(&c, s),
            _ => Thresholds {
                prune: None,
                protect_magnitude: None,
                protect_sensitivity: None,
            },
        };
        quantize_tensor(
            t.values,
            t.dtype,
            self.sensitivity[i].as_deref(),
            setting,
            &thresholds,
            &self.options.quantizer,
            self.options.storage,
        )
    }

    /// Every tensor under `plan`.
    pub fn apply(&self, plan: &Plan) -> Vec<Quantized> {
        (0..self.tensors.len())
            .map(|i| self.quantize(i, plan.get(Group::of(self.kinds[i]))))
            .collect()
    }
}

/// Tensors of a group under one setting, by input index.
type GroupTensors = Vec<(usize, Quantized)>;

/// State of one group's search.
struct GroupSearch<'p, 'a> {
    prep: &'p Prepared<'a>,
    group: Group,
    plan: Plan,
    current: Vec<Quantized>,
    trials: usize,
    /// Checked points: estimated bytes and verdict. Ordered, so that the best plan is the same
    /// on every run: with a hash map, exact ties (equal bytes and score) went to whichever point
    /// the process's random hash order met first; now to the smallest [`GridPoint`].
    seen: BTreeMap<GridPoint, (f64, Verdict)>,
}

impl GroupSearch<'_, '_> {
    fn quantize_group(&self, setting: Setting) -> GroupTensors {
        self.prep
            .members(self.group)
            .map(|i| (i, self.prep.quantize(i, setting)))
            .collect()
    }

    fn bytes(qs: &[(usize, Quantized)]) -> f64 {
        qs.iter().map(|(_, q)| q.estimated_bytes()).sum()
    }

    fn judge(
        &mut self,
        qs: GroupTensors,
        setting: Setting,
        quality: &mut dyn Quality,
    ) -> Result<Verdict, QualityError> {
        for (i, q) in qs {
            self.current[i] = q;
        }
        let plan = self.plan.with(self.group, setting);
        self.trials += 1;
        quality.check(&Trial {
            plan,
            changed: self.group,
            tensors: &self.prep.tensors,
            kinds: &self.prep.kinds,
            quantized: &self.current,
        })
    }

    fn check(
        &mut self,
        p: GridPoint,
        quality: &mut dyn Quality,
    ) -> Result<(f64, Verdict), QualityError> {
        if let Some(&r) = self.seen.get(&p) {
            return Ok(r);
        }
        let setting = Setting::Quantized(p.configuration(self.group));
        let qs = self.quantize_group(setting);
        let bytes = Self::bytes(&qs);
        let v = self.judge(qs, setting, quality)?;
        self.seen.insert(p, (bytes, v));
        Ok((bytes, v))
    }

    fn metrics(&self) -> Vec<Metric> {
        if self.prep.has_sensitivity(self.group) {
            vec![Metric::Magnitude, Metric::Sensitivity]
        } else {
            vec![Metric::Magnitude]
        }
    }

    fn best_accepted(&self) -> Option<(GridPoint, f64, Verdict)> {
        self.seen
            .iter()
            .filter(|(_, (_, v))| v.accepted)
            .map(|(&p, &(b, v))| (p, b, v))
            .min_by(|a, b| {
                (a.1.total_cmp(&b.1))
                    .then(a.2.score.total_cmp(&b.2.score))
                    .then(a.0.cmp(&b.0))
            })
    }

    fn exhaustive(
        &mut self,
        quality: &mut dyn Quality,
    ) -> Result<Option<(GridPoint, Verdict)>, QualityError> {
        let nb = self.group.bins_axis().len();
        for metric in self.metrics() {
            for protect in 0..PROTECT.len() {
                let mut bins = 0;
                for prune in 0..PRUNE.len() {
                    while bins < nb {
                        let (_, v) = self.check(
                            GridPoint {
                                bins,
                                prune,
                                protect,
                                metric,
                            },
                            quality,
                        )?;
                        if v.accepted {
                            break;
                        }
                        bins += 1;
                    }
                    if bins == nb {
                        break;
                    }
                }
            }
        }
        Ok(self.best_accepted().map(|(p, _, v)| (p, v)))
    }

    fn neighbourhood(
        &mut self,
        prev: GridPoint,
        quality: &mut dyn Quality,
    ) -> Result<Option<(GridPoint, Verdict)>, QualityError> {
        let mut center = prev;
        if self.prep.has_sensitivity(self.group) {
            let other = GridPoint {
                metric: match prev.metric {
                    Metric::Magnitude => Metric::Sensitivity,
                    Metric::Sensitivity => Metric::Magnitude,
                },
                ..prev
            };
            let (_, a) = self.check(prev, quality)?;
            let (_, b) = self.check(other, quality)?;
            if b.accepted && (!a.accepted || b.score < METRIC_SWITCH * a.score) {
                center = other;
            }
        }
        let d = self.prep.options.delta;
        let nb = self.group.bins_axis().len();
        let mut points = Vec::new();
        for bins in center.bins..(center.bins + d + 1).min(nb) {
            for prune in center.prune.saturating_sub(d)..=center.prune {
                for protect in center.protect..(center.protect + d + 1).min(PROTECT.len()) {
                    points.push(GridPoint {
                        bins,
                        prune,
                        protect,
                        metric: center.metric,
                    });
                }
            }
        }
        // Order by estimated size (quantizing is cheap next to a real evaluation), then check
        // until one passes.
        let mut sized: Vec<(f64, GridPoint, GroupTensors)> = Vec::new();
        for p in points {
            if let Some(&(b, v)) = self.seen.get(&p) {
                if v.accepted {
                    sized.push((b, p, Vec::new()));
                }
                continue;
            }
            let qs = self.quantize_group(Setting::Quantized(p.configuration(self.group)));
            sized.push((Self::bytes(&qs), p, qs));
        }
        sized.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (bytes, p, qs) in sized {
            if let Some(&(_, v)) = self.seen.get(&p) {
                return Ok(Some((p, v)));
            }
            let setting = Setting::Quantized(p.configuration(self.group));
            let v = self.judge(qs, setting, quality)?;
            self.seen.insert(p, (bytes, v));
            if v.accepted {
                return Ok(Some((p, v)));
            }
        }
        Ok(None)
    }
}

/// Searches a plan for `prep` under `quality`; `previous` is the plan of the previous checkpoint
/// (delta-neighbourhood search), `None` at the first one (exhaustive search).
pub fn search(
    prep: &Prepared<'_>,
    quality: &mut dyn Quality,
    previous: Option<&Plan>,
) -> Result<SearchOutcome, QualityError> {
    let mut plan = Plan::EXACT;
    let mut current = prep.apply(&plan);
    let budget = quality.tensor_budget();
    let mut overrides: Vec<Option<refine::Override>> = vec![None; prep.tensors.len()];
    let mut groups = Vec::new();
    for group in [Group::Main, Group::Embedding] {
        if prep.members(group).next().is_none() {
            groups.push(GroupReport {
                group,
                setting: Setting::Exact,
                mode: SearchMode::Empty,
                trials: 0,
                score: 0.0,
                max_error: 0.0,
            });
            continue;
        }
        let mut gs = GroupSearch {
            prep,
            group,
            plan,
            current,
            trials: 0,
            seen: BTreeMap::new(),
        };
        let prev = previous.and_then(|p| match p.get(group) {
            Setting::Quantized(c) => GridPoint::of(&c, group),
            Setting::Exact => None,
        });
        let (found, mode) = match prev {
            Some(p) => match gs.neighbourhood(p, quality)? {
                Some(f) => (Some(f), SearchMode::Neighbourhood),
                None => (
                    gs.exhaustive(quality)?,
                    SearchMode::NeighbourhoodThenExhaustive,
                ),
            },
            None => (gs.exhaustive(quality)?, SearchMode::Exhaustive),
        };
        let (setting, score) = match found {
            Some((p, v)) => (Setting::Quantized(p.configuration(group)), v.score),
            None => (Setting::Exact, 0.0),
        };
        let trials = gs.trials;
        current = gs.current;
        for i in prep.members(group) {
            let q = prep.quantize(i, setting);
            current[i] = match budget {
                Some(b) => {
                    let (q, why) = refine::refine(prep, i, q, b);
                    overrides[i] = why;
                    q
                }
                None => q,
            };
        }
        plan = plan.with(group, setting);
        groups.push(GroupReport {
            group,
            setting,
            mode,
            trials,
            score,
            max_error: 0.0,
        });
    }
    let tensors = current
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let t = &prep.tensors[i];
            TensorReport {
                name: t.name.to_string(),
                kind: prep.kinds[i],
                setting: q.setting,
                error: relative_l2(t.values, &q.restore()),
                estimated_bytes: q.estimated_bytes(),
                original_bytes: (t.values.len() * crate::values::width(t.dtype).unwrap_or(4))
                    as u64,
                own: overrides[i],
            }
        })
        .collect::<Vec<TensorReport>>();
    for g in &mut groups {
        g.max_error = prep
            .members(g.group)
            .map(|i| tensors[i].error)
            .fold(0.0, f64::max);
    }
    Ok(SearchOutcome {
        plan,
        quantized: current,
        report: SearchReport {
            quality: quality.name(),
            plan,
            groups,
            tensors,
        },
    })
}
