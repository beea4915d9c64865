//! The codec panel's choices and names: the presets the page offers, the compression options and
//! the codecs a comparison times (as [`bitlens_protocol`] types, the worker's own), and the file
//! names of snapshots and restored files. The results the worker returns are the protocol's types,
//! re-exported here.

pub use bitlens_protocol::inshrink::InshrinkOptions;
pub use bitlens_protocol::{
    Choice, CodecKind, ComparedCodec, CompressOptions, Compressed, Contender, EntryInfo,
    ErrorReport, PeerCodec, Roundtrip, RoundtripRow, SnapshotInfo,
};
pub use bitlens_report::inshrink::{InshrinkInfo, TensorPlan};
use std::collections::BTreeMap;

/// A codec preset of the page: id (value of the `<select>`), label, choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// Stable id used in the page (`lmc`, `neuzip-k3`, ...).
    pub id: &'static str,
    /// What the user reads.
    pub label: &'static str,
    /// The codec choice it stands for.
    pub choice: Choice,
    /// Needs a base checkpoint.
    pub needs_base: bool,
    /// Stores values lossily.
    pub lossy: bool,
    /// Inshrinkerator: the whole checkpoint searched under an error budget (float tensors; the
    /// others take `choice`, LMC). Not a per-tensor choice.
    pub inshrink: bool,
}

const fn preset(
    id: &'static str,
    label: &'static str,
    choice: Choice,
    needs_base: bool,
    lossy: bool,
) -> Preset {
    Preset {
        id,
        label,
        choice,
        needs_base,
        lossy,
        inshrink: false,
    }
}

/// The error budget the Inshrinkerator preset starts with (per-tensor relative L2 error).
pub const DEFAULT_MAX_ERROR: f64 = 0.1;

/// Every preset, the default (LMC) first.
pub const PRESETS: [Preset; 10] = [
    preset(
        "lmc",
        "LMC (lossless)",
        Choice::new(CodecKind::Lmc),
        false,
        false,
    ),
    preset(
        "auto",
        "Auto: smallest lossless codec per tensor",
        Choice::new(CodecKind::Auto),
        false,
        false,
    ),
    preset(
        "neuzip",
        "NeuZip (lossless)",
        Choice::new(CodecKind::Neuzip),
        false,
        false,
    ),
    preset(
        "neuzip-k3",
        "NeuZip lossy, 3 mantissa bits",
        Choice::neuzip(3),
        false,
        true,
    ),
    preset(
        "neuzip-k1",
        "NeuZip lossy, 1 mantissa bit",
        Choice::neuzip(1),
        false,
        true,
    ),
    preset(
        "neuzip-k0",
        "NeuZip lossy, 0 mantissa bits",
        Choice::neuzip(0),
        false,
        true,
    ),
    preset(
        "bitsnap-quant",
        "BitSnap quantized (lossy)",
        Choice::new(CodecKind::BitsnapQuant),
        false,
        true,
    ),
    preset(
        "stored",
        "Stored (no compression)",
        Choice::new(CodecKind::Stored),
        false,
        false,
    ),
    preset(
        "bitsnap",
        "BitSnap delta (needs a base)",
        Choice::new(CodecKind::Bitsnap),
        true,
        false,
    ),
    Preset {
        id: "inshrink",
        label: "Inshrinkerator (lossy, error budget)",
        choice: Choice::new(CodecKind::Lmc),
        needs_base: false,
        lossy: true,
        inshrink: true,
    },
];

/// The preset with this id.
pub fn preset_by_id(id: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.id == id)
}

/// The options of a compression: one preset for the file, per-tensor overrides; for the
/// Inshrinkerator preset, its error budget `max_error` (and no overrides: it plans the whole file).
pub fn options(
    whole: &Preset,
    overrides: &BTreeMap<String, &'static Preset>,
    max_error: f64,
) -> CompressOptions {
    if whole.inshrink {
        return CompressOptions {
            whole: whole.choice,
            overrides: BTreeMap::new(),
            inshrink: Some(InshrinkOptions { max_error }),
        };
    }
    if whole.choice.codec == CodecKind::Auto {
        // Auto chooses every tensor's codec itself.
        return CompressOptions {
            whole: whole.choice,
            overrides: BTreeMap::new(),
            inshrink: None,
        };
    }
    CompressOptions {
        whole: whole.choice,
        overrides: overrides
            .iter()
            .map(|(k, p)| (k.clone(), p.choice))
            .collect(),
        inshrink: None,
    }
}

/// The presets a single tensor can take (Detail's override): all but the whole-file ones
/// (Inshrinkerator, auto).
pub fn tensor_presets() -> impl Iterator<Item = &'static Preset> {
    PRESETS
        .iter()
        .filter(|p| !p.inshrink && p.choice.codec != CodecKind::Auto)
}

/// Inshrink tensors by achieved relative L2 error, largest first.
pub fn by_error(info: &InshrinkInfo) -> Vec<(&str, &TensorPlan)> {
    let mut rows: Vec<(&str, &TensorPlan)> =
        info.tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    rows.sort_by(|a, b| b.1.error.total_cmp(&a.1.error).then(a.0.cmp(b.0)));
    rows
}

/// The codecs the comparison panel runs on a tensor, with their labels: bitlens' own, and the
/// pure-Rust peers compiled into the module.
pub const COMPARISON: [(&str, Contender); 10] = [
    (
        "bitlens LMC",
        Contender::Bitlens(Choice::new(CodecKind::Lmc)),
    ),
    (
        "NeuZip lossless",
        Contender::Bitlens(Choice::new(CodecKind::Neuzip)),
    ),
    ("NeuZip k=3", Contender::Bitlens(Choice::neuzip(3))),
    ("NeuZip k=1", Contender::Bitlens(Choice::neuzip(1))),
    ("NeuZip k=0", Contender::Bitlens(Choice::neuzip(0))),
    (
        "BitSnap quantized",
        Contender::Bitlens(Choice::new(CodecKind::BitsnapQuant)),
    ),
    ("lz4_flex", Contender::Peer(PeerCodec::Lz4)),
    (
        "deflate (miniz_oxide, level 6)",
        Contender::Peer(PeerCodec::Deflate),
    ),
    ("zstd (ruzstd, fastest)", Contender::Peer(PeerCodec::Zstd)),
    (
        "bg4-lz4 (the hub's Xet chunks)",
        Contender::Peer(PeerCodec::Bg4Lz4),
    ),
];

/// [`COMPARISON`] as the worker takes it.
pub fn comparison() -> Vec<ComparedCodec> {
    COMPARISON
        .iter()
        .map(|(label, codec)| ComparedCodec {
            label: (*label).to_owned(),
            codec: *codec,
        })
        .collect()
}

/// The file-name rules the CLI shares: a path's last component, a snapshot's name for a checkpoint
/// file and the file it restores, and which base file serves a file.
pub use bitlens_tensors::naming::{base_file, file_name, restored_name, snapshot_name};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_with_overrides() {
        let mut o = BTreeMap::new();
        o.insert("a.weight".to_owned(), preset_by_id("neuzip-k3").unwrap());
        let json = serde_json::to_string(&options(preset_by_id("lmc").unwrap(), &o, 0.1)).unwrap();
        assert_eq!(
            json,
            r#"{"codec":"lmc","mantissa_bits":null,"overrides":{"a.weight":{"codec":"neuzip","mantissa_bits":3}}}"#
        );
    }

    #[test]
    fn the_inshrink_preset_sends_its_budget_and_no_overrides() {
        let mut o = BTreeMap::new();
        o.insert("a.weight".to_owned(), preset_by_id("neuzip-k3").unwrap());
        let p = preset_by_id("inshrink").unwrap();
        let opts = options(p, &o, 0.05);
        assert_eq!(opts.inshrink.map(|i| i.max_error), Some(0.05));
        assert!(opts.overrides.is_empty());
        // Neither the Inshrinkerator search nor auto (a choice per tensor already) is offered
        // as a tensor's override.
        assert!(tensor_presets().all(|p| !p.inshrink && p.choice.codec != CodecKind::Auto));
        assert_eq!(tensor_presets().count(), PRESETS.len() - 2);
    }

    #[test]
    fn lossy_presets_take_no_base() {
        assert!(PRESETS.iter().filter(|p| p.lossy).all(|p| !p.needs_base));
        assert_eq!(comparison().len(), COMPARISON.len());
    }
}
