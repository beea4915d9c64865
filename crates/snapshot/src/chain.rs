//! Checkpoint chains: the manifest of a directory of snapshots, one per file per training step,
//! where each step's file is either a key (stored in full) or a delta against the same file of an
//! earlier step (the container's XOR base mechanism) — the incremental snapshots of the LMC paper
//! (§3.1, Fig. 12: deltas between consecutive checkpoints) and BitSnap (§4: a base checkpoint,
//! then deltas; its tracker file and per-checkpoint type indicator are this manifest).
//!
//! The manifest (`chain.json`, specified in docs/FORMAT.md, "Checkpoint chains") lists the steps in
//! order and, per file, its kind, its base, its sizes and a fingerprint of the original file that is
//! computed from a snapshot's index alone ([`fingerprint`]). [`Manifest::parse`] validates the
//! document; [`check_snapshot`] and [`check_link`] check opened snapshots against it, so a missing,
//! replaced or reordered predecessor is a [`ChainError`] naming the step and file, found before
//! anything is decoded.

use crate::reader::{BaseSource, SnapshotReader, Source};
use serde::{Deserialize, Serialize};

/// File name of the manifest inside a chain directory.
pub const MANIFEST_NAME: &str = "chain.json";
/// The manifest's `format` value.
pub const FORMAT_NAME: &str = "bitlens-chain";
/// The manifest version this build writes and reads.
pub const VERSION: u32 = 1;
/// Extension of the snapshot files of a chain.
pub const SNAPSHOT_EXT: &str = "bls";
/// Largest manifest accepted (a manifest of a million files is far below it).
pub const MAX_MANIFEST_BYTES: usize = 256 << 20;

/// Why a chain's manifest or one of its snapshots is not usable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChainError {
    /// The manifest is not valid JSON of the manifest's shape.
    #[error("chain manifest: {message}")]
    Parse {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What serde_json reported (with the line and column).
        message: String,
    },
    /// The manifest is larger than [`MAX_MANIFEST_BYTES`].
    #[error("chain manifest: {size} bytes, more than the {max} a manifest may have")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The `format` field is not [`FORMAT_NAME`].
    #[error("chain manifest: format `{found}`, expected `{FORMAT_NAME}`")]
    NotAChain {
        /// What the field holds.
        found: String,
    },
    /// The manifest's version is not one this build reads.
    #[error(
        "chain manifest version {found} is not supported (this build reads version {VERSION})"
    )]
    UnsupportedVersion {
        /// The version in the manifest.
        found: u32,
    },
    /// The manifest lists no steps.
    #[error("chain manifest lists no steps")]
    NoSteps,
    /// A step or file name is not a plain file name.
    #[error("chain manifest: {what} name `{name}` is not a plain file name (empty, `.`, `..`, or holds `/`, `\\` or NUL)")]
    BadName {
        /// `step` or `file`.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// Two steps have the same name.
    #[error("chain manifest: step `{step}` is listed twice")]
    DuplicateStep {
        /// The name.
        step: String,
    },
    /// A step has no files.
    #[error("chain manifest: step `{step}` has no files")]
    EmptyStep {
        /// The step.
        step: String,
    },
    /// Two files of a step have the same name.
    #[error("chain manifest: step `{step}` lists file `{file}` twice")]
    DuplicateFile {
        /// The step.
        step: String,
        /// The file.
        file: String,
    },
    /// A key has a base, or a delta has none.
    #[error("chain manifest: step `{step}`, file `{file}`: a {kind} {problem}")]
    KindMismatch {
        /// The step.
        step: String,
        /// The file.
        file: String,
        /// Its kind.
        kind: FileKind,
        /// `has a base` or `has no base`.
        problem: &'static str,
    },
    /// A delta's base step is not in the chain.
    #[error("step `{step}`, file `{file}`: its base step `{base_step}` is not in the chain (missing step)")]
    UnknownBase {
        /// The step.
        step: String,
        /// The file.
        file: String,
        /// The base step named.
        base_step: String,
    },
    /// A delta's base step comes at or after it: the steps are out of order.
    #[error("step `{step}`, file `{file}`: its base step `{base_step}` is listed at position {base_position}, not before the step's position {position} (steps reordered)")]
    BaseNotEarlier {
        /// The step.
        step: String,
        /// The file.
        file: String,
        /// Its position in the manifest.
        position: usize,
        /// The base step.
        base_step: String,
        /// The base step's position.
        base_position: usize,
    },
    /// A delta's base step does not hold the base file.
    #[error("step `{step}`, file `{file}`: its base step `{base_step}` has no file `{base_file}`")]
    BaseFileMissing {
        /// The step.
        step: String,
        /// The file.
        file: String,
        /// The base step.
        base_step: String,
        /// The base file named.
        base_file: String,
    },
    /// A fingerprint is not 16 hex digits.
    #[error(
        "chain manifest: step `{step}`, file `{file}`: fingerprint `{found}` is not 16 hex digits"
    )]
    BadFingerprint {
        /// The step.
        step: String,
        /// The file.
        file: String,
        /// What the field holds.
        found: String,
    },
    /// No step of this name or index.
    #[error("no step `{wanted}` in the chain (it has {count} steps: {first} .. {last})")]
    NoStep {
        /// The name or index asked for.
        wanted: String,
        /// Steps in the chain.
        count: usize,
        /// Its first step.
        first: String,
        /// Its last step.
        last: String,
    },
    /// A snapshot does not hold what the manifest records for it (replaced, or another step's).
    #[error("step `{step}`, file `{file}`: the snapshot's {what} is {found}, the manifest records {expected}")]
    SnapshotMismatch {
        /// The step.
        step: String,
        /// The file.
        file: String,
        /// Which property differs.
        what: &'static str,
        /// What the manifest records.
        expected: String,
        /// What the snapshot has.
        found: String,
    },
    /// A delta was not made against the snapshot the manifest names as its base.
    #[error("step `{step}`, file `{file}`: not a delta against step `{base_step}`, file `{base_file}`: {reason}")]
    WrongBase {
        /// The step.
        step: String,
        /// The file.
        file: String,
        /// The base step named.
        base_step: String,
        /// The base file named.
        base_file: String,
        /// What differs.
        reason: String,
    },
}

pub use bitlens_report::chain::{BaseLink, FileKind};

/// One file of a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileEntry {
    /// The original file's name (its snapshot is `<step>/<name>.bls`).
    pub name: String,
    /// Key or delta.
    pub kind: FileKind,
    /// For a delta, the file it is a delta against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<BaseLink>,
    /// The codec family the file was compressed with (the user's choice; a key of a codec that
    /// needs a base is stored with LMC).
    pub codec: String,
    /// Size of the original file.
    pub original_size: u64,
    /// Size of the snapshot file.
    pub snapshot_size: u64,
    /// For a delta: the size of the file compressed in full with the same codec, when measured
    /// (the size the delta saves is `full_size - snapshot_size`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_size: Option<u64>,
    /// [`fingerprint`] of the original file, 16 hex digits.
    pub fingerprint: String,
}

impl FileEntry {
    /// The snapshot's path relative to the chain directory: `<step>/<file>.bls`.
    pub fn snapshot_path(&self, step: &str) -> String {
        format!("{step}/{}.{SNAPSHOT_EXT}", self.name)
    }

    /// The size the file takes stored in full: the snapshot's for a key, the measured
    /// [`FileEntry::full_size`] for a delta.
    pub fn full_size(&self) -> Option<u64> {
        match self.kind {
            FileKind::Key => Some(self.snapshot_size),
            FileKind::Delta => self.full_size,
        }
    }
}

/// One training step: its files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The step's name (the checkpoint's folder name, or its file name without extension).
    pub name: String,
    /// Its files, in the order they were given.
    pub files: Vec<FileEntry>,
}

impl Step {
    /// The file of this name.
    pub fn file(&self, name: &str) -> Option<&FileEntry> {
        self.files.iter().find(|f| f.name == name)
    }
}

/// The manifest of a checkpoint chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// The codec the user chose.
    pub codec: String,
    /// Every how many steps a key is stored (`--key N`); `None`: only the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_every: Option<u64>,
    /// The steps in training order.
    pub steps: Vec<Step>,
}

/// One snapshot on the way to a step's file: the step's position and the file's entry.
pub type Link<'a> = (usize, &'a FileEntry);

impl Manifest {
    /// An empty manifest for the given codec and key interval.
    pub fn new(codec: &str, key_every: Option<u64>) -> Self {
        Manifest {
            format: FORMAT_NAME.to_owned(),
            version: VERSION,
            codec: codec.to_owned(),
            key_every,
            steps: Vec::new(),
        }
    }

    /// Parses and [validates](Manifest::validate) a manifest.
    pub fn parse(bytes: &[u8]) -> Result<Self, ChainError> {
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(ChainError::TooLarge {
                size: bytes.len(),
                max: MAX_MANIFEST_BYTES,
            });
        }
        let m: Manifest = serde_json::from_slice(bytes).map_err(|e| ChainError::Parse {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        m.validate()?;
        Ok(m)
    }

    /// The manifest as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // A manifest holds strings, numbers and options only: serialization cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks the rules a manifest obeys: format and version, at least one step, plain unique
    /// names, keys without and deltas with a base, each base a file of an earlier step, and
    /// well-formed fingerprints.
    pub fn validate(&self) -> Result<(), ChainError> {
        if self.format != FORMAT_NAME {
            return Err(ChainError::NotAChain {
                found: self.format.clone(),
            });
        }
        if self.version != VERSION {
            return Err(ChainError::UnsupportedVersion {
                found: self.version,
            });
        }
        if self.steps.is_empty() {
            return Err(ChainError::NoSteps);
        }
        let mut names = std::collections::HashMap::new();
        for (i, step) in self.steps.iter().enumerate() {
            check_name("step", &step.name)?;
            if names.insert(step.name.as_str(), i).is_some() {
                return Err(ChainError::DuplicateStep {
                    step: step.name.clone(),
                });
            }
            if step.files.is_empty() {
                return Err(ChainError::EmptyStep {
                    step: step.name.clone(),
                });
            }
            let mut files = std::collections::HashSet::new();
            for f in &step.files {
                check_name("file", &f.name)?;
                if !files.insert(f.name.as_str()) {
                    return Err(ChainError::DuplicateFile {
                        step: step.name.clone(),
                        file: f.name.clone(),
                    });
                }
                if parse_fingerprint(&f.fingerprint).is_none() {
                    return Err(ChainError::BadFingerprint {
                        step: step.name.clone(),
                        file: f.name.clone(),
                        found: f.fingerprint.clone(),
                    });
                }
                self.check_base(i, step, f, &names)?;
            }
        }
        Ok(())
    }

    /// The base rules for file `f` of step `i` (`names`: the positions of the steps so far and,
    /// for an out-of-order base, found by a search of the rest).
    fn check_base(
        &self,
        i: usize,
        step: &Step,
        f: &FileEntry,
        names: &std::collections::HashMap<&str, usize>,
    ) -> Result<(), ChainError> {
        let kind_error = |problem| ChainError::KindMismatch {
            step: step.name.clone(),
            file: f.name.clone(),
            kind: f.kind,
            problem,
        };
        let base = match (f.kind, &f.base) {
            (FileKind::Key, None) => return Ok(()),
            (FileKind::Key, Some(_)) => return Err(kind_error("has a base")),
            (FileKind::Delta, None) => return Err(kind_error("has no base")),
            (FileKind::Delta, Some(b)) => b,
        };
        let position = match names.get(base.step.as_str()) {
            Some(&p) if p < i => p,
            found => {
                let later = found
                    .copied()
                    .or_else(|| self.steps.iter().position(|s| s.name == base.step));
                return Err(match later {
                    Some(base_position) => ChainError::BaseNotEarlier {
                        step: step.name.clone(),
                        file: f.name.clone(),
                        position: i,
                        base_step: base.step.clone(),
                        base_position,
                    },
                    None => ChainError::UnknownBase {
                        step: step.name.clone(),
                        file: f.name.clone(),
                        base_step: base.step.clone(),
                    },
                });
            }
        };
        if self.steps[position].file(&base.file).is_none() {
            return Err(ChainError::BaseFileMissing {
                step: step.name.clone(),
                file: f.name.clone(),
                base_step: base.step.clone(),
                base_file: base.file.clone(),
            });
        }
        Ok(())
    }

    /// The position of a step given by name, or by its 0-based index in the chain when no step
    /// has that name.
    pub fn find_step(&self, wanted: &str) -> Result<usize, ChainError> {
        self.steps
            .iter()
            .position(|s| s.name == wanted)
            .or_else(|| {
                wanted
                    .parse::<usize>()
                    .ok()
                    .filter(|&i| i < self.steps.len())
            })
            .ok_or_else(|| ChainError::NoStep {
                wanted: wanted.to_owned(),
                count: self.steps.len(),
                first: self
                    .steps
                    .first()
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
                last: self
                    .steps
                    .last()
                    .map(|s| s.name.clone())
                    .unwrap_or_default(),
            })
    }

    /// The snapshots that restore file `file` of step `step`, from its key to itself (a validated
    /// manifest: every base is a file of an earlier step, so the walk ends at a key).
    pub fn links(&self, step: usize, file: &str) -> Vec<Link<'_>> {
        let mut out = Vec::new();
        let mut at = self
            .steps
            .get(step)
            .and_then(|s| s.file(file).map(|f| (step, f)));
        while let Some((i, f)) = at {
            out.push((i, f));
            at = f.base.as_ref().and_then(|b| {
                let j = self.steps[..i].iter().position(|s| s.name == b.step)?;
                self.steps[j].file(&b.file).map(|f| (j, f))
            });
        }
        out.reverse();
        out
    }
}

/// A step or file name must be one plain path component.
fn check_name(what: &'static str, name: &str) -> Result<(), ChainError> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(ChainError::BadName {
            what,
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The value of a fingerprint string (16 hex digits).
pub fn parse_fingerprint(s: &str) -> Option<u64> {
    (s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(s, 16).ok())
        .flatten()
}

/// A fingerprint as the manifest writes it.
pub fn format_fingerprint(v: u64) -> String {
    format!("{v:016x}")
}

/// The fingerprint of a snapshot's original file, from its index alone: xxh3-64 of its stored
/// prefix (the safetensors header, or a version 3 file's description), its size, and each entry's
/// name and checksum of its original bytes. Two snapshots of the same file have the same
/// fingerprint whatever their codecs and bases; the decoder verifies the checksums it covers.
pub fn fingerprint<R: Source>(reader: &SnapshotReader<R>) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(reader.prefix.len() as u64).to_le_bytes());
    h.update(&reader.prefix);
    h.update(&reader.original_size().to_le_bytes());
    for e in &reader.entries {
        h.update(&(e.name.len() as u64).to_le_bytes());
        h.update(e.name.as_bytes());
        h.update(&e.checksum.to_le_bytes());
    }
    h.digest()
}

/// Checks an opened snapshot of `size` bytes against its manifest entry: size, fingerprint, and
/// whether it is a delta.
pub fn check_snapshot<R: Source>(
    step: &str,
    entry: &FileEntry,
    reader: &SnapshotReader<R>,
    size: u64,
) -> Result<(), ChainError> {
    let mismatch = |what, expected: String, found: String| ChainError::SnapshotMismatch {
        step: step.to_owned(),
        file: entry.name.clone(),
        what,
        expected,
        found,
    };
    if size != entry.snapshot_size {
        return Err(mismatch(
            "size",
            format!("{} bytes", entry.snapshot_size),
            format!("{size} bytes"),
        ));
    }
    let found = format_fingerprint(fingerprint(reader));
    if !found.eq_ignore_ascii_case(&entry.fingerprint) {
        return Err(mismatch(
            "fingerprint (of the original file)",
            entry.fingerprint.clone(),
            found,
        ));
    }
    let is_delta = reader.base.is_some();
    if is_delta != (entry.kind == FileKind::Delta) {
        let kind = |d: bool| if d { "a delta" } else { "a key" }.to_owned();
        return Err(mismatch("kind", kind(!is_delta), kind(is_delta)));
    }
    Ok(())
}

/// Checks that the delta snapshot `delta` (file `entry` of step `step`) was made against the
/// original of the snapshot `base`: the base header it records is the base's, and every base
/// tensor checksum it records is the checksum of the base's tensor of that name.
pub fn check_link<R: Source, S: Source>(
    step: &str,
    entry: &FileEntry,
    delta: &SnapshotReader<R>,
    base: &SnapshotReader<S>,
) -> Result<(), ChainError> {
    let Some(link) = &entry.base else {
        return Ok(());
    };
    let wrong = |reason: String| ChainError::WrongBase {
        step: step.to_owned(),
        file: entry.name.clone(),
        base_step: link.step.clone(),
        base_file: link.file.clone(),
        reason,
    };
    let empty: &[u8] = &[];
    let theirs = BaseSource {
        src: &empty,
        header: &base.header,
    }
    .reference();
    match delta.base {
        None => return Err(wrong("the snapshot is not a delta".to_owned())),
        Some(want) if want != theirs => {
            return Err(wrong(format!(
                "it was made against a {}-byte file with header hash {:016x}, the base is {} bytes with header hash {:016x}",
                want.file_size, want.header_hash, theirs.file_size, theirs.header_hash
            )))
        }
        Some(_) => {}
    }
    for e in delta.entries.iter().filter(|e| e.delta) {
        match base.entries.iter().find(|b| b.name == e.name) {
            None => return Err(wrong(format!("the base has no tensor `{}`", e.name))),
            Some(b) if b.checksum != e.base_checksum => {
                return Err(wrong(format!(
                "tensor `{}` was XORed with a tensor of checksum {:016x}, the base's has {:016x}",
                e.name, e.base_checksum, b.checksum
            )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}
