//! Per-tensor codecs of the container: their ids, parameters, and frame encode / decode.
//!
//! A codec turns one frame (a slice of a tensor's bytes, or of its XOR with the base) into a
//! self-contained payload and back. Ids are part of the format (docs/FORMAT.md); new codecs take new
//! ids and never change the meaning of an old one.

use crate::error::SnapshotError;
use bitlens_codecs::{DecodeError, Options, Width};

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
}

/// Codec id of [`Codec::Stored`].
pub const STORED: u8 = 0;
/// Codec id of [`Codec::Lmc`].
pub const LMC: u8 = 1;

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
        }
    }

    /// The name used by the CLI and the page.
    pub fn name(&self) -> &'static str {
        match self {
            Codec::Stored => "stored",
            Codec::Lmc { .. } => "lmc",
        }
    }

    /// True when decoding does not reproduce the input exactly.
    pub fn is_lossy(&self) -> bool {
        false
    }

    /// The parameter bytes stored in the index.
    pub fn params(&self) -> Vec<u8> {
        match self {
            Codec::Stored => Vec::new(),
            Codec::Lmc { width } => vec![width.bytes() as u8],
        }
    }

    /// Rebuilds a codec from its id and parameter bytes.
    pub fn from_parts(tensor: &str, id: u8, params: &[u8]) -> Result<Codec, SnapshotError> {
        let bad = |reason: String| SnapshotError::BadCodecParams {
            tensor: tensor.to_owned(),
            reason,
        };
        match id {
            STORED if params.is_empty() => Ok(Codec::Stored),
            STORED => Err(bad(format!(
                "stored takes no parameters, found {}",
                params.len()
            ))),
            LMC => match params {
                [w] => Width::from_bytes(*w as usize)
                    .map(|width| Codec::Lmc { width })
                    .ok_or_else(|| bad(format!("lmc width {w} is not 1, 2, 4 or 8"))),
                _ => Err(bad(format!(
                    "lmc takes 1 parameter byte, found {}",
                    params.len()
                ))),
            },
            _ => Err(SnapshotError::UnknownCodec {
                tensor: tensor.to_owned(),
                id,
            }),
        }
    }

    /// Encodes one frame into `out` (cleared first).
    pub fn encode_frame(&self, raw: &[u8], out: &mut Vec<u8>) {
        out.clear();
        match self {
            Codec::Stored => out.extend_from_slice(raw),
            Codec::Lmc { width } => {
                bitlens_codecs::encode_into(raw, *width, &Options::default(), out)
            }
        }
    }

    /// Decodes one frame of `raw_len` original bytes. The declared length is checked against what
    /// the payload can justify before any output buffer is allocated.
    pub fn decode_frame(&self, payload: &[u8], raw_len: usize) -> Result<Vec<u8>, DecodeError> {
        match self {
            Codec::Stored => {
                if payload.len() != raw_len {
                    return Err(DecodeError::LengthMismatch {
                        expected: raw_len as u64,
                        actual: payload.len() as u64,
                    });
                }
                Ok(payload.to_vec())
            }
            Codec::Lmc { .. } => bitlens_codecs::decode(payload, raw_len),
        }
    }
}
