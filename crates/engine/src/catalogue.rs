//! Catalogue runs: the statistics (LMC §3, the §4.1 entropy bound) of many checkpoint files,
//! computed once each and kept in sidecars, with their `.bls` snapshots (LMC §4's container) when
//! asked. The Python package's `bitlens.catalogue` spreads [`run_file`] over Ray or a process
//! pool; the rules of a run live here.
//!
//! - [`write`]: one file's sidecar (`<file>.bitlens.json`, `bitlens_report::sidecar`): the file
//!   inspected and its header fingerprinted; with `resume`, a sidecar already there that matches
//!   the file is kept. `bitlens sidecar` is this over the files given.
//! - [`list`]: the files a run covers, from files, directories (walked; a shard set grouped by its
//!   index, a directory's `.npy` files one checkpoint), shard index URLs and text files of URLs.
//! - [`run_file`]: one file, resumable: when its sidecar matches the file's size and header hash
//!   only the header is read; else its tensors are measured, a snapshot written when asked, and
//!   the sidecar written last, so a run stopped halfway redoes only what it had not finished.
//!   Whatever fails is the record's error, never the caller's.

use crate::bail;
use crate::checkpoint::{read_index, Model};
use crate::error::{Context, Result};
use crate::inspect::inspect_checkpoints;
use crate::output::write_output;
use crate::plan::{execute, CompressArgs, CompressCodec, Outcome};
use crate::progress::Progress;
use crate::sidecar::{find_for, mirror_path, output_path};
use crate::source::is_url;
use crate::source::Source;
use bitlens_report::catalogue::{CatalogueFile, FileRecord, FileStatus, SnapshotRecord};
use bitlens_report::sidecar::{Fingerprint, Sidecar};
use bitlens_tensors::naming;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What [`write`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// It wrote this sidecar.
    Wrote(Box<Sidecar>),
    /// The sidecar there matches the file already (size and header hash): it was kept (as read).
    Current(Box<Sidecar>),
}

/// Writes the sidecar of the checkpoint file `input` (a local file or a URL) to `out`: the file's
/// `inspect --json` document and its fingerprint (size, header hash). With `resume`, a sidecar
/// already at `out` that matches the file is kept and nothing else is read. A directory, a shard
/// index or a snapshot is refused: a sidecar describes one checkpoint file.
pub fn write(input: &Path, out: &Path, resume: bool, progress: &dyn Progress) -> Result<Written> {
    let fingerprint = fingerprint(input)?;
    if resume {
        if let Some(sidecar) = current(out, &fingerprint)? {
            return Ok(Written::Current(Box::new(sidecar)));
        }
    }
    let sidecar = measure(input, fingerprint, progress)?;
    save(out, &sidecar)?;
    Ok(Written::Wrote(Box::new(sidecar)))
}

/// The fingerprint of the checkpoint file `input` (its size and header hash); a directory is
/// refused. A file whose header cannot be read fails with its reader's message, as `inspect`'s.
pub fn fingerprint(input: &Path) -> Result<Fingerprint> {
    let name = input.display().to_string();
    if !is_url(input)? && input.is_dir() {
        bail!("{name}: a directory; a sidecar describes one checkpoint file (give its files)");
    }
    Fingerprint::read(&Source::open(input)?)
        .context(&name)
        .or_else(|e| {
            // The reader's own rules name what is wrong as `inspect` does (a file named
            // `*.safetensors` is read as one even where its first bytes say nothing).
            crate::checkpoint::Model::open_all(input)?;
            Err(e)
        })
}

/// The sidecar at `out` when there is one that matches the file of this `fingerprint`.
pub fn current(out: &Path, fingerprint: &Fingerprint) -> Result<Option<Sidecar>> {
    if !out.is_file() {
        return Ok(None);
    }
    let found = find_for(&out.to_string_lossy(), Some(&out.to_string_lossy()))?;
    Ok(found
        .and_then(|f| f.sidecar.ok())
        .filter(|s| s.check(fingerprint).is_ok()))
}

/// The sidecar of the checkpoint file `input` whose `fingerprint` was read: its tensors read and
/// measured.
pub fn measure(input: &Path, fingerprint: Fingerprint, progress: &dyn Progress) -> Result<Sidecar> {
    let name = input.display().to_string();
    let report = inspect_checkpoints(&[input.to_path_buf()], progress)?;
    if report.files.len() != 1 {
        bail!(
            "{name}: {} files; a sidecar describes one checkpoint file",
            report.files.len()
        );
    }
    Ok(Sidecar::new(&name, fingerprint, report))
}

/// Writes `sidecar` to `out` (its directory made when missing; the file replaced at once).
pub fn save(out: &Path, sidecar: &Sidecar) -> Result<()> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("{}: cannot create", parent.display()))?;
    }
    write_output(out, |w| {
        serde_json::to_writer(&mut *w, sidecar)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(w))
            .with_context(|| format!("{}: write failed", out.display()))
    })
}

/// Extensions of the text files that list sources, one per line (`#` starts a comment).
pub const URL_LIST_EXTENSIONS: [&str; 2] = ["txt", "urls"];

/// Where a catalogue run keeps what it makes.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogueOptions {
    /// The run's output directory: sidecars of URLs (and of every file without `beside`) under
    /// `sidecars/`, snapshots under `snapshots/<codec>/`, each at the file's [`mirror_path`].
    pub out: PathBuf,
    /// Write a local file's sidecar beside it (`--sidecars`), where `inspect`, the page and the
    /// embed look for it.
    pub beside: bool,
    /// Also compress each file with this codec (`--compress`; any name `compress --codec` takes).
    pub compress: Option<String>,
}

/// True when `path` names a text file of sources ([`URL_LIST_EXTENSIONS`]).
pub fn is_source_list(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        URL_LIST_EXTENSIONS
            .iter()
            .any(|k| e.eq_ignore_ascii_case(k))
    })
}

/// Every checkpoint file the `sources` name, in the order given (a directory's in path order),
/// each once: a file or URL is itself; a shard index (file or URL) its shards; a text file of
/// sources ([`is_source_list`]) the sources it lists; a directory, walked, every shard set of its
/// indexes, its `.npy` files as one checkpoint, and each other file named as a checkpoint
/// ([`naming::is_checkpoint_name`]), snapshots and sidecars aside. Errors: a source that does
/// not exist or cannot be listed, an index that names missing shards.
pub fn list(sources: &[PathBuf]) -> Result<Vec<CatalogueFile>> {
    let mut out = Vec::new();
    for source in sources {
        list_source(source, &mut out)?;
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|f| seen.insert(f.file.clone()));
    Ok(out)
}

fn list_source(source: &Path, out: &mut Vec<CatalogueFile>) -> Result<()> {
    let name = source.to_string_lossy().into_owned();
    if is_url(source)? {
        let path_part = name.split(['?', '#']).next().unwrap_or(&name);
        if path_part.ends_with(".json") {
            for model in Model::open_all(source)? {
                push_files(&name, model.files.iter().map(|f| f.path.clone()), out);
            }
        } else {
            out.push(one(&name));
        }
        return Ok(());
    }
    let meta = std::fs::metadata(source).with_context(|| format!("{name}: cannot open"))?;
    if meta.is_dir() {
        return walk(source, out);
    }
    if naming::is_shard_index_name(&name) {
        let (_, files) = read_index(source)?;
        push_files(&name, files, out);
    } else if is_source_list(source) {
        let text =
            std::fs::read_to_string(source).with_context(|| format!("{name}: cannot read"))?;
        for line in text.lines().map(str::trim) {
            if !line.is_empty() && !line.starts_with('#') {
                list_source(Path::new(line), out)
                    .map_err(|e| e.context(format!("{name}: listed source")))?;
            }
        }
    } else {
        out.push(one(&name));
    }
    Ok(())
}

/// A file that is a checkpoint of its own.
fn one(file: &str) -> CatalogueFile {
    CatalogueFile {
        checkpoint: file.to_owned(),
        file: file.to_owned(),
    }
}

fn push_files(
    checkpoint: &str,
    files: impl IntoIterator<Item = PathBuf>,
    out: &mut Vec<CatalogueFile>,
) {
    out.extend(files.into_iter().map(|f| CatalogueFile {
        checkpoint: checkpoint.to_owned(),
        file: f.to_string_lossy().into_owned(),
    }));
}

/// A directory, its subdirectories in name order after its own files.
fn walk(dir: &Path, out: &mut Vec<CatalogueFile>) -> Result<()> {
    let shown = dir.display().to_string();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{shown}: cannot list directory"))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("{shown}: cannot list directory"))?;
    entries.sort();
    let (dirs, files): (Vec<PathBuf>, Vec<PathBuf>) = entries.into_iter().partition(|p| p.is_dir());
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let mut sharded = std::collections::HashSet::new();
    for index in files
        .iter()
        .filter(|p| naming::is_shard_index_name(&name(p)))
    {
        let (_, shards) = read_index(index)?;
        sharded.extend(shards.iter().cloned());
        push_files(&index.to_string_lossy(), shards, out);
    }
    let mut arrays = Vec::new();
    for file in files.iter().filter(|p| !sharded.contains(*p)) {
        let n = name(file);
        if !naming::is_checkpoint_name(&n) {
            continue;
        }
        if naming::is_npy_name(&n) {
            arrays.push(file.clone());
        } else {
            out.push(one(&file.to_string_lossy()));
        }
    }
    if !arrays.is_empty() {
        push_files(&shown, arrays, out);
    }
    for sub in dirs {
        walk(&sub, out)?;
    }
    Ok(())
}

/// Where `file`'s sidecar is kept: beside a local file with `beside`, else under `out/sidecars`.
pub fn sidecar_path(file: &Path, options: &CatalogueOptions) -> Result<PathBuf> {
    if options.beside && !is_url(file)? {
        return output_path(file, None);
    }
    let mirrored = mirror_path(file, &options.out.join("sidecars"))?;
    Ok(PathBuf::from(naming::sidecar_name(
        &mirrored.to_string_lossy(),
    )))
}

/// Where `file`'s snapshot by `codec` is written: `out/snapshots/<codec>/<mirror path>.bls`.
pub fn snapshot_path(file: &Path, codec: &str, options: &CatalogueOptions) -> Result<PathBuf> {
    let dir = options.out.join("snapshots").join(codec);
    let mirrored = mirror_path(file, &dir)?;
    Ok(PathBuf::from(format!(
        "{}.{}",
        mirrored.display(),
        naming::SNAPSHOT_EXTENSION
    )))
}

/// One file of a catalogue run ([`list`]'s): its record, whatever happened.
pub fn run_file(
    item: &CatalogueFile,
    options: &CatalogueOptions,
    progress: &dyn Progress,
) -> FileRecord {
    let started = Instant::now();
    let mut record = FileRecord {
        checkpoint: item.checkpoint.clone(),
        file: item.file.clone(),
        status: FileStatus::Failed,
        error: None,
        error_kind: None,
        fingerprint: None,
        sidecar: None,
        report: None,
        snapshot: None,
        seconds: 0.0,
    };
    if let Err(e) = fill(item, options, progress, &mut record) {
        record.status = FileStatus::Failed;
        record.error = Some(e.message());
        record.error_kind = Some(e.kind().name().to_owned());
    }
    record.seconds = started.elapsed().as_secs_f64();
    record
}

/// [`run_file`]'s steps; the record holds what was done when one fails.
fn fill(
    item: &CatalogueFile,
    options: &CatalogueOptions,
    progress: &dyn Progress,
    record: &mut FileRecord,
) -> Result<()> {
    let file = Path::new(&item.file);
    let sidecar_at = sidecar_path(file, options)?;
    let snapshot_at = match &options.compress {
        Some(codec) => Some((codec.as_str(), snapshot_path(file, codec, options)?)),
        None => None,
    };
    let print = fingerprint(file)?;
    record.fingerprint = Some(print.clone());
    if let Some(kept) = current(&sidecar_at, &print)? {
        record.sidecar = Some(sidecar_at.display().to_string());
        record.report = Some(kept.report);
        record.status = FileStatus::Reused;
        if let Some((codec, path)) = snapshot_at {
            record.snapshot = Some(match kept_snapshot(codec, &path, print.file_size)? {
                Some(kept) => kept,
                None => compress(file, codec, &path, progress)?,
            });
        }
        return Ok(());
    }
    // The file is new or changed: its earlier snapshots are stale.
    remove_snapshots(file, options)?;
    let sidecar = measure(file, print, progress)?;
    record.report = Some(sidecar.report.clone());
    record.status = FileStatus::Measured;
    if let Some((codec, path)) = snapshot_at {
        record.snapshot = Some(compress(file, codec, &path, progress)?);
    }
    // Last: a sidecar that matches says everything before it was done.
    save(&sidecar_at, &sidecar)?;
    record.sidecar = Some(sidecar_at.display().to_string());
    Ok(())
}

/// The snapshot an earlier run wrote at `path`, when there is one.
fn kept_snapshot(codec: &str, path: &Path, input_bytes: u64) -> Result<Option<SnapshotRecord>> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(snapshot_record(
            codec,
            path,
            input_bytes,
            m.len(),
            None,
        ))),
        Ok(_) => bail!("{}: not a file", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("{}: cannot open", path.display())),
    }
}

/// Compresses `file` with `codec` into `path` (directories made).
fn compress(
    file: &Path,
    codec: &str,
    path: &Path,
    progress: &dyn Progress,
) -> Result<SnapshotRecord> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("{}: cannot create", parent.display()))?;
    }
    let args = CompressArgs {
        codec: codec.parse::<CompressCodec>()?,
        ..CompressArgs::new(file, path)
    };
    if !matches!(args.codec, CompressCodec::Container(_)) {
        bail!("--compress {codec}: a catalogue compresses each file on its own (no Inshrinkerator search)");
    }
    let started = Instant::now();
    let Outcome::Snapshot(compressed) = execute(&args, progress)? else {
        bail!("--compress {codec}: not a snapshot");
    };
    let seconds = started.elapsed().as_secs_f64();
    Ok(snapshot_record(
        codec,
        path,
        compressed.totals.input,
        compressed.totals.output,
        Some(seconds),
    ))
}

fn snapshot_record(
    codec: &str,
    path: &Path,
    input_bytes: u64,
    output_bytes: u64,
    seconds: Option<f64>,
) -> SnapshotRecord {
    SnapshotRecord {
        codec: codec.to_owned(),
        path: path.display().to_string(),
        input_bytes,
        output_bytes,
        ratio: output_bytes as f64 / input_bytes.max(1) as f64,
        seconds,
    }
}

/// Removes `file`'s snapshots of every codec under `out/snapshots`.
fn remove_snapshots(file: &Path, options: &CatalogueOptions) -> Result<()> {
    let root = options.out.join("snapshots");
    let Ok(codecs) = std::fs::read_dir(&root) else {
        return Ok(());
    };
    for codec in codecs.flatten() {
        let codec = codec.file_name().to_string_lossy().into_owned();
        let path = snapshot_path(file, &codec, options)?;
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            removed => removed.with_context(|| format!("{}: cannot remove", path.display()))?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;
    use crate::sidecar::verify;
    use bitlens_report::inspect::FileReport;

    fn names(files: &[CatalogueFile], root: &Path) -> Vec<(String, String)> {
        let short = |s: &str| {
            s.strip_prefix(&*root.to_string_lossy())
                .unwrap_or(s)
                .to_owned()
        };
        files
            .iter()
            .map(|f| (short(&f.checkpoint), short(&f.file)))
            .collect()
    }

    #[test]
    fn a_walk_groups_shards_by_index_and_arrays_by_directory_and_skips_the_rest() {
        let root = std::env::temp_dir().join(format!("bitlens-catalogue-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for dir in ["a/shards", "a/arrays", "b"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        let index = r#"{"weight_map": {"x": "m-1.safetensors", "y": "m-2.safetensors"}}"#;
        for (file, bytes) in [
            ("a/shards/m.safetensors.index.json", index),
            ("a/shards/m-1.safetensors", ""),
            ("a/shards/m-2.safetensors", ""),
            ("a/shards/extra.safetensors", ""),
            ("a/arrays/w.npy", ""),
            ("a/arrays/b.npy", ""),
            ("a/model.gguf", ""),
            ("a/model.gguf.bitlens.json", "{}"),
            ("a/model.bls", ""),
            ("a/README.md", ""),
            ("b/list.txt", "# two sources\n\nhttps://h/m.safetensors\n"),
        ] {
            std::fs::write(root.join(file), bytes).unwrap();
        }
        let listed = list(&[
            root.join("a"),
            root.join("b/list.txt"),
            root.join("a/model.gguf"),
        ])
        .unwrap();
        let index = "/a/shards/m.safetensors.index.json";
        let own = |f: &str| (f.to_owned(), f.to_owned());
        assert_eq!(
            names(&listed, &root),
            vec![
                own("/a/model.gguf"),
                ("/a/arrays".into(), "/a/arrays/b.npy".into()),
                ("/a/arrays".into(), "/a/arrays/w.npy".into()),
                (index.into(), "/a/shards/m-1.safetensors".into()),
                (index.into(), "/a/shards/m-2.safetensors".into()),
                own("/a/shards/extra.safetensors"),
                own("https://h/m.safetensors"),
            ]
        );
        std::fs::write(
            root.join("a/shards/m.safetensors.index.json"),
            r#"{"weight_map": {"x": "gone.safetensors"}}"#,
        )
        .unwrap();
        let e = list(&[root.join("a")]).unwrap_err().message();
        assert!(e.contains("shard `gone.safetensors` not found"), "{e}");
        assert!(list(&[root.join("nothing")]).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_sidecar_is_written_kept_when_current_and_found_beside_its_file() {
        let dir = std::env::temp_dir().join(format!("bitlens-sidecar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.safetensors");
        let bytes = bitlens_test_support::safetensors::Builder::new()
            .tensor(
                "w",
                "BF16",
                &[2, 3],
                &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
            )
            .build();
        std::fs::write(&file, &bytes).unwrap();
        let out = output_path(&file, None).unwrap();
        let Written::Wrote(sidecar) = write(&file, &out, true, &Silent).unwrap() else {
            panic!("nothing written")
        };
        assert_eq!(sidecar.file, "m.safetensors");
        assert_eq!(
            write(&file, &out, true, &Silent).unwrap(),
            Written::Current(sidecar.clone())
        );
        assert!(matches!(
            write(&file, &out, false, &Silent).unwrap(),
            Written::Wrote(_)
        ));

        let found = find_for(&file.to_string_lossy(), None).unwrap().unwrap();
        assert_eq!(found.location, out.to_string_lossy());
        assert_eq!(found.sidecar.as_ref().unwrap(), &*sidecar);
        let header = bitlens_tensors::read_header(&bytes).unwrap();
        let expected = FileReport::new("x".into(), &header, |_| None);
        let stats = verify(&found, &bytes, &expected).unwrap();
        assert_eq!(stats.len(), 1);
        assert_eq!(stats[0].bytes, 12);

        // The file changes: the sidecar is ignored, saying why; a rerun writes it again.
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 2]);
        let note = verify(&found, &longer, &expected).unwrap_err();
        assert!(note.contains("ignored: it describes a file of"), "{note}");
        std::fs::write(&file, &longer).unwrap();
        assert!(
            write(&file, &out, true, &Silent).is_err(),
            "a trailing byte makes it invalid"
        );
        assert!(find_for(&dir.join("none").to_string_lossy(), None)
            .unwrap()
            .is_none());
        assert!(write(&dir, &out, true, &Silent).is_err(), "a directory");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn outputs_mirror_their_files_under_the_run_directory() {
        let options = CatalogueOptions {
            out: PathBuf::from("/out"),
            beside: false,
            compress: None,
        };
        let at = |f: &str| sidecar_path(Path::new(f), &options).unwrap();
        assert_eq!(
            at("/data/m/model.safetensors"),
            Path::new("/out/sidecars/data/m/model.safetensors.bitlens.json")
        );
        assert_eq!(
            at("https://hub:8080/o/m/model.gguf?x=1"),
            Path::new("/out/sidecars/hub_8080/o/m/model.gguf.bitlens.json")
        );
        assert_eq!(
            snapshot_path(Path::new("/data/../m.pt"), "lmc", &options).unwrap(),
            Path::new("/out/snapshots/lmc/m.pt.bls")
        );
        let beside = CatalogueOptions {
            beside: true,
            ..options
        };
        assert_eq!(
            sidecar_path(Path::new("/data/m.gguf"), &beside).unwrap(),
            Path::new("/data/m.gguf.bitlens.json")
        );
        assert_eq!(
            sidecar_path(Path::new("https://h/m.gguf"), &beside).unwrap(),
            Path::new("/out/sidecars/h/m.gguf.bitlens.json")
        );
    }
}
