//! What an Inshrinkerator snapshot (paper 002; codec 5, container version 4, docs/FORMAT.md §1.3
//! and §8) says about itself, as typed serde documents: the plan per layer group (§5: bins, prune,
//! protect, metric, or the exact fallback), how the search found it, the achieved relative L2
//! error per group and per tensor, and the chain link — the same document `bitlens inspect
//! --json` prints under `inshrink` (its per-tensor `inshrink` objects are [`TensorPlan`]).
//!
//! [`InshrinkInfo::of_reader`] reads it from a snapshot (the annex and every stream's header);
//! [`InshrinkInfo::new`] builds it from the annex and the streams' summaries as a writer has them,
//! so a compressor shows exactly what a later `inspect` reads back. [`SearchReport`] is the search
//! report a compressor stores in the annex (the CLI's `--json` report minus what is known only
//! after writing), built from the core's [`bitlens_inshrink::SearchReport`].

use bitlens_inshrink::search::{GroupReport, SearchMode};
use bitlens_inshrink::{Group, ProtectStorage, Setting};
use bitlens_snapshot::inshrink::{self as ins, Annex, InshrinkError, StreamSummary};
use bitlens_snapshot::{SnapshotReader, Source};
use serde::{Deserialize, Serialize};

/// The options of an Inshrinkerator compression the page asks for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InshrinkOptions {
    /// The model-free proxy's budget: per-tensor relative L2 error `‖w − ŵ‖ / ‖w‖` (the CLI's
    /// `--max-error`).
    pub max_error: f64,
}

/// A group's or tensor's setting: `{"exact": true}`, or the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettingInfo {
    /// Every element stored exactly (the fallback when no configuration meets the threshold).
    pub exact: bool,
    /// Quantization bins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bins: Option<u8>,
    /// Pruned fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prune: Option<f32>,
    /// Protected (exact) fraction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protect: Option<f32>,
    /// Ranking metric (`magnitude`, `sensitivity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<String>,
}

impl From<Setting> for SettingInfo {
    fn from(s: Setting) -> Self {
        match s {
            Setting::Exact => SettingInfo {
                exact: true,
                bins: None,
                prune: None,
                protect: None,
                metric: None,
            },
            Setting::Quantized(c) => SettingInfo {
                exact: false,
                bins: Some(c.bins),
                prune: Some(c.prune),
                protect: Some(c.protect),
                metric: Some(c.metric.name().to_owned()),
            },
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
    /// The quality measure's score of the chosen setting.
    pub score: f64,
    /// Largest relative L2 error of the group's tensors.
    pub max_error: f64,
    /// No configuration met the threshold: the group is stored exactly.
    pub exact_fallback: bool,
}

/// How a group's setting was found, as the report names it.
pub fn mode_name(m: SearchMode) -> &'static str {
    match m {
        SearchMode::Empty => "empty",
        SearchMode::Exhaustive => "exhaustive",
        SearchMode::Neighbourhood => "neighbourhood",
        SearchMode::NeighbourhoodThenExhaustive => "neighbourhood-then-exhaustive",
    }
}

impl From<&GroupReport> for GroupSearch {
    fn from(g: &GroupReport) -> Self {
        GroupSearch {
            group: g.group.name().to_owned(),
            setting: g.setting.into(),
            mode: mode_name(g.mode).to_owned(),
            trials: g.trials,
            score: g.score,
            max_error: g.max_error,
            exact_fallback: g.setting == Setting::Exact && g.mode != SearchMode::Empty,
        }
    }
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

impl QualityInfo {
    /// The model-free proxy with budget `max_error`, named by the core's [`bitlens_inshrink::L2Budget`].
    pub fn l2_proxy(max_error: f64, report: &bitlens_inshrink::SearchReport) -> Self {
        QualityInfo {
            kind: "l2-proxy".into(),
            name: report.quality.clone(),
            evaluations: report.groups.iter().map(|g| g.trials).sum(),
            max_error: Some(max_error),
            command: None,
            max_degradation: None,
            original_loss: None,
            evaluation_seconds: None,
        }
    }
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
    pub optimizer: Option<serde_json::Value>,
    /// `original` or `bf16`.
    pub protect_dtype: String,
    /// The base snapshot of a chain (`null` without one).
    #[serde(default)]
    pub base: Option<serde_json::Value>,
    /// Seconds per phase (`read_seconds`, `prepare_seconds`, `search_seconds`).
    #[serde(default)]
    pub times: Option<serde_json::Value>,
}

impl SearchReport {
    /// The report of a search under `quality` storing protected values as `storage`.
    pub fn new(
        report: &bitlens_inshrink::SearchReport,
        quality: QualityInfo,
        storage: ProtectStorage,
    ) -> Self {
        SearchReport {
            quality,
            groups: report.groups.iter().map(GroupSearch::from).collect(),
            optimizer: None,
            protect_dtype: storage_name(storage).into(),
            base: None,
            times: None,
        }
    }
}

/// How protected values are stored, by name.
pub fn storage_name(s: ProtectStorage) -> &'static str {
    match s {
        ProtectStorage::Original => "original",
        ProtectStorage::Bf16 => "bf16",
    }
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
    /// xxh3-64 of its index, hex.
    pub index_checksum: String,
    /// Its size.
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

impl From<&StreamSummary> for TensorPlan {
    fn from(s: &StreamSummary) -> Self {
        TensorPlan {
            layer: s.layer.name().to_owned(),
            group: Group::of(s.layer).name().to_owned(),
            setting: s.setting.into(),
            error: s.error,
            protected: s.protected,
            bins: s.bins,
            delta: s.delta,
        }
    }
}

/// What `bitlens inspect --json` reports of an Inshrinkerator snapshot, with its tensors.
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
    /// The stored search report as it is.
    pub report: serde_json::Value,
    /// Per inshrink tensor (name, plan), in file order; `inspect` puts each under its tensor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tensors: Vec<(String, TensorPlan)>,
}

impl InshrinkInfo {
    /// The document of a snapshot with annex `annex` whose inshrink tensors' streams say
    /// `tensors` (name and summary, in file order).
    pub fn new(annex: &Annex, tensors: Vec<(String, StreamSummary)>) -> Self {
        let report: serde_json::Value =
            serde_json::from_str(&annex.report).unwrap_or(serde_json::Value::Null);
        let groups = [Group::Main, Group::Embedding]
            .iter()
            .map(|g| {
                let max_error = tensors
                    .iter()
                    .filter(|(_, s)| Group::of(s.layer) == *g)
                    .map(|(_, s)| f64::from(s.error))
                    .fold(0.0, f64::max);
                let search = report["groups"]
                    .as_array()
                    .and_then(|a| a.iter().find(|x| x["group"] == g.name()))
                    .and_then(|x| serde_json::from_value(x.clone()).ok());
                GroupInfo {
                    group: g.name().to_owned(),
                    setting: annex.plan.get(*g).into(),
                    max_error,
                    search,
                }
            })
            .collect();
        InshrinkInfo {
            groups,
            quality: serde_json::from_value(report["quality"].clone()).ok(),
            protect_dtype: storage_name(annex.storage).into(),
            base: annex.base.as_ref().map(|b| BaseInfo {
                name: b.name.clone(),
                index_checksum: format!("{:016x}", b.index_checksum),
                file_size: b.file_size,
            }),
            report,
            tensors: tensors
                .iter()
                .map(|(n, s)| (n.clone(), TensorPlan::from(s)))
                .collect(),
        }
    }

    /// The document of an opened snapshot (`None` for snapshots of other codecs): its annex and,
    /// with `streams`, every inshrink tensor's stream headers (which reads every frame: a snapshot
    /// on a server is described from its annex alone, each group's error as the search measured
    /// it, and no tensors).
    pub fn of_reader<R: Source>(
        reader: &SnapshotReader<R>,
        streams: bool,
    ) -> Result<Option<InshrinkInfo>, InshrinkError> {
        let Some(annex) = Annex::of(reader)? else {
            return Ok(None);
        };
        if !streams {
            let mut info = InshrinkInfo::new(&annex, Vec::new());
            for g in &mut info.groups {
                g.max_error = g.search.as_ref().map_or(0.0, |s| s.max_error);
            }
            return Ok(Some(info));
        }
        let mut tensors = Vec::new();
        for (i, e) in reader.entries.iter().enumerate() {
            if let Some(s) = ins::stream_summary(reader, i)? {
                tensors.push((e.name.clone(), s));
            }
        }
        Ok(Some(InshrinkInfo::new(&annex, tensors)))
    }

    /// The plan of tensor `name`, if it is an inshrink tensor.
    pub fn tensor(&self, name: &str) -> Option<&TensorPlan> {
        self.tensors.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_inshrink::{Configuration, LayerKind, Metric, Plan};

    fn summary(layer: LayerKind, error: f32) -> StreamSummary {
        StreamSummary {
            layer,
            setting: Setting::Exact,
            error,
            protected: 3,
            bins: 0,
            delta: false,
        }
    }

    #[test]
    fn settings_serialize_as_the_cli_prints_them() {
        let exact = serde_json::to_string(&SettingInfo::from(Setting::Exact)).unwrap();
        assert_eq!(exact, r#"{"exact":true}"#);
        let q = SettingInfo::from(Setting::Quantized(Configuration {
            bins: 8,
            prune: 0.25,
            metric: Metric::Magnitude,
            protect: 0.005,
        }));
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
    fn groups_take_the_largest_error_of_their_tensors_and_the_report_search() {
        let report = serde_json::json!({"quality": {"kind": "l2-proxy",
            "name": "per-tensor relative L2 error ≤ 0.1", "evaluations": 7, "max_error": 0.1},
            "groups": [{"group": "main", "setting": {"exact": true}, "mode": "exhaustive",
            "trials": 7, "score": 0.2, "max_error": 0.2, "exact_fallback": true}]});
        let annex = Annex {
            plan: Plan::EXACT,
            storage: ProtectStorage::Original,
            base: None,
            report: report.to_string(),
        };
        let info = InshrinkInfo::new(
            &annex,
            vec![
                ("a".into(), summary(LayerKind::Linear, 0.02)),
                ("b".into(), summary(LayerKind::Attention, 0.05)),
                ("e".into(), summary(LayerKind::Embedding, 0.01)),
            ],
        );
        assert_eq!(info.groups[0].max_error, f64::from(0.05f32));
        assert_eq!(info.groups[1].max_error, f64::from(0.01f32));
        assert!(info.groups[0].search.as_ref().unwrap().exact_fallback);
        assert!(info.groups[1].search.is_none());
        assert_eq!(info.quality.as_ref().unwrap().max_error, Some(0.1));
        assert_eq!(info.tensor("b").unwrap().layer, "attention");
        let back: InshrinkInfo =
            serde_json::from_str(&serde_json::to_string(&info).unwrap()).unwrap();
        assert_eq!(back, info);
    }
}
