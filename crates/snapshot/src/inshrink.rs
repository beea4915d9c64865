//! The Inshrinkerator codec in the container (paper 002, codec id 5, format version 4): a
//! checkpoint searched and quantized as a whole by `bitlens-inshrink`, written tensor by tensor,
//! and chains of quantization-aware deltas (§6) restored from their first full snapshot.
//!
//! * Each float tensor (f32, f16, bf16) is one [`Quantized`] under the searched plan. Frame `k`
//!   of the tensor (the container's 64 MiB frames, a whole number of elements) holds one
//!   `bitlens_inshrink::stream` of elements `[k·E, (k+1)·E)` (`E` = frame bytes / element width):
//!   the tensor's codebook, the protected values of those elements and their levels — full, or a
//!   delta against the same elements' levels in the previous snapshot of the chain. Other tensors
//!   are LMC (lossless), as with every float-only codec.
//! * The snapshot is container version 4: its preamble carries an [`Annex`] with the plan (what
//!   the next checkpoint's delta-neighbourhood search starts from), how protected values are
//!   stored, the link to the base snapshot when some stream is a delta ([`ChainLink`]: the base's
//!   file name and the xxh3 of its index), and the search report (JSON, informational).
//! * Restoring: [`decode_levels`] decodes a snapshot's levels against its base's levels (themselves
//!   decoded from their base, and so on back to a snapshot without a base), verifying every
//!   tensor's checksum; [`decode_all`] writes the original safetensors file with the restored
//!   values. A snapshot without deltas also decodes through the generic reader ([`decode_full`]).
//!
//! docs/FORMAT.md §1.3 and §8 specify the annex and the stream.

use crate::codec::{format_dtype, Codec};
use crate::error::{FrameError, SnapshotError};
use crate::format::{Entry, FRAME_BYTES};
use crate::reader::{SnapshotReader, Source};
use crate::writer::{FrameJob, SnapshotWriter, TensorPlan};
use bitlens_codecs::float::FloatFormat;
use bitlens_inshrink::config::MAX_BINS;
use bitlens_inshrink::levels::PROTECTED;
use bitlens_inshrink::stream::{self, DecodeError, EncodeError, StreamKind};
use bitlens_inshrink::{values, Configuration, LayerKind, Meta, Metric, Plan, ProtectStorage};
use bitlens_inshrink::{Quantized, Setting};
use bitlens_tensors::Header;
use std::collections::BTreeMap;
use std::io::Write;
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

/// Why an Inshrinkerator snapshot could not be written or restored.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum InshrinkError {
    /// The container failed.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The annex is malformed.
    #[error(transparent)]
    Annex(#[from] AnnexError),
    /// The snapshot has no Inshrinkerator annex.
    #[error("not an inshrink snapshot (no annex)")]
    NotInshrink,
    /// A tensor could not be encoded.
    #[error("tensor `{tensor}`: {source}")]
    Encode {
        /// The tensor.
        tensor: String,
        /// The encoder's error.
        #[source]
        source: EncodeError,
    },
    /// A tensor stream did not decode.
    #[error("tensor `{tensor}`, frame {frame}: {source}")]
    Stream {
        /// The tensor.
        tensor: String,
        /// Its frame.
        frame: usize,
        /// The stream's error.
        #[source]
        source: DecodeError,
    },
    /// The streams of a tensor's frames disagree (codebook, setting, dtype).
    #[error("tensor `{tensor}`: frame {frame} disagrees with frame 0 ({what})")]
    Frames {
        /// The tensor.
        tensor: String,
        /// The frame.
        frame: usize,
        /// What differs.
        what: &'static str,
    },
    /// The base given for a delta is missing or not the one it was made against.
    #[error("wrong base: {0}")]
    WrongBase(String),
    /// A restored tensor does not have its recorded checksum.
    #[error(
        "tensor `{tensor}`: checksum mismatch, restored {actual:016x}, recorded {expected:016x}"
    )]
    ChecksumMismatch {
        /// The tensor.
        tensor: String,
        /// Recorded.
        expected: u64,
        /// Computed.
        actual: u64,
    },
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

/// A bounds-checked reader over the annex.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], AnnexError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or(AnnexError::Truncated {
                what,
                offset: self.pos,
            })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, AnnexError> {
        Ok(self.take(1, what)?[0])
    }

    fn f32(&mut self, what: &'static str) -> Result<f32, AnnexError> {
        let b = self.take(4, what)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, AnnexError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn bad(&self, field: &'static str, at: usize, reason: impl Into<String>) -> AnnexError {
        AnnexError::BadField {
            field,
            offset: at,
            reason: reason.into(),
        }
    }

    fn setting(&mut self, field: &'static str) -> Result<Setting, AnnexError> {
        let at = self.pos;
        let (kind, bins, metric) = (self.u8(field)?, self.u8(field)?, self.u8(field)?);
        let (prune, protect) = (self.f32(field)?, self.f32(field)?);
        match kind {
            1 => Ok(Setting::Exact),
            0 => {
                let metric =
                    Metric::of_code(metric).ok_or_else(|| self.bad(field, at, "metric"))?;
                if !(1..=MAX_BINS).contains(&bins)
                    || !(0.0..1.0).contains(&prune)
                    || !(0.0..=1.0).contains(&protect)
                {
                    return Err(self.bad(field, at, "bins, prune or protect out of range"));
                }
                Ok(Setting::Quantized(Configuration {
                    bins,
                    prune,
                    metric,
                    protect,
                }))
            }
            k => Err(self.bad(field, at, format!("setting kind {k}"))),
        }
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
        let mut c = Cursor { b: bytes, pos: 0 };
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
            v => return Err(c.bad("protect storage", at, format!("{v}"))),
        };
        let main = c.setting("main setting")?;
        let embedding = c.setting("embedding setting")?;
        let at = c.pos;
        let base = match c.u8("base flag")? {
            0 => None,
            1 => {
                let index_checksum = c.u64("base index checksum")?;
                let file_size = c.u64("base file size")?;
                let len = c.take(2, "base name length")?;
                let len = usize::from(u16::from_le_bytes([len[0], len[1]]));
                let at = c.pos;
                let name = std::str::from_utf8(c.take(len, "base name")?)
                    .map_err(|_| c.bad("base name", at, "not UTF-8"))?;
                if name.is_empty()
                    || name.len() > MAX_NAME
                    || name.contains(['/', '\\', '\0'])
                    || name == "."
                    || name == ".."
                {
                    return Err(c.bad("base name", at, "not a plain file name"));
                }
                Some(ChainLink {
                    name: name.to_owned(),
                    index_checksum,
                    file_size,
                })
            }
            v => return Err(c.bad("base flag", at, format!("{v}"))),
        };
        let len = c.take(4, "report length")?;
        let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let at = c.pos;
        let report = std::str::from_utf8(c.take(len, "report")?)
            .map_err(|_| c.bad("report", at, "not UTF-8"))?
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

/// Elements `[start, end)` of `q` as a tensor of their own (the same codebook).
fn chunk(q: &Quantized, start: usize, end: usize) -> Quantized {
    let before = q.levels[..start]
        .iter()
        .filter(|&&l| l == PROTECTED)
        .count();
    let inside = q.levels[start..end]
        .iter()
        .filter(|&&l| l == PROTECTED)
        .count();
    Quantized {
        dtype: q.dtype,
        setting: q.setting,
        storage: q.storage,
        levels: q.levels[start..end].to_vec(),
        codebook: q.codebook.clone(),
        protected: q.protected
            [before.min(q.protected.len())..(before + inside).min(q.protected.len())]
            .to_vec(),
    }
}

/// The element width of an inshrink entry's format.
fn width(format: FloatFormat) -> usize {
    format.width()
}

/// A float tensor to write as Inshrinkerator streams.
pub struct TensorCode<'a> {
    /// The tensor under the plan.
    pub quantized: &'a Quantized,
    /// The same tensor's levels in the base snapshot (a delta), if any.
    pub base: Option<&'a Quantized>,
    /// Informational stream fields.
    pub meta: Meta,
}

/// The float format of an inshrink-able dtype.
fn format_of(q: &Quantized) -> Option<FloatFormat> {
    crate::choice::float_format(q.dtype)
}

/// Writes a version 4 snapshot of the safetensors file `src` (header `header`): tensor `i` as
/// Inshrinkerator streams when `codes[i]` is given, else LMC; `annex` goes into the preamble.
pub fn write_snapshot<W: Write>(
    src: &dyn Source,
    header: &Header,
    codes: &[Option<TensorCode>],
    annex: &Annex,
    out: W,
) -> Result<(W, Vec<Entry>), InshrinkError> {
    if codes.len() != header.tensors.len() {
        return Err(SnapshotError::Misuse(format!(
            "{} codes for {} tensors",
            codes.len(),
            header.tensors.len()
        ))
        .into());
    }
    let mut plans = Vec::with_capacity(codes.len());
    for (t, code) in header.tensors.iter().zip(codes) {
        let codec = match code.as_ref().and_then(|c| format_of(c.quantized)) {
            Some(format) if code.as_ref().is_some_and(|c| c.quantized.dtype == t.dtype) => {
                Codec::Inshrink { format }
            }
            Some(_) => {
                return Err(SnapshotError::Misuse(format!(
                    "tensor `{}` is {}, its code is not",
                    t.name, t.dtype
                ))
                .into())
            }
            None => Codec::lmc_for_width(t.dtype.lane_bytes()),
        };
        plans.push(TensorPlan {
            name: t.name.clone(),
            codec,
            raw_len: t.byte_len(),
            delta: false,
        });
    }
    let mut prefix = vec![0u8; header.data_start() as usize];
    src.read_exact_at(0, &mut prefix)
        .map_err(SnapshotError::from)?;
    let mut writer = SnapshotWriter::new_with_annex(out, &prefix, plans, &annex.to_bytes())?;
    let mut raw = Vec::new();
    for (i, (t, code)) in header.tensors.iter().zip(codes).enumerate() {
        let (start, end) = header.file_range(t);
        let mut pos = start;
        while pos < end {
            let n = (end - pos).min(FRAME_BYTES as u64) as usize;
            raw.resize(n, 0);
            src.read_exact_at(pos, &mut raw)
                .map_err(SnapshotError::from)?;
            match code {
                Some(c) => {
                    let w = width(format_of(c.quantized).unwrap_or(FloatFormat::F32));
                    let (a, b) = (
                        ((pos - start) as usize) / w,
                        ((pos - start) as usize + n) / w,
                    );
                    if b > c.quantized.levels.len() {
                        return Err(SnapshotError::Misuse(format!(
                            "tensor `{}`: {} levels for {} elements",
                            t.name,
                            c.quantized.levels.len(),
                            (end - start) as usize / w
                        ))
                        .into());
                    }
                    let part = chunk(c.quantized, a, b);
                    let base = c
                        .base
                        .map(|q| chunk(q, a.min(q.levels.len()), b.min(q.levels.len())));
                    let payload =
                        stream::encode(&part, &c.meta, base.as_ref(), true).map_err(|source| {
                            InshrinkError::Encode {
                                tensor: t.name.clone(),
                                source,
                            }
                        })?;
                    writer.write_encoded(i, &raw, &payload, &part.restore_bytes())?;
                }
                None => writer.write_frames(&[FrameJob {
                    tensor: i,
                    raw: &raw,
                    base: None,
                }])?,
            }
            pos += n as u64;
        }
    }
    Ok(writer.finish()?)
}

/// Encodes raw elements as an exact stream (every element protected): what a frame of codec 5
/// becomes without a search (the generic [`Codec::encode_frame`]). Input that is not whole
/// elements gives an empty payload, which no decoder accepts.
pub fn encode_exact(input: &[u8], format: FloatFormat, out: &mut Vec<u8>) {
    let dtype = format_dtype(format);
    let Ok(values) = values::to_f32(input, dtype) else {
        return;
    };
    let q = Quantized {
        dtype,
        setting: Setting::Exact,
        storage: ProtectStorage::Original,
        levels: vec![PROTECTED; values.len()],
        codebook: Vec::new(),
        protected: values,
    };
    let meta = Meta {
        layer: LayerKind::Linear,
        error: 0.0,
    };
    if let Ok(s) = stream::encode(&q, &meta, None, false) {
        out.extend_from_slice(&s);
    }
}

/// Decodes one full (non-delta) stream of a `raw_len`-byte frame of `format` into `out` (the
/// generic reader's path; a delta stream is an error: it needs its chain, [`decode_levels`]).
pub fn decode_full(
    payload: &[u8],
    raw_len: usize,
    format: FloatFormat,
    out: &mut Vec<u8>,
) -> Result<(), FrameError> {
    let d = decode_stream(payload, raw_len, format, None)?;
    *out = d.restore_bytes();
    Ok(())
}

/// Decodes one stream of a `raw_len`-byte frame of `format` against `base` (the same elements'
/// levels in the base snapshot, for a delta stream).
fn decode_stream(
    payload: &[u8],
    raw_len: usize,
    format: FloatFormat,
    base: Option<&Quantized>,
) -> Result<Quantized, DecodeError> {
    let w = width(format);
    if !raw_len.is_multiple_of(w) {
        return Err(DecodeError::LengthMismatch {
            what: "frame bytes (a multiple of the element width)",
            expected: (raw_len / w * w) as u64,
            actual: raw_len as u64,
        });
    }
    let d = stream::decode(payload, (raw_len / w) as u64, base)?;
    if d.tensor.dtype != format_dtype(format) {
        return Err(DecodeError::BadField {
            field: "dtype (differs from the container's codec parameters)",
            offset: 6,
            value: u64::from(payload.get(6).copied().unwrap_or(0)),
        });
    }
    Ok(d.tensor)
}

/// Restored levels of an Inshrinkerator snapshot: every inshrink tensor by name.
pub type Levels = BTreeMap<String, Quantized>;

/// Decodes every inshrink tensor of `reader` — full streams on their own, delta streams against
/// `base` (the levels of the snapshot the annex names as base) — and verifies each tensor's
/// checksum.
pub fn decode_levels<R: Source>(
    reader: &SnapshotReader<R>,
    base: Option<&Levels>,
) -> Result<Levels, InshrinkError> {
    let mut levels = Levels::new();
    for (i, e) in reader.entries.iter().enumerate() {
        let Codec::Inshrink { format } = e.codec else {
            continue;
        };
        let w = width(format);
        let mut whole: Option<Quantized> = None;
        let mut element = 0usize;
        for (fi, f) in e.frames.iter().enumerate() {
            let payload = reader.frame_payload(i, fi)?;
            let stream_error = |source| InshrinkError::Stream {
                tensor: e.name.clone(),
                frame: fi,
                source,
            };
            let (h, _) = stream::read_header(&payload).map_err(stream_error)?;
            let n = (f.raw_len as usize) / w;
            let base_chunk = match h.kind {
                StreamKind::Full => None,
                StreamKind::Delta => {
                    let b = base.and_then(|b| b.get(&e.name)).ok_or_else(|| {
                        InshrinkError::WrongBase(format!(
                            "tensor `{}` is a delta but the base has no inshrink tensor of that name",
                            e.name
                        ))
                    })?;
                    if b.levels.len() < element + n || b.dtype != format_dtype(format) {
                        return Err(InshrinkError::WrongBase(format!(
                            "base tensor `{}` is {} elements of {}, the delta needs {} of {}",
                            e.name,
                            b.levels.len(),
                            b.dtype,
                            element + n,
                            format_dtype(format)
                        )));
                    }
                    Some(chunk(b, element, element + n))
                }
            };
            let part = decode_stream(&payload, f.raw_len as usize, format, base_chunk.as_ref())
                .map_err(stream_error)?;
            element += n;
            match &mut whole {
                None => whole = Some(part),
                Some(q) => {
                    let differs = |what| InshrinkError::Frames {
                        tensor: e.name.clone(),
                        frame: fi,
                        what,
                    };
                    if part.codebook != q.codebook {
                        return Err(differs("codebook"));
                    }
                    if part.setting != q.setting || part.storage != q.storage {
                        return Err(differs("setting"));
                    }
                    q.levels.extend_from_slice(&part.levels);
                    q.protected.extend_from_slice(&part.protected);
                }
            }
        }
        let q = whole.unwrap_or(Quantized {
            dtype: format_dtype(format),
            setting: Setting::Exact,
            storage: ProtectStorage::Original,
            levels: Vec::new(),
            codebook: Vec::new(),
            protected: Vec::new(),
        });
        let actual = crate::checksum(&q.restore_bytes());
        if actual != e.checksum {
            return Err(InshrinkError::ChecksumMismatch {
                tensor: e.name.clone(),
                expected: e.checksum,
                actual,
            });
        }
        levels.insert(e.name.clone(), q);
    }
    Ok(levels)
}

/// Writes the restored safetensors file of `reader` to `sink`: the stored header, inshrink
/// tensors from `levels` ([`decode_levels`] of this snapshot), the others decoded as stored.
pub fn decode_all<R: Source>(
    reader: &SnapshotReader<R>,
    levels: &Levels,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), SnapshotError>,
) -> Result<(), InshrinkError> {
    sink(&reader.prefix)?;
    for (i, e) in reader.entries.iter().enumerate() {
        match e.codec {
            Codec::Inshrink { .. } => {
                let q = levels.get(&e.name).ok_or_else(|| {
                    SnapshotError::Misuse(format!("no restored levels for `{}`", e.name))
                })?;
                sink(&q.restore_bytes())?;
            }
            _ => reader.decode_tensors(&[i], None, sink)?,
        }
    }
    Ok(())
}

/// What the streams of one inshrink tensor say (for `inspect`).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSummary {
    /// Its layer type.
    pub layer: LayerKind,
    /// Its setting.
    pub setting: Setting,
    /// The achieved relative L2 error recorded by the encoder.
    pub error: f32,
    /// Protected values, over all frames.
    pub protected: u64,
    /// Centroids.
    pub bins: usize,
    /// Whether some frame is a delta against the base snapshot.
    pub delta: bool,
}

/// The stream headers of entry `tensor` (an inshrink tensor with at least one frame) summed up.
pub fn stream_summary<R: Source>(
    reader: &SnapshotReader<R>,
    tensor: usize,
) -> Result<Option<StreamSummary>, InshrinkError> {
    let Some(e) = reader.entries.get(tensor) else {
        return Ok(None);
    };
    if !matches!(e.codec, Codec::Inshrink { .. }) {
        return Ok(None);
    }
    let mut summary: Option<StreamSummary> = None;
    for fi in 0..e.frames.len() {
        let payload = reader.frame_payload(tensor, fi)?;
        let (h, _) = stream::read_header(&payload).map_err(|source| InshrinkError::Stream {
            tensor: e.name.clone(),
            frame: fi,
            source,
        })?;
        let s = summary.get_or_insert(StreamSummary {
            layer: h.layer,
            setting: h.setting,
            error: h.error,
            protected: 0,
            bins: h.codebook.len(),
            delta: false,
        });
        s.protected += h.protected;
        s.delta |= h.kind == StreamKind::Delta;
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_inshrink::search::{search, L2Budget, Options, Prepared, TensorInput};
    use bitlens_tensors::Dtype;

    fn safetensors(tensors: &[(&str, &[f32])]) -> Vec<u8> {
        let mut json = String::from("{");
        let mut off = 0;
        for (i, (n, v)) in tensors.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push_str(&format!(
                "\"{n}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{off},{}]}}",
                v.len(),
                off + 4 * v.len()
            ));
            off += 4 * v.len();
        }
        json.push('}');
        let mut out = (json.len() as u64).to_le_bytes().to_vec();
        out.extend_from_slice(json.as_bytes());
        for (_, v) in tensors {
            for x in *v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }

    fn weights(seed: u32, n: usize) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let x = (i as u32).wrapping_mul(2654435761).wrapping_add(seed) as f32;
                (x / u32::MAX as f32 - 0.5) * 0.1
            })
            .collect()
    }

    /// Compresses `file` (optionally against `base`'s levels and plan) under an L2 budget.
    fn pack(file: &[u8], base: Option<(&Levels, &Annex)>) -> (Vec<u8>, Levels) {
        let header = Header::parse(file, file.len() as u64).unwrap();
        let vals: Vec<Vec<f32>> = header
            .tensors
            .iter()
            .map(|t| {
                let (a, b) = header.file_range(t);
                values::to_f32(&file[a as usize..b as usize], Dtype::F32).unwrap()
            })
            .collect();
        let inputs = header
            .tensors
            .iter()
            .zip(&vals)
            .map(|(t, v)| TensorInput {
                name: &t.name,
                dtype: t.dtype,
                values: v,
                second_moment: None,
            })
            .collect();
        let prep = Prepared::new(inputs, Options::default()).unwrap();
        let out = search(
            &prep,
            &mut L2Budget { max_error: 0.05 },
            base.map(|(_, a)| &a.plan),
        )
        .unwrap();
        let codes: Vec<Option<TensorCode>> = header
            .tensors
            .iter()
            .zip(&out.quantized)
            .map(|(t, q)| {
                Some(TensorCode {
                    quantized: q,
                    base: base.and_then(|(l, _)| l.get(&t.name)),
                    meta: Meta {
                        layer: LayerKind::classify(&t.name),
                        error: 0.0,
                    },
                })
            })
            .collect();
        let annex = Annex {
            plan: out.plan,
            storage: ProtectStorage::Original,
            base: base.map(|_| ChainLink {
                name: "prev.bls".into(),
                index_checksum: 7,
                file_size: 9,
            }),
            report: "{}".into(),
        };
        let src: &dyn Source = &file.to_vec();
        let (bytes, _) = write_snapshot(src, &header, &codes, &annex, Vec::new()).unwrap();
        let levels = header
            .tensors
            .iter()
            .zip(out.quantized)
            .map(|(t, q)| (t.name.clone(), q))
            .collect();
        (bytes, levels)
    }

    #[test]
    fn full_and_delta_snapshots_restore_the_quantized_values() {
        let a = weights(1, 5000);
        let b: Vec<f32> = a.iter().map(|x| x * 1.01 + 1e-4).collect();
        let f0 = safetensors(&[("fc.weight", &a), ("emb.weight", &a[..3000])]);
        let f1 = safetensors(&[("fc.weight", &b), ("emb.weight", &b[..3000])]);
        let (s0, l0) = pack(&f0, None);
        let r0 = SnapshotReader::open(s0.clone()).unwrap();
        let annex0 = Annex::of(&r0).unwrap().unwrap();
        assert_eq!(decode_levels(&r0, None).unwrap(), l0);
        // The generic reader decodes full streams too.
        let mut generic = Vec::new();
        r0.decode_all(None, &mut |b| {
            generic.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        let mut ours = Vec::new();
        decode_all(&r0, &l0, &mut |b| {
            ours.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!(generic, ours);
        let (s1, l1) = pack(&f1, Some((&l0, &annex0)));
        let r1 = SnapshotReader::open(s1.clone()).unwrap();
        assert_eq!(
            Annex::of(&r1).unwrap().unwrap().base.unwrap().name,
            "prev.bls"
        );
        assert_eq!(decode_levels(&r1, Some(&l0)).unwrap(), l1);
        assert!(matches!(
            decode_levels(&r1, None),
            Err(InshrinkError::WrongBase(_))
        ));
        // A delta frame through the generic reader is a typed error.
        assert!(matches!(
            r1.decode_all(None, &mut |_| Ok(())),
            Err(SnapshotError::Frame {
                source: FrameError::Inshrink(DecodeError::Base { .. }),
                ..
            })
        ));
    }

    #[test]
    fn annexes_round_trip_and_bad_ones_are_typed_errors() {
        let annex = Annex {
            plan: Plan {
                main: Setting::Quantized(Configuration {
                    bins: 8,
                    prune: 0.2,
                    metric: Metric::Sensitivity,
                    protect: 0.005,
                }),
                embedding: Setting::Exact,
            },
            storage: ProtectStorage::Bf16,
            base: Some(ChainLink {
                name: "step-1.bls".into(),
                index_checksum: 0xabc,
                file_size: 1234,
            }),
            report: "{\"quality\":\"x\"}".into(),
        };
        let b = annex.to_bytes();
        assert_eq!(Annex::parse(&b).unwrap(), annex);
        for cut in 0..b.len() {
            assert!(Annex::parse(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = b.clone();
        long.push(0);
        assert_eq!(Annex::parse(&long), Err(AnnexError::Trailing(1)));
        let mut bad = b.clone();
        bad[6] = 9;
        assert!(matches!(
            Annex::parse(&bad),
            Err(AnnexError::BadField {
                field: "main setting",
                ..
            })
        ));
        let evil = Annex {
            base: Some(ChainLink {
                name: "../x.bls".into(),
                index_checksum: 0,
                file_size: 0,
            }),
            ..annex
        };
        assert!(matches!(
            Annex::parse(&evil.to_bytes()),
            Err(AnnexError::BadField {
                field: "base name",
                ..
            })
        ));
    }
}
