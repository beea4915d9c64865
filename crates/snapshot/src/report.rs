//! The snapshot crate's documents in the report types (`bitlens_report`): what `inspect` says of
//! a `.bls` file (LMC §4 container: per tensor its codec, sizes, frames and lossy error) and of a
//! checkpoint chain (LMC §4.4, Fig. 12), and what `--codec auto` decided per tensor.

use crate::auto::AutoChoice;
use crate::chain::{FileKind, Manifest};
use crate::format::Entry;
use crate::inshrink::{read_inshrink_info, InshrinkError};
use crate::reader::{SnapshotReader, Source};
use bitlens_report::auto::{AutoFile, AutoInfo, AutoReport, AutoTensor, AutoTotals};
use bitlens_report::chain::{ChainFile, ChainReport, ChainStep, ChainTotals, Trend};
use bitlens_report::inshrink::InshrinkInfo;
use bitlens_report::snapshot::{SnapshotReport, SnapshotTensor};
use bitlens_report::transfer::{CompressedReport, CompressedTensor};

/// `a / b`, 1 for nothing over nothing: the ratio every report gives (stored over original).
pub fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

/// What `inspect` reports of the snapshot at `path` (as given), `size` bytes, opened as `reader`:
/// its sizes and flags, and per tensor (piece) its codec, sizes, frames and error. An
/// Inshrinkerator snapshot's plan comes from its annex and every stream's header (which reads
/// every frame).
pub fn snapshot_report<R: Source>(
    path: &str,
    size: u64,
    reader: &SnapshotReader<R>,
) -> Result<SnapshotReport, InshrinkError> {
    let inshrink = read_inshrink_info(reader, true)?;
    Ok(report_of(path, size, reader, inshrink))
}

/// [`snapshot_report`] with the Inshrinkerator part already read (`read_inshrink_info`): with its
/// streams, each inshrink tensor gets its plan, as `inspect` prints it; without (the page's
/// remote snapshot, read by range: its index and annex only), the tensors have none and each
/// group's `max_error` is its search's.
pub fn report_of<R: Source>(
    path: &str,
    size: u64,
    reader: &SnapshotReader<R>,
    mut inshrink: Option<InshrinkInfo>,
) -> SnapshotReport {
    let mut plans = inshrink
        .as_mut()
        .map(|i| std::mem::take(&mut i.tensors))
        .unwrap_or_default()
        .into_iter()
        .peekable();
    let tensors = reader
        .entries
        .iter()
        .zip(&reader.header.tensors)
        .map(|(e, t)| SnapshotTensor {
            name: e.name.clone(),
            dtype: t.dtype,
            shape: t.shape.clone(),
            codec: e.codec.name().to_owned(),
            delta: e.delta,
            bytes: e.raw_len,
            stored_bytes: e.stored_len(),
            ratio: ratio(e.stored_len(), e.raw_len),
            frames: e.frames.len(),
            error: e.error,
            inshrink: plans.next_if(|(n, _)| *n == e.name).map(|(_, p)| p),
            piece: e
                .piece
                .as_ref()
                .map(|p| (p.kind.name().to_owned(), p.ty.clone())),
            statistics: None,
        })
        .collect();
    SnapshotReport {
        path: path.to_owned(),
        snapshot_size: size,
        original_size: reader.original_size(),
        ratio: ratio(size, reader.original_size()),
        lossy: reader.is_lossy(),
        delta: reader.base.is_some(),
        metadata: reader.header.metadata.clone(),
        tensors,
        original_format: reader.original.as_ref().map(|o| o.kind.clone()),
        inshrink,
    }
}

/// What a compression of `input` into `output` wrote: the sizes, and every index entry's codec,
/// sizes and error; `auto` is `--codec auto`'s report.
pub fn compressed_report(
    input: &str,
    output: &str,
    (input_bytes, output_bytes): (u64, u64),
    entries: &[Entry],
    auto: Option<AutoReport>,
) -> CompressedReport {
    CompressedReport {
        input: input.to_owned(),
        output: output.to_owned(),
        input_bytes,
        output_bytes,
        ratio: ratio(output_bytes, input_bytes),
        lossy: entries.iter().any(|e| e.error.is_some()),
        tensors: entries
            .iter()
            .map(|e| CompressedTensor {
                name: e.name.clone(),
                codec: e.codec.name().to_owned(),
                delta: e.delta,
                bytes: e.raw_len,
                stored_bytes: e.stored_len(),
                ratio: ratio(e.stored_len(), e.raw_len),
                error: e.error,
            })
            .collect(),
        auto,
    }
}

/// The report of the chain at `path` (as given) with manifest `m`, whose snapshots have the
/// sizes `sizes` on disk (step by step, file by file).
pub fn chain_report(path: &str, m: &Manifest, sizes: &[Vec<u64>]) -> ChainReport {
    let steps: Vec<ChainStep> = m
        .steps
        .iter()
        .zip(sizes)
        .map(|(s, sizes)| {
            let files: Vec<ChainFile> = s
                .files
                .iter()
                .zip(sizes)
                .map(|(f, &size)| ChainFile {
                    name: f.name.clone(),
                    kind: f.kind,
                    base: f.base.clone(),
                    codec: f.codec.clone(),
                    original_size: f.original_size,
                    snapshot_size: size,
                    ratio: ratio(size, f.original_size),
                    full_size: f.full_size(),
                    delta_vs_full: f
                        .full_size
                        .filter(|_| f.kind == FileKind::Delta)
                        .map(|full| ratio(size, full)),
                })
                .collect();
            let original_size = files.iter().map(|f| f.original_size).sum();
            let snapshot_size = files.iter().map(|f| f.snapshot_size).sum();
            ChainStep {
                name: s.name.clone(),
                files,
                original_size,
                snapshot_size,
                ratio: ratio(snapshot_size, original_size),
            }
        })
        .collect();
    let all = || steps.iter().flat_map(|s| &s.files);
    let original_size = all().map(|f| f.original_size).sum();
    let chain_size = all().map(|f| f.snapshot_size).sum();
    let all_full_size: Option<u64> = all().map(|f| f.full_size).sum();
    let mut trend: Vec<Trend> = Vec::new();
    for s in &steps {
        for f in s.files.iter().filter(|f| f.kind == FileKind::Delta) {
            let point = (s.name.clone(), f.ratio);
            match trend.iter_mut().find(|t| t.file == f.name) {
                Some(t) => t.points.push(point),
                None => trend.push(Trend {
                    file: f.name.clone(),
                    points: vec![point],
                }),
            }
        }
    }
    ChainReport {
        path: path.to_owned(),
        codec: m.codec.clone(),
        key_every: m.key_every,
        totals: ChainTotals {
            original_size,
            chain_size,
            ratio: ratio(chain_size, original_size),
            all_full_size,
            saved_bytes: all_full_size.map(|f| f as i64 - chain_size as i64),
        },
        steps,
        trend,
    }
}

impl AutoChoice {
    /// The summary a snapshot entry carries to the page.
    pub fn info(&self) -> AutoInfo {
        AutoInfo {
            chosen: self.chosen.name().to_owned(),
            predicted: self
                .predictions
                .iter()
                .map(|p| (p.candidate.name().to_owned(), p.bytes))
                .collect(),
            predicted_bytes: self.predicted_bytes(),
            sample_bytes: self.sample_bytes,
        }
    }
}

/// The `auto` report of one snapshot written to `output` (`snapshot_bytes` long) from `input`
/// (against `base`): each tensor's choice beside its written index entry.
pub fn auto_file_report(
    input: &str,
    output: &str,
    base: Option<&str>,
    choices: &[AutoChoice],
    entries: &[Entry],
    snapshot_bytes: u64,
) -> AutoFile {
    let tensors: Vec<AutoTensor> = choices
        .iter()
        .zip(entries)
        .map(|(c, e)| AutoTensor {
            name: c.name.clone(),
            dtype: c.dtype,
            bytes: c.bytes,
            sample_bytes: c.sample_bytes,
            predicted: c
                .predictions
                .iter()
                .map(|p| (p.candidate.name().to_owned(), p.bytes))
                .collect(),
            trial: c
                .predictions
                .iter()
                .filter(|p| p.trial)
                .map(|p| p.candidate.name().to_owned())
                .collect(),
            chosen: c.chosen.name().to_owned(),
            codec: e.codec.name().to_owned(),
            delta: e.delta,
            predicted_bytes: c.predicted_bytes(),
            achieved_bytes: e.stored_len(),
        })
        .collect();
    let totals = AutoTotals {
        tensors: tensors.len(),
        bytes: tensors.iter().map(|t| t.bytes).sum(),
        predicted_bytes: tensors.iter().map(|t| t.predicted_bytes).sum(),
        achieved_bytes: tensors.iter().map(|t| t.achieved_bytes).sum(),
        snapshot_bytes,
    };
    AutoFile {
        input: input.to_owned(),
        output: output.to_owned(),
        base: base.map(str::to_owned),
        tensors,
        totals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auto::{Candidate, Prediction};

    #[test]
    fn auto_info_is_the_cores_choice() {
        let c = AutoChoice {
            name: "w".into(),
            dtype: bitlens_tensors::Dtype::BF16,
            bytes: 1000,
            sample_bytes: 1000,
            predictions: vec![
                Prediction {
                    candidate: Candidate::Lmc,
                    bytes: 700,
                    trial: true,
                },
                Prediction {
                    candidate: Candidate::Neuzip,
                    bytes: 690,
                    trial: true,
                },
            ],
            chosen: Candidate::Neuzip,
        };
        let info = c.info();
        assert_eq!(info.chosen, "neuzip");
        assert_eq!(info.predicted_bytes, 690);
        assert_eq!(
            info.predicted,
            vec![("lmc".into(), 700), ("neuzip".into(), 690)]
        );
    }
}
