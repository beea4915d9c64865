//! What `inspect` reports of an Inshrinkerator snapshot (paper 002 §5–6), read from its annex
//! and its streams' headers: `bitlens_report::inshrink::InshrinkInfo`, the document the CLI
//! prints under `inshrink` and the page shows.

use super::{stream_summary, Annex, InshrinkError, StreamSummary};
use crate::reader::{SnapshotReader, Source};
use bitlens_inshrink::Group;
use bitlens_report::inshrink::{BaseInfo, GroupInfo, InshrinkInfo, SearchReport, TensorPlan};

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

/// The document of a snapshot with annex `annex` whose inshrink tensors' streams say `tensors`
/// (name and summary, in file order), so a compressor shows exactly what a later `inspect`
/// reads back.
pub fn inshrink_info(annex: &Annex, tensors: Vec<(String, StreamSummary)>) -> InshrinkInfo {
    let report: Option<SearchReport> = serde_json::from_str(&annex.report).ok();
    let groups = [Group::Main, Group::Embedding]
        .iter()
        .map(|g| {
            let max_error = tensors
                .iter()
                .filter(|(_, s)| Group::of(s.layer) == *g)
                .map(|(_, s)| f64::from(s.error))
                .fold(0.0, f64::max);
            let search = report
                .as_ref()
                .and_then(|r| r.groups.iter().find(|x| x.group == g.name()))
                .cloned();
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
        quality: report.as_ref().map(|r| r.quality.clone()),
        protect_dtype: annex.storage.name().into(),
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
/// with `streams`, every inshrink tensor's stream headers (which reads every frame: a snapshot on
/// a server is described from its annex alone, each group's error as the search measured it, and
/// no tensors).
pub fn read_inshrink_info<R: Source>(
    reader: &SnapshotReader<R>,
    streams: bool,
) -> Result<Option<InshrinkInfo>, InshrinkError> {
    let Some(annex) = Annex::of(reader)? else {
        return Ok(None);
    };
    if !streams {
        let mut info = inshrink_info(&annex, Vec::new());
        for g in &mut info.groups {
            g.max_error = g.search.as_ref().map_or(0.0, |s| s.max_error);
        }
        return Ok(Some(info));
    }
    let mut tensors = Vec::new();
    for (i, e) in reader.entries.iter().enumerate() {
        if let Some(s) = stream_summary(reader, i)? {
            tensors.push((e.name.clone(), s));
        }
    }
    Ok(Some(inshrink_info(&annex, tensors)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_inshrink::{LayerKind, Plan, ProtectStorage, Setting};

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
    fn groups_take_the_largest_error_of_their_tensors_and_the_report_search() {
        let report = serde_json::json!({"quality": {"kind": "l2-proxy",
            "name": "per-tensor relative L2 error ≤ 0.1", "evaluations": 7, "max_error": 0.1},
            "groups": [{"group": "main", "setting": {"exact": true}, "mode": "exhaustive",
            "trials": 7, "score": 0.2, "max_error": 0.2, "exact_fallback": true}],
            "optimizer": null, "protect_dtype": "original", "base": null, "times": null});
        let annex = Annex {
            plan: Plan::EXACT,
            storage: ProtectStorage::Original,
            base: None,
            report: report.to_string(),
        };
        let info = inshrink_info(
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
        // The stored report reads back as it was written.
        assert_eq!(serde_json::to_value(&info.report).unwrap(), report);
        let back: InshrinkInfo =
            serde_json::from_str(&serde_json::to_string(&info).unwrap()).unwrap();
        assert_eq!(back, info);
    }
}
