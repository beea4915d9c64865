//! `bitlens compress --chain`, and `decompress` / `inspect` of the chain directory it writes: a
//! sequence of checkpoints stored as a key (in full) and deltas against the previous step — the
//! incremental snapshots of the LMC paper (§3.1, Fig. 12) and BitSnap (§4, a base checkpoint then
//! deltas, every `MAX_CACHED_ITERATION` a new base: `--key N`).
//!
//! Each file of a step is compressed with `snapshot_cmd::compress` (the user's `--codec`), with the
//! same-named file of the previous step as its base (or, when both steps hold one file, that file);
//! a file new in a step is a key. The chain directory holds `<step>/<file>.bls` and the manifest
//! `chain.json` ([`bitlens_snapshot::chain`], docs/FORMAT.md "Checkpoint chains"), written last.
//! Decompressing checks every snapshot it needs against the manifest and each delta against its
//! base's index before decoding anything, then restores through files on disk: memory stays at the
//! container's frames whatever the checkpoint size.

use crate::snapshot_cmd;
use anyhow::{bail, Context, Result};
use bitlens_snapshot::chain::{
    self, BaseLink, FileEntry, FileKind, Manifest, Step, MANIFEST_NAME, SNAPSHOT_EXT,
};
use bitlens_snapshot::{CodecChoice, CodecKind};
use bitlens_stats::format;
use std::io::Write;
use std::path::{Path, PathBuf};

/// File extensions of the checkpoint files a step folder contributes (the formats `compress`
/// reads); other files (configs, logs, shard indexes) are left out, and said so.
const CHECKPOINT_EXTS: [&str; 7] = ["safetensors", "gguf", "pt", "pth", "bin", "npy", "npz"];

/// A step of the input: its name and its checkpoint files.
struct StepInput {
    name: String,
    files: Vec<PathBuf>,
}

/// True when `path` is a chain directory (it holds a `chain.json`).
pub fn is_chain(path: &Path) -> bool {
    path.is_dir() && path.join(MANIFEST_NAME).is_file()
}

/// What `compress --chain` does besides the codec.
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
) -> Result<()> {
    if choice.is_lossy() {
        bail!(
            "--codec {} with these settings is lossy: a chain's deltas must be exact, use a lossless codec",
            choice.kind
        );
    }
    if options.key_every == Some(0) {
        bail!("--key 0: give N ≥ 1 (every Nth step stored in full)");
    }
    let steps = input_steps(inputs)?;
    let is_key = |i: usize| options.key_every.map_or(i == 0, |n| i.is_multiple_of(n));
    if (0..steps.len()).any(|i| !is_key(i)) {
        choice
            .check(true)
            .map_err(|e| anyhow::anyhow!("--codec {}: {e}", choice.kind))?;
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
            let entry = compress_file(output, &input.name, path, base, choice, options)
                .with_context(|| format!("step `{}`, {}", input.name, path.display()))?;
            step.files.push(entry);
        }
        manifest.steps.push(step);
    }
    manifest
        .validate()
        .context("the manifest written does not validate (a bug)")?;
    snapshot_cmd::write_output(&manifest_path, |out| {
        out.write_all(manifest.to_json().as_bytes())?;
        out.write_all(b"\n")?;
        Ok(())
    })?;
    let report = ChainReport::new(output, &manifest, &sizes_on_disk(output, &manifest)?);
    eprintln!(
        "bitlens: chain of {} steps: {} raw → {} ({:.4}){}",
        manifest.steps.len(),
        format::bytes(report.totals.original_size),
        format::bytes(report.totals.chain_size),
        report.totals.ratio,
        report
            .totals
            .all_full_size
            .map_or(String::new(), |f| format!(
                "; all steps in full {} ({:.4})",
                format::bytes(f),
                f as f64 / report.totals.original_size.max(1) as f64
            ))
    );
    Ok(())
}

/// The input paths as steps: a run directory's `step-*` folders ordered by their number, or each
/// path a step (numbers in the names, where every name has one, must increase).
fn input_steps(inputs: &[PathBuf]) -> Result<Vec<StepInput>> {
    let steps = match inputs {
        [dir] if dir.is_dir() => {
            let mut numbered = Vec::new();
            for entry in
                std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?
            {
                let path = entry?.path();
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue; // not a step-<number> name
                };
                if let Some(n) = run_step_number(name).filter(|_| path.is_dir()) {
                    numbered.push((n, name.to_owned(), path));
                }
            }
            if numbered.is_empty() {
                bail!(
                    "{}: no step-* folders: give a run directory of step-<number> folders, or the checkpoints of the chain in order",
                    dir.display()
                );
            }
            numbered.sort();
            if let Some(w) = numbered.windows(2).find(|w| w[0].0 == w[1].0) {
                bail!(
                    "{}: `{}` and `{}` are the same step number",
                    dir.display(),
                    w[0].1,
                    w[1].1
                );
            }
            numbered
                .into_iter()
                .map(|(_, name, path)| step_input(name, &path))
                .collect::<Result<Vec<_>>>()?
        }
        _ => {
            let stems = inputs
                .iter()
                .map(|p| given_step_name(p, false))
                .collect::<Result<Vec<_>>>()?;
            let distinct = (0..stems.len()).all(|i| !stems[..i].contains(&stems[i]));
            let steps = inputs
                .iter()
                .zip(stems)
                .map(|(p, stem)| {
                    let name = if distinct {
                        stem
                    } else {
                        given_step_name(p, true)?
                    };
                    step_input(name, p)
                })
                .collect::<Result<Vec<_>>>()?;
            check_given_order(&steps)?;
            steps
        }
    };
    for (i, s) in steps.iter().enumerate() {
        if let Some(other) = steps[..i].iter().find(|o| o.name == s.name) {
            bail!(
                "two steps are named `{}` ({} and {}): steps need distinct names",
                s.name,
                other.files[0].display(),
                s.files[0].display()
            );
        }
    }
    Ok(steps)
}

/// The name of a step given by its path: a folder's name; a file's name without its extension
/// or, with `by_folder` (for files of the same name in several folders: `step-10/model.safetensors`),
/// its folder's name.
fn given_step_name(path: &Path, by_folder: bool) -> Result<String> {
    // `.` or `..` have their name in the absolute path; a symlink keeps its own name.
    let absolute = if path.file_name().is_some() {
        path.to_path_buf()
    } else {
        path.canonicalize()
            .with_context(|| format!("{}: cannot resolve", path.display()))?
    };
    if absolute.is_dir() {
        return file_name(&absolute);
    }
    if by_folder {
        let absolute = std::path::absolute(&absolute)
            .with_context(|| format!("{}: cannot resolve", path.display()))?;
        let parent = absolute
            .parent()
            .with_context(|| format!("{}: no folder", path.display()))?;
        return file_name(parent);
    }
    let stem = absolute.file_stem().and_then(|s| s.to_str());
    stem.map(str::to_owned)
        .with_context(|| format!("{}: not a UTF-8 file name", path.display()))
}

/// The number of a run directory's step folder: `step-000025`, `step_25`, `step25`.
fn run_step_number(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("step")?.trim_start_matches(['-', '_']);
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// The last run of digits in a name (`ckpt-300` → 300), if any.
fn last_number(name: &str) -> Option<u64> {
    let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = name[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    name[start..end].parse().ok()
}

/// Steps given one by one must be in training order: when every name carries a number, the
/// numbers increase.
fn check_given_order(steps: &[StepInput]) -> Result<()> {
    let numbers: Option<Vec<u64>> = steps.iter().map(|s| last_number(&s.name)).collect();
    let Some(numbers) = numbers else {
        return Ok(());
    };
    if let Some(i) = (1..steps.len()).find(|&i| numbers[i] <= numbers[i - 1]) {
        bail!(
            "steps out of order: `{}` (number {}) is given after `{}` (number {}); give the checkpoints in training order",
            steps[i].name,
            numbers[i],
            steps[i - 1].name,
            numbers[i - 1]
        );
    }
    Ok(())
}

/// One step: a checkpoint file, or a folder's checkpoint files by name.
fn step_input(name: String, path: &Path) -> Result<StepInput> {
    if !path.is_dir() {
        if !path.is_file() {
            bail!("{}: no such checkpoint file or folder", path.display());
        }
        return Ok(StepInput {
            name,
            files: vec![path.to_path_buf()],
        });
    }
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for entry in
        std::fs::read_dir(path).with_context(|| format!("{}: cannot list", path.display()))?
    {
        let p = entry?.path();
        let known = p
            .extension()
            .is_some_and(|e| CHECKPOINT_EXTS.iter().any(|k| e.eq_ignore_ascii_case(k)));
        if p.is_file() && known {
            files.push(p);
        } else {
            skipped.push(
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    // As for a Hugging Face folder: with safetensors files, the others (`training_args.bin`) are
    // not checkpoints.
    let is_safetensors = |p: &PathBuf| p.extension().is_some_and(|e| e == "safetensors");
    if files.iter().any(is_safetensors) {
        let (kept, others): (Vec<_>, Vec<_>) = files.into_iter().partition(is_safetensors);
        files = kept;
        skipped.extend(others.iter().map(|p| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        }));
    }
    if files.is_empty() {
        bail!("{}: no checkpoint files in the step folder", path.display());
    }
    if !skipped.is_empty() {
        skipped.sort();
        eprintln!(
            "bitlens: {}: not checkpoint files, left out of the chain: {}",
            path.display(),
            skipped.join(", ")
        );
    }
    files.sort();
    Ok(StepInput { name, files })
}

/// A path's last component as UTF-8.
fn file_name(path: &Path) -> Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .with_context(|| format!("{}: not a UTF-8 file name", path.display()))
}

/// The base of `path`, a file of `current`, in the previous step: its file of the same name, or
/// its only file when both steps hold one.
fn base_file<'a>(
    previous: &'a StepInput,
    compressed: &'a Step,
    current: &StepInput,
    path: &Path,
) -> Option<(&'a Path, BaseLink)> {
    let name = path.file_name()?;
    let only = previous.files.len() == 1 && current.files.len() == 1;
    let at = previous
        .files
        .iter()
        .position(|p| p.file_name() == Some(name))
        .or(only.then_some(0))?;
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
) -> Result<FileEntry> {
    let name = file_name(path)?;
    let dir = chain.join(step);
    let bls = dir.join(format!("{name}.{SNAPSHOT_EXT}"));
    let codec = if base.is_some() {
        choice
    } else {
        key_choice(choice)
    };
    eprintln!(
        "bitlens: {step}/{name}: {}",
        base.as_ref()
            .map_or("key (in full)".to_owned(), |(_, b)| format!(
                "delta against {}/{}",
                b.step, b.file
            ))
    );
    snapshot_cmd::compress(path, &bls, codec, base.as_ref().map(|(p, _)| *p))?;
    let full_size = match &base {
        Some(_) if options.measure_full => {
            let tmp = dir.join(format!(".{name}.full.bitlens-partial"));
            eprintln!("bitlens: {step}/{name}: its size in full, for comparison");
            let result = snapshot_cmd::compress(path, &tmp, key_choice(choice), None)
                .and_then(|()| Ok(std::fs::metadata(&tmp)?.len()));
            let _ = std::fs::remove_file(&tmp);
            Some(result?)
        }
        _ => None,
    };
    let (reader, snapshot_size) = snapshot_cmd::open_snapshot(&bls)?;
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
        let (base_reader, _) = snapshot_cmd::open_snapshot(
            &chain
                .join(&link.step)
                .join(format!("{}.{SNAPSHOT_EXT}", link.file)),
        )?;
        chain::check_link(step, &entry, &reader, &base_reader)?;
    }
    Ok(entry)
}

/// Reads and validates a chain directory's manifest.
fn read_manifest(dir: &Path) -> Result<Manifest> {
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
fn open_member(
    dir: &Path,
    step: &str,
    f: &FileEntry,
) -> Result<(bitlens_snapshot::SnapshotReader<crate::source::Source>, u64)> {
    let path = dir.join(f.snapshot_path(step));
    if !path.is_file() {
        bail!(
            "step `{step}`, file `{}`: its snapshot {} is missing",
            f.name,
            path.display()
        );
    }
    snapshot_cmd::open_snapshot(&path).with_context(|| format!("step `{step}`, file `{}`", f.name))
}

/// The on-disk size of every snapshot of the chain, step by step, each checked against the
/// manifest (with its fingerprint and its link to its base).
fn sizes_on_disk(dir: &Path, m: &Manifest) -> Result<Vec<Vec<u64>>> {
    m.steps
        .iter()
        .enumerate()
        .map(|(i, s)| s.files.iter().map(|f| verify_file(dir, m, i, f)).collect())
        .collect()
}

/// `bitlens decompress CHAIN`: every step into `output/<step>/<file>`, each delta from its base's
/// restored file; or with `step`, that step's files into `output/<file>`, through temporary files
/// from its keys.
pub fn decompress(dir: &Path, output: &Path, step: Option<&str>) -> Result<()> {
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
                eprintln!("bitlens: restoring {}/{}", s.name, f.name);
                snapshot_cmd::decompress(
                    &dir.join(f.snapshot_path(&s.name)),
                    &out_dir.join(&f.name),
                    base.as_deref(),
                    None,
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
        restore_through(dir, &m, &links, output)?;
    }
    Ok(())
}

/// Restores the last file of `links` (a key, then deltas) into `output/<file>`: each snapshot
/// decoded into a temporary file next to it, the base of the next, and removed once used.
fn restore_through(dir: &Path, m: &Manifest, links: &[chain::Link], output: &Path) -> Result<()> {
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
            eprintln!("bitlens: restoring {step}/{}", f.name);
            snapshot_cmd::decompress(
                &dir.join(f.snapshot_path(step)),
                &target,
                previous.as_deref(),
                None,
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

/// One file of a step, as `inspect` reports it.
#[derive(serde::Serialize)]
struct FileReport {
    name: String,
    kind: FileKind,
    base: Option<BaseLink>,
    codec: String,
    original_size: u64,
    snapshot_size: u64,
    ratio: f64,
    /// The size stored in full (a key's own; a delta's when measured).
    full_size: Option<u64>,
    /// A delta's size relative to the file in full.
    delta_vs_full: Option<f64>,
}

/// One step, as `inspect` reports it.
#[derive(serde::Serialize)]
struct StepReport {
    name: String,
    files: Vec<FileReport>,
    original_size: u64,
    snapshot_size: u64,
    ratio: f64,
}

/// The chain's totals.
#[derive(serde::Serialize)]
struct Totals {
    /// The checkpoints' raw size.
    original_size: u64,
    /// The chain's snapshots (the manifest not counted).
    chain_size: u64,
    ratio: f64,
    /// Every file stored in full (when every delta's full size was measured).
    all_full_size: Option<u64>,
    /// What the deltas save: `all_full_size - chain_size`.
    saved_bytes: Option<i64>,
}

/// The delta ratio of one file name step by step (LMC Fig. 12: it falls as training converges).
#[derive(serde::Serialize)]
struct Trend {
    file: String,
    /// (step, delta ratio = snapshot / original).
    points: Vec<(String, f64)>,
}

/// A chain, as `inspect` reports it.
#[derive(serde::Serialize)]
struct ChainReport {
    path: PathBuf,
    codec: String,
    key_every: Option<u64>,
    steps: Vec<StepReport>,
    totals: Totals,
    trend: Vec<Trend>,
}

fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

impl ChainReport {
    /// The report of a manifest whose snapshots have the sizes `sizes` (step by step).
    fn new(path: &Path, m: &Manifest, sizes: &[Vec<u64>]) -> Self {
        let steps: Vec<StepReport> = m
            .steps
            .iter()
            .zip(sizes)
            .map(|(s, sizes)| {
                let files: Vec<FileReport> = s
                    .files
                    .iter()
                    .zip(sizes)
                    .map(|(f, &size)| FileReport {
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
                StepReport {
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
            path: path.to_path_buf(),
            codec: m.codec.clone(),
            key_every: m.key_every,
            totals: Totals {
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
}

/// `bitlens inspect` on chain directories: per step and file, key or delta, sizes and ratios; the
/// totals against every step in full; the delta ratio's trend over the steps. Every snapshot is
/// checked against the manifest (size, fingerprint, link to its base) first.
pub fn inspect(paths: &[PathBuf], json: bool) -> Result<()> {
    let mut reports = Vec::new();
    for path in paths {
        let m = read_manifest(path)?;
        let sizes = sizes_on_disk(path, &m)?;
        reports.push(ChainReport::new(path, &m, &sizes));
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &serde_json::json!({ "chains": reports }))?;
        writeln!(out)?;
        return Ok(());
    }
    for r in &reports {
        print_chain(&mut out, r)?;
    }
    Ok(())
}

fn print_chain(out: &mut impl Write, r: &ChainReport) -> Result<()> {
    let files: usize = r.steps.iter().map(|s| s.files.len()).sum();
    writeln!(
        out,
        "{}  (chain of {} steps, {files} snapshots, codec {}, keys: {}; every snapshot checked against the manifest and its base)",
        r.path.display(),
        r.steps.len(),
        r.codec,
        r.key_every
            .map_or("the first step".to_owned(), |n| format!("every {n} steps"))
    )?;
    writeln!(
        out,
        "  {:<16} {:<28} {:<6} {:>9} {:>9} {:>7} {:>9} {:>8}",
        "step", "file", "kind", "original", "stored", "ratio", "in full", "Δ/full"
    )?;
    for s in &r.steps {
        for f in &s.files {
            writeln!(
                out,
                "  {:<16} {:<28} {:<6} {:>9} {:>9} {:>7.4} {:>9} {:>8}",
                format::name(&s.name, 16),
                format::name(&f.name, 28),
                f.kind.to_string(),
                format::bytes(f.original_size),
                format::bytes(f.snapshot_size),
                f.ratio,
                f.full_size.map_or("-".to_owned(), format::bytes),
                f.delta_vs_full
                    .map_or("-".to_owned(), |d| format!("{d:.4}"))
            )?;
        }
    }
    let t = &r.totals;
    writeln!(
        out,
        "  total: {} raw → chain {} (ratio {:.4}){}",
        format::bytes(t.original_size),
        format::bytes(t.chain_size),
        t.ratio,
        match (t.all_full_size, t.saved_bytes) {
            (Some(full), Some(saved)) => format!(
                "; every step in full {} (ratio {:.4}): the deltas save {} ({:.1} %)",
                format::bytes(full),
                ratio(full, t.original_size),
                format::bytes(saved.unsigned_abs()),
                100.0 * saved as f64 / full.max(1) as f64
            ),
            _ => "; the deltas' sizes in full were not measured (--skip-full-size)".to_owned(),
        }
    )?;
    if r.trend.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "  delta ratio (stored / original) by step — falls as training converges (LMC Fig. 12):"
    )?;
    write!(out, "  {:<16}", "step")?;
    for t in &r.trend {
        write!(out, " {:>26}", format::name(&t.file, 26))?;
    }
    writeln!(out)?;
    for s in &r.steps {
        let cells: Vec<Option<f64>> = r
            .trend
            .iter()
            .map(|t| t.points.iter().find(|p| p.0 == s.name).map(|p| p.1))
            .collect();
        if cells.iter().all(Option::is_none) {
            continue;
        }
        write!(out, "  {:<16}", format::name(&s.name, 16))?;
        for c in cells {
            write!(
                out,
                " {:>26}",
                c.map_or("-".to_owned(), |v| format!("{v:.4}"))
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}
