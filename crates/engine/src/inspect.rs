//! `bitlens inspect`: per-tensor and whole-model statistics of checkpoints of any format bitlens
//! reads (LMC §3's bit and byte-group analysis, `bitlens_stats`), and what `.bls` snapshots and
//! chain directories say of themselves. [`inspect`] tells which of the three its inputs are;
//! [`inspect_with`] can measure only the tensors named, and skip sidecars.
//!
//! A remote file's statistics come from its sidecar (`<url>.bitlens.json`, [`crate::sidecar`])
//! when one is there and matches the file's size and header: no tensor byte is read, and the
//! report is the one the statistics would have made. A sidecar that does not match is ignored
//! with a note and the file is read as before; [`Sidecars::Skip`] does not look for them. Local
//! files are always read: they are read at the disk's speed, and a report of a local file says
//! what is in it now.

use crate::analyze::file_stats;
use crate::bail;
use crate::chain;
use crate::checkpoint::{Model, ModelFile};
use crate::error::Result;
use crate::progress::Progress;
use crate::sidecar;
use crate::snapshots::{inspect_snapshots, is_snapshot};
use crate::source::Source;
use bitlens_report::chain::ChainsReport;
use bitlens_report::inspect::{FileReport, InspectReport};
use bitlens_report::sidecar::used_note;
use bitlens_report::snapshot::SnapshotsReport;
use bitlens_stats::TensorStats;
use bitlens_tensors::format::Entry;
use std::path::PathBuf;

/// Whether `inspect` takes a remote file's statistics from its sidecar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sidecars {
    /// Look for `<url>.bitlens.json` next to each remote file and use it when it matches.
    #[default]
    Use,
    /// Read every file's tensors (`--no-sidecar`).
    Skip,
}

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
/// (files, indexes, directories, URLs) — one kind at a time; remote files' sidecars are used.
pub fn inspect(inputs: &[PathBuf], progress: &dyn Progress) -> Result<Inspection> {
    inspect_with(inputs, None, Sidecars::Use, progress)
}

/// [`inspect`], measuring only the `tensors` named (every tensor with `None`: the others are
/// listed without statistics and left out of the totals, as the report does for tensors the page
/// has not measured yet; naming tensors is for checkpoints only), and taking remote files'
/// statistics from their sidecars or not.
pub fn inspect_with(
    inputs: &[PathBuf],
    tensors: Option<&[String]>,
    sidecars: Sidecars,
    progress: &dyn Progress,
) -> Result<Inspection> {
    if tensors.is_some() {
        let report = inspect_checkpoints_with(inputs, tensors, sidecars, progress)?;
        return Ok(Inspection::Checkpoints(report));
    }
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
    Ok(Inspection::Checkpoints(inspect_checkpoints_with(
        inputs, None, sidecars, progress,
    )?))
}

/// The statistics of every tensor of every checkpoint in `inputs` (a directory of GGUF / PyTorch
/// files gives each file as a checkpoint), on the caller's rayon pool; every tensor is read.
pub fn inspect_checkpoints(inputs: &[PathBuf], progress: &dyn Progress) -> Result<InspectReport> {
    inspect_checkpoints_with(inputs, None, Sidecars::Skip, progress)
}

/// [`inspect_checkpoints`], measuring only the `tensors` named (all with `None`; a name that no
/// checkpoint holds is refused before anything is read), taking remote files' statistics from
/// their sidecars or not.
pub fn inspect_checkpoints_with(
    inputs: &[PathBuf],
    tensors: Option<&[String]>,
    sidecars: Sidecars,
    progress: &dyn Progress,
) -> Result<InspectReport> {
    let mut checkpoints: Vec<Model> = Vec::new();
    for p in inputs {
        checkpoints.extend(Model::open_all(p)?);
    }
    for c in &checkpoints {
        c.warn(progress);
    }
    let wanted = |e: &Entry| tensors.is_none_or(|names| names.contains(&e.name));
    let files: Vec<&ModelFile> = checkpoints.iter().flat_map(|c| &c.files).collect();
    if let Some(missing) = tensors.into_iter().flatten().find(|n| {
        !files
            .iter()
            .any(|f| f.layout.entries.iter().any(|e| &e.name == *n))
    }) {
        let shown: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        bail!("no tensor `{missing}` in {}", shown.join(", "));
    }
    let known: Vec<Option<Vec<TensorStats>>> = files
        .iter()
        .map(|f| from_sidecar(f, sidecars, progress))
        .collect();
    let total: u64 = files
        .iter()
        .zip(&known)
        .filter(|(_, k)| k.is_none())
        .flat_map(|(f, _)| f.layout.entries.iter().filter(|e| wanted(e)))
        .map(bitlens_tensors::format::bytes::byte_len)
        .sum();
    progress.start(total, "inspect");
    let mut reports = Vec::with_capacity(files.len());
    for (file, known) in files.into_iter().zip(known) {
        let stats = match known {
            Some(stats) => (file.layout.entries.iter().zip(stats))
                .map(|(e, s)| wanted(e).then_some(s))
                .collect(),
            None => file_stats(&file.path, &file.source, &file.layout, &wanted, progress)?,
        };
        reports.push(file_report(file, stats.into_iter()));
    }
    progress.finish();
    Ok(InspectReport::new(reports))
}

/// The report of `file` with these statistics of its tensors, in order.
fn file_report(
    file: &ModelFile,
    mut stats: impl Iterator<Item = Option<TensorStats>>,
) -> FileReport {
    let path = file.path.to_string_lossy().into_owned();
    match &file.header {
        Some(header) => FileReport::new(path, header, |_| stats.next().flatten()),
        None => FileReport::from_layout(path, &file.layout, |_| stats.next().flatten()),
    }
}

/// The statistics of a remote `file` from its sidecar, when it has one that matches (said in a
/// note); a sidecar that cannot be read or does not match is noted and ignored.
fn from_sidecar(
    file: &ModelFile,
    sidecars: Sidecars,
    progress: &dyn Progress,
) -> Option<Vec<TensorStats>> {
    if sidecars == Sidecars::Skip || !matches!(file.source, Source::Http(_)) {
        return None;
    }
    let input = file.path.to_string_lossy();
    let found = match sidecar::find_for(&input, None) {
        Ok(found) => found?,
        Err(e) => {
            progress.note(&bitlens_report::sidecar::ignored_note(
                &bitlens_tensors::naming::sidecar_name(&input),
                &e,
            ));
            return None;
        }
    };
    let expected = file_report(file, std::iter::empty());
    match sidecar::verify(&found, &file.source, &expected) {
        Ok(stats) => {
            progress.note(&used_note(&found.location));
            Some(stats)
        }
        Err(note) => {
            progress.note(&note);
            None
        }
    }
}
