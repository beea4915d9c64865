//! What the page reports as `bitlens inspect --json` does (the embed's `inspect()`): one entry per
//! file of the loaded checkpoints (its URL or file name, size, header length, `__metadata__`), its
//! tensors with their header entries and, once computed, their statistics flattened in, and the
//! totals.
//!
//! The structs mirror `crates/cli/src/inspect.rs` field for field (same names, same `flatten`), so
//! the JSON is the CLI's; a tensor whose statistics are not computed yet has only its header
//! fields. (They live here until the report types move into `bitlens-protocol`.)

use crate::model::checkpoint::Checkpoint;
use bitlens_stats::{Summary, TensorStats};
use serde::Serialize;

/// One tensor in the report: its header entry and its statistics.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TensorReport {
    /// Tensor name.
    pub name: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Byte range within the data section.
    pub data_offsets: (u64, u64),
    /// Element count.
    pub params: u64,
    /// The statistics (dtype, bytes, bit ratios, entropies, histograms, values), once computed.
    #[serde(flatten)]
    pub stats: Option<TensorStats>,
}

/// One file in the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileReport {
    /// The file's URL, or its name as given.
    pub path: String,
    /// Its size in bytes.
    pub file_size: u64,
    /// Length of its JSON header.
    pub header_len: u64,
    /// `__metadata__`, in file order.
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// Its tensors in offset order.
    pub tensors: Vec<TensorReport>,
    /// Totals over the file's tensors that have statistics.
    pub summary: Summary,
}

/// The whole `inspect --json` document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InspectReport {
    /// Every file of every checkpoint, in order.
    pub files: Vec<FileReport>,
    /// Totals over all files.
    pub summary: Summary,
}

/// The report of `checkpoints`; `location(checkpoint, file)` names a file (its URL for a remote
/// file, else its path as given).
pub fn report<'a>(
    checkpoints: &'a [Checkpoint],
    location: impl Fn(&'a Checkpoint, usize) -> String,
) -> InspectReport {
    let mut out = InspectReport {
        files: Vec::new(),
        summary: Summary::default(),
    };
    for c in checkpoints {
        for (fi, f) in c.files.iter().enumerate() {
            let data_start = 8 + f.header.header_len;
            let mut summary = Summary::default();
            let tensors = c
                .rows
                .iter()
                .filter(|r| r.file == fi)
                .map(|r| {
                    let stats = r.stats.as_deref().cloned();
                    if let Some(s) = &stats {
                        summary.add(r.params, s);
                    }
                    let start = r.offset - data_start;
                    TensorReport {
                        name: r.name.clone(),
                        shape: r.shape.clone(),
                        data_offsets: (start, start + r.bytes),
                        params: r.params,
                        stats,
                    }
                })
                .collect();
            out.summary.merge(&summary);
            out.files.push(FileReport {
                path: location(c, fi),
                file_size: f.header.file_size,
                header_len: f.header.header_len,
                metadata: f.header.metadata.as_ref().map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                        .collect()
                }),
                tensors,
                summary,
            });
        }
    }
    out
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
            vec![FileInfo {
                path: "m.safetensors".into(),
                header: header(&[("x", "BF16", &[4]), ("y", "BF16", &[2])]),
            }],
            None,
        )
        .unwrap();
        let mut acc = bitlens_stats::Accumulator::new(bitlens_tensors::Dtype::BF16, 4);
        acc.update(&[1, 2, 3, 4]).unwrap();
        c.set_stats(1, acc.finish().unwrap());
        let r = report(std::slice::from_ref(&c), |_, _| {
            "http://h/m.safetensors".into()
        });
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
