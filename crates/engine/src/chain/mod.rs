//! `bitlens compress --chain`, and `decompress` / `inspect` of the chain directory it writes: a
//! sequence of checkpoints stored as a key (in full) and deltas against the previous step — the
//! incremental snapshots of the LMC paper (§3.1, Fig. 12) and BitSnap (§4, a base checkpoint then
//! deltas, every `MAX_CACHED_ITERATION` a new base: `--key N`).
//!
//! Each file of a step is compressed with [`crate::compress::compress`] (the user's `--codec`), with the
//! same-named file of the previous step as its base (or, when both steps hold one file, that file);
//! a file new in a step is a key. The chain directory holds `<step>/<file>.bls` and the manifest
//! `chain.json` ([`bitlens_snapshot::chain`], docs/FORMAT.md "Checkpoint chains"), written last.
//! Decompressing checks every snapshot it needs against the manifest and each delta against its
//! base's index before decoding anything, then restores through files on disk: memory stays at the
//! container's frames whatever the checkpoint size.
//!
//! - [`steps`]: which checkpoints make the steps.
//! - [`restore`]: decompressing a chain.

mod restore;
mod steps;

pub use restore::decompress;
pub(crate) use restore::{read_manifest, sizes_on_disk};

use crate::bail;
use crate::compress::compress as compress_snapshot;
use crate::error::{Context, Error, Result};
use crate::output::write_output;
use crate::progress::Progress;
use crate::snapshots::open_snapshot;
use bitlens_report::chain::{ChainReport, ChainsReport};
use bitlens_snapshot::chain::{self, BaseLink, FileEntry, FileKind, Manifest, Step, MANIFEST_NAME};
use bitlens_snapshot::report::chain_report;
use bitlens_snapshot::{CodecChoice, CodecKind};
use bitlens_tensors::naming;
use std::io::Write;
use std::path::{Path, PathBuf};
use steps::{file_name, input_steps, StepInput};

/// True when `path` is a chain directory (it holds a `chain.json`).
pub fn is_chain(path: &Path) -> bool {
    path.is_dir() && path.join(MANIFEST_NAME).is_file()
}

/// What `compress --chain` does besides the codec.
#[derive(Debug, Clone, Default)]
pub struct CompressOptions {
    /// Every how many steps a key is stored (`None`: only the first).
    pub key_every: Option<usize>,
    /// Also measure each delta file's size in full (for `inspect`'s saved-by-deltas total).
    pub measure_full: bool,
}

/// `bitlens compress --chain`: the steps `inputs` (one run directory of `step-*` folders, or the
/// checkpoints in training order) into the chain directory `output`.
pub fn compress(
    inputs: &[PathBuf],
    output: &Path,
    choice: CodecChoice,
    options: &CompressOptions,
    progress: &dyn Progress,
) -> Result<ChainReport> {
    if choice.is_lossy() {
        bail!(
            "--codec {} with these settings is lossy: a chain's deltas must be exact, use a lossless codec",
            choice.kind
        );
    }
    if options.key_every == Some(0) {
        bail!("--key 0: give N ≥ 1 (every Nth step stored in full)");
    }
    let steps = input_steps(inputs, progress)?;
    let is_key = |i: usize| options.key_every.map_or(i == 0, |n| i.is_multiple_of(n));
    if (0..steps.len()).any(|i| !is_key(i)) {
        choice
            .check(true)
            .map_err(|e| Error::invalid(format!("--codec {}: {e}", choice.kind)))?;
    }
    std::fs::create_dir_all(output)
        .with_context(|| format!("{}: cannot create directory", output.display()))?;
    // A chain being rewritten has no manifest until it is complete.
    let manifest_path = output.join(MANIFEST_NAME);
    if manifest_path.exists() {
        std::fs::remove_file(&manifest_path)
            .with_context(|| format!("{}: cannot remove", manifest_path.display()))?;
    }
    let mut manifest = Manifest::new(choice.kind.name(), options.key_every.map(|n| n as u64));
    for (i, input) in steps.iter().enumerate() {
        let dir = output.join(&input.name);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
        let previous = i
            .checked_sub(1)
            .filter(|_| !is_key(i))
            .map(|j| (&steps[j], &manifest.steps[j]));
        let mut step = Step {
            name: input.name.clone(),
            files: Vec::new(),
        };
        for path in &input.files {
            let base = previous.and_then(|(p, s)| base_file(p, s, input, path));
            let entry = compress_file(output, &input.name, path, base, choice, options, progress)
                .with_context(|| format!("step `{}`, {}", input.name, path.display()))?;
            step.files.push(entry);
        }
        manifest.steps.push(step);
    }
    manifest
        .validate()
        .context("the manifest written does not validate (a bug)")?;
    write_output(&manifest_path, |out| {
        out.write_all(manifest.to_json().as_bytes())?;
        out.write_all(b"\n")?;
        Ok(())
    })?;
    let sizes = sizes_on_disk(output, &manifest)?;
    Ok(chain_report(&output.to_string_lossy(), &manifest, &sizes))
}

/// The base of `path`, a file of `current`, in the previous step: its file of the same name, or
/// its only file when both steps hold one.
fn base_file<'a>(
    previous: &'a StepInput,
    compressed: &'a Step,
    current: &StepInput,
    path: &Path,
) -> Option<(&'a Path, BaseLink)> {
    // The base file of the same name; a file new in a step is a key, unless both steps hold one
    // file (renamed between steps).
    let names: Vec<String> = previous
        .files
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let own = path.to_string_lossy();
    let at = naming::base_file(&names, &own).filter(|&i| {
        naming::file_name(&names[i]) == naming::file_name(&own) || current.files.len() == 1
    })?;
    Some((
        &previous.files[at],
        BaseLink {
            step: previous.name.clone(),
            file: compressed.files[at].name.clone(),
        },
    ))
}

/// The codec of a key: the user's choice, or LMC when the choice needs a base (bitsnap).
fn key_choice(choice: CodecChoice) -> CodecChoice {
    if choice.check(false).is_ok() {
        choice
    } else {
        CodecChoice::new(CodecKind::Lmc)
    }
}

/// Compresses one file of a step into `<chain>/<step>/<file>.bls` (a delta when `base` is given)
/// and returns its manifest entry.
fn compress_file(
    chain: &Path,
    step: &str,
    path: &Path,
    base: Option<(&Path, BaseLink)>,
    choice: CodecChoice,
    options: &CompressOptions,
    progress: &dyn Progress,
) -> Result<FileEntry> {
    let name = file_name(path)?;
    let dir = chain.join(step);
    let bls = dir.join(naming::snapshot_name(&name, true));
    let codec = if base.is_some() {
        choice
    } else {
        key_choice(choice)
    };
    progress.note(&format!(
        "{step}/{name}: {}",
        base.as_ref()
            .map_or("key (in full)".to_owned(), |(_, b)| format!(
                "delta against {}/{}",
                b.step, b.file
            ))
    ));
    compress_snapshot(path, &bls, codec, base.as_ref().map(|(p, _)| *p), progress)?;
    let full_size = match &base {
        Some(_) if options.measure_full => {
            let tmp = dir.join(format!(".{name}.full.bitlens-partial"));
            progress.note(&format!("{step}/{name}: its size in full, for comparison"));
            let result = compress_snapshot(path, &tmp, key_choice(choice), None, progress)
                .and_then(|_| Ok(std::fs::metadata(&tmp)?.len()));
            let _ = std::fs::remove_file(&tmp);
            Some(result?)
        }
        _ => None,
    };
    let (reader, snapshot_size) = open_snapshot(&bls)?;
    // With `--codec auto` a file may come out with no tensor stored against its base (every
    // tensor smaller in full): it is then a key of the chain, restored without its predecessor.
    let base = base.filter(|_| reader.base.is_some());
    let full_size = full_size.filter(|_| base.is_some());
    let entry = FileEntry {
        name,
        kind: if base.is_some() {
            FileKind::Delta
        } else {
            FileKind::Key
        },
        base: base.map(|(_, link)| link),
        codec: codec.kind.name().to_owned(),
        original_size: std::fs::metadata(path)
            .with_context(|| format!("{}: cannot stat", path.display()))?
            .len(),
        snapshot_size,
        full_size,
        fingerprint: chain::format_fingerprint(chain::fingerprint(&reader)),
    };
    if let Some(link) = &entry.base {
        let (base_reader, _) = open_snapshot(
            &chain
                .join(&link.step)
                .join(naming::snapshot_name(&link.file, true)),
        )?;
        chain::check_link(step, &entry, &reader, &base_reader)?;
    }
    Ok(entry)
}

/// `bitlens inspect` on chain directories: per step and file, key or delta, sizes and ratios; the
/// totals against every step in full; the delta ratio's trend over the steps. Every snapshot is
/// checked against the manifest (size, fingerprint, link to its base) first.
pub fn inspect(paths: &[PathBuf]) -> Result<ChainsReport> {
    let mut chains = Vec::new();
    for path in paths {
        let m = read_manifest(path)?;
        let sizes = sizes_on_disk(path, &m)?;
        chains.push(chain_report(&path.to_string_lossy(), &m, &sizes));
    }
    Ok(ChainsReport { chains })
}
