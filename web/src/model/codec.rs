//! Codec choices and results of the codec panel: the presets the page offers, the options JSON the
//! worker's `compressSnapshot` takes, and the JSON documents it returns (snapshot entries, snapshot
//! index, codec round trips on one tensor).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One codec choice as the wasm API takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// Codec family (`lmc`, `neuzip`, `bitsnap`, `bitsnap-quant`, `stored`).
    pub codec: String,
    /// NeuZip kept mantissa bits (lossy when below the format's).
    pub mantissa_bits: Option<u32>,
}

/// A codec preset of the page: id (value of the `<select>`), label, choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Preset {
    /// Stable id used in the page (`lmc`, `neuzip-k3`, ...).
    pub id: &'static str,
    /// What the user reads.
    pub label: &'static str,
    /// Codec family.
    pub codec: &'static str,
    /// NeuZip kept mantissa bits.
    pub mantissa_bits: Option<u32>,
    /// Needs a base checkpoint.
    pub needs_base: bool,
    /// Stores values lossily.
    pub lossy: bool,
}

impl Preset {
    /// The choice this preset stands for.
    pub fn choice(&self) -> Choice {
        Choice {
            codec: self.codec.to_owned(),
            mantissa_bits: self.mantissa_bits,
        }
    }
}

const fn preset(
    id: &'static str,
    label: &'static str,
    codec: &'static str,
    mantissa_bits: Option<u32>,
    needs_base: bool,
    lossy: bool,
) -> Preset {
    Preset {
        id,
        label,
        codec,
        mantissa_bits,
        needs_base,
        lossy,
    }
}

/// Every preset, the default (LMC) first.
pub const PRESETS: [Preset; 8] = [
    preset("lmc", "LMC (lossless)", "lmc", None, false, false),
    preset("neuzip", "NeuZip (lossless)", "neuzip", None, false, false),
    preset(
        "neuzip-k3",
        "NeuZip lossy, 3 mantissa bits",
        "neuzip",
        Some(3),
        false,
        true,
    ),
    preset(
        "neuzip-k1",
        "NeuZip lossy, 1 mantissa bit",
        "neuzip",
        Some(1),
        false,
        true,
    ),
    preset(
        "neuzip-k0",
        "NeuZip lossy, 0 mantissa bits",
        "neuzip",
        Some(0),
        false,
        true,
    ),
    preset(
        "bitsnap-quant",
        "BitSnap quantized (lossy)",
        "bitsnap-quant",
        None,
        false,
        true,
    ),
    preset(
        "stored",
        "Stored (no compression)",
        "stored",
        None,
        false,
        false,
    ),
    preset(
        "bitsnap",
        "BitSnap delta (needs a base)",
        "bitsnap",
        None,
        true,
        false,
    ),
];

/// The preset with this id.
pub fn preset_by_id(id: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.id == id)
}

/// The options JSON of `compressSnapshot`: one choice for the file, per-tensor overrides.
pub fn options_json(whole: &Preset, overrides: &BTreeMap<String, &'static Preset>) -> String {
    #[derive(Serialize)]
    struct Options<'a> {
        codec: &'a str,
        mantissa_bits: Option<u32>,
        overrides: BTreeMap<&'a str, Choice>,
    }
    serde_json::to_string(&Options {
        codec: whole.codec,
        mantissa_bits: whole.mantissa_bits,
        overrides: overrides
            .iter()
            .map(|(k, p)| (k.as_str(), p.choice()))
            .collect(),
    })
    .expect("plain data serializes")
}

/// Error of a lossily stored tensor against the original. An infinite error (a value decoded as
/// NaN / Inf, see `bitlens_snapshot::ErrorStats`) arrives as JSON `null` and reads as infinity.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct ValueError {
    /// Finite values compared.
    pub values: u64,
    /// Mean squared error.
    #[serde(deserialize_with = "infinite_if_null")]
    pub mse: f64,
    /// Largest absolute error.
    #[serde(deserialize_with = "infinite_if_null")]
    pub max_abs: f64,
    /// Largest relative error.
    #[serde(deserialize_with = "infinite_if_null")]
    pub max_rel: f64,
    /// Mean relative error.
    #[serde(deserialize_with = "infinite_if_null")]
    pub mean_rel: f64,
}

/// A number, or infinity for the `null` JSON writes for a non-finite one.
fn infinite_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

/// One tensor of a snapshot.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct EntryInfo {
    /// Tensor name.
    pub name: String,
    /// Codec name.
    pub codec: String,
    /// Stored lossily.
    pub lossy: bool,
    /// Stored as an XOR delta against the base.
    pub delta: bool,
    /// Original bytes.
    pub bytes: u64,
    /// Bytes in the snapshot.
    pub stored_bytes: u64,
    /// `stored_bytes / bytes`.
    pub ratio: f64,
    /// Error of lossy tensors.
    pub error: Option<ValueError>,
}

/// What `compressSnapshot` returns.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Compressed {
    /// Input bytes.
    pub in_bytes: u64,
    /// Snapshot bytes.
    pub out_bytes: u64,
    /// Some tensor is lossy.
    pub lossy: bool,
    /// Some tensor is a delta.
    pub delta: bool,
    /// Per tensor, in file order.
    pub entries: Vec<EntryInfo>,
}

/// What `openSnapshot` returns.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SnapshotInfo {
    /// Snapshot size.
    pub size: u64,
    /// Size of the original file.
    pub original_size: u64,
    /// Some tensor is lossy.
    pub lossy: bool,
    /// A delta against a base checkpoint.
    pub delta: bool,
    /// Size of the base file, for deltas.
    pub base_file_size: Option<u64>,
    /// Per tensor.
    pub entries: Vec<EntryInfo>,
}

/// One codec run on one tensor (`codecRoundtrip`, or a peer codec).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct RoundtripRow {
    /// What the page calls it.
    pub label: String,
    /// Codec name.
    pub codec: String,
    /// Lossy.
    pub lossy: bool,
    /// Original bytes.
    pub bytes: u64,
    /// Compressed bytes.
    pub stored_bytes: u64,
    /// `stored_bytes / bytes`.
    pub ratio: f64,
    /// Seconds to compress.
    pub encode_seconds: f64,
    /// Seconds to decompress.
    pub decode_seconds: f64,
    /// Error of lossy codecs.
    pub error: Option<ValueError>,
}

impl RoundtripRow {
    /// Compression speed in MB/s (decimal).
    pub fn encode_mbps(&self) -> f64 {
        self.bytes as f64 / self.encode_seconds.max(1e-9) / 1e6
    }

    /// Decompression speed in MB/s (decimal).
    pub fn decode_mbps(&self) -> f64 {
        self.bytes as f64 / self.decode_seconds.max(1e-9) / 1e6
    }
}

/// The codecs the comparison panel runs on a tensor: `(label, codec, mantissa_bits)`; codecs named
/// `peer:*` are the pure-Rust peers compiled into the module.
pub const COMPARISON: [(&str, &str, Option<u32>); 9] = [
    ("bitlens LMC", "lmc", None),
    ("NeuZip lossless", "neuzip", None),
    ("NeuZip k=3", "neuzip", Some(3)),
    ("NeuZip k=1", "neuzip", Some(1)),
    ("NeuZip k=0", "neuzip", Some(0)),
    ("BitSnap quantized", "bitsnap-quant", None),
    ("lz4_flex", "peer:lz4", None),
    ("deflate (miniz_oxide, level 6)", "peer:deflate", None),
    ("zstd (ruzstd, fastest)", "peer:zstd", None),
];

/// The last component of a path.
pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The name of the snapshot of `input`: a single-file checkpoint `model.safetensors` → `model.bls`;
/// a shard of a sharded checkpoint → `<shard file name>.bls`, as `bitlens compress INDEX -o DIR`
/// names the files it writes (and `bitlens decompress DIR` expects).
pub fn snapshot_name(input: &str, shard: bool) -> String {
    let base = file_name(input);
    if shard {
        return format!("{base}.bls");
    }
    let stem = base.strip_suffix(".safetensors").unwrap_or(base);
    format!("{stem}.bls")
}

/// The name of the file a snapshot restores: `X.safetensors.bls` → `X.safetensors` (a shard, as
/// `bitlens decompress DIR` names it), `model.bls` → `model.safetensors`.
pub fn restored_name(snapshot: &str) -> String {
    let base = file_name(snapshot);
    let stem = base.strip_suffix(".bls").unwrap_or(base);
    if stem.ends_with(".safetensors") {
        stem.to_owned()
    } else {
        format!("{stem}.safetensors")
    }
}

/// Which file of a base checkpoint (its files' paths) serves as the base of `file` (a file name or
/// a snapshot's restored name): the only file of a single-file base, else the file with the same
/// file name (the CLI's rule for deltas of shard sets).
pub fn base_file(base_files: &[&str], file: &str) -> Option<usize> {
    if base_files.len() == 1 {
        return Some(0);
    }
    let name = file_name(file);
    base_files.iter().position(|b| file_name(b) == name)
}

impl Compressed {
    /// The results of a checkpoint's files taken together: sizes summed, entries in file order.
    pub fn merge(parts: Vec<Compressed>) -> Compressed {
        let mut all = Compressed {
            in_bytes: 0,
            out_bytes: 0,
            lossy: false,
            delta: false,
            entries: Vec::new(),
        };
        for p in parts {
            all.in_bytes += p.in_bytes;
            all.out_bytes += p.out_bytes;
            all.lossy |= p.lossy;
            all.delta |= p.delta;
            all.entries.extend(p.entries);
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_with_overrides() {
        let mut o = BTreeMap::new();
        o.insert("a.weight".to_owned(), preset_by_id("neuzip-k3").unwrap());
        let json = options_json(preset_by_id("lmc").unwrap(), &o);
        assert_eq!(
            json,
            r#"{"codec":"lmc","mantissa_bits":null,"overrides":{"a.weight":{"codec":"neuzip","mantissa_bits":3}}}"#
        );
    }

    #[test]
    fn names() {
        assert_eq!(snapshot_name("dir/model.safetensors", false), "model.bls");
        assert_eq!(snapshot_name("x", false), "x.bls");
        assert_eq!(
            snapshot_name("dir/m-00001-of-00002.safetensors", true),
            "m-00001-of-00002.safetensors.bls"
        );
        assert_eq!(restored_name("model.bls"), "model.safetensors");
        assert_eq!(
            restored_name("d/m-00001-of-00002.safetensors.bls"),
            "m-00001-of-00002.safetensors"
        );
    }

    #[test]
    fn base_files_by_name() {
        let shards = ["b/m-1.safetensors", "b/m-2.safetensors"];
        assert_eq!(base_file(&shards, "a/m-2.safetensors"), Some(1));
        assert_eq!(base_file(&shards, "m-3.safetensors"), None);
        assert_eq!(
            base_file(&["one.safetensors"], "a/m-2.safetensors"),
            Some(0)
        );
    }

    #[test]
    fn merges_shard_results() {
        let part = |n: u64, delta| Compressed {
            in_bytes: n,
            out_bytes: n / 2,
            lossy: false,
            delta,
            entries: Vec::new(),
        };
        let all = Compressed::merge(vec![part(10, false), part(20, true)]);
        assert_eq!((all.in_bytes, all.out_bytes, all.delta), (30, 15, true));
    }

    #[test]
    fn parses_entries() {
        let c: Compressed = serde_json::from_str(
            r#"{"in_bytes":10,"out_bytes":5,"lossy":true,"delta":false,"entries":[{"name":"t","codec":"neuzip","lossy":true,"delta":false,"bytes":8,"stored_bytes":4,"ratio":0.5,"error":{"values":4,"mse":0.1,"max_abs":0.2,"max_rel":0.3,"mean_rel":0.05}}]}"#,
        )
        .unwrap();
        assert_eq!(c.entries[0].error.unwrap().max_rel, 0.3);
        let e: ValueError = serde_json::from_str(
            r#"{"values":2,"mse":null,"max_abs":null,"max_rel":null,"mean_rel":0.5}"#,
        )
        .unwrap();
        assert_eq!(
            (e.mse, e.max_rel, e.mean_rel),
            (f64::INFINITY, f64::INFINITY, 0.5)
        );
        assert!(PRESETS.iter().filter(|p| p.lossy).all(|p| !p.needs_base));
    }
}
