//! `bitlens decompress CHAIN`: every snapshot a step needs checked against the manifest and each
//! delta against its base's index before anything is decoded, then restored through files on disk
//! (memory stays at the container's frames whatever the checkpoint size).

use crate::bail;
use crate::decompress::decompress as decompress_snapshot;
use crate::error::{Context, Result};
use crate::progress::Progress;
use crate::snapshots::open_snapshot;
use crate::source::Source;
use bitlens_snapshot::chain::{self, FileEntry, Manifest, MANIFEST_NAME};
use bitlens_snapshot::SnapshotReader;
use std::path::{Path, PathBuf};

/// Reads and validates a chain directory's manifest.
pub(crate) fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST_NAME);
    let bytes = std::fs::read(&path).with_context(|| format!("{}: cannot read", path.display()))?;
    Manifest::parse(&bytes).with_context(|| path.display().to_string())
}

/// Checks the snapshot of file `f` of step `i` against the manifest and, for a delta, against its
/// base's snapshot (their indexes only); returns its size.
fn verify_file(dir: &Path, m: &Manifest, i: usize, f: &FileEntry) -> Result<u64> {
    let step = &m.steps[i].name;
    let (reader, size) = open_member(dir, step, f)?;
    chain::check_snapshot(step, f, &reader, size)?;
    if let Some(link) = &f.base {
        let base = m
            .steps
            .iter()
            .find(|s| s.name == link.step)
            .and_then(|s| s.file(&link.file))
            .context("validated manifest: the base exists")?;
        let (base_reader, _) = open_member(dir, &link.step, base)?;
        chain::check_link(step, f, &reader, &base_reader)?;
    }
    Ok(size)
}

/// Opens the snapshot of file `f` of `step`, naming both when it is missing or unreadable.
fn open_member(dir: &Path, step: &str, f: &FileEntry) -> Result<(SnapshotReader<Source>, u64)> {
    let path = dir.join(f.snapshot_path(step));
    if !path.is_file() {
        bail!(
            "step `{step}`, file `{}`: its snapshot {} is missing",
            f.name,
            path.display()
        );
    }
    open_snapshot(&path).with_context(|| format!("step `{step}`, file `{}`", f.name))
}

/// The on-disk size of every snapshot of the chain, step by step, each checked against the
/// manifest (with its fingerprint and its link to its base).
pub(crate) fn sizes_on_disk(dir: &Path, m: &Manifest) -> Result<Vec<Vec<u64>>> {
    m.steps
        .iter()
        .enumerate()
        .map(|(i, s)| s.files.iter().map(|f| verify_file(dir, m, i, f)).collect())
        .collect()
}

/// `bitlens decompress CHAIN`: every step into `output/<step>/<file>`, each delta from its base's
/// restored file; or with `step`, that step's files into `output/<file>`, through temporary files
/// from its keys.
pub fn decompress(
    dir: &Path,
    output: &Path,
    step: Option<&str>,
    progress: &dyn Progress,
) -> Result<()> {
    let m = read_manifest(dir)?;
    std::fs::create_dir_all(output)
        .with_context(|| format!("{}: cannot create directory", output.display()))?;
    let Some(wanted) = step else {
        sizes_on_disk(dir, &m)?;
        for s in &m.steps {
            let out_dir = output.join(&s.name);
            std::fs::create_dir_all(&out_dir)
                .with_context(|| format!("{}: cannot create directory", out_dir.display()))?;
            for f in &s.files {
                let base = f.base.as_ref().map(|b| output.join(&b.step).join(&b.file));
                progress.note(&format!("restoring {}/{}", s.name, f.name));
                decompress_snapshot(
                    &dir.join(f.snapshot_path(&s.name)),
                    &out_dir.join(&f.name),
                    base.as_deref(),
                    None,
                    progress,
                )
                .with_context(|| format!("step `{}`, file `{}`", s.name, f.name))?;
            }
        }
        return Ok(());
    };
    let i = m.find_step(wanted)?;
    for f in &m.steps[i].files {
        let links = m.links(i, &f.name);
        for &(j, g) in &links {
            verify_file(dir, &m, j, g)?;
        }
        restore_through(dir, &m, &links, output, progress)?;
    }
    Ok(())
}

/// Restores the last file of `links` (a key, then deltas) into `output/<file>`: each snapshot
/// decoded into a temporary file next to it, the base of the next, and removed once used.
fn restore_through(
    dir: &Path,
    m: &Manifest,
    links: &[chain::Link],
    output: &Path,
    progress: &dyn Progress,
) -> Result<()> {
    let Some(&(_, last)) = links.last() else {
        return Ok(());
    };
    let mut previous: Option<PathBuf> = None;
    let result = (|| -> Result<()> {
        for (k, &(j, f)) in links.iter().enumerate() {
            let step = &m.steps[j].name;
            let target = if k + 1 == links.len() {
                output.join(&last.name)
            } else {
                output.join(format!(".{}.{k}.bitlens-chain", last.name))
            };
            progress.note(&format!("restoring {step}/{}", f.name));
            decompress_snapshot(
                &dir.join(f.snapshot_path(step)),
                &target,
                previous.as_deref(),
                None,
                progress,
            )
            .with_context(|| format!("step `{step}`, file `{}`", f.name))?;
            if let Some(p) = previous.replace(target) {
                std::fs::remove_file(&p)
                    .with_context(|| format!("{}: cannot remove", p.display()))?;
            }
        }
        Ok(())
    })();
    if result.is_err() {
        if let Some(p) = previous.filter(|p| *p != output.join(&last.name)) {
            let _ = std::fs::remove_file(p);
        }
    }
    result
}
