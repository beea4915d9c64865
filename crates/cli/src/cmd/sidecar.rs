//! `bitlens sidecar FILE…`: each checkpoint file's statistics computed once into its sidecar
//! (`<file>.bitlens.json` beside it, or under `--dir DIR`; a URL's under `DIR/<host>/<path>`), the
//! document `bitlens inspect URL`, the page and the embed show at once (`bitlens_engine::sidecar`).
//! A sidecar that already matches its file (size and header hash) is kept unless `--force`, so a
//! rerun over a catalogue resumes. A file that fails is said and the others go on.

use crate::io::progress::Terminal;
use anyhow::{bail, Result};
use bitlens_engine::catalogue::{write, Written};
use bitlens_engine::sidecar::output_path;
use bitlens_stats::format;
use std::path::{Path, PathBuf};

/// Runs `bitlens sidecar` over `inputs`.
pub fn run(inputs: &[PathBuf], dir: Option<&Path>, force: bool) -> Result<()> {
    let progress = Terminal::default();
    let mut failed = 0;
    for input in inputs {
        let done = output_path(input, dir).and_then(|out| {
            let written = write(input, &out, !force, &progress)?;
            Ok((out, written))
        });
        match done {
            Ok((out, Written::Current(_))) => eprintln!(
                "bitlens: {} matches {} (kept)",
                out.display(),
                input.display()
            ),
            Ok((out, Written::Wrote(s))) => eprintln!(
                "bitlens: wrote {} ({} tensors, {})",
                out.display(),
                s.report.summary.tensors,
                format::bytes(s.report.summary.bytes)
            ),
            Err(e) => {
                failed += 1;
                eprintln!("bitlens: {e}");
            }
        }
    }
    if failed > 0 {
        bail!("{failed} of {} sidecars could not be written", inputs.len());
    }
    Ok(())
}
