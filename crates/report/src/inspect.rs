//! The `bitlens inspect --json` document of checkpoints, shared by the CLI (which prints it) and the page (whose
//! embed's `inspect()` resolves to it): every file with its header's tensors and their statistics,
//! and totals. [`FileReport::new`] builds a file's part from its parsed header and whatever
//! statistics exist; [`InspectReport::new`] adds the totals.
//!
//! The CLI computes every tensor's statistics, so each [`TensorReport`] carries them (flattened into
//! the tensor's object: `dtype`, `bytes`, bit ratios, entropies…). The page may not have computed
//! some yet: such a tensor still lists its name, shape, offsets, element count and `dtype`, and the
//! totals count only the tensors with statistics.
//!
//! Files of other formats (GGUF, PyTorch, NumPy) are reported from their [`Layout`] by
//! [`FileReport::from_layout`]: the same keys, plus `format` and `kind` (absent for safetensors,
//! whose JSON is unchanged); `header_len` is 0 and `data_offsets` are absolute file offsets of
//! the stored bytes (a deflated member's compressed bytes, a view's whole storage); `metadata`
//! holds every metadata value (GGUF key/values of every type as JSON numbers, strings, booleans,
//! arrays). A ggml block-quantized tensor's statistics carry `element_type` (`Q4_K`…), the
//! dequantized values' statistics and the scales/codes summary ([`bitlens_stats::quant`]).
//!
//! The document reads back too (a sidecar holds one, `crate::sidecar`): a tensor's statistics are
//! there when its object has more than its header fields and `dtype`, and the summaries are
//! rebuilt from the tensors, as [`FileReport::new`] makes them (a summary's merge state, its byte
//! histograms, is not in the JSON, and totals made from the tensors cannot disagree with them).

use bitlens_stats::{Summary, TensorStats};
use bitlens_tensors::format::{Data, ElementType, Format, Layout};
use bitlens_tensors::{Dtype, Header};
use serde::{Deserialize, Serialize};

/// One tensor in the report: its header entry and its statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "TensorFields")]
pub struct TensorReport {
    /// Tensor name.
    pub name: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Byte range within the data section.
    pub data_offsets: (u64, u64),
    /// Element count.
    pub params: u64,
    /// The element type while the statistics (which carry it) are not computed; `None` once they
    /// are, so the JSON has one `dtype` key either way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<Dtype>,
    /// The statistics (dtype, bytes, bit ratios, entropies, histograms, values), once computed.
    #[serde(flatten)]
    pub stats: Option<TensorStats>,
}

/// One file in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "FileFields")]
pub struct FileReport {
    /// Path of the file (for the page: its URL or the name it was given by).
    pub path: String,
    /// Its format, for files other than safetensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    /// Its format's finer name (`GGUF v3`, `PyTorch zip`, `NumPy .npy v1.0`…), for files other
    /// than safetensors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its size in bytes.
    pub file_size: u64,
    /// Length of its JSON header (0 for other formats).
    pub header_len: u64,
    /// `__metadata__`, in file order (for other formats: all their metadata).
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// Its tensors in offset order.
    pub tensors: Vec<TensorReport>,
    /// Totals over the file's tensors that have statistics.
    pub summary: Summary,
}

/// The whole `inspect --json` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "DocumentFields")]
pub struct InspectReport {
    /// Every file of every input, in order.
    pub files: Vec<FileReport>,
    /// Totals over all files.
    pub summary: Summary,
}

impl FileReport {
    /// The report of the file at `path` with this parsed `header`: each of its tensors, in header
    /// order, with the statistics `stats(i)` gives for the `i`-th (`None`: not computed yet).
    pub fn new(
        path: String,
        header: &Header,
        mut stats: impl FnMut(usize) -> Option<TensorStats>,
    ) -> FileReport {
        let mut summary = Summary::default();
        let tensors = header
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let stats = stats(i);
                if let Some(s) = &stats {
                    summary.add(t.elements(), s);
                }
                TensorReport {
                    name: t.name.clone(),
                    shape: t.shape.clone(),
                    data_offsets: t.data_offsets,
                    params: t.elements(),
                    dtype: stats.is_none().then_some(t.dtype),
                    stats,
                }
            })
            .collect();
        FileReport {
            path,
            format: None,
            kind: None,
            file_size: header.file_size,
            header_len: header.header_len,
            metadata: header.metadata.as_ref().map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                    .collect()
            }),
            tensors,
            summary,
        }
    }
}

impl FileReport {
    /// The report of a file of any format from its `layout`: each tensor in layout order, with
    /// the statistics `stats(i)` gives for the `i`-th. A safetensors file is reported with
    /// [`FileReport::new`] from its header instead (its JSON stays as it was).
    pub fn from_layout(
        path: String,
        layout: &Layout,
        mut stats: impl FnMut(usize) -> Option<TensorStats>,
    ) -> FileReport {
        let mut summary = Summary::default();
        let tensors = layout
            .entries
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let params = t.shape.iter().product();
                let stats = stats(i);
                if let Some(s) = &stats {
                    summary.add(params, s);
                }
                let data_offsets = match &t.data {
                    Data::Range { offset, len } => (*offset, offset + len),
                    Data::Deflated {
                        offset, compressed, ..
                    } => (*offset, offset + compressed),
                    Data::Strided { offset, len, .. } => (*offset, offset + len),
                };
                TensorReport {
                    name: t.name.clone(),
                    shape: t.shape.clone(),
                    data_offsets,
                    params,
                    dtype: match t.ty {
                        ElementType::Dtype(d) if stats.is_none() => Some(d),
                        _ => None,
                    },
                    stats,
                }
            })
            .collect();
        FileReport {
            path,
            format: Some(layout.format),
            kind: Some(layout.kind.clone()),
            file_size: layout.file_size,
            header_len: 0,
            metadata: Some(
                layout
                    .metadata
                    .iter()
                    .map(|(k, v)| {
                        let v = serde_json::to_value(v).unwrap_or(serde_json::Value::Null);
                        (k.clone(), v)
                    })
                    .collect(),
            ),
            tensors,
            summary,
        }
    }
}

impl InspectReport {
    /// The document over these files, with their totals merged.
    pub fn new(files: Vec<FileReport>) -> InspectReport {
        let mut summary = Summary::default();
        for f in &files {
            summary.merge(&f.summary);
        }
        InspectReport { files, summary }
    }
}

/// A tensor's object as read: its header fields, and every other key (`dtype` alone while its
/// statistics are not computed, else the statistics).
#[derive(Deserialize)]
struct TensorFields {
    name: String,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
    params: u64,
    #[serde(flatten)]
    rest: serde_json::Map<String, serde_json::Value>,
}

impl TryFrom<TensorFields> for TensorReport {
    type Error = serde_json::Error;

    fn try_from(t: TensorFields) -> Result<TensorReport, serde_json::Error> {
        let pending = t.rest.len() == 1 && t.rest.contains_key("dtype");
        let (dtype, stats) = if pending {
            let dtype = t.rest.get("dtype").cloned().unwrap_or_default();
            (Some(serde_json::from_value(dtype)?), None)
        } else {
            (None, Some(serde_json::from_value(t.rest.into())?))
        };
        Ok(TensorReport {
            name: t.name,
            shape: t.shape,
            data_offsets: t.data_offsets,
            params: t.params,
            dtype,
            stats,
        })
    }
}

/// A file's object as read (its `summary` is rebuilt from its tensors).
#[derive(Deserialize)]
struct FileFields {
    path: String,
    #[serde(default)]
    format: Option<Format>,
    #[serde(default)]
    kind: Option<String>,
    file_size: u64,
    header_len: u64,
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
    tensors: Vec<TensorReport>,
}

impl From<FileFields> for FileReport {
    fn from(f: FileFields) -> FileReport {
        let mut summary = Summary::default();
        for t in &f.tensors {
            if let Some(s) = &t.stats {
                summary.add(t.params, s);
            }
        }
        FileReport {
            path: f.path,
            format: f.format,
            kind: f.kind,
            file_size: f.file_size,
            header_len: f.header_len,
            metadata: f.metadata,
            tensors: f.tensors,
            summary,
        }
    }
}

/// The document as read (its `summary` is rebuilt from its files).
#[derive(Deserialize)]
struct DocumentFields {
    files: Vec<FileReport>,
}

impl From<DocumentFields> for InspectReport {
    fn from(d: DocumentFields) -> InspectReport {
        InspectReport::new(d.files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_stats::Accumulator;

    /// A header of two F32 tensors (`a` [2], `b` [1]) with metadata, as a file holds it.
    fn header() -> Header {
        let json = br#"{"__metadata__":{"step":"7"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#;
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(json);
        file.extend_from_slice(&[0u8; 12]);
        Header::parse(&file, file.len() as u64).unwrap()
    }

    fn stats_of(bytes: &[u8]) -> TensorStats {
        let mut acc = Accumulator::new(Dtype::F32, bytes.len() as u64);
        acc.update(bytes).unwrap();
        acc.finish().unwrap()
    }

    #[test]
    fn pending_tensors_keep_their_dtype_and_stay_out_of_the_totals() {
        let h = header();
        let b = stats_of(&1.5f32.to_le_bytes());
        let file = FileReport::new("m.safetensors".into(), &h, |i| (i == 1).then(|| b.clone()));
        let json = serde_json::to_value(InspectReport::new(vec![file])).unwrap();
        let tensors = &json["files"][0]["tensors"];
        assert_eq!(tensors[0]["dtype"], "F32");
        assert_eq!(tensors[0].get("byte_entropy"), None);
        assert_eq!(tensors[1]["dtype"], "F32");
        assert_eq!(tensors[1]["bytes"], 4);
        assert_eq!(json["files"][0]["summary"]["tensors"], 1);
        assert_eq!(json["summary"]["params"], 1);
        assert_eq!(json["files"][0]["metadata"]["step"], "7");
        assert_eq!(json["files"][0]["header_len"], h.header_len);
    }

    #[test]
    fn a_layout_reports_its_format_metadata_of_every_type_and_absolute_offsets() {
        use bitlens_tensors::format::{Entry, MetaValue};
        let layout = Layout {
            format: Format::Gguf,
            kind: "GGUF v3".into(),
            file_size: 100,
            entries: vec![Entry {
                name: "w".into(),
                ty: ElementType::Dtype(Dtype::F32),
                shape: vec![2],
                data: Data::Range { offset: 64, len: 8 },
            }],
            metadata: vec![
                ("b".into(), MetaValue::Bool(true)),
                ("u".into(), MetaValue::UInt(7)),
                ("i".into(), MetaValue::Int(-3)),
                ("f".into(), MetaValue::Float(0.5)),
                ("s".into(), MetaValue::Str("llama".into())),
                (
                    "a".into(),
                    MetaValue::Array(vec![MetaValue::UInt(1), MetaValue::Str("x".into())]),
                ),
            ],
        };
        let pending = FileReport::from_layout("m.gguf".into(), &layout, |_| None);
        let json = serde_json::to_value(&pending).unwrap();
        assert_eq!(json["format"], "gguf");
        assert_eq!(json["kind"], "GGUF v3");
        assert_eq!(
            json["metadata"],
            serde_json::json!({"b": true, "u": 7, "i": -3, "f": 0.5, "s": "llama", "a": [1, "x"]})
        );
        let t = &json["tensors"][0];
        assert_eq!(t["data_offsets"], serde_json::json!([64, 72]));
        assert_eq!(
            (t["dtype"].as_str(), t["params"].as_u64()),
            (Some("F32"), Some(2))
        );
        let s = stats_of(&[0u8; 8]);
        let measured = FileReport::from_layout("m.gguf".into(), &layout, |_| Some(s.clone()));
        assert_eq!(measured.summary.tensors, 1);
        // A safetensors report keeps its keys: no format or kind.
        let st = serde_json::to_value(FileReport::new("m".into(), &header(), |_| None)).unwrap();
        assert!(st.get("format").is_none() && st.get("kind").is_none());
    }

    #[test]
    fn a_measured_tensor_serializes_its_header_entry_then_its_statistics() {
        let h = header();
        let s = stats_of(&[0u8; 8]);
        let file = FileReport::new("m".into(), &h, |i| (i == 0).then(|| s.clone()));
        let text = serde_json::to_string(&file.tensors[0]).unwrap();
        let expected = format!(
            r#"{{"name":"a","shape":[2],"data_offsets":[0,8],"params":2,{}"#,
            &serde_json::to_string(&s).unwrap()[1..]
        );
        assert_eq!(text, expected);
    }
}
