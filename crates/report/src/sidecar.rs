//! Sidecars: a checkpoint file's statistics computed once (`<file>.bitlens.json`, written by
//! `bitlens sidecar` and catalogue runs), so the page, the `<bitlens-view>` embed and `bitlens
//! inspect URL` show whole-model statistics (LMC §3's bit and byte-group analysis, the §4.1
//! block-entropy bound) at once, with no tensor byte read.
//!
//! A [`Sidecar`] is the `inspect --json` document of that one file plus the file's
//! [`Fingerprint`]: its size and a SHA-256 of its header bytes (the bytes every reader of its
//! format reads anyway before any tensor byte: `bitlens_tensors::format::header_region`). A reader
//! trusts a sidecar only when both match the file it reads ([`Sidecar::check`]): a file replaced
//! or rewritten has another size or header, and its sidecar is ignored with a note
//! ([`ignored_note`]). The hash covers the header, not the tensor data: a file whose tensor bytes
//! alone were rewritten in place (same size, same header) is not told apart — for zip-based
//! formats the header is the central directory, whose CRC-32s cover every member's bytes.
//!
//! ```
//! use bitlens_report::sidecar::{Fingerprint, Sidecar};
//! use bitlens_report::inspect::{FileReport, InspectReport};
//!
//! // A safetensors file of one F32 tensor.
//! let json = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
//! let mut file = (json.len() as u64).to_le_bytes().to_vec();
//! file.extend_from_slice(json);
//! file.extend_from_slice(&1.5f32.to_le_bytes());
//! file.extend_from_slice(&(-2.0f32).to_le_bytes());
//!
//! let header = bitlens_tensors::read_header(&file).unwrap();
//! let report = InspectReport::new(vec![FileReport::new("m.safetensors".into(), &header, |_| None)]);
//! let fingerprint = Fingerprint::read(&file).unwrap();
//! assert_eq!(fingerprint.header_bytes, 8 + json.len() as u64);
//! let sidecar = Sidecar::new("m.safetensors", fingerprint, report);
//!
//! let text = serde_json::to_string(&sidecar).unwrap();
//! let read = Sidecar::parse(text.as_bytes()).unwrap();
//! assert_eq!(read, sidecar);
//! assert!(read.check(&Fingerprint::read(&file).unwrap()).is_ok());
//! file.push(0); // another file: one byte longer
//! assert!(read.check(&Fingerprint::read(&file).unwrap()).is_err());
//! ```

use crate::inspect::{FileReport, InspectReport};
use bitlens_stats::TensorStats;
use bitlens_tensors::format::{header_region, safetensors_region, FormatError, HeaderRegion};
use bitlens_tensors::source::{for_each_window, Retaining};
use bitlens_tensors::ReadAt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The `format` tag of every sidecar.
pub const FORMAT: &str = "bitlens-sidecar";

/// The version of the sidecar document this bitlens writes and reads.
pub const VERSION: u32 = 1;

/// The largest sidecar read (bytes): larger ones are refused before they are read. A sidecar of a
/// model with 2 000 tensors is a few MB.
pub const MAX_BYTES: u64 = 64 << 20;

/// Bytes of the header hashed at a time.
const HASH_WINDOW: usize = 8 << 20;

/// What identifies a file's version: its size and a hash of the bytes that describe its tensors.
/// A sidecar records its file's; a reader measures the file it reads the same way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The file's size in bytes.
    pub file_size: u64,
    /// Offset of the header bytes hashed (0 but for zip-based formats, whose central directory
    /// ends the file).
    pub header_offset: u64,
    /// How many header bytes are hashed (from `header_offset`).
    pub header_bytes: u64,
    /// SHA-256 of those bytes, 64 lowercase hex digits.
    pub header_sha256: String,
}

impl Fingerprint {
    /// The fingerprint of the checkpoint file `src`: its header region (by its format's rule)
    /// read and hashed. Read through a [`Retaining`] source, so the bytes the region's reader
    /// reads are not read twice.
    pub fn read(src: &dyn ReadAt) -> Result<Fingerprint, FormatError> {
        let src = Retaining::new(src);
        let region = header_region(&src)?;
        Self::hash(&src, region)
    }

    /// [`Fingerprint::read`] of a file known to be safetensors, by that format's rule alone
    /// (`safetensors_region`): the page, which reads only safetensors headers itself, compiles no
    /// other format's reader for it.
    pub fn read_safetensors(src: &dyn ReadAt) -> Result<Fingerprint, FormatError> {
        let mut first = [0u8; 8];
        let n = src.size().min(8) as usize;
        src.read_exact_at(0, &mut first[..n])?;
        Self::hash(src, safetensors_region(&first[..n], src.size())?)
    }

    /// The fingerprint of `src` whose header bytes are `region`.
    fn hash(src: &dyn ReadAt, region: HeaderRegion) -> Result<Fingerprint, FormatError> {
        let mut hash = Sha256::new();
        for_each_window::<_, _, FormatError>(src, region.offset, region.end(), HASH_WINDOW, |w| {
            hash.update(w);
            Ok(())
        })?;
        Ok(Fingerprint::of(src.size(), region, &hash.finalize()))
    }

    /// A fingerprint from its parts (the digest as bytes).
    fn of(file_size: u64, region: HeaderRegion, digest: &[u8]) -> Fingerprint {
        Fingerprint {
            file_size,
            header_offset: region.offset,
            header_bytes: region.len,
            header_sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
        }
    }
}

/// A sidecar: one checkpoint file's `inspect --json` document and the file's fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sidecar {
    /// Always [`FORMAT`] (`bitlens-sidecar`).
    pub format: String,
    /// The document's version ([`VERSION`]).
    pub version: u32,
    /// The file's name (its last path component), for people.
    pub file: String,
    /// The file's size and header hash.
    #[serde(flatten)]
    pub fingerprint: Fingerprint,
    /// `bitlens inspect --json` of the file: exactly one file, every tensor's statistics.
    pub report: InspectReport,
}

/// Why bytes are not a sidecar bitlens reads.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SidecarError {
    /// Larger than [`MAX_BYTES`].
    #[error("{len} bytes, over the limit of {max} for a sidecar")]
    TooLarge {
        /// Its size.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// Not JSON, or not a sidecar's JSON (the parser's message).
    #[error("not a bitlens sidecar: {message}")]
    Json {
        /// What the parser said.
        message: String,
    },
    /// Another document's JSON.
    #[error("not a bitlens sidecar (its format is {found:?}, not {FORMAT:?})")]
    NotASidecar {
        /// The `format` it has (empty when none).
        found: String,
    },
    /// A version this bitlens does not read.
    #[error("sidecar version {found}; this bitlens reads version {VERSION}")]
    Version {
        /// Its version.
        found: u32,
    },
    /// Its report does not describe exactly one file of its recorded size.
    #[error(
        "its report describes {files} file(s) of sizes {sizes:?}, not one of {file_size} bytes"
    )]
    NotOneFile {
        /// Files in its report.
        files: usize,
        /// Their sizes.
        sizes: Vec<u64>,
        /// The size it records.
        file_size: u64,
    },
    /// `header_sha256` is not 64 lowercase hex digits.
    #[error("its header_sha256 is not 64 lowercase hex digits")]
    BadHash,
    /// Its tensors are not the file's (names, shapes or offsets differ from the file's header).
    #[error("its tensors are not the file's: {what}")]
    OtherTensors {
        /// The first difference.
        what: String,
    },
}

/// Why a well-formed sidecar does not describe the file read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// The sizes differ.
    #[error("it describes a file of {sidecar} bytes, the file has {file}")]
    Size {
        /// The size the sidecar records.
        sidecar: u64,
        /// The file's.
        file: u64,
    },
    /// The header bytes differ (or cover another range).
    #[error(
        "its header hash differs from the file's (the file changed since the sidecar was made)"
    )]
    Header {
        /// What the sidecar records.
        sidecar: Fingerprint,
        /// The file's.
        file: Fingerprint,
    },
}

/// Why a reader ignores a sidecar (said in its [`ignored_note`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Ignored {
    /// It is not a sidecar bitlens reads.
    #[error(transparent)]
    Malformed(#[from] SidecarError),
    /// It describes another file.
    #[error(transparent)]
    Mismatch(#[from] Mismatch),
    /// It lacks some tensors' statistics.
    #[error("it has no statistics of {missing} of its {tensors} tensors")]
    Incomplete {
        /// Tensors without statistics.
        missing: usize,
        /// Its tensors.
        tensors: usize,
    },
    /// The file's own header bytes could not be hashed.
    #[error("the file's header could not be read: {0}")]
    File(String),
}

impl Sidecar {
    /// The sidecar of the file named `file` (a path or URL: its last component is kept) with this
    /// fingerprint and `inspect --json` document.
    pub fn new(file: &str, fingerprint: Fingerprint, report: InspectReport) -> Sidecar {
        Sidecar {
            format: FORMAT.into(),
            version: VERSION,
            file: bitlens_tensors::naming::file_name(file).to_owned(),
            fingerprint,
            report,
        }
    }

    /// Reads a sidecar's JSON, checking what can be checked without the file: its size, format
    /// tag and version, one file of its recorded size, a well-formed hash.
    pub fn parse(bytes: &[u8]) -> Result<Sidecar, SidecarError> {
        let len = bytes.len() as u64;
        if len > MAX_BYTES {
            return Err(SidecarError::TooLarge {
                len,
                max: MAX_BYTES,
            });
        }
        let json = |e: serde_json::Error| SidecarError::Json {
            message: e.to_string(),
        };
        // The tag first, so another JSON document is named as such rather than by its first
        // missing field.
        #[derive(Deserialize)]
        struct Tag {
            #[serde(default)]
            format: Option<serde_json::Value>,
            #[serde(default)]
            version: Option<u32>,
        }
        let tag: Tag = serde_json::from_slice(bytes).map_err(json)?;
        match tag.format {
            Some(serde_json::Value::String(f)) if f == FORMAT => {}
            other => {
                return Err(SidecarError::NotASidecar {
                    found: other.map_or_else(String::new, |v| match v {
                        serde_json::Value::String(s) => s,
                        v => v.to_string(),
                    }),
                })
            }
        }
        if let Some(found) = tag.version.filter(|&v| v != VERSION) {
            return Err(SidecarError::Version { found });
        }
        let sidecar: Sidecar = serde_json::from_slice(bytes).map_err(json)?;
        let files = &sidecar.report.files;
        let file_size = sidecar.fingerprint.file_size;
        if files.len() != 1 || files[0].file_size != file_size {
            return Err(SidecarError::NotOneFile {
                files: files.len(),
                sizes: files.iter().map(|f| f.file_size).collect(),
                file_size,
            });
        }
        let hash = &sidecar.fingerprint.header_sha256;
        if hash.len() != 64 || !hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(SidecarError::BadHash);
        }
        Ok(sidecar)
    }

    /// Whether the sidecar describes the file whose fingerprint is `file`: the same size and the
    /// same header bytes. This is the one rule of trust.
    pub fn check(&self, file: &Fingerprint) -> Result<(), Mismatch> {
        let own = &self.fingerprint;
        if own.file_size != file.file_size {
            return Err(Mismatch::Size {
                sidecar: own.file_size,
                file: file.file_size,
            });
        }
        if own != file {
            return Err(Mismatch::Header {
                sidecar: own.clone(),
                file: file.clone(),
            });
        }
        Ok(())
    }

    /// The file's report.
    pub fn file_report(&self) -> Option<&FileReport> {
        self.report.files.first()
    }

    /// Each tensor's statistics, in the order of `expected` — the report the reader makes of the
    /// file from its own header (`FileReport::new` / `from_layout`, statistics or not) — when the
    /// sidecar lists the same tensors (names, shapes, offsets, element counts) in that order.
    /// `None` for a tensor the sidecar has no statistics of.
    pub fn stats_for(
        &self,
        expected: &FileReport,
    ) -> Result<Vec<Option<TensorStats>>, SidecarError> {
        let other = |what: String| SidecarError::OtherTensors { what };
        let Some(own) = self.file_report() else {
            return Err(other("it has no file".into()));
        };
        if own.tensors.len() != expected.tensors.len() {
            return Err(other(format!(
                "{} tensors, the file has {}",
                own.tensors.len(),
                expected.tensors.len()
            )));
        }
        own.tensors
            .iter()
            .zip(&expected.tensors)
            .map(|(s, f)| {
                let same = s.name == f.name
                    && s.shape == f.shape
                    && s.data_offsets == f.data_offsets
                    && s.params == f.params;
                if !same {
                    return Err(other(format!(
                        "tensor `{}` {:?} at {:?} where the file has `{}` {:?} at {:?}",
                        s.name, s.shape, s.data_offsets, f.name, f.shape, f.data_offsets
                    )));
                }
                Ok(s.stats.clone())
            })
            .collect()
    }
}

/// Every tensor's statistics from `sidecar` (as read: maybe not a sidecar at all) for the file a
/// reader reads — its `fingerprint` (or why it could not be taken) and its report without
/// statistics from its own header, `expected` — when the sidecar matches the file ([`Sidecar::check`]),
/// lists the same tensors ([`Sidecar::stats_for`]) and has every one's statistics; else why it is
/// ignored. The CLI, the page and the embed decide by this one function.
pub fn statistics(
    sidecar: &Result<Sidecar, SidecarError>,
    fingerprint: Result<&Fingerprint, String>,
    expected: &FileReport,
) -> Result<Vec<TensorStats>, Ignored> {
    let sidecar = sidecar
        .as_ref()
        .map_err(|e| Ignored::Malformed(e.clone()))?;
    sidecar.check(fingerprint.map_err(Ignored::File)?)?;
    let stats = sidecar.stats_for(expected)?;
    let missing = stats.iter().filter(|s| s.is_none()).count();
    if missing > 0 {
        return Err(Ignored::Incomplete {
            missing,
            tensors: stats.len(),
        });
    }
    Ok(stats.into_iter().flatten().collect())
}

/// The note a reader gives when it shows a sidecar's statistics (`location`: the sidecar's path
/// or URL).
pub fn used_note(location: &str) -> String {
    format!("statistics from {location} (matches size and header)")
}

/// The note a reader gives when it ignores the sidecar at `location` (`why`: an [`Ignored`], or
/// why it could not be read); it then reads the file's tensors itself.
pub fn ignored_note(location: &str, why: &dyn fmt::Display) -> String {
    format!("{location} ignored: {why}; statistics are computed from the file")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_stats::Accumulator;
    use bitlens_tensors::Dtype;
    use bitlens_test_support::safetensors::Builder;

    fn file() -> Vec<u8> {
        let mut w = Vec::new();
        for v in [1.0f32, -0.5, 3.25, 0.0] {
            w.extend_from_slice(&v.to_le_bytes());
        }
        Builder::new()
            .metadata("step", "9")
            .tensor("w", "F32", &[2, 2], &w)
            .tensor("e", "F32", &[0], &[])
            .build()
    }

    /// The sidecar of `bytes` as the writer makes it: every tensor measured.
    fn sidecar_of(bytes: &[u8]) -> Sidecar {
        let header = bitlens_tensors::read_header(bytes).unwrap();
        let report = FileReport::new("dir/m.safetensors".into(), &header, |i| {
            let t = &header.tensors[i];
            let start = (header.data_start() + t.data_offsets.0) as usize;
            let data = &bytes[start..start + t.byte_len() as usize];
            let mut acc = Accumulator::new(Dtype::F32, data.len() as u64);
            acc.update(data).unwrap();
            Some(acc.finish().unwrap())
        });
        Sidecar::new(
            "dir/m.safetensors",
            Fingerprint::read(&bytes).unwrap(),
            InspectReport::new(vec![report]),
        )
    }

    #[test]
    fn the_page_fingerprints_a_safetensors_prefix_as_any_reader_does() {
        let bytes = file();
        let header = 8 + u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let prefix = bitlens_tensors::source::Prefix {
            bytes: &bytes[..header],
            size: bytes.len() as u64,
        };
        assert_eq!(
            Fingerprint::read_safetensors(&prefix).unwrap(),
            Fingerprint::read(&bytes).unwrap()
        );
        assert!(Fingerprint::read_safetensors(&bytes[..4].to_vec()).is_err());
    }

    #[test]
    fn a_sidecar_reads_back_as_it_was_written_summaries_included() {
        let bytes = file();
        let s = sidecar_of(&bytes);
        assert_eq!(s.file, "m.safetensors");
        let text = serde_json::to_string(&s).unwrap();
        let read = Sidecar::parse(text.as_bytes()).unwrap();
        assert_eq!(read, s);
        // The same JSON again: statistics and totals (rebuilt from the tensors) exactly.
        assert_eq!(serde_json::to_string(&read).unwrap(), text);
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in ["format", "version", "file", "file_size", "header_offset"] {
            assert!(json.get(key).is_some(), "{key}");
        }
        assert_eq!(
            json["header_bytes"],
            bitlens_test_support::safetensors::data_start(&bytes)
        );
        assert_eq!(json["header_sha256"].as_str().unwrap().len(), 64);
    }

    #[test]
    fn pending_tensors_read_back_with_their_dtype() {
        let header = bitlens_tensors::read_header(&file()).unwrap();
        let doc = InspectReport::new(vec![FileReport::new("m".into(), &header, |_| None)]);
        let read: InspectReport =
            serde_json::from_str(&serde_json::to_string(&doc).unwrap()).unwrap();
        assert_eq!(read, doc);
        assert_eq!(read.files[0].tensors[0].dtype, Some(Dtype::F32));
    }

    #[test]
    fn only_the_same_size_and_header_match() {
        let bytes = file();
        let s = sidecar_of(&bytes);
        assert_eq!(s.check(&Fingerprint::read(&bytes).unwrap()), Ok(()));
        // Another value in the data: the same size and header, so it still matches (the hash
        // covers the header only).
        let mut data = bytes.clone();
        let last = data.len() - 1;
        data[last] ^= 1;
        assert_eq!(s.check(&Fingerprint::read(&data).unwrap()), Ok(()));
        // A longer file.
        let mut longer = bytes.clone();
        longer.extend_from_slice(&[0; 4]);
        let longer_fp = Fingerprint {
            file_size: longer.len() as u64,
            ..s.fingerprint.clone()
        };
        assert!(matches!(s.check(&longer_fp), Err(Mismatch::Size { .. })));
        // The same size, another header (the metadata changed).
        let other = Builder::new()
            .metadata("step", "8")
            .tensor("w", "F32", &[2, 2], &bytes[bytes.len() - 16..])
            .tensor("e", "F32", &[0], &[])
            .build();
        assert_eq!(other.len(), bytes.len());
        let e = s.check(&Fingerprint::read(&other).unwrap()).unwrap_err();
        assert!(matches!(e, Mismatch::Header { .. }));
        let note = ignored_note("http://h/m.safetensors.bitlens.json", &e);
        assert!(
            note.starts_with(
                "http://h/m.safetensors.bitlens.json ignored: its header hash differs"
            ),
            "{note}"
        );
        assert_eq!(
            used_note("x.bitlens.json"),
            "statistics from x.bitlens.json (matches size and header)"
        );
    }

    #[test]
    fn malformed_sidecars_are_refused_by_name() {
        let s = sidecar_of(&file());
        let parse = |v: &serde_json::Value| Sidecar::parse(v.to_string().as_bytes());
        let good = serde_json::to_value(&s).unwrap();
        assert!(matches!(
            Sidecar::parse(b"not json"),
            Err(SidecarError::Json { .. })
        ));
        assert!(matches!(
            parse(&serde_json::json!({"files": [], "summary": {}})),
            Err(SidecarError::NotASidecar { found }) if found.is_empty()
        ));
        let mut v = good.clone();
        v["version"] = 2.into();
        assert_eq!(parse(&v), Err(SidecarError::Version { found: 2 }));
        let mut v = good.clone();
        v["file_size"] = 3.into();
        assert!(matches!(parse(&v), Err(SidecarError::NotOneFile { .. })));
        let mut v = good.clone();
        v["header_sha256"] = "AB".into();
        assert_eq!(parse(&v), Err(SidecarError::BadHash));
        let mut v = good.clone();
        v["report"]["files"][0]["tensors"][0]["bytes"] = "many".into();
        assert!(matches!(parse(&v), Err(SidecarError::Json { .. })));
        let big = vec![b' '; MAX_BYTES as usize + 1];
        assert!(matches!(
            Sidecar::parse(&big),
            Err(SidecarError::TooLarge { .. })
        ));
    }

    #[test]
    fn statistics_are_given_for_the_files_own_tensors_only() {
        let bytes = file();
        let s = sidecar_of(&bytes);
        let header = bitlens_tensors::read_header(&bytes).unwrap();
        let expected = FileReport::new("http://h/m".into(), &header, |_| None);
        let stats = s.stats_for(&expected).unwrap();
        assert_eq!(stats.len(), 2);
        assert_eq!(stats[0].as_ref().map(|t| t.bytes), Some(16));
        let mut renamed = expected.clone();
        renamed.tensors[1].name = "f".into();
        assert!(matches!(
            s.stats_for(&renamed),
            Err(SidecarError::OtherTensors { .. })
        ));
        renamed.tensors.pop();
        assert!(s.stats_for(&renamed).is_err());

        // The one decision: matching, complete, the file's own tensors.
        let fp = Fingerprint::read(&bytes).unwrap();
        assert_eq!(
            statistics(&Ok(s.clone()), Ok(&fp), &expected)
                .unwrap()
                .len(),
            2
        );
        let mut partial = s.clone();
        let pending = &mut partial.report.files[0].tensors[1];
        (pending.stats, pending.dtype) = (None, Some(Dtype::F32));
        assert_eq!(
            statistics(&Ok(partial), Ok(&fp), &expected),
            Err(Ignored::Incomplete {
                missing: 1,
                tensors: 2
            })
        );
        assert!(matches!(
            statistics(&Err(SidecarError::BadHash), Ok(&fp), &expected),
            Err(Ignored::Malformed(_))
        ));
        assert!(matches!(
            statistics(&Ok(s.clone()), Err("gone".into()), &expected),
            Err(Ignored::File(_))
        ));
        assert!(matches!(
            statistics(&Ok(s), Ok(&fp), &renamed),
            Err(Ignored::Malformed(SidecarError::OtherTensors { .. }))
        ));
    }
}
