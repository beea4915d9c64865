//! The version 4 annex of an Inshrinkerator snapshot (paper 002 §5–6, docs/FORMAT.md §1.3): the
//! plan the next checkpoint's search starts from, how protected values are stored, the link to the
//! base snapshot, and the search report.

use crate::cursor::ByteCursor;
use crate::reader::{SnapshotReader, Source};
use bitlens_inshrink::config::MAX_BINS;
use bitlens_inshrink::Setting;
use bitlens_inshrink::{Configuration, Metric, Plan, ProtectStorage};
use thiserror::Error;

/// Magic of the annex.
pub const ANNEX_MAGIC: [u8; 4] = *b"INSA";
/// Annex version this build writes and reads.
pub const ANNEX_VERSION: u8 = 1;
/// Longest base file name in an annex.
pub const MAX_NAME: usize = 1024;

/// The snapshot a delta snapshot was made against: found by its file name (next to the delta,
/// or given by the user) and recognised by the checksum of its index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLink {
    /// The base snapshot's file name (no directory).
    pub name: String,
    /// xxh3-64 of the base's index ([`SnapshotReader::index_checksum`]).
    pub index_checksum: u64,
    /// Size of the base snapshot file.
    pub file_size: u64,
}

/// Snapshot-wide data of an Inshrinkerator snapshot (the version 4 annex).
#[derive(Debug, Clone, PartialEq)]
pub struct Annex {
    /// The plan the search chose.
    pub plan: Plan,
    /// How protected values are stored.
    pub storage: ProtectStorage,
    /// The base snapshot, when some stream is a delta.
    pub base: Option<ChainLink>,
    /// The search report, a JSON object (informational: quality measure, evaluations, times).
    pub report: String,
}

/// Why an annex was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AnnexError {
    /// The annex ends inside a field.
    #[error("annex truncated: {what} at annex offset {offset}")]
    Truncated {
        /// The field.
        what: &'static str,
        /// Where it starts.
        offset: usize,
    },
    /// Not an Inshrinkerator annex.
    #[error("annex has magic {found:02x?}, expected \"INSA\"")]
    BadMagic {
        /// The first bytes.
        found: Vec<u8>,
    },
    /// An annex version this build does not know.
    #[error("annex version {0} is not supported (this build reads {ANNEX_VERSION})")]
    UnsupportedVersion(u8),
    /// A field holds a value the format does not allow.
    #[error("annex field `{field}` at annex offset {offset} is invalid: {reason}")]
    BadField {
        /// The field.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// Bytes after the report.
    #[error("{0} trailing bytes after the annex")]
    Trailing(usize),
}

fn setting_bytes(s: Setting, out: &mut Vec<u8>) {
    let (kind, c) = match s {
        Setting::Quantized(c) => (0, c),
        Setting::Exact => (
            1,
            Configuration {
                bins: 0,
                prune: 0.0,
                metric: Metric::Magnitude,
                protect: 0.0,
            },
        ),
    };
    out.extend_from_slice(&[kind, c.bins, c.metric.code()]);
    out.extend_from_slice(&c.prune.to_le_bytes());
    out.extend_from_slice(&c.protect.to_le_bytes());
}

/// The annex parser's cursor: a field that runs past the end is [`AnnexError::Truncated`].
type Cursor<'a> = ByteCursor<'a, AnnexError>;

/// A field of the annex that runs past its end.
fn annex_short(what: &'static str, offset: usize) -> AnnexError {
    AnnexError::Truncated { what, offset }
}

/// Field `field`, starting at annex offset `at`, holds a value the format does not allow.
fn bad(field: &'static str, at: usize, reason: impl Into<String>) -> AnnexError {
    AnnexError::BadField {
        field,
        offset: at,
        reason: reason.into(),
    }
}

/// A plan's setting: kind, bins, metric, prune and protect (docs/FORMAT.md §1.3).
fn read_setting(c: &mut Cursor, field: &'static str) -> Result<Setting, AnnexError> {
    let at = c.pos;
    let (kind, bins, metric) = (c.u8(field)?, c.u8(field)?, c.u8(field)?);
    let (prune, protect) = (c.f32(field)?, c.f32(field)?);
    match kind {
        1 => Ok(Setting::Exact),
        0 => {
            let metric = Metric::of_code(metric).ok_or_else(|| bad(field, at, "metric"))?;
            if !(1..=MAX_BINS).contains(&bins)
                || !(0.0..1.0).contains(&prune)
                || !(0.0..=1.0).contains(&protect)
            {
                return Err(bad(field, at, "bins, prune or protect out of range"));
            }
            Ok(Setting::Quantized(Configuration {
                bins,
                prune,
                metric,
                protect,
            }))
        }
        k => Err(bad(field, at, format!("setting kind {k}"))),
    }
}

impl Annex {
    /// Serializes the annex (docs/FORMAT.md §1.3).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = ANNEX_MAGIC.to_vec();
        out.push(ANNEX_VERSION);
        out.push(match self.storage {
            ProtectStorage::Original => 0,
            ProtectStorage::Bf16 => 1,
        });
        setting_bytes(self.plan.main, &mut out);
        setting_bytes(self.plan.embedding, &mut out);
        match &self.base {
            None => out.push(0),
            Some(b) => {
                out.push(1);
                out.extend_from_slice(&b.index_checksum.to_le_bytes());
                out.extend_from_slice(&b.file_size.to_le_bytes());
                out.extend_from_slice(&(b.name.len() as u16).to_le_bytes());
                out.extend_from_slice(b.name.as_bytes());
            }
        }
        out.extend_from_slice(&(self.report.len() as u32).to_le_bytes());
        out.extend_from_slice(self.report.as_bytes());
        out
    }

    /// Parses an annex, checking every field.
    pub fn parse(bytes: &[u8]) -> Result<Annex, AnnexError> {
        let mut c = Cursor::new(bytes, annex_short);
        let magic = c.take(4, "magic").map_err(|_| AnnexError::BadMagic {
            found: bytes.to_vec(),
        })?;
        if magic != ANNEX_MAGIC {
            return Err(AnnexError::BadMagic {
                found: magic.to_vec(),
            });
        }
        let version = c.u8("version")?;
        if version != ANNEX_VERSION {
            return Err(AnnexError::UnsupportedVersion(version));
        }
        let at = c.pos;
        let storage = match c.u8("protect storage")? {
            0 => ProtectStorage::Original,
            1 => ProtectStorage::Bf16,
            v => return Err(bad("protect storage", at, format!("{v}"))),
        };
        let main = read_setting(&mut c, "main setting")?;
        let embedding = read_setting(&mut c, "embedding setting")?;
        let at = c.pos;
        let base = match c.u8("base flag")? {
            0 => None,
            1 => {
                let index_checksum = c.u64("base index checksum")?;
                let file_size = c.u64("base file size")?;
                let len = usize::from(c.u16("base name length")?);
                let at = c.pos;
                let name = std::str::from_utf8(c.take(len, "base name")?)
                    .map_err(|_| bad("base name", at, "not UTF-8"))?;
                if name.is_empty()
                    || name.len() > MAX_NAME
                    || name.contains(['/', '\\', '\0'])
                    || name == "."
                    || name == ".."
                {
                    return Err(bad("base name", at, "not a plain file name"));
                }
                Some(ChainLink {
                    name: name.to_owned(),
                    index_checksum,
                    file_size,
                })
            }
            v => return Err(bad("base flag", at, format!("{v}"))),
        };
        let len = c.u32("report length")? as usize;
        let at = c.pos;
        let report = std::str::from_utf8(c.take(len, "report")?)
            .map_err(|_| bad("report", at, "not UTF-8"))?
            .to_owned();
        if c.pos != bytes.len() {
            return Err(AnnexError::Trailing(bytes.len() - c.pos));
        }
        Ok(Annex {
            plan: Plan { main, embedding },
            storage,
            base,
            report,
        })
    }

    /// The annex of an opened snapshot (`None` for snapshots of other codecs).
    pub fn of<R: Source>(reader: &SnapshotReader<R>) -> Result<Option<Annex>, AnnexError> {
        reader.annex.as_deref().map(Annex::parse).transpose()
    }
}

/// The link a snapshot that follows `reader` (a file named `name`, `file_size` bytes) records.
pub fn link_to<R: Source>(reader: &SnapshotReader<R>, name: &str, file_size: u64) -> ChainLink {
    ChainLink {
        name: name.to_owned(),
        index_checksum: reader.index_checksum,
        file_size,
    }
}
