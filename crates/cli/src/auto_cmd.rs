//! What `bitlens compress --codec auto` reports (issue 17): per tensor the candidates' predicted
//! sizes, the one chosen and the size it achieved (the tensor's stored length in the snapshot's
//! index), with totals per file and over all files — one JSON document with `--json`, else a
//! short summary on stderr.

use anyhow::Result;
use bitlens_snapshot::{AutoChoice, Entry};
use bitlens_stats::format;
use bitlens_tensors::Dtype;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One tensor's choice.
#[derive(serde::Serialize)]
pub struct TensorReport {
    name: String,
    dtype: Dtype,
    /// Its byte length.
    bytes: u64,
    /// Bytes of it sampled for the predictions.
    sample_bytes: u64,
    /// Predicted stored bytes per candidate (`lmc`, `neuzip`, `lmc-delta`, `unchanged`,
    /// `bitsnap`, `stored`).
    predicted: BTreeMap<&'static str, u64>,
    /// Candidates whose prediction a trial encode of the sample corrected.
    trial: Vec<&'static str>,
    /// The candidate chosen.
    chosen: &'static str,
    /// The container codec it is stored with (as `inspect` names it) and whether it is a delta.
    codec: &'static str,
    delta: bool,
    /// The chosen candidate's prediction.
    predicted_bytes: u64,
    /// Its stored bytes in the snapshot.
    achieved_bytes: u64,
}

/// Sums over tensors.
#[derive(serde::Serialize, Default, Clone, Copy)]
pub struct Totals {
    tensors: usize,
    bytes: u64,
    predicted_bytes: u64,
    achieved_bytes: u64,
    /// The snapshot files' sizes (achieved bytes plus header, index and trailer).
    snapshot_bytes: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.tensors += o.tensors;
        self.bytes += o.bytes;
        self.predicted_bytes += o.predicted_bytes;
        self.achieved_bytes += o.achieved_bytes;
        self.snapshot_bytes += o.snapshot_bytes;
    }
}

/// One compressed file's choices.
#[derive(serde::Serialize)]
pub struct FileReport {
    input: PathBuf,
    output: PathBuf,
    base: Option<PathBuf>,
    tensors: Vec<TensorReport>,
    totals: Totals,
}

impl FileReport {
    /// The report of one snapshot written to `output` (`snapshot_bytes` long) from `input`.
    pub fn new(
        input: &Path,
        output: &Path,
        base: Option<&Path>,
        choices: &[AutoChoice],
        entries: &[Entry],
        snapshot_bytes: u64,
    ) -> FileReport {
        let tensors: Vec<TensorReport> = choices
            .iter()
            .zip(entries)
            .map(|(c, e)| TensorReport {
                name: c.name.clone(),
                dtype: c.dtype,
                bytes: c.bytes,
                sample_bytes: c.sample_bytes,
                predicted: c
                    .predictions
                    .iter()
                    .map(|p| (p.candidate.name(), p.bytes))
                    .collect(),
                trial: c
                    .predictions
                    .iter()
                    .filter(|p| p.trial)
                    .map(|p| p.candidate.name())
                    .collect(),
                chosen: c.chosen.name(),
                codec: e.codec.name(),
                delta: e.delta,
                predicted_bytes: c.predicted_bytes(),
                achieved_bytes: e.stored_len(),
            })
            .collect();
        let totals = Totals {
            tensors: tensors.len(),
            bytes: tensors.iter().map(|t| t.bytes).sum(),
            predicted_bytes: tensors.iter().map(|t| t.predicted_bytes).sum(),
            achieved_bytes: tensors.iter().map(|t| t.achieved_bytes).sum(),
            snapshot_bytes,
        };
        FileReport {
            input: input.to_path_buf(),
            output: output.to_path_buf(),
            base: base.map(Path::to_path_buf),
            tensors,
            totals,
        }
    }
}

/// Prints the reports: one JSON document `{files, totals}` on stdout with `json`, else one line
/// on stderr with how many tensors each candidate won and predicted vs achieved bytes.
pub fn print(reports: &[FileReport], json: bool) -> Result<()> {
    let mut totals = Totals::default();
    for r in reports {
        totals.add(&r.totals);
    }
    if json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer(
            &mut out,
            &serde_json::json!({ "files": reports, "totals": totals }),
        )?;
        writeln!(out)?;
        return Ok(());
    }
    let mut wins: BTreeMap<&str, usize> = BTreeMap::new();
    for t in reports.iter().flat_map(|r| &r.tensors) {
        *wins.entry(t.chosen).or_default() += 1;
    }
    let wins: Vec<String> = wins.iter().map(|(k, n)| format!("{n} {k}")).collect();
    eprintln!(
        "bitlens: auto chose {} (tensors); predicted {}, achieved {}",
        wins.join(", "),
        format::bytes(totals.predicted_bytes),
        format::bytes(totals.achieved_bytes)
    );
    Ok(())
}
