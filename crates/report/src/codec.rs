//! The vocabulary the reports share about codecs: the codec families a user picks from
//! ([`CodecKind`], by the names the CLI's `--codec`, the page and the Python package take) and how
//! far a lossily stored tensor is from its original ([`ErrorReport`], as a snapshot's index stores
//! it — LMC / NeuZip / BitSnap, papers 000, 003, 001).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The codec families a user picks from (serialized by [`CodecKind::name`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CodecKind {
    /// LMC / PLMC (lossless).
    Lmc,
    /// NeuZip: lossless, or lossy with `mantissa_bits` 0, 1 or 3.
    Neuzip,
    /// BitSnap delta against a base (lossless).
    Bitsnap,
    /// BitSnap cluster-based uint8 quantization (lossy).
    BitsnapQuant,
    /// No compression.
    Stored,
    /// Per tensor the smallest lossless encoding of LMC, NeuZip and, with a base, the deltas
    /// (lossless).
    Auto,
}

impl CodecKind {
    /// Every kind, in menu order.
    pub const ALL: [CodecKind; 6] = [
        CodecKind::Lmc,
        CodecKind::Neuzip,
        CodecKind::Bitsnap,
        CodecKind::BitsnapQuant,
        CodecKind::Stored,
        CodecKind::Auto,
    ];

    /// The name the CLI, the page and the Python package use.
    pub fn name(self) -> &'static str {
        match self {
            CodecKind::Lmc => "lmc",
            CodecKind::Neuzip => "neuzip",
            CodecKind::Bitsnap => "bitsnap",
            CodecKind::BitsnapQuant => "bitsnap-quant",
            CodecKind::Stored => "stored",
            CodecKind::Auto => "auto",
        }
    }
}

impl fmt::Display for CodecKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A codec name that is not one of [`CodecKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown codec `{0}`")]
pub struct UnknownCodec(pub String);

impl FromStr for CodecKind {
    type Err = UnknownCodec;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CodecKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownCodec(s.to_owned()))
    }
}

/// How far a lossily stored tensor is from the original: over the finite original values
/// (relative errors over the nonzero ones); a value decoded as NaN / Inf, or a non-finite original
/// not kept, makes the maxima infinite. A snapshot's index stores one per lossy tensor.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct ErrorReport {
    /// Finite values compared.
    pub values: u64,
    /// Mean squared error (squared units of the values).
    pub mse: f64,
    /// Largest absolute error (units of the values).
    pub max_abs: f64,
    /// Largest relative error `|ŵ − w| / |w|` over nonzero `w` (a fraction).
    pub max_rel: f64,
    /// Mean relative error (a fraction).
    pub mean_rel: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_as_the_cli_names_them_and_parse_back() {
        for k in CodecKind::ALL {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.name())
            );
            assert_eq!(k.name().parse::<CodecKind>(), Ok(k));
        }
        assert_eq!(
            "zip".parse::<CodecKind>().unwrap_err().to_string(),
            "unknown codec `zip`"
        );
    }
}
