//! What the worker's codec jobs return: the entries and sizes of a snapshot it wrote
//! ([`Compressed`]) or read ([`SnapshotInfo`]), the error of lossily stored tensors
//! ([`ErrorReport`], the core's own type), codec round trips on one tensor ([`Roundtrip`],
//! [`RoundtripRow`]), and one tensor decoded from a snapshot ([`DecodedTensor`]).

pub use bitlens_report::auto::AutoInfo;
pub use bitlens_report::inshrink::InshrinkInfo;
pub use bitlens_report::snapshot::SnapshotReport;
pub use bitlens_report::ErrorReport;
use bitlens_stats::TensorStats;
use serde::{Deserialize, Serialize};

/// One tensor of a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryInfo {
    /// Tensor name.
    pub name: String,
    /// Codec name (as the core names it).
    pub codec: String,
    /// Stored lossily.
    pub lossy: bool,
    /// Stored as an XOR delta against the base.
    pub delta: bool,
    /// Original bytes.
    pub bytes: u64,
    /// Bytes in the snapshot.
    pub stored_bytes: u64,
    /// `stored_bytes / bytes` (1 for an empty tensor).
    pub ratio: f64,
    /// Error of lossy tensors.
    pub error: Option<ErrorReport>,
    /// With the `auto` codec: the candidates' predicted sizes and the one chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto: Option<AutoInfo>,
}

/// A compressed file: sizes and entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// An Inshrinkerator snapshot's plan and achieved errors (what `inspect` reads back).
    #[serde(default)]
    pub inshrink: Option<Box<InshrinkInfo>>,
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
            inshrink: None,
        };
        for p in parts {
            all.in_bytes += p.in_bytes;
            all.out_bytes += p.out_bytes;
            all.lossy |= p.lossy;
            all.delta |= p.delta;
            all.entries.extend(p.entries);
            all.inshrink = all.inshrink.or(p.inshrink);
        }
        all
    }
}

/// A snapshot's index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    /// An Inshrinkerator snapshot's plan and achieved errors (as `bitlens inspect --json`).
    #[serde(default)]
    pub inshrink: Option<Box<InshrinkInfo>>,
    /// What `bitlens inspect --json` says of the snapshot, made by the same function from the
    /// same index (its `path` left empty: the page names the file). Each tensor's dtype and shape,
    /// the metadata and frames are here only; the page models the snapshot as a checkpoint from it.
    #[serde(default)]
    pub report: Option<Box<SnapshotReport>>,
}

/// One codec compressing and decompressing one tensor, timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Roundtrip {
    /// Codec name (as the core or the peer names it).
    pub codec: String,
    /// Lossy.
    pub lossy: bool,
    /// Original bytes.
    pub bytes: u64,
    /// Compressed bytes.
    pub stored_bytes: u64,
    /// `stored_bytes / bytes` (1 for no bytes).
    pub ratio: f64,
    /// Seconds to compress.
    pub encode_seconds: f64,
    /// Seconds to decompress.
    pub decode_seconds: f64,
    /// Error of lossy codecs.
    pub error: Option<ErrorReport>,
}

impl Roundtrip {
    /// Compression speed in MB/s (decimal).
    pub fn encode_mbps(&self) -> f64 {
        mbps(self.bytes, self.encode_seconds)
    }

    /// Decompression speed in MB/s (decimal).
    pub fn decode_mbps(&self) -> f64 {
        mbps(self.bytes, self.decode_seconds)
    }
}

/// Bytes per second in MB/s (decimal), never dividing by zero.
pub fn mbps(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / seconds.max(1e-9) / 1e6
}

/// A row of a codec comparison: what the page calls the codec, and its round trip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundtripRow {
    /// The label the page gave the codec.
    pub label: String,
    /// The measurement.
    pub result: Roundtrip,
}

/// One tensor decoded from a snapshot (the preview of a remote snapshot): what it was stored as,
/// what the decoding fetched, and the statistics of its decoded bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodedTensor {
    /// Tensor name.
    pub name: String,
    /// Codec name (as the core names it).
    pub codec: String,
    /// Stored lossily.
    pub lossy: bool,
    /// Original bytes of the tensor.
    pub bytes: u64,
    /// Its bytes in the snapshot (frames).
    pub stored_bytes: u64,
    /// Bytes of the output file (a safetensors file holding only this tensor).
    pub file_bytes: u64,
    /// Bytes of the snapshot read to open it and decode this tensor (for a URL: transferred).
    pub fetched: u64,
    /// Statistics of the decoded bytes (as the statistics workers compute them).
    pub stats: TensorStats,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_info_is_optional_in_entries() {
        // Entries without `auto` (every other codec, older workers) parse, and write none.
        let json = r#"{"name":"w","codec":"lmc","lossy":false,"delta":false,"bytes":4,"stored_bytes":3,"ratio":0.75,"error":null}"#;
        let e: EntryInfo = serde_json::from_str(json).unwrap();
        assert_eq!(e.auto, None);
        assert!(!serde_json::to_string(&e).unwrap().contains("auto"));
        let info = AutoInfo {
            chosen: "neuzip".into(),
            predicted: vec![("lmc".into(), 700), ("neuzip".into(), 690)],
            predicted_bytes: 690,
            sample_bytes: 1000,
        };
        let with = EntryInfo {
            auto: Some(info.clone()),
            ..e
        };
        let back: EntryInfo = serde_json::from_str(&serde_json::to_string(&with).unwrap()).unwrap();
        assert_eq!(back.auto, Some(info));
    }

    #[test]
    fn merges_shard_results() {
        let part = |n: u64, delta| Compressed {
            in_bytes: n,
            out_bytes: n / 2,
            lossy: false,
            delta,
            entries: Vec::new(),
            inshrink: None,
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
        let back: Compressed = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn speeds_never_divide_by_zero() {
        let r = Roundtrip {
            codec: "lmc".into(),
            lossy: false,
            bytes: 2_000_000,
            stored_bytes: 1_000_000,
            ratio: 0.5,
            encode_seconds: 2.0,
            decode_seconds: 0.0,
            error: None,
        };
        assert_eq!(r.encode_mbps(), 1.0);
        assert!(r.decode_mbps().is_finite());
    }
}
