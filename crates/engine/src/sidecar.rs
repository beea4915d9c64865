//! Sidecars on this machine (`<file>.bitlens.json`, `bitlens_report::sidecar`): a checkpoint
//! file's statistics (LMC §3, the §4.1 block-entropy bound) computed once, so `inspect URL`, the
//! page and the embed show them with no tensor byte read.
//!
//! - [`write`]: inspect one file (local or URL) and fingerprint its header; with `resume`, a
//!   sidecar already there that matches the file is kept (a catalogue run restarts where it
//!   stopped). [`output_path`] says where a file's sidecar goes.
//! - [`find_for`]: the sidecar of a file (one named, or `<file>.bitlens.json` next to it; a URL
//!   with one `GET` of at most [`MAX_BYTES`]), parsed; none when there is none (no such file, HTTP
//!   404).
//! - [`verify`]: a found sidecar against the file read — same size and header
//!   (`Sidecar::check`) and the same tensors — giving each tensor's statistics, or the note that
//!   says why it is ignored.

use crate::bail;
use crate::error::{Context, Result};
use crate::http::{get_document, Document};
use crate::inspect::inspect_checkpoints;
use crate::output::write_output;
use crate::progress::Progress;
use crate::source::{is_url, Source};
use bitlens_report::inspect::FileReport;
use bitlens_report::sidecar::{
    ignored_note, statistics, Fingerprint, Sidecar, SidecarError, MAX_BYTES,
};
use bitlens_stats::TensorStats;
use bitlens_tensors::{naming, ReadAt};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// What [`write`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Written {
    /// It wrote this sidecar.
    Wrote(Box<Sidecar>),
    /// The sidecar there matches the file already (size and header hash): it was kept (as read).
    Current(Box<Sidecar>),
}

/// A sidecar found for a file, not yet checked against it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Where it is (a path or URL).
    pub location: String,
    /// What it holds: the sidecar, or why it is not one bitlens reads.
    pub sidecar: Result<Sidecar, SidecarError>,
}

/// Where the sidecar of `input` is written: `<input>.bitlens.json` beside a local file; under
/// `dir`, `dir/<file name>.bitlens.json` for a local file and `dir/<host>/<path>.bitlens.json`
/// for a URL (its host and path kept, so the sidecars of a catalogue's files of the same name do
/// not collide, and `dir` can be served as the files are). A URL needs `dir`.
pub fn output_path(input: &Path, dir: Option<&Path>) -> Result<PathBuf> {
    let name = input.to_string_lossy();
    if is_url(input)? {
        let Some(dir) = dir else {
            bail!("{name}: the sidecar of a URL is written under a directory (--dir DIR)");
        };
        let out = mirror_path(input, dir)?;
        return Ok(PathBuf::from(naming::sidecar_name(&out.to_string_lossy())));
    }
    Ok(match dir {
        Some(dir) => dir.join(naming::sidecar_name(naming::file_name(&name))),
        None => PathBuf::from(naming::sidecar_name(&name)),
    })
}

/// Where a file computed from `input` goes under `dir` when inputs of the same name must not
/// collide: `dir/<host>/<path>` for a URL (its query and fragment dropped, `:` in the host
/// written `_`), `dir/<absolute path>` for a local file. Refused: a URL whose path has `..` or
/// `.` components, which would name a file outside `dir`.
pub fn mirror_path(input: &Path, dir: &Path) -> Result<PathBuf> {
    let name = input.to_string_lossy();
    let mut out = dir.to_path_buf();
    if is_url(input)? {
        let rest = name.split_once("://").map_or(&*name, |(_, r)| r);
        let rest = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
        for part in rest.split('/').filter(|p| !p.is_empty()) {
            let part = part.replace(':', "_");
            if matches!(
                Path::new(&part).components().next(),
                Some(Component::Normal(_))
            ) {
                out.push(part);
            } else {
                bail!(
                    "{name}: a path component `{part}` cannot name a file under {}",
                    dir.display()
                );
            }
        }
        return Ok(out);
    }
    let absolute = std::path::absolute(input)
        .with_context(|| format!("{name}: cannot make the path absolute"))?;
    for part in absolute.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    Ok(out)
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

/// Finds the sidecar of `input` (a path or URL): `given`, else `<input>.bitlens.json` next to it
/// ([`naming::sidecar_name`]). `None` when there is none: no such local file, or HTTP 404. A URL
/// is read with one `GET`; a sidecar over [`MAX_BYTES`] is refused unread. Errors: it could not
/// be read (the server's answer, the network, the file system).
pub fn find_for(input: &str, given: Option<&str>) -> Result<Option<Found>> {
    let location = given.map_or_else(|| naming::sidecar_name(input), str::to_owned);
    let bytes = if bitlens_remote::is_url(&location)? {
        match get_document(&location, MAX_BYTES)? {
            Document::Missing => return Ok(None),
            Document::TooLarge { len } => Err(SidecarError::TooLarge {
                len,
                max: MAX_BYTES,
            }),
            Document::Body(bytes) => Ok(bytes),
        }
    } else {
        match std::fs::metadata(&location) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("{location}: cannot open")),
            Ok(m) if m.len() > MAX_BYTES => Err(SidecarError::TooLarge {
                len: m.len(),
                max: MAX_BYTES,
            }),
            Ok(_) => {
                Ok(std::fs::read(&location).with_context(|| format!("{location}: cannot read"))?)
            }
        }
    };
    let sidecar = bytes.and_then(|b| Sidecar::parse(&b));
    Ok(Some(Found { location, sidecar }))
}

/// Checks `found` against the file read — `src`, whose report without statistics (from its own
/// header) is `expected` — and gives every tensor's statistics when the sidecar matches and has
/// them all (`bitlens_report::sidecar::statistics`); else the note that says why it is ignored
/// ([`ignored_note`]).
pub fn verify(
    found: &Found,
    src: &dyn ReadAt,
    expected: &FileReport,
) -> Result<Vec<TensorStats>, String> {
    let file = Fingerprint::read(src).map_err(|e| e.to_string());
    statistics(
        &found.sidecar,
        file.as_ref().map_err(Clone::clone),
        expected,
    )
    .map_err(|why| ignored_note(&found.location, &why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    #[test]
    fn sidecars_go_beside_files_or_under_a_directory_by_host_and_path() {
        let p = |input: &str, dir: Option<&str>| {
            output_path(Path::new(input), dir.map(Path::new)).map(|p| p.display().to_string())
        };
        assert_eq!(
            p("run/m.safetensors", None).unwrap(),
            "run/m.safetensors.bitlens.json"
        );
        assert_eq!(
            p("run/m.gguf", Some("out")).unwrap(),
            "out/m.gguf.bitlens.json"
        );
        assert_eq!(
            p(
                "https://hub.example:8080/org/m/resolve/main/model.safetensors?download=1",
                Some("out")
            )
            .unwrap(),
            "out/hub.example_8080/org/m/resolve/main/model.safetensors.bitlens.json"
        );
        assert!(p("https://h/m.safetensors", None).is_err());
        assert!(p("https://h/a/../m.safetensors", Some("out")).is_err());
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
}
