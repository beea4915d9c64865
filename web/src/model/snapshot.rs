//! A `.bls` snapshot as a checkpoint: its tensors come from the snapshot's index (what
//! `bitlens inspect --json` reports of it, [`SnapshotReport`]), and their bytes from decoding
//! them in the codec worker, one tensor at a time. So Summary, Tensors and Detail show a snapshot
//! as they show any checkpoint; what only a snapshot has (each tensor's codec, stored bytes,
//! ratio, lossy error; the Inshrinkerator plan) is kept beside the rows ([`Snapshot`]).

use crate::model::checkpoint::{Checkpoint, CheckpointError, FileInfo};
use bitlens_protocol::{EntryInfo, SnapshotInfo};
use bitlens_report::snapshot::{SnapshotReport, SnapshotTensor};
use bitlens_tensors::format::{Data, ElementType, Entry, Format, Layout, MetaValue};

/// What a checkpoint made from a snapshot keeps of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The snapshot's id in the codec panel (which decodes its tensors).
    pub snap: u32,
    /// Its index as `bitlens inspect --json` reports it (path: the URL or the name given), one
    /// tensor per row in row order; the page adds each decoded tensor's statistics when reporting.
    pub report: SnapshotReport,
    /// Its index entries as the codec panel lists them (codec, sizes, ratio, error), in row order.
    pub entries: Vec<EntryInfo>,
}

impl Snapshot {
    /// The index entry of row `row`.
    pub fn entry(&self, row: usize) -> Option<&EntryInfo> {
        self.entries.get(row)
    }

    /// The report's tensor of row `row`.
    pub fn tensor(&self, row: usize) -> Option<&SnapshotTensor> {
        self.report.tensors.get(row)
    }
}

/// Tensors and bytes stored with one codec (the Summary of a snapshot).
#[derive(Debug, Clone, PartialEq)]
pub struct CodecMix {
    /// Codec name, as the index names it.
    pub codec: String,
    /// Tensors stored with it.
    pub tensors: usize,
    /// Their original bytes.
    pub bytes: u64,
    /// Their bytes in the snapshot.
    pub stored_bytes: u64,
    /// Some of them are lossy (their largest relative error is `max_rel`).
    pub max_rel: Option<f64>,
}

impl Snapshot {
    /// Tensors and bytes per codec, most stored bytes first.
    pub fn codec_mix(&self) -> Vec<CodecMix> {
        let mut mix: Vec<CodecMix> = Vec::new();
        for t in &self.report.tensors {
            let i = match mix.iter().position(|m| m.codec == t.codec) {
                Some(i) => i,
                None => {
                    mix.push(CodecMix {
                        codec: t.codec.clone(),
                        tensors: 0,
                        bytes: 0,
                        stored_bytes: 0,
                        max_rel: None,
                    });
                    mix.len() - 1
                }
            };
            let m = &mut mix[i];
            m.tensors += 1;
            m.bytes += t.bytes;
            m.stored_bytes += t.stored_bytes;
            if let Some(e) = &t.error {
                m.max_rel = Some(m.max_rel.map_or(e.max_rel, |x| x.max(e.max_rel)));
            }
        }
        mix.sort_by_key(|m| std::cmp::Reverse(m.stored_bytes));
        mix
    }
}

/// The element-type name the layout of a snapshot says it is (the Summary's file table).
pub const KIND: &str = "bitlens snapshot";

/// The checkpoint `id` of snapshot `snap` at `location` (its URL, or the name it was given by),
/// from the index the codec worker read: one file (the snapshot, its size on disk) whose tensors
/// are the index's, laid out as in the original file; `None` when the worker sent no report.
pub fn checkpoint(
    id: u32,
    snap: u32,
    location: &str,
    info: &SnapshotInfo,
) -> Option<Result<Checkpoint, CheckpointError>> {
    let mut report = (**info.report.as_ref()?).clone();
    location.clone_into(&mut report.path);
    let mut offset = 0;
    let entries = report
        .tensors
        .iter()
        .map(|t| {
            let e = Entry {
                name: t.name.clone(),
                ty: ElementType::Dtype(t.dtype),
                shape: t.shape.clone(),
                data: Data::Range {
                    offset,
                    len: t.bytes,
                },
            };
            offset += t.bytes;
            e
        })
        .collect();
    let layout = Layout {
        format: Format::Safetensors,
        kind: match &report.original_format {
            Some(f) => format!("{KIND} of a {f} file"),
            None => KIND.to_owned(),
        },
        file_size: report.snapshot_size,
        entries,
        metadata: report
            .metadata
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), MetaValue::Str(v.clone())))
            .collect(),
    };
    let name = crate::model::link::file_name(location);
    let file = FileInfo::other(name.clone(), layout);
    Some(Checkpoint::new(id, name, vec![file], None).map(|mut c| {
        c.snapshot = Some(Box::new(Snapshot {
            snap,
            report,
            entries: info.entries.clone(),
        }));
        c
    }))
}

/// The report of a snapshot checkpoint: its index as the CLI reports it, each decoded tensor with
/// the statistics of its decoded bytes.
pub fn report(c: &Checkpoint) -> Option<SnapshotReport> {
    let s = c.snapshot.as_ref()?;
    let mut report = s.report.clone();
    for (t, r) in report.tensors.iter_mut().zip(&c.rows) {
        t.statistics = r.stats.as_deref().cloned();
    }
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_report::ErrorReport;
    use bitlens_tensors::Dtype;

    fn tensor(name: &str, dtype: Dtype, shape: Vec<u64>, bytes: u64) -> SnapshotTensor {
        SnapshotTensor {
            name: name.into(),
            dtype,
            shape,
            codec: "neuzip-k3".into(),
            delta: false,
            bytes,
            stored_bytes: bytes / 2,
            ratio: 0.5,
            frames: 1,
            error: Some(ErrorReport {
                values: bytes / 2,
                mse: 0.1,
                max_abs: 0.2,
                max_rel: 0.3,
                mean_rel: 0.05,
            }),
            inshrink: None,
            piece: None,
            statistics: None,
        }
    }

    fn info() -> SnapshotInfo {
        let tensors = vec![
            tensor("a", Dtype::BF16, vec![2, 3], 12),
            tensor("b", Dtype::F32, vec![4], 16),
        ];
        SnapshotInfo {
            size: 20,
            original_size: 100,
            lossy: true,
            delta: false,
            base_file_size: None,
            entries: Vec::new(),
            inshrink: None,
            report: Some(Box::new(SnapshotReport {
                path: String::new(),
                snapshot_size: 20,
                original_size: 100,
                ratio: 0.2,
                lossy: true,
                delta: false,
                metadata: Some(vec![("format".into(), "pt".into())]),
                tensors,
                original_format: None,
                inshrink: None,
            })),
        }
    }

    #[test]
    fn rows_are_the_index_tensors_and_the_report_gains_decoded_statistics() {
        let url = "http://h/x/m.bls";
        let mut c = checkpoint(7, 3, url, &info()).unwrap().unwrap();
        assert_eq!((c.id, c.path.as_str()), (7, "m.bls"));
        assert_eq!(c.file_bytes(), 20, "the snapshot's size on disk");
        assert_eq!(c.data_bytes(), 28, "the original tensors' bytes");
        let names: Vec<&str> = c.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!((c.rows[1].offset, c.rows[1].params), (12, 4));
        assert_eq!(c.rows[0].type_name(), "BF16");
        assert_eq!(c.files[0].layout.metadata.len(), 1);
        let s = c.snapshot.as_ref().unwrap();
        assert_eq!((s.snap, s.report.path.as_str()), (3, url));
        assert!(report(&c)
            .unwrap()
            .tensors
            .iter()
            .all(|t| t.statistics.is_none()));
        let mut acc = bitlens_stats::Accumulator::new(Dtype::F32, 16);
        acc.update(&[0u8; 16]).unwrap();
        c.set_stats(1, acc.finish().unwrap());
        let r = report(&c).unwrap();
        assert!(r.tensors[0].statistics.is_none());
        assert_eq!(r.tensors[1].statistics.as_ref().unwrap().bytes, 16);
    }

    #[test]
    fn codecs_are_summed_with_their_largest_error() {
        let mut i = info();
        let r = i.report.as_mut().unwrap();
        r.tensors[1].codec = "lmc".into();
        r.tensors[1].error = None;
        r.tensors.push(tensor("c", Dtype::BF16, vec![8], 16));
        r.tensors[2].error.as_mut().unwrap().max_rel = 0.7;
        let c = checkpoint(1, 0, "m.bls", &i).unwrap().unwrap();
        let mix = c.snapshot.unwrap().codec_mix();
        assert_eq!(mix.len(), 2);
        assert_eq!(
            (
                mix[0].codec.as_str(),
                mix[0].tensors,
                mix[0].bytes,
                mix[0].stored_bytes
            ),
            ("neuzip-k3", 2, 28, 14)
        );
        assert_eq!(mix[0].max_rel, Some(0.7));
        assert_eq!((mix[1].codec.as_str(), mix[1].max_rel), ("lmc", None));
    }

    #[test]
    fn no_report_no_checkpoint() {
        let mut i = info();
        i.report = None;
        assert!(checkpoint(1, 0, "m.bls", &i).is_none());
    }
}
