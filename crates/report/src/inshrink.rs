//! What an Inshrinkerator snapshot (paper 002; codec 5, container version 4, docs/FORMAT.md §1.3
//! and §8) says about itself, and what `bitlens compress --codec inshrink --json` prints: the plan
//! per layer group (§5: bins, prune, protect, metric, or the exact fallback), how the search found
//! it (§5.2), the achieved relative L2 error per group and per tensor, and the chain link (§6).
//!
//! Types only. `bitlens_inshrink` turns its settings and search outcome into them
//! ([`SettingInfo`], [`GroupSearch`], [`SearchReport`]); `bitlens_snapshot::inshrink` reads
//! [`InshrinkInfo`] back from a snapshot's annex and streams, so a compressor shows exactly what a
//! later `inspect` reads.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// A group's or tensor's setting: `{"exact": true}`, or the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingInfo {
    /// Every element stored exactly (the fallback when no configuration meets the threshold).
    pub exact: bool,
    /// Quantization bins (levels of the non-uniform codebook).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<u8>,
    /// Pruned fraction of the elements (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<f32>,
    /// Protected (kept exact) fraction of the elements (0–1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect: Option<f32>,
    /// Ranking metric (`magnitude`, `sensitivity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

impl SettingInfo {
    /// The exact setting (every element kept).
    pub fn exact() -> Self {
        SettingInfo {
            exact: true,
            bins: None,
            prune: None,
            protect: None,
            metric: None,
        }
    }
}

impl std::fmt::Display for SettingInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.exact {
            return f.write_str("exact");
        }
        write!(
            f,
            "{} bins, prune {:.0}% by {}, protect {:.2}%",
            self.bins.unwrap_or(0),
            f64::from(self.prune.unwrap_or(0.0)) * 100.0,
            self.metric.as_deref().unwrap_or(""),
            f64::from(self.protect.unwrap_or(0.0)) * 100.0
        )
    }
}

/// How the search found one group's setting (an element of the report's `groups`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSearch {
    /// `main` or `embedding`.
    pub group: String,
    /// The setting chosen.
    pub setting: SettingInfo,
    /// `empty`, `exhaustive`, `neighbourhood` or `neighbourhood-then-exhaustive`.
    pub mode: String,
    /// Configurations tried.
    pub trials: usize,
    /// The quality measure's score of the chosen setting (relative L2 error, or relative loss
    /// degradation under `--eval-cmd`).
    pub score: f64,
    /// Largest relative L2 error `‖w − ŵ‖ / ‖w‖` of the group's tensors.
    pub max_error: f64,
    /// No configuration met the threshold: the group is stored exactly.
    pub exact_fallback: bool,
}

/// The quality threshold a search ran under: the model-free proxy (`kind` `l2-proxy`, with
/// `max_error`) or the user's evaluation (`eval-cmd`, with the command, `max_degradation` and the
/// original loss).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityInfo {
    /// `l2-proxy` or `eval-cmd`.
    pub kind: String,
    /// What the threshold is, in words (names the proxy as such).
    pub name: String,
    /// Quality checks made.
    #[serde(default)]
    pub evaluations: usize,
    /// The per-tensor relative L2 budget (`l2-proxy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error: Option<f64>,
    /// The evaluation command (`eval-cmd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The largest accepted relative loss increase (`eval-cmd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_degradation: Option<f64>,
    /// The original checkpoint's loss (`eval-cmd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_loss: Option<f64>,
    /// Seconds spent evaluating (`eval-cmd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation_seconds: Option<f64>,
}

/// The optimizer state a search ranked weights by (`--optimizer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimizerInfo {
    /// The optimizer state file as given.
    pub path: PathBuf,
    /// Searched tensors whose second moment was found (by name and length).
    pub matched: usize,
    /// Second moments found but all zero (an optimizer that has not stepped): left out.
    pub all_zero: usize,
    /// Searched tensors.
    pub tensors: usize,
    /// How the sensitivity is estimated, in words.
    pub estimate: String,
}

/// The previous snapshot a chained search started from (`--base`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchBase {
    /// The base snapshot as given.
    pub path: PathBuf,
    /// Its file name, as the new snapshot's chain link records it.
    pub name: String,
    /// The search started from the base's plan.
    pub plan_from_base: bool,
    /// Tensors stored as deltas of the base's levels.
    pub delta_tensors: usize,
}

/// Seconds per phase of an Inshrinkerator compression.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchTimes {
    /// Reading the checkpoint.
    pub read_seconds: f64,
    /// Sketching the importances.
    pub prepare_seconds: f64,
    /// The plan search.
    pub search_seconds: f64,
    /// Encoding and writing the streams (known after writing: not in the stored report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encode_seconds: Option<f64>,
    /// The whole command (known after writing: not in the stored report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_seconds: Option<f64>,
}

/// The search report stored in an annex (JSON): the threshold, each group's search, how
/// protected values are stored, and times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    /// The quality threshold.
    pub quality: QualityInfo,
    /// Per group, how its setting was found.
    pub groups: Vec<GroupSearch>,
    /// The optimizer state used for sensitivity (`null` without one).
    #[serde(default)]
    pub optimizer: Option<OptimizerInfo>,
    /// `original` or `bf16`.
    pub protect_dtype: String,
    /// The base snapshot of a chain (`null` without one).
    #[serde(default)]
    pub base: Option<SearchBase>,
    /// Seconds per phase.
    #[serde(default)]
    pub times: Option<SearchTimes>,
    /// Tensors whose setting is not their group's, and why: decided on their own under a
    /// per-tensor budget (more bins, or lossless), or stored lossless because their lossy code
    /// was not smaller. Absent when there are none (and in snapshots written before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub own_settings: Vec<OwnSetting>,
}

/// A tensor whose setting is not its group's (see [`SearchReport::own_settings`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnSetting {
    /// Tensor name.
    pub name: String,
    /// Its setting (`exact`: coded by the lossless codec, LMC).
    pub setting: SettingInfo,
    /// Achieved relative L2 error (0 when lossless).
    pub error: f64,
    /// Why, in words.
    pub reason: String,
}

/// One searched tensor of a compression: its layer type, group, setting and achieved error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorSearch {
    /// Tensor name.
    pub name: String,
    /// Layer type (`embedding`, `attention`, `linear`, `norm/bias`).
    pub layer: String,
    /// `main` or `embedding`.
    pub group: String,
    /// Its setting.
    pub setting: SettingInfo,
    /// Achieved relative L2 error `‖w − ŵ‖ / ‖w‖`.
    pub error: f64,
}

/// The `bitlens compress --codec inshrink --json` document: the stored search report, then what
/// is known after writing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressReport {
    /// The search report as the annex stores it (its `times` completed with the encode and total
    /// seconds).
    #[serde(flatten)]
    pub search: SearchReport,
    /// Bytes of the input checkpoint.
    pub input_bytes: u64,
    /// Bytes of the snapshot written.
    pub output_bytes: u64,
    /// `output_bytes / input_bytes`.
    pub ratio: f64,
    /// Every searched tensor, in file order.
    pub tensors: Vec<TensorSearch>,
    /// Whether the file written is the plain lossless (LMC) snapshot, with no annex: the lossy
    /// one was not smaller (nothing, or too little, met the budget on the grid).
    #[serde(default)]
    pub lossless_file: bool,
}

/// One group of the plan: its setting, the largest achieved error of its tensors, and the search
/// that found it (when the report has one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// `main` or `embedding`.
    pub group: String,
    /// The plan's setting for the group.
    pub setting: SettingInfo,
    /// Largest achieved relative L2 error of the group's tensors (from their streams).
    pub max_error: f64,
    /// How the search found it.
    pub search: Option<GroupSearch>,
}

/// The snapshot a chain's delta snapshot was made against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseInfo {
    /// Its file name.
    pub name: String,
    /// xxh3-64 of its index, 16 hex digits.
    pub index_checksum: String,
    /// Its size in bytes.
    pub file_size: u64,
}

/// One Inshrinkerator tensor, from its streams' headers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorPlan {
    /// Layer type (`embedding`, `attention`, `linear`, `norm/bias`).
    pub layer: String,
    /// `main` or `embedding`.
    pub group: String,
    /// Its setting.
    pub setting: SettingInfo,
    /// Achieved relative L2 error `‖w − ŵ‖ / ‖w‖`.
    pub error: f32,
    /// Protected (exact) values.
    pub protected: u64,
    /// Centroids of its codebook.
    pub bins: usize,
    /// Some frame is a delta against the base snapshot.
    pub delta: bool,
}

/// What `bitlens inspect --json` reports of an Inshrinkerator snapshot (under `inshrink`), with
/// its tensors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InshrinkInfo {
    /// The plan per group (`main`, then `embedding`).
    pub groups: Vec<GroupInfo>,
    /// The quality threshold (from the report; `null` when it has none).
    pub quality: Option<QualityInfo>,
    /// `original` or `bf16`.
    pub protect_dtype: String,
    /// The base snapshot, for a delta of a chain.
    pub base: Option<BaseInfo>,
    /// The stored search report (`null` when the annex holds none this build reads).
    pub report: Option<SearchReport>,
    /// Per inshrink tensor (name, plan), in file order; `inspect` puts each under its tensor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensors: Vec<(String, TensorPlan)>,
}

impl InshrinkInfo {
    /// The plan of tensor `name`, if it is an inshrink tensor.
    pub fn tensor(&self, name: &str) -> Option<&TensorPlan> {
        self.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_serialize_as_the_cli_prints_them() {
        assert_eq!(
            serde_json::to_string(&SettingInfo::exact()).unwrap(),
            r#"{"exact":true}"#
        );
        let q = SettingInfo {
            exact: false,
            bins: Some(8),
            prune: Some(0.25),
            protect: Some(0.005),
            metric: Some("magnitude".into()),
        };
        assert_eq!(
            serde_json::to_string(&q).unwrap(),
            r#"{"exact":false,"bins":8,"prune":0.25,"protect":0.005,"metric":"magnitude"}"#
        );
        assert_eq!(
            q.to_string(),
            "8 bins, prune 25% by magnitude, protect 0.50%"
        );
    }

    #[test]
    fn a_compress_report_is_the_stored_report_then_the_sizes() {
        let search = SearchReport {
            quality: QualityInfo {
                kind: "l2-proxy".into(),
                name: "x".into(),
                evaluations: 1,
                max_error: Some(0.1),
                command: None,
                max_degradation: None,
                original_loss: None,
                evaluation_seconds: None,
            },
            groups: Vec::new(),
            optimizer: None,
            protect_dtype: "original".into(),
            base: None,
            times: Some(SearchTimes {
                read_seconds: 1.0,
                prepare_seconds: 2.0,
                search_seconds: 3.0,
                encode_seconds: None,
                total_seconds: None,
            }),
            own_settings: Vec::new(),
        };
        let stored = serde_json::to_string(&search).unwrap();
        assert_eq!(
            stored,
            r#"{"quality":{"kind":"l2-proxy","name":"x","evaluations":1,"max_error":0.1},"groups":[],"optimizer":null,"protect_dtype":"original","base":null,"times":{"read_seconds":1.0,"prepare_seconds":2.0,"search_seconds":3.0}}"#
        );
        let report = CompressReport {
            search,
            input_bytes: 10,
            output_bytes: 5,
            ratio: 0.5,
            tensors: Vec::new(),
            lossless_file: false,
        };
        let json = serde_json::to_string(&report).unwrap();
        assert!(json.starts_with(&stored[..stored.len() - 1]), "{json}");
        assert!(json.ends_with(
            r#","input_bytes":10,"output_bytes":5,"ratio":0.5,"tensors":[],"lossless_file":false}"#
        ));
        let back: CompressReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
    }
}
