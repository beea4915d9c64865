//! The search in the words of its report (`bitlens_report::inshrink`, paper 002 §5): a
//! setting's JSON, how each group's setting was found, the threshold of the model-free proxy, and
//! the search report a compressor stores in a snapshot's annex.

use crate::search::{GroupReport, SearchMode};
use crate::{ProtectStorage, Setting};
use bitlens_report::inshrink::{GroupSearch, OwnSetting, QualityInfo, SearchReport, SettingInfo};

impl From<Setting> for SettingInfo {
    fn from(s: Setting) -> Self {
        match s {
            Setting::Exact => SettingInfo::exact(),
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

impl SearchMode {
    /// How a group's setting was found, as the report names it.
    pub fn name(self) -> &'static str {
        match self {
            SearchMode::Empty => "empty",
            SearchMode::Exhaustive => "exhaustive",
            SearchMode::Neighbourhood => "neighbourhood",
            SearchMode::NeighbourhoodThenExhaustive => "neighbourhood-then-exhaustive",
        }
    }
}

impl ProtectStorage {
    /// How protected values are stored, as the report names it (`original`, `bf16`).
    pub fn name(self) -> &'static str {
        match self {
            ProtectStorage::Original => "original",
            ProtectStorage::Bf16 => "bf16",
        }
    }
}

impl From<&GroupReport> for GroupSearch {
    fn from(g: &GroupReport) -> Self {
        GroupSearch {
            group: g.group.name().to_owned(),
            setting: g.setting.into(),
            mode: g.mode.name().to_owned(),
            trials: g.trials,
            score: g.score,
            max_error: g.max_error,
            exact_fallback: g.setting == Setting::Exact && g.mode != SearchMode::Empty,
        }
    }
}

/// The model-free proxy with budget `max_error` that `report`'s search ran under (named by the
/// core's [`crate::L2Budget`]).
pub fn l2_proxy_quality(max_error: f64, report: &crate::SearchReport) -> QualityInfo {
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

/// The report a compressor stores of a search under `quality` storing protected values as
/// `storage` (optimizer, base and times are the compressor's to fill).
pub fn search_report(
    report: &crate::SearchReport,
    quality: QualityInfo,
    storage: ProtectStorage,
) -> SearchReport {
    SearchReport {
        quality,
        groups: report.groups.iter().map(GroupSearch::from).collect(),
        optimizer: None,
        protect_dtype: storage.name().into(),
        base: None,
        times: None,
        own_settings: report
            .tensors
            .iter()
            .filter_map(|t| {
                t.own.map(|o| OwnSetting {
                    name: t.name.clone(),
                    setting: t.setting.into(),
                    error: t.error,
                    reason: o.reason().into(),
                })
            })
            .collect(),
    }
}

/// Records in `report` that tensor `name` is stored lossless (LMC) because its lossy code,
/// `lossy` bytes, was not smaller than its lossless one, `lossless` bytes (replacing what the
/// search said of it).
pub fn record_lossless(report: &mut SearchReport, name: &str, lossy: u64, lossless: u64) {
    report.own_settings.retain(|o| o.name != name);
    report.own_settings.push(OwnSetting {
        name: name.to_owned(),
        setting: SettingInfo::exact(),
        error: 0.0,
        reason: format!(
            "its lossy code ({lossy} bytes) was not smaller than its lossless one ({lossless} \
             bytes): stored lossless"
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Configuration, Metric};

    #[test]
    fn settings_convert_to_their_document() {
        let exact = serde_json::to_string(&SettingInfo::from(Setting::Exact)).unwrap();
        assert_eq!(exact, r#"{"exact":true}"#);
        let q = SettingInfo::from(Setting::Quantized(Configuration {
            bins: 8,
            prune: 0.25,
            metric: Metric::Magnitude,
            protect: 0.005,
        }));
        // The document's own form and text are bitlens_report's tests.
        let expected = SettingInfo {
            exact: false,
            bins: Some(8),
            prune: Some(0.25),
            protect: Some(0.005),
            metric: Some("magnitude".into()),
        };
        assert_eq!(q, expected);
    }
}
