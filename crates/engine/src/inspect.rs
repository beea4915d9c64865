//! `bitlens inspect`: per-tensor and whole-model statistics of checkpoints of any format bitlens
//! reads (LMC §3's bit and byte-group analysis, `bitlens_stats`), and what `.bls` snapshots and
//! chain directories say of themselves. [`inspect`] tells which of the three its inputs are;
//! [`inspect_some`] measures only the tensors named.

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
use bitlens_tensors::format::Entry;
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
    inspect_some(inputs, None, progress)
}

/// [`inspect`], measuring only the `tensors` named (every tensor with `None`): the others are
/// listed without statistics and left out of the totals, as the report does for tensors the page
/// has not measured yet. Naming tensors is for checkpoints only.
pub fn inspect_some(
    inputs: &[PathBuf],
    tensors: Option<&[String]>,
    progress: &dyn Progress,
) -> Result<Inspection> {
    let Some(tensors) = tensors else {
        return inspect_any(inputs, progress);
    };
    let report = inspect_checkpoints_some(inputs, Some(tensors), progress)?;
    Ok(Inspection::Checkpoints(report))
}

fn inspect_any(inputs: &[PathBuf], progress: &dyn Progress) -> Result<Inspection> {
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
    inspect_checkpoints_some(inputs, None, progress)
}

/// [`inspect_checkpoints`], measuring only the `tensors` named (all with `None`); a name that no
/// checkpoint holds is refused before anything is read.
fn inspect_checkpoints_some(
    inputs: &[PathBuf],
    tensors: Option<&[String]>,
    progress: &dyn Progress,
) -> Result<InspectReport> {
    let mut checkpoints: Vec<Model> = Vec::new();
    for p in inputs {
        checkpoints.extend(Model::open_all(p)?);
    }
    for c in &checkpoints {
        c.warn(progress);
    }
    let entries = || {
        checkpoints
            .iter()
            .flat_map(|c| &c.files)
            .flat_map(|f| &f.layout.entries)
    };
    let wanted = |e: &Entry| tensors.is_none_or(|names| names.contains(&e.name));
    if let Some(missing) = tensors
        .into_iter()
        .flatten()
        .find(|n| !entries().any(|e| &e.name == *n))
    {
        let shown: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        bail!("no tensor `{missing}` in {}", shown.join(", "));
    }
    let total: u64 = entries()
        .filter(|e| wanted(e))
        .map(bitlens_tensors::format::bytes::byte_len)
        .sum();
    progress.start(total, "inspect");
    let mut files = Vec::new();
    for file in checkpoints.iter().flat_map(|c| &c.files) {
        let mut stats =
            file_stats(&file.path, &file.source, &file.layout, &wanted, progress)?.into_iter();
        let path = file.path.to_string_lossy().into_owned();
        let mut next = |_| stats.next().flatten();
        files.push(match &file.header {
            Some(header) => FileReport::new(path, header, &mut next),
            None => FileReport::from_layout(path, &file.layout, &mut next),
        });
    }
    progress.finish();
    Ok(InspectReport::new(files))
}
