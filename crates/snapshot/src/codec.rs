//! Per-tensor codecs of the container: their ids, parameters, and frame encode / decode.
//!
//! A codec turns one frame (a slice of a tensor's bytes) into a self-contained payload and back.
//! Delta frames carry the base tensor's bytes at the same position: the XOR-based codecs (stored,
//! LMC, NeuZip) code `frame XOR base`; BitSnap's delta codes the changed elements directly. Ids are
//! part of the format (docs/FORMAT.md); new codecs take new ids and never change an old one.
//!
//! Inshrinkerator (id 5) is the exception to "a frame from its bytes": its streams come from a
//! search over the whole checkpoint and may be deltas against the previous snapshot's levels, so
//! [`crate::inshrink`] encodes them and hands the payloads to the writer. A full stream decodes
//! here like any frame; a delta stream needs its chain ([`crate::inshrink::decode_levels`]).

use crate::error::{FrameError, SnapshotError};
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::neuzip;
use bitlens_codecs::{bitsnap, DecodeError, Options, Width};

/// A codec with its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Codec {
    /// Bytes stored as they are (id 0, no parameters).
    Stored,
    /// LMC / PLMC: byte grouping + block-adaptive Huffman + runs (id 1; parameter: element width).
    Lmc {
        /// Element width used for byte grouping.
        width: Width,
    },
    /// NeuZip: rANS-coded exponents + packed sign / mantissa (id 2; lossy when `mantissa_bits` is
    /// below the format's).
    NeuZip(neuzip::Settings),
    /// BitSnap delta: bitmask of changed elements + their new values (id 3; lossless; needs a base).
    BitSnapDelta {
        /// Element width.
        width: Width,
        /// Entropy-code the value stream with PLMC.
        entropy_coded: bool,
    },
    /// BitSnap cluster-based uint8 quantization (id 4; lossy).
    BitSnapQuant {
        /// Float format of the values.
        format: FloatFormat,
        /// Number of clusters, 1..=16.
        clusters: bitsnap::Clusters,
    },
    /// Inshrinkerator: prune / protect / non-uniform quantization chosen under a quality budget
    /// (id 5; lossy; parameter: the float format).
    Inshrink {
        /// Float format of the values.
        format: FloatFormat,
    },
}

/// Codec id of [`Codec::Stored`].
pub const STORED: u8 = 0;
/// Codec id of [`Codec::Lmc`].
pub const LMC: u8 = 1;
/// Codec id of [`Codec::NeuZip`].
pub const NEUZIP: u8 = 2;
/// Codec id of [`Codec::BitSnapDelta`].
pub const BITSNAP_DELTA: u8 = 3;
/// Codec id of [`Codec::BitSnapQuant`].
pub const BITSNAP_QUANT: u8 = 4;
/// Codec id of [`Codec::Inshrink`].
pub const INSHRINK: u8 = 5;

/// The dtype of a float format.
pub fn format_dtype(format: FloatFormat) -> bitlens_tensors::Dtype {
    match format {
        FloatFormat::Bf16 => bitlens_tensors::Dtype::BF16,
        FloatFormat::F16 => bitlens_tensors::Dtype::F16,
        FloatFormat::F32 => bitlens_tensors::Dtype::F32,
    }
}

impl Codec {
    /// LMC grouping bytes by the given element width in bytes (1, 2, 4 or 8; anything else is
    /// treated as 1, i.e. no grouping).
    pub fn lmc_for_width(bytes: usize) -> Codec {
        Codec::Lmc {
            width: Width::from_bytes(bytes).unwrap_or(Width::W1),
        }
    }

    /// The codec's id in the container.
    pub fn id(&self) -> u8 {
        match self {
            Codec::Stored => STORED,
            Codec::Lmc { .. } => LMC,
            Codec::NeuZip(_) => NEUZIP,
            Codec::BitSnapDelta { .. } => BITSNAP_DELTA,
            Codec::BitSnapQuant { .. } => BITSNAP_QUANT,
            Codec::Inshrink { .. } => INSHRINK,
        }
    }

    /// The name used by the CLI and the page.
    pub fn name(&self) -> &'static str {
        match self {
            Codec::Stored => "stored",
            Codec::Lmc { .. } => "lmc",
            Codec::NeuZip(s) if s.is_lossy() => "neuzip-lossy",
            Codec::NeuZip(_) => "neuzip",
            Codec::BitSnapDelta { .. } => "bitsnap",
            Codec::BitSnapQuant { .. } => "bitsnap-quant",
            Codec::Inshrink { .. } => "inshrink",
        }
    }

    /// True when decoding does not reproduce the input exactly.
    pub fn is_lossy(&self) -> bool {
        match self {
            Codec::NeuZip(s) => s.is_lossy(),
            Codec::BitSnapQuant { .. } | Codec::Inshrink { .. } => true,
            _ => false,
        }
    }

    /// The float format whose values a lossy codec approximates (for error reports).
    pub fn value_format(&self) -> Option<FloatFormat> {
        match self {
            Codec::NeuZip(s) => Some(s.format()),
            Codec::BitSnapQuant { format, .. } | Codec::Inshrink { format } => Some(*format),
            _ => None,
        }
    }

    /// The parameter bytes stored in the index.
    pub fn params(&self) -> Vec<u8> {
        match self {
            Codec::Stored => Vec::new(),
            Codec::Lmc { width } => vec![width.bytes() as u8],
            Codec::NeuZip(s) => vec![
                s.format().code(),
                s.mantissa_bits() as u8,
                if s.is_lossy() {
                    s.norm_block().trailing_zeros() as u8
                } else {
                    0
                },
            ],
            Codec::BitSnapDelta {
                width,
                entropy_coded,
            } => vec![width.bytes() as u8, u8::from(*entropy_coded)],
            Codec::BitSnapQuant { format, clusters } => {
                vec![format.code(), clusters.get() as u8]
            }
            Codec::Inshrink { format } => vec![format.code()],
        }
    }

    /// Rebuilds a codec from its id and parameter bytes.
    pub fn from_parts(tensor: &str, id: u8, params: &[u8]) -> Result<Codec, SnapshotError> {
        let bad = |reason: String| SnapshotError::BadCodecParams {
            tensor: tensor.to_owned(),
            reason,
        };
        let codec = match (id, params) {
            (STORED, []) => Codec::Stored,
            (LMC, [w]) => Codec::Lmc {
                width: Width::from_bytes(usize::from(*w))
                    .ok_or_else(|| bad(format!("lmc width {w} is not 1, 2, 4 or 8")))?,
            },
            (NEUZIP, [f, k, log_b]) => {
                let format =
                    FloatFormat::from_code(*f).ok_or_else(|| bad(format!("neuzip format {f}")))?;
                let norm_block = if *log_b == 0 {
                    0
                } else {
                    1usize << (*log_b).min(31)
                };
                let settings = neuzip::Settings::new(format, u32::from(*k), norm_block)
                    .map_err(|e| bad(e.to_string()))?;
                Codec::NeuZip(settings)
            }
            (BITSNAP_DELTA, [w, coded]) if [1, 2, 4, 8].contains(w) && *coded <= 1 => {
                Codec::BitSnapDelta {
                    width: Width::from_bytes(usize::from(*w))
                        .ok_or_else(|| bad(format!("bitsnap width {w}")))?,
                    entropy_coded: *coded == 1,
                }
            }
            (BITSNAP_QUANT, [f, c]) if (1..=16).contains(c) => Codec::BitSnapQuant {
                format: FloatFormat::from_code(*f)
                    .ok_or_else(|| bad(format!("bitsnap format {f}")))?,
                clusters: bitsnap::Clusters::new(usize::from(*c))
                    .map_err(|e| bad(e.to_string()))?,
            },
            (INSHRINK, [f]) => Codec::Inshrink {
                format: FloatFormat::from_code(*f)
                    .ok_or_else(|| bad(format!("inshrink format {f}")))?,
            },
            (STORED | LMC | NEUZIP | BITSNAP_DELTA | BITSNAP_QUANT | INSHRINK, _) => {
                return Err(bad(format!(
                    "codec {id}: parameters {params:?} are invalid"
                )))
            }
            _ => {
                return Err(SnapshotError::UnknownCodec {
                    tensor: tensor.to_owned(),
                    id,
                })
            }
        };
        Ok(codec)
    }

    /// Encodes one frame into `out` (cleared first); `base` holds the base tensor's bytes at the
    /// same position for delta frames.
    pub fn encode_frame(&self, raw: &[u8], base: Option<&[u8]>, out: &mut Vec<u8>) {
        self.encode_frame_with(raw, base, out, &mut Vec::new());
    }

    /// [`Codec::encode_frame`] with a caller-owned scratch buffer for the XOR of delta frames, so
    /// that repeated calls allocate nothing.
    pub fn encode_frame_with(
        &self,
        raw: &[u8],
        base: Option<&[u8]>,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
    ) {
        out.clear();
        if let Codec::BitSnapDelta {
            width,
            entropy_coded,
        } = self
        {
            let base = match base {
                Some(b) => b,
                None => {
                    scratch.clear();
                    scratch.resize(raw.len(), 0);
                    &scratch[..]
                }
            };
            out.extend(bitsnap::encode_delta(raw, base, *width, *entropy_coded));
            return;
        }
        let input = match base {
            Some(b) => {
                scratch.clear();
                scratch.extend(raw.iter().zip(b).map(|(a, b)| a ^ b));
                &scratch[..]
            }
            None => raw,
        };
        match self {
            Codec::Stored => out.extend_from_slice(input),
            Codec::Lmc { width } => {
                bitlens_codecs::encode_into(input, *width, &Options::default(), out)
            }
            Codec::NeuZip(s) => out.extend(neuzip::encode(input, s)),
            Codec::BitSnapQuant { format, clusters } => {
                out.extend(bitsnap::encode_quant(input, *format, *clusters))
            }
            Codec::Inshrink { format } => crate::inshrink::encode_exact(input, *format, out),
            Codec::BitSnapDelta { .. } => unreachable!("handled above"),
        }
    }

    /// Decodes one frame of `raw_len` bytes (XORing or merging with `base` for delta frames). The
    /// declared length is checked against what the payload can justify before allocating.
    pub fn decode_frame(
        &self,
        payload: &[u8],
        raw_len: usize,
        base: Option<&[u8]>,
    ) -> Result<Vec<u8>, FrameError> {
        let mut out = Vec::new();
        self.decode_frame_into(payload, raw_len, base, &mut out)?;
        Ok(out)
    }

    /// [`Codec::decode_frame_into`] into a buffer that only grows: LMC frames (and stored ones)
    /// are decoded in place, every other codec fills it as a `Vec`.
    pub(crate) fn decode_frame_to(
        &self,
        payload: &[u8],
        raw_len: usize,
        base: Option<&[u8]>,
        out: &mut crate::pipeline::GrowBuf,
    ) -> Result<(), FrameError> {
        let o = match self {
            Codec::Lmc { .. } => {
                bitlens_codecs::plmc::check(payload, raw_len)?;
                let o = out.ready(raw_len);
                bitlens_codecs::decode_into(payload, o)?;
                o
            }
            Codec::Stored if payload.len() == raw_len => {
                let o = out.ready(raw_len);
                o.copy_from_slice(payload);
                o
            }
            _ => return out.with_vec(|v| self.decode_frame_into(payload, raw_len, base, v)),
        };
        if let Some(b) = base {
            for (o, b) in o.iter_mut().zip(b) {
                *o ^= b;
            }
        }
        Ok(())
    }

    /// [`Codec::decode_frame`] into a reused buffer: on success `out` holds exactly the frame's
    /// `raw_len` bytes. `out` grows only after the payload has been checked to justify `raw_len`
    /// bytes, and keeps its capacity between calls (no fresh pages for every frame).
    pub fn decode_frame_into(
        &self,
        payload: &[u8],
        raw_len: usize,
        base: Option<&[u8]>,
        out: &mut Vec<u8>,
    ) -> Result<(), FrameError> {
        if let Codec::BitSnapDelta { .. } = self {
            *out = match base {
                Some(b) => bitsnap::decode_delta(payload, b)?,
                None => {
                    let v = bitsnap::decode_delta(
                        payload,
                        &vec![0u8; raw_len.min(payload.len() * 64)],
                    )?;
                    if v.len() != raw_len {
                        return Err(DecodeError::LengthMismatch {
                            expected: raw_len as u64,
                            actual: v.len() as u64,
                        }
                        .into());
                    }
                    v
                }
            };
            return Ok(());
        }
        match self {
            Codec::Stored => {
                if payload.len() != raw_len {
                    return Err(DecodeError::LengthMismatch {
                        expected: raw_len as u64,
                        actual: payload.len() as u64,
                    }
                    .into());
                }
                out.clear();
                out.extend_from_slice(payload);
            }
            Codec::Lmc { .. } => {
                bitlens_codecs::plmc::check(payload, raw_len)?;
                out.resize(raw_len, 0);
                bitlens_codecs::decode_into(payload, out)?;
            }
            Codec::NeuZip(_) => neuzip::decode_into_vec(payload, raw_len, out)?,
            Codec::BitSnapQuant { .. } => *out = bitsnap::decode_quant(payload, raw_len)?,
            Codec::Inshrink { format } => {
                crate::inshrink::decode_full(payload, raw_len, *format, out)?
            }
            Codec::BitSnapDelta { .. } => unreachable!("handled above"),
        }
        if let Some(b) = base {
            for (o, b) in out.iter_mut().zip(b) {
                *o ^= b;
            }
        }
        Ok(())
    }
}
