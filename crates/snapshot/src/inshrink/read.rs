//! Restoring an Inshrinkerator snapshot (paper 002 §6): levels decoded against the base's, back
//! to the first full snapshot of the chain; the original file rewritten from them; and what a
//! tensor's streams say about it.

use super::write::chunk;
use super::InshrinkError;
use crate::codec::{format_dtype, Codec};
use crate::error::{FrameError, SnapshotError};
use crate::reader::{SnapshotReader, Source};
use bitlens_codecs::float::FloatFormat;
use bitlens_inshrink::stream::{self, DecodeError, StreamKind};
use bitlens_inshrink::{LayerKind, ProtectStorage};
use bitlens_inshrink::{Quantized, Setting};
use std::collections::BTreeMap;

/// generic reader's path; a delta stream is an error: it needs its chain, [`decode_levels`]).
/// Decodes one full (non-delta) stream of a `raw_len`-byte frame of `format` into `out` (the
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
    let w = format.width();
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
        let w = format.width();
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
