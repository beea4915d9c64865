//! Sidecars on this machine (`<file>.bitlens.json`, `bitlens_report::sidecar`): a checkpoint
//! file's statistics (LMC §3, the §4.1 block-entropy bound) computed once, so `inspect URL`, the
//! page and the embed show them with no tensor byte read.
//!
//! - [`output_path`] says where a file's sidecar goes, [`mirror_path`] where a file's outputs go
//!   under a directory without colliding; `crate::catalogue` writes sidecars.
//! - [`find_for`]: the sidecar of a file (one named, or `<file>.bitlens.json` next to it; a URL
//!   with one `GET` of at most [`MAX_BYTES`]), parsed; none when there is none (no such file, HTTP
//!   404).
//! - [`verify`]: a found sidecar against the file read — same size and header
//!   (`Sidecar::check`) and the same tensors — giving each tensor's statistics, or the note that
//!   says why it is ignored.

use crate::bail;
use crate::error::{Context, Result};
use crate::http::{get_document, Document};
use crate::source::is_url;
use bitlens_report::inspect::FileReport;
use bitlens_report::sidecar::{
    ignored_note, statistics, Fingerprint, Sidecar, SidecarError, MAX_BYTES,
};
use bitlens_stats::TensorStats;
use bitlens_tensors::{naming, ReadAt};
use std::path::{Component, Path, PathBuf};

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
}
