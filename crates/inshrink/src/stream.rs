//! The encoded form of one tensor, full or as a delta against the previous checkpoint's levels
//! (Inshrinkerator §6's "combined byte stream"), and its decoder.
//!
//! ```text
//! offset  size  field
//! 0       4     magic "INSH"
//! 4       1     version (1)
//! 5       1     kind: 0 full, 1 delta
//! 6       1     dtype: 0 f32, 1 f16, 2 bf16
//! 7       1     flags: bit 0 protected values in bf16 (else original dtype), bit 1 delta
//!               rearranged by source bucket; other bits 0
//! 8       1     layer kind: 0 embedding, 1 attention, 2 linear, 3 norm/bias (informational)
//! 9       1     setting: 0 quantized, 1 exact (every element protected)
//! 10      1     configured bins      ┐
//! 11      1     metric 0/1           │ the configuration chosen (informational; zero when exact)
//! 12      4     prune fraction f32   │
//! 16      4     protect fraction f32 ┘
//! 20      4     achieved relative L2 error f32 (informational)
//! 24      8     element count u64
//! 32      1     k = codebook length (≤ 253), then k × f32 centroids, strictly ascending, finite
//! …       1     (delta only) level count of the base
//! …       var   LEB128 protected count, then that many values in the storage dtype
//! …       var   levels: full: one symbol section ([`crate::delta::encode_symbols`]) of the
//!               levels; delta: [`crate::delta::encode_delta`] against the base's levels
//! ```
//! All multi-byte fields are little-endian. Decoding checks every size against the input before
//! allocating (levels against the caller's expected element count or the base), never panics,
//! and names the field and offset of the first problem in a [`DecodeError`].

use crate::config::{Configuration, Metric, Setting, MAX_BINS};
use crate::delta;
use crate::importance::LayerKind;
use crate::levels::{round_to, ProtectStorage, Quantized, FIRST_BIN, PROTECTED};
use crate::values;
use bitlens_tensors::Dtype;
use thiserror::Error;

/// The stream magic.
pub const MAGIC: [u8; 4] = *b"INSH";
/// The stream version this crate writes and reads.
pub const VERSION: u8 = 1;
const FLAG_BF16: u8 = 1;
const FLAG_REARRANGED: u8 = 2;
const FIXED_HEADER: usize = 33;

/// Why a stream was rejected.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Error)]
pub enum DecodeError {
    /// The input ended inside a field.
    #[error("truncated {what} at offset {offset}: needed {needed} bytes, {available} available")]
    Truncated {
        /// The field or section.
        what: &'static str,
        /// Where it starts.
        offset: u64,
        /// Bytes needed.
        needed: u64,
        /// Bytes left.
        available: u64,
    },
    /// Not an inshrink stream.
    #[error("bad magic {found:02x?}, expected \"INSH\"")]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A version this decoder does not know.
    #[error("unsupported inshrink stream version {version}")]
    UnsupportedVersion {
        /// The version byte.
        version: u8,
    },
    /// A field holds a value the format does not allow.
    #[error("invalid `{field}` = {value} at offset {offset}")]
    BadField {
        /// The field.
        field: &'static str,
        /// Its offset.
        offset: u64,
        /// The value found (bit pattern for floats).
        value: u64,
    },
    /// A count differs from what it must be.
    #[error("{what}: expected {expected}, found {actual}")]
    LengthMismatch {
        /// What was counted.
        what: &'static str,
        /// The required count.
        expected: u64,
        /// The count found.
        actual: u64,
    },
    /// A declared size the input cannot justify.
    #[error("{what} declares {declared}, more than the {bound} the input can hold")]
    TooLarge {
        /// The sized thing.
        what: &'static str,
        /// The declared size.
        declared: u64,
        /// The most the input justifies.
        bound: u64,
    },
    /// A malformed run length.
    #[error("bad run at byte {index} of the run-length section at offset {offset}: {reason}")]
    BadRun {
        /// Offset of the section.
        offset: u64,
        /// Index of the byte within the run-length bytes.
        index: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A level outside the tensor's level count.
    #[error("element {index} has level {level}, but there are only {levels} levels")]
    BadLevel {
        /// The element (or, in a section, the symbol index).
        index: u64,
        /// The level found.
        level: u8,
        /// The level count.
        levels: u8,
    },
    /// A Huffman block was rejected by the coder.
    #[error("Huffman block at offset {offset}: {source}")]
    Huffman {
        /// Offset of the block's kind byte.
        offset: u64,
        /// The coder's error.
        source: bitlens_codecs::DecodeError,
    },
    /// A delta stream without a base, a full stream given one, or the wrong base.
    #[error("base mismatch: {reason}")]
    Base {
        /// What does not match.
        reason: &'static str,
    },
    /// Bytes after the last section.
    #[error("{extra} trailing bytes at offset {offset}")]
    Trailing {
        /// Where they start.
        offset: u64,
        /// How many.
        extra: u64,
    },
}

/// Why a tensor could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// The dtype is not f32, f16 or bf16.
    #[error(transparent)]
    Dtype(#[from] values::ValuesError),
    /// The base has a different element count.
    #[error("base has {base} elements, tensor {tensor}")]
    BaseLength {
        /// Base elements.
        base: u64,
        /// Tensor elements.
        tensor: u64,
    },
    /// More centroids than a stream holds.
    #[error("{0} centroids, at most {MAX_BINS}")]
    TooManyBins(usize),
}

/// Full or delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Levels coded on their own.
    Full,
    /// Levels coded as a delta against a base.
    Delta,
}

/// The decoded header of a stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Full or delta.
    pub kind: StreamKind,
    /// The tensor's dtype.
    pub dtype: Dtype,
    /// How protected values are stored.
    pub storage: ProtectStorage,
    /// Whether the delta is rearranged by source bucket.
    pub rearranged: bool,
    /// The tensor's layer type.
    pub layer: LayerKind,
    /// The setting chosen.
    pub setting: Setting,
    /// The achieved relative L2 error.
    pub error: f32,
    /// Number of elements.
    pub elements: u64,
    /// Centroids, ascending.
    pub codebook: Vec<f32>,
    /// Level count of the base (delta only).
    pub base_levels: Option<u8>,
    /// Number of protected values.
    pub protected: u64,
    /// Offset of the protected values.
    pub protected_at: usize,
}

/// Informational fields written into a stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Meta {
    /// Layer type of the tensor.
    pub layer: LayerKind,
    /// Achieved relative L2 error.
    pub error: f32,
}

fn layer_code(k: LayerKind) -> u8 {
    match k {
        LayerKind::Embedding => 0,
        LayerKind::Attention => 1,
        LayerKind::Linear => 2,
        LayerKind::NormBias => 3,
    }
}

/// Encodes `q`, as a delta against `base` (the previous checkpoint's levels of the same tensor)
/// when given, rearranged by source bucket when `rearranged`.
pub fn encode(
    q: &Quantized,
    meta: &Meta,
    base: Option<&Quantized>,
    rearranged: bool,
) -> Result<Vec<u8>, EncodeError> {
    let code = values::dtype_code(q.dtype)?;
    if q.codebook.len() > usize::from(MAX_BINS) {
        return Err(EncodeError::TooManyBins(q.codebook.len()));
    }
    if let Some(b) = base {
        if b.levels.len() != q.levels.len() {
            return Err(EncodeError::BaseLength {
                base: b.levels.len() as u64,
                tensor: q.levels.len() as u64,
            });
        }
    }
    let storage = q.storage.dtype(q.dtype);
    let mut out = Vec::with_capacity(64 + q.protected.len() * 4 + q.levels.len() / 4);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(u8::from(base.is_some()));
    out.push(code);
    let mut flags = 0;
    if q.storage == ProtectStorage::Bf16 {
        flags |= FLAG_BF16;
    }
    if rearranged && base.is_some() {
        flags |= FLAG_REARRANGED;
    }
    out.push(flags);
    out.push(layer_code(meta.layer));
    let c = match q.setting {
        Setting::Quantized(c) => {
            out.push(0);
            c
        }
        Setting::Exact => {
            out.push(1);
            Configuration {
                bins: 0,
                prune: 0.0,
                metric: Metric::Magnitude,
                protect: 0.0,
            }
        }
    };
    out.push(c.bins);
    out.push(c.metric.code());
    out.extend_from_slice(&c.prune.to_le_bytes());
    out.extend_from_slice(&c.protect.to_le_bytes());
    out.extend_from_slice(&meta.error.to_le_bytes());
    out.extend_from_slice(&(q.levels.len() as u64).to_le_bytes());
    out.push(q.codebook.len() as u8);
    for x in &q.codebook {
        out.extend_from_slice(&x.to_le_bytes());
    }
    if let Some(b) = base {
        out.push(b.level_count());
    }
    delta::put_varint(q.protected.len() as u64, &mut out);
    for &x in &q.protected {
        values::push(x, storage, &mut out);
    }
    match base {
        Some(b) => delta::encode_delta(
            &b.levels,
            b.level_count(),
            &q.levels,
            q.level_count(),
            rearranged,
            &mut out,
        ),
        None => delta::encode_symbols(&q.levels, q.level_count(), &mut out),
    }
    Ok(out)
}

fn take<'a>(
    data: &'a [u8],
    pos: &mut usize,
    n: usize,
    what: &'static str,
) -> Result<&'a [u8], DecodeError> {
    let avail = data.len().saturating_sub(*pos);
    if avail < n {
        return Err(DecodeError::Truncated {
            what,
            offset: *pos as u64,
            needed: n as u64,
            available: avail as u64,
        });
    }
    let s = &data[*pos..*pos + n];
    *pos += n;
    Ok(s)
}

fn f32_at(b: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Reads and checks the header; returns it and the offset of the level section(s).
pub fn read_header(data: &[u8]) -> Result<(Header, usize), DecodeError> {
    let mut pos = 0;
    let h = take(data, &mut pos, FIXED_HEADER, "header")?;
    if h[..4] != MAGIC {
        return Err(DecodeError::BadMagic {
            found: [h[0], h[1], h[2], h[3]],
        });
    }
    if h[4] != VERSION {
        return Err(DecodeError::UnsupportedVersion { version: h[4] });
    }
    let bad = |field, offset: u64, value: u64| DecodeError::BadField {
        field,
        offset,
        value,
    };
    let kind = match h[5] {
        0 => StreamKind::Full,
        1 => StreamKind::Delta,
        v => return Err(bad("kind", 5, u64::from(v))),
    };
    let dtype = values::dtype_of_code(h[6]).ok_or(bad("dtype", 6, u64::from(h[6])))?;
    if h[7] & !(FLAG_BF16 | FLAG_REARRANGED) != 0
        || (kind == StreamKind::Full && h[7] & FLAG_REARRANGED != 0)
    {
        return Err(bad("flags", 7, u64::from(h[7])));
    }
    let layer =
        *LayerKind::ALL
            .get(usize::from(h[8]))
            .ok_or(bad("layer kind", 8, u64::from(h[8])))?;
    let metric = Metric::of_code(h[11]).ok_or(bad("metric", 11, u64::from(h[11])))?;
    let (prune, protect) = (f32_at(h, 12), f32_at(h, 16));
    if !(0.0..1.0).contains(&prune) {
        return Err(bad("prune fraction", 12, u64::from(prune.to_bits())));
    }
    if !(0.0..=1.0).contains(&protect) {
        return Err(bad("protect fraction", 16, u64::from(protect.to_bits())));
    }
    let setting = match h[9] {
        0 => Setting::Quantized(Configuration {
            bins: h[10],
            prune,
            metric,
            protect,
        }),
        1 => Setting::Exact,
        v => return Err(bad("setting", 9, u64::from(v))),
    };
    let error = f32_at(h, 20);
    let elements = u64::from_le_bytes([h[24], h[25], h[26], h[27], h[28], h[29], h[30], h[31]]);
    let k = h[32];
    if k > MAX_BINS || (setting == Setting::Exact && k != 0) {
        return Err(bad("codebook length", 32, u64::from(k)));
    }
    let cb = take(data, &mut pos, usize::from(k) * 4, "codebook")?;
    let codebook: Vec<f32> = (0..usize::from(k)).map(|i| f32_at(cb, 4 * i)).collect();
    for (i, w) in codebook.iter().enumerate() {
        let ok = w.is_finite() && (i == 0 || codebook[i - 1] < *w) && round_to(*w, dtype) == *w;
        if !ok {
            return Err(bad(
                "codebook centroid",
                (FIXED_HEADER + 4 * i) as u64,
                u64::from(w.to_bits()),
            ));
        }
    }
    let base_levels = match kind {
        StreamKind::Delta => {
            let at = pos;
            let b = take(data, &mut pos, 1, "base level count")?[0];
            if !(FIRST_BIN..=MAX_BINS + FIRST_BIN).contains(&b) {
                return Err(bad("base level count", at as u64, u64::from(b)));
            }
            Some(b)
        }
        StreamKind::Full => None,
    };
    let storage = if h[7] & FLAG_BF16 != 0 {
        ProtectStorage::Bf16
    } else {
        ProtectStorage::Original
    };
    let at = pos;
    let protected = delta::get_varint(data, &mut pos, "protected count")?;
    if protected > elements {
        return Err(bad("protected count", at as u64, protected));
    }
    let width =
        values::width(storage.dtype(dtype)).map_err(|_| bad("dtype", 6, u64::from(h[6])))?;
    let bytes = protected.saturating_mul(width as u64);
    let avail = (data.len() - pos) as u64;
    if bytes > avail {
        return Err(DecodeError::Truncated {
            what: "protected values",
            offset: pos as u64,
            needed: bytes,
            available: avail,
        });
    }
    let protected_at = pos;
    pos += bytes as usize;
    let header = Header {
        kind,
        dtype,
        storage,
        rearranged: h[7] & FLAG_REARRANGED != 0,
        layer,
        setting,
        error,
        elements,
        codebook,
        base_levels,
        protected,
        protected_at,
    };
    Ok((header, pos))
}

/// A decoded stream: its header, and the tensor as levels (usable as the next delta's base).
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The header.
    pub header: Header,
    /// Levels, codebook and protected values; [`Quantized::restore_bytes`] gives the tensor.
    pub tensor: Quantized,
}

/// Decodes a stream of `expected_elements` elements (the caller knows the tensor's shape; the
/// stream must agree). A delta stream needs the `base` it was encoded against.
pub fn decode(
    data: &[u8],
    expected_elements: u64,
    base: Option<&Quantized>,
) -> Result<Decoded, DecodeError> {
    let (header, mut pos) = read_header(data)?;
    if header.elements != expected_elements {
        return Err(DecodeError::LengthMismatch {
            what: "element count",
            expected: expected_elements,
            actual: header.elements,
        });
    }
    let n = usize::try_from(header.elements).map_err(|_| DecodeError::TooLarge {
        what: "element count",
        declared: header.elements,
        bound: usize::MAX as u64,
    })?;
    let cur_levels = header.codebook.len() as u8 + FIRST_BIN;
    let levels = match (header.kind, base) {
        (StreamKind::Full, None) => delta::decode_symbols(data, &mut pos, n, cur_levels)?,
        (StreamKind::Delta, Some(b)) => {
            if b.levels.len() != n {
                return Err(DecodeError::Base {
                    reason: "base element count differs",
                });
            }
            if Some(b.level_count()) != header.base_levels {
                return Err(DecodeError::Base {
                    reason: "base level count differs from the one encoded against",
                });
            }
            delta::decode_delta(
                data,
                &mut pos,
                &b.levels,
                b.level_count(),
                cur_levels,
                header.rearranged,
            )?
        }
        (StreamKind::Full, Some(_)) => {
            return Err(DecodeError::Base {
                reason: "full stream given a base",
            })
        }
        (StreamKind::Delta, None) => {
            return Err(DecodeError::Base {
                reason: "delta stream needs its base",
            })
        }
    };
    if pos != data.len() {
        return Err(DecodeError::Trailing {
            offset: pos as u64,
            extra: (data.len() - pos) as u64,
        });
    }
    let count = levels.iter().filter(|&&l| l == PROTECTED).count() as u64;
    if count != header.protected {
        return Err(DecodeError::LengthMismatch {
            what: "protected values",
            expected: count,
            actual: header.protected,
        });
    }
    let sdt = header.storage.dtype(header.dtype);
    let w = values::width(sdt).unwrap_or(4);
    let raw = &data[header.protected_at..header.protected_at + header.protected as usize * w];
    let protected = values::to_f32(raw, sdt).map_err(|_| DecodeError::BadField {
        field: "protected values",
        offset: header.protected_at as u64,
        value: raw.len() as u64,
    })?;
    let tensor = Quantized {
        dtype: header.dtype,
        setting: header.setting,
        storage: header.storage,
        levels,
        codebook: header.codebook.clone(),
        protected,
    };
    Ok(Decoded { header, tensor })
}
