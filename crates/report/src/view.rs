//! What the page's embed `inspect()` resolves to ([`ViewReport`]): `bitlens inspect --json`'s
//! document of what the view has loaded. Checkpoints give the checkpoint document
//! ([`InspectReport`]: `files`, `summary`); `.bls` snapshots give the snapshot document's
//! `snapshots` ([`SnapshotReport`], each tensor with the statistics of its decoded bytes once the
//! page decoded it). A view of checkpoints only, or of snapshots only, is exactly the CLI's
//! document of those files; a view of both carries both parts (the CLI takes one kind at a time).

use crate::inspect::InspectReport;
use crate::snapshot::SnapshotReport;
use serde::Serialize;

/// The embed's `inspect()` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewReport {
    /// The checkpoints' document (`files`, `summary`, flattened into this object): present when
    /// checkpoints are loaded, or when nothing is (`{"files": [], "summary": …}`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<InspectReport>,
    /// Every snapshot loaded, in order (omitted when there is none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<SnapshotReport>,
}

impl ViewReport {
    /// The document of `checkpoints` (their files; possibly none) and `snapshots`: the checkpoint
    /// part is left out when there are snapshots and no checkpoint file.
    pub fn new(checkpoints: InspectReport, snapshots: Vec<SnapshotReport>) -> ViewReport {
        let keep = !checkpoints.files.is_empty() || snapshots.is_empty();
        ViewReport {
            checkpoints: keep.then_some(checkpoints),
            snapshots,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> SnapshotReport {
        SnapshotReport {
            path: "m.bls".into(),
            snapshot_size: 5,
            original_size: 10,
            ratio: 0.5,
            lossy: false,
            delta: false,
            metadata: None,
            tensors: Vec::new(),
            original_format: None,
            inshrink: None,
        }
    }

    #[test]
    fn each_kind_alone_is_the_cli_document_and_both_carry_both_parts() {
        let empty =
            serde_json::to_value(ViewReport::new(InspectReport::new(Vec::new()), vec![])).unwrap();
        assert_eq!(
            empty,
            serde_json::to_value(InspectReport::new(Vec::new())).unwrap()
        );
        let snaps = ViewReport::new(InspectReport::new(Vec::new()), vec![snapshot()]);
        let cli = crate::snapshot::SnapshotsReport {
            snapshots: vec![snapshot()],
        };
        assert_eq!(
            serde_json::to_value(&snaps).unwrap(),
            serde_json::to_value(&cli).unwrap()
        );
        let mut files = InspectReport::new(Vec::new());
        files.files.push(crate::inspect::FileReport {
            path: "a.safetensors".into(),
            format: None,
            kind: None,
            file_size: 8,
            header_len: 0,
            metadata: None,
            tensors: Vec::new(),
            summary: Default::default(),
        });
        let both = serde_json::to_value(ViewReport::new(files, vec![snapshot()])).unwrap();
        assert_eq!(both["files"][0]["path"], "a.safetensors");
        assert_eq!(both["snapshots"][0]["path"], "m.bls");
        assert!(both["summary"].is_object());
    }
}
