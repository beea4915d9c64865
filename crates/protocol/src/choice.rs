//! Codec choices as the page sends them: a codec family (the core's [`CodecKind`], by the names
//! the CLI's `--codec` takes) with NeuZip's kept mantissa bits ([`Choice`]), the options of a compression ([`CompressOptions`]: one choice for the file and
//! per-tensor overrides), and the codecs a comparison times on one tensor ([`ComparedCodec`]).

pub use bitlens_report::CodecKind;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One codec choice: a family and, for NeuZip, the kept mantissa bits (lossy when below the
/// format's; `None` keeps them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// Codec family.
    pub codec: CodecKind,
    /// NeuZip kept mantissa bits.
    #[serde(default)]
    pub mantissa_bits: Option<u32>,
}

impl Choice {
    /// A family with its defaults.
    pub const fn new(codec: CodecKind) -> Self {
        Choice {
            codec,
            mantissa_bits: None,
        }
    }

    /// Lossy NeuZip keeping `mantissa_bits` bits.
    pub const fn neuzip(mantissa_bits: u32) -> Self {
        Choice {
            codec: CodecKind::Neuzip,
            mantissa_bits: Some(mantissa_bits),
        }
    }
}

/// The options of a compression: one choice for the whole file (its fields inline:
/// `{codec, mantissa_bits, overrides}`) and per-tensor overrides by tensor name; or, with
/// `inshrink`, the Inshrinkerator search under an error budget (float tensors; the others take
/// the whole-file choice's codec, LMC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompressOptions {
    /// The choice for every tensor without an override.
    #[serde(flatten)]
    pub whole: Choice,
    /// Per-tensor choices.
    #[serde(default)]
    pub overrides: BTreeMap<String, Choice>,
    /// Compress with Inshrinkerator (paper 002) instead: the whole file searched under this
    /// budget (no per-tensor overrides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inshrink: Option<crate::inshrink::InshrinkOptions>,
}

impl CompressOptions {
    /// The choice for a tensor: its override, else the whole file's.
    pub fn choice_for(&self, tensor: &str) -> &Choice {
        self.overrides.get(tensor).unwrap_or(&self.whole)
    }
}

/// A pure-Rust peer codec compiled into the worker's module, timed next to bitlens' codecs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PeerCodec {
    /// lz4_flex, block format.
    Lz4,
    /// miniz_oxide deflate, level 6.
    Deflate,
    /// ruzstd at its fastest level (the only one it implements).
    Zstd,
    /// The Hugging Face hub's Xet scheme (`bitlens_peers::xet`): ~64 KiB content-defined chunks,
    /// each stored as it is, as LZ4 or byte-grouped by 4 then LZ4.
    Bg4Lz4,
}

impl PeerCodec {
    /// The name its results carry (`lz4_flex`, `deflate`, `zstd`, `bg4-lz4`).
    pub const fn name(self) -> &'static str {
        match self {
            PeerCodec::Lz4 => "lz4_flex",
            PeerCodec::Deflate => "deflate",
            PeerCodec::Zstd => "zstd",
            PeerCodec::Bg4Lz4 => "bg4-lz4",
        }
    }
}

/// A codec a comparison times: one of bitlens' own, or a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Contender {
    /// A bitlens codec choice, frame by frame as in a snapshot.
    Bitlens(Choice),
    /// A peer codec, the whole tensor as one block.
    Peer(PeerCodec),
}

/// One codec of a comparison and what the page calls it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComparedCodec {
    /// The label of its row.
    pub label: String,
    /// The codec.
    pub codec: Contender,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_take_the_kinds_by_the_names_the_cli_takes() {
        let c: Choice = serde_json::from_str(r#"{"codec":"bitsnap-quant"}"#).unwrap();
        assert_eq!(c, Choice::new(CodecKind::BitsnapQuant));
        assert!(serde_json::from_str::<Choice>(r#"{"codec":"zip"}"#).is_err());
    }

    #[test]
    fn options_inline_the_whole_file_choice() {
        let mut o = CompressOptions {
            whole: Choice::new(CodecKind::Lmc),
            overrides: BTreeMap::new(),
            inshrink: None,
        };
        o.overrides.insert("a".into(), Choice::neuzip(1));
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(
            json,
            r#"{"codec":"lmc","mantissa_bits":null,"overrides":{"a":{"codec":"neuzip","mantissa_bits":1}}}"#
        );
        assert_eq!(serde_json::from_str::<CompressOptions>(&json).unwrap(), o);
        let short: CompressOptions = serde_json::from_str(r#"{"codec":"stored"}"#).unwrap();
        assert!(short.overrides.is_empty());
        assert_eq!(o.choice_for("a").mantissa_bits, Some(1));
        assert_eq!(o.choice_for("b").codec, CodecKind::Lmc);
        // The hub's scheme goes by the name the CLI's `--codecs` takes.
        assert_eq!(
            serde_json::to_string(&PeerCodec::Bg4Lz4).unwrap(),
            format!("\"{}\"", PeerCodec::Bg4Lz4.name())
        );
        let ins: CompressOptions =
            serde_json::from_str(r#"{"codec":"lmc","inshrink":{"max_error":0.1}}"#).unwrap();
        assert_eq!(ins.inshrink.map(|i| i.max_error), Some(0.1));
    }
}
