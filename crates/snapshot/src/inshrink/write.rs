//! Writing a searched checkpoint (paper 002 §4.4, §6): each float tensor's frames as
//! Inshrinkerator streams, full or as deltas of the base's levels; other tensors, and float
//! tensors the search left exact, as LMC (lossless) — never an exact stream, which is the raw
//! values plus a header and so larger than the input. [`code_sizes`] tells a compressor whether a
//! tensor's streams are smaller than its lossless code at all.

use super::{Annex, InshrinkError};
use crate::codec::{format_dtype, Codec};
use crate::error::SnapshotError;
use crate::format::{Entry, FRAME_BYTES};
use crate::reader::Source;
use crate::writer::{FrameJob, SnapshotWriter, TensorPlan};
use bitlens_codecs::float::FloatFormat;
use bitlens_inshrink::levels::PROTECTED;
use bitlens_inshrink::stream::{self};
use bitlens_inshrink::{values, LayerKind, Meta, ProtectStorage};
use bitlens_inshrink::{Quantized, Setting};
use bitlens_tensors::Header;
use std::io::Write;

pub(super) fn chunk(q: &Quantized, start: usize, end: usize) -> Quantized {
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

/// Elements `a..b` of `code` (one frame's worth) and their stream: the levels of that range, as a
/// delta against the base's same range when the code has a base. `b` must not pass the levels.
fn frame_stream(
    code: &TensorCode,
    tensor: &str,
    a: usize,
    b: usize,
) -> Result<(Quantized, Vec<u8>), InshrinkError> {
    let part = chunk(code.quantized, a, b);
    let base = code
        .base
        .map(|q| chunk(q, a.min(q.levels.len()), b.min(q.levels.len())));
    let payload = stream::encode(&part, &code.meta, base.as_ref(), true).map_err(|source| {
        InshrinkError::Encode {
            tensor: tensor.to_string(),
            source,
        }
    })?;
    Ok((part, payload))
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
    // An exact tensor is coded losslessly by LMC: same values, fewer bytes.
    let codes: Vec<Option<&TensorCode>> = codes
        .iter()
        .map(|c| c.as_ref().filter(|c| c.quantized.setting != Setting::Exact))
        .collect();
    let mut plans = Vec::with_capacity(codes.len());
    for (t, code) in header.tensors.iter().zip(&codes) {
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
    for (i, (t, code)) in header.tensors.iter().zip(&codes).enumerate() {
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
                    let (part, payload) = frame_stream(c, &t.name, a, b)?;
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

/// The bytes of tensor `i` of `src` under its code, in streams, and under LMC (lossless).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeSizes {
    /// Its Inshrinkerator streams, all frames.
    pub lossy: u64,
    /// Its LMC frames.
    pub lossless: u64,
}

/// Encodes tensor `i` of `src` (header `header`) both ways, frame by frame as
/// [`write_snapshot`] would, and returns the payload sizes: a compressor keeps the streams only
/// when they are smaller, so a lossy snapshot is never larger than the lossless one.
pub fn code_sizes(
    src: &dyn Source,
    header: &Header,
    i: usize,
    code: &TensorCode,
) -> Result<CodeSizes, InshrinkError> {
    let t = &header.tensors[i];
    let lmc = Codec::lmc_for_width(t.dtype.lane_bytes());
    let w = width(format_of(code.quantized).unwrap_or(FloatFormat::F32));
    let (start, end) = header.file_range(t);
    let mut sizes = CodeSizes {
        lossy: 0,
        lossless: 0,
    };
    let (mut raw, mut out) = (Vec::new(), Vec::new());
    let mut pos = start;
    while pos < end {
        let n = (end - pos).min(FRAME_BYTES as u64) as usize;
        raw.resize(n, 0);
        src.read_exact_at(pos, &mut raw)
            .map_err(SnapshotError::from)?;
        out.clear();
        lmc.encode_frame(&raw, None, &mut out);
        sizes.lossless += out.len() as u64;
        let (a, b) = (
            ((pos - start) as usize) / w,
            ((pos - start) as usize + n) / w,
        );
        let b = b.min(code.quantized.levels.len());
        let (_, payload) = frame_stream(code, &t.name, a.min(b), b)?;
        sizes.lossy += payload.len() as u64;
        pos += n as u64;
    }
    Ok(sizes)
}

/// Replaces by `None` (LMC, lossless) every lossy code of `codes` whose streams are not smaller
/// than the tensor's LMC frames ([`code_sizes`]), and returns those tensors with their sizes:
/// after it, no tensor of a snapshot [`write_snapshot`] writes is larger than it would be in the
/// lossless snapshot of the same file.
pub fn drop_larger(
    src: &dyn Source,
    header: &Header,
    codes: &mut [Option<TensorCode>],
) -> Result<Vec<(usize, CodeSizes)>, InshrinkError> {
    let mut dropped = Vec::new();
    for (i, code) in codes.iter_mut().enumerate() {
        let Some(c) = code else { continue };
        if c.quantized.setting == Setting::Exact {
            continue;
        }
        let sizes = code_sizes(src, header, i, c)?;
        if sizes.lossy >= sizes.lossless {
            dropped.push((i, sizes));
            *code = None;
        }
    }
    Ok(dropped)
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
