//! What the page reports as `bitlens inspect --json` does (the embed's `inspect()`): one entry per
//! file of the loaded checkpoints (its URL or file name, size, header length, `__metadata__`), its
//! tensors with their header entries and, once computed, their statistics flattened in, and the
//! totals.
//!
//! The report types are `bitlens_report::inspect`'s, the ones the CLI writes, so the JSON is the
//! CLI's; a tensor whose statistics are not computed yet has only its header fields and dtype.
//! A `.bls` snapshot is reported as `bitlens inspect --json` reports snapshots (under `snapshots`,
//! [`crate::model::snapshot::report`]), with the statistics of each tensor decoded so far; the
//! document of both kinds is [`ViewReport`].

use crate::model::checkpoint::{Checkpoint, FileInfo};
pub use bitlens_report::inspect::{FileReport, InspectReport, TensorReport};
pub use bitlens_report::view::ViewReport;
use bitlens_stats::TensorStats;

/// The report of one file at `location`, with the statistics `stats(i)` gives for its `i`-th
/// tensor: from its safetensors header, or from its layout for other formats (as the CLI).
pub fn file_report(
    location: String,
    file: &FileInfo,
    stats: impl FnMut(usize) -> Option<TensorStats>,
) -> FileReport {
    match &file.header {
        Some(header) => FileReport::new(location, header, stats),
        None => FileReport::from_layout(location, &file.layout, stats),
    }
}

/// The report of `checkpoints`; `location(checkpoint, file)` names a file (its URL for a remote
/// file, else its path as given). Snapshots go under `snapshots`, checkpoints' files under
/// `files`.
pub fn report<'a>(
    checkpoints: &'a [Checkpoint],
    location: impl Fn(&'a Checkpoint, usize) -> String,
) -> ViewReport {
    let mut files = Vec::new();
    let mut snapshots = Vec::new();
    for c in checkpoints {
        if let Some(s) = crate::model::snapshot::report(c) {
            snapshots.push(s);
            continue;
        }
        for (fi, f) in c.files.iter().enumerate() {
            // Rows are each file's tensors in header (layout) order.
            let mut rows = c.rows.iter().filter(|r| r.file == fi);
            let stats = |_| rows.next().and_then(|r| r.stats.as_deref().cloned());
            files.push(file_report(location(c, fi), f, stats));
        }
    }
    ViewReport::new(InspectReport::new(files), snapshots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::checkpoint::tests::header;
    use crate::model::checkpoint::FileInfo;

    #[test]
    fn tensors_carry_header_fields_and_stats_once_computed() {
        let mut c = Checkpoint::new(
            1,
            "m".into(),
            vec![FileInfo::safetensors(
                "m.safetensors".into(),
                header(&[("x", "BF16", &[4]), ("y", "BF16", &[2])]),
            )],
            None,
        )
        .unwrap();
        let mut acc = bitlens_stats::Accumulator::new(bitlens_tensors::Dtype::BF16, 4);
        acc.update(&[1, 2, 3, 4]).unwrap();
        c.set_stats(1, acc.finish().unwrap());
        let r = report(std::slice::from_ref(&c), |_, _| {
            "http://h/m.safetensors".into()
        });
        assert!(r.snapshots.is_empty());
        let r = r.checkpoints.unwrap();
        assert_eq!(r.files[0].path, "http://h/m.safetensors");
        assert_eq!(r.files[0].tensors[0].data_offsets, (0, 8));
        assert_eq!(r.files[0].tensors[1].data_offsets, (8, 12));
        assert_eq!(r.summary.tensors, 1);
        let json = serde_json::to_value(&r).unwrap();
        let t = &json["files"][0]["tensors"];
        assert_eq!(t[0]["name"], "x");
        assert!(t[0].get("byte_entropy").is_none());
        assert_eq!(t[1]["dtype"], "BF16");
        assert!(t[1]["byte_entropy"].is_number());
    }
}
