//! `bitlens inspect`: per-tensor and whole-model statistics of checkpoints of any format bitlens
//! reads (LMC §3's bit and byte-group analysis, `bitlens_stats`), and what `.bls` snapshots and
//! chain directories say of themselves. [`inspect`] tells which of the three its inputs are.

use crate::analyze::file_stats;
use crate::bail;
use crate::chain;
use crate::checkpoint::Model;
use crate::error::Result;
use crate::progress::Progress;
use crate::snapshots::{inspect_snapshots, is_snapshot};
use bitlens_report::chain::ChainsReport;
use bitlens_report::inspect::{FileReport, InspectReport};
use bitlens_report::snapshot::SnapshotsReport;
use std::path::PathBuf;

/// What `inspect` made of its inputs: all checkpoints, all snapshots, or all chains.
#[derive(Debug, Clone, PartialEq)]
pub enum Inspection {
    /// Checkpoints of any format: every tensor's statistics.
    Checkpoints(InspectReport),
    /// `.bls` snapshots: every tensor's codec, sizes and error.
    Snapshots(SnapshotsReport),
    /// Chain directories: every step's files, key or delta, and the totals.
    Chains(ChainsReport),
}

/// `bitlens inspect` over `inputs`: chain directories, snapshots (files or URLs), or checkpoints
/// (files, indexes, directories, URLs) — one kind at a time.
pub fn inspect(inputs: &[PathBuf], progress: &dyn Progress) -> Result<Inspection> {
    let chains = inputs.iter().filter(|p| chain::is_chain(p)).count();
    if chains == inputs.len() {
        return Ok(Inspection::Chains(chain::inspect(inputs)?));
    }
    if chains > 0 {
        bail!("give either chain directories or checkpoints to inspect, not both");
    }
    let mut snapshots = 0;
    for p in inputs {
        snapshots += usize::from(is_snapshot(p)?);
    }
    if snapshots == inputs.len() {
        return Ok(Inspection::Snapshots(inspect_snapshots(inputs)?));
    }
    if snapshots > 0 {
        bail!("give either checkpoints or bitlens snapshots to inspect, not both");
    }
    Ok(Inspection::Checkpoints(inspect_checkpoints(
        inputs, progress,
    )?))
}

/// The statistics of every tensor of every checkpoint in `inputs` (a directory of GGUF / PyTorch
/// files gives each file as a checkpoint), on the caller's rayon pool.
pub fn inspect_checkpoints(inputs: &[PathBuf], progress: &dyn Progress) -> Result<InspectReport> {
    let mut checkpoints: Vec<Model> = Vec::new();
    for p in inputs {
        checkpoints.extend(Model::open_all(p)?);
    }
    for c in &checkpoints {
        c.warn(progress);
    }
    let total: u64 = checkpoints.iter().map(Model::data_bytes).sum();
    progress.start(total, "inspect");
    let mut files = Vec::new();
    for file in checkpoints.iter().flat_map(|c| &c.files) {
        let mut stats = file_stats(&file.path, &file.source, &file.layout, progress)?.into_iter();
        let path = file.path.to_string_lossy().into_owned();
        files.push(match &file.header {
            Some(header) => FileReport::new(path, header, |_| stats.next()),
            None => FileReport::from_layout(path, &file.layout, |_| stats.next()),
        });
    }
    progress.finish();
    Ok(InspectReport::new(files))
}
