//! A loaded checkpoint: its files with their parsed headers, one row per tensor, and the statistics
//! that arrive from the workers.

use crate::model::label;
use bitlens_stats::{Summary, TensorStats};
use bitlens_tensors::format::{self, bytes, Data, ElementType, Layout, MetaValue};
use bitlens_tensors::{Dtype, Header, ShardIndex, TensorKey};
use std::rc::Rc;

/// Why a set of files does not make a consistent checkpoint (the rules are
/// [`bitlens_tensors::checkpoint`]'s, shared with the CLI).
pub use bitlens_tensors::CheckpointError;

/// One file of a checkpoint: its relative path as given, its layout (any format) and, for a
/// safetensors file, its parsed header.
#[derive(Debug, Clone, PartialEq)]
pub struct FileInfo {
    /// The file's path as given.
    pub path: String,
    /// Its validated header (with the file size), for a safetensors file.
    pub header: Option<Header>,
    /// Its tensors and metadata, whatever its format.
    pub layout: Layout,
}

impl FileInfo {
    /// A safetensors file.
    pub fn safetensors(path: String, header: Header) -> FileInfo {
        FileInfo {
            path,
            layout: format::safetensors::layout(&header),
            header: Some(header),
        }
    }

    /// A file of another format (GGUF, PyTorch, NumPy), read as `layout`.
    pub fn other(path: String, layout: Layout) -> FileInfo {
        FileInfo {
            path,
            header: None,
            layout,
        }
    }

    /// Bytes before the tensor data a safetensors file has (8 + its JSON header); 0 for others.
    pub fn header_bytes(&self) -> u64 {
        self.header.as_ref().map_or(0, |h| h.header_len + 8)
    }
}

/// One tensor of a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRow {
    /// Index of the file in [`Checkpoint::files`].
    pub file: usize,
    /// Tensor name.
    pub name: String,
    /// The dtype its stored bytes are measured in: its element type's, or `U8` for a ggml block
    /// type (as the CLI measures them).
    pub dtype: Dtype,
    /// Its element type (a plain dtype, or a ggml block type such as `Q4_K`).
    pub ty: ElementType,
    /// Where its bytes are in its file.
    pub data: Data,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element count.
    pub params: u64,
    /// Bytes of data.
    pub bytes: u64,
    /// Absolute offset of the data in its file (of a deflated or strided tensor: of its stored
    /// bytes).
    pub offset: u64,
    /// Statistics, once computed.
    pub stats: Option<Rc<TensorStats>>,
}

impl TensorRow {
    /// What [`bitlens_tensors::pair`] matches it by.
    pub fn key(&self) -> TensorKey<'_> {
        TensorKey {
            name: &self.name,
            ty: self.ty,
            shape: &self.shape,
        }
    }

    /// Its element type's name: `BF16`, `Q4_K`…
    pub fn type_name(&self) -> String {
        match self.ty {
            ElementType::Dtype(d) => d.to_string(),
            ElementType::Ggml(g) => g
                .name()
                .map_or_else(|| format!("ggml type {}", g.0), str::to_owned),
        }
    }

    /// True when it is a plain dtype stored as one byte range of its file: two such tensors are
    /// compared lane by lane as byte ranges; any other pair is streamed in element order through
    /// [`bitlens_stats::entry`] (a ggml pair also compares its dequantized values).
    pub fn is_range(&self) -> bool {
        matches!(self.ty, ElementType::Dtype(_)) && self.is_stored_range()
    }

    /// True when its stored bytes are one range of its file, whatever its element type (a plain
    /// dtype, or ggml blocks): its statistics are read as that range; else (a deflated member, a
    /// view) they are streamed through [`bitlens_stats::entry`].
    pub fn is_stored_range(&self) -> bool {
        matches!(self.data, Data::Range { .. })
    }
}

/// Tensors, parameters and bytes of one element type (a dtype, or a ggml block type such as
/// `Q4_K`), known from the headers alone.
#[derive(Debug, Clone, PartialEq)]
pub struct DtypeMix {
    /// The element type's name ([`TensorRow::type_name`]).
    pub name: String,
    /// The dtype its bytes are measured in (`U8` for a block type).
    pub dtype: Dtype,
    /// Tensors of this dtype.
    pub tensors: u64,
    /// Their elements.
    pub params: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// A checkpoint: one file, a shard set, or a directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Stable id within the session.
    pub id: u32,
    /// What it was loaded as, with the path the browser gave: its directory (`run/step-100`), its
    /// file name, or the name of a loose shard set.
    pub path: String,
    /// Display label: [`relabel`] makes it the shortest tail of `path` that no other loaded
    /// checkpoint shares (see [`crate::model::label`]); `path` until then.
    pub name: String,
    /// Its files in shard order.
    pub files: Vec<FileInfo>,
    /// Its tensors: files in order, each file's tensors in data order.
    pub rows: Vec<TensorRow>,
    /// Whole-checkpoint totals over the rows that have statistics.
    pub summary: Rc<Summary>,
    /// Rows with statistics.
    pub done: usize,
    /// For a `.bls` snapshot: its index, and that its tensors' bytes come from decoding them in
    /// the codec worker (never from byte ranges of its file). `None` for a checkpoint.
    pub snapshot: Option<Box<crate::model::snapshot::Snapshot>>,
}

impl Checkpoint {
    /// Builds a checkpoint from its parsed files by the shared rules of
    /// [`bitlens_tensors::Checkpoint`] (every indexed shard given and holding its tensors, no tensor
    /// name in two files).
    pub fn new(
        id: u32,
        path: String,
        files: Vec<FileInfo>,
        index: Option<ShardIndex>,
    ) -> Result<Checkpoint, CheckpointError> {
        let shards = files
            .iter()
            .map(|f| bitlens_tensors::Shard {
                path: f.path.clone(),
                layout: f.layout.clone(),
            })
            .collect();
        bitlens_tensors::Checkpoint::new(shards, index)?;
        // The rows in the shared order: files in order, each file's tensors in layout order.
        let rows = files
            .iter()
            .enumerate()
            .flat_map(|(fi, f)| f.layout.entries.iter().map(move |t| (fi, t)))
            .map(|(fi, t)| TensorRow {
                file: fi,
                name: t.name.clone(),
                dtype: match t.ty {
                    ElementType::Dtype(d) => d,
                    ElementType::Ggml(_) => Dtype::U8,
                },
                ty: t.ty,
                shape: t.shape.clone(),
                params: t.shape.iter().product(),
                bytes: bytes::byte_len(t),
                offset: match &t.data {
                    Data::Range { offset, .. }
                    | Data::Deflated { offset, .. }
                    | Data::Strided { offset, .. } => *offset,
                },
                data: t.data.clone(),
                stats: None,
            })
            .collect();
        Ok(Checkpoint {
            id,
            name: path.clone(),
            path,
            files,
            rows,
            summary: Rc::new(Summary::default()),
            done: 0,
            snapshot: None,
        })
    }

    /// The training step its files' `__metadata__` give (`step` or `global_step`), if any.
    pub fn step(&self) -> Option<&str> {
        self.files
            .iter()
            .find_map(|f| label::step(f.header.as_ref()?.metadata.as_deref()?))
    }

    /// Bytes of tensor data over all files.
    pub fn data_bytes(&self) -> u64 {
        self.rows.iter().map(|r| r.bytes).sum()
    }

    /// True when it spans several files (the tensor table names each tensor's file).
    pub fn multi_file(&self) -> bool {
        self.files.len() > 1
    }

    /// Bytes of all files (headers included).
    pub fn file_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.layout.file_size).sum()
    }

    /// Parameters over all tensors.
    pub fn params(&self) -> u64 {
        self.rows.iter().map(|r| r.params).sum()
    }

    /// True when every tensor has statistics.
    pub fn complete(&self) -> bool {
        self.done == self.rows.len()
    }

    /// Stores the statistics of one row and adds them to the summary.
    pub fn set_stats(&mut self, row: usize, stats: TensorStats) {
        let Some(r) = self.rows.get_mut(row) else {
            return;
        };
        if r.stats.is_none() {
            self.done += 1;
            Rc::make_mut(&mut self.summary).add(r.params, &stats);
        }
        r.stats = Some(Rc::new(stats));
    }

    /// Stores the statistics of every tensor of file `file`, in its layout order (a sidecar's),
    /// and adds them to the summary.
    pub fn set_file_stats(&mut self, file: usize, stats: Vec<TensorStats>) {
        let rows: Vec<usize> = (0..self.rows.len())
            .filter(|&i| self.rows[i].file == file)
            .collect();
        for (row, s) in rows.into_iter().zip(stats) {
            self.set_stats(row, s);
        }
    }

    /// Tensors, parameters and bytes per element type (each ggml block type apart), from the
    /// headers.
    pub fn dtype_mix(&self) -> Vec<DtypeMix> {
        let mut mix: Vec<DtypeMix> = Vec::new();
        for r in &self.rows {
            let name = r.type_name();
            match mix.iter_mut().find(|m| m.name == name) {
                Some(m) => {
                    m.tensors += 1;
                    m.params += r.params;
                    m.bytes += r.bytes;
                }
                None => mix.push(DtypeMix {
                    name,
                    dtype: r.dtype,
                    tensors: 1,
                    params: r.params,
                    bytes: r.bytes,
                }),
            }
        }
        mix.sort_by_key(|m| std::cmp::Reverse(m.bytes));
        mix
    }

    /// The row Detail shows for the tensor `name`: that tensor, or by default (no name, or a
    /// name it does not have) the largest tensor, the most telling one.
    pub fn detail_row(&self, name: Option<&str>) -> Option<usize> {
        name.and_then(|n| self.row_by_name(n)).or_else(|| {
            (0..self.rows.len()).max_by_key(|&i| (self.rows[i].bytes, std::cmp::Reverse(i)))
        })
    }

    /// The row with this name.
    pub fn row_by_name(&self, name: &str) -> Option<usize> {
        self.rows.iter().position(|r| r.name == name)
    }
}

/// Characters of a metadata value shown (a GGUF tokenizer's vocabulary is an array of 100 000+
/// strings).
const META_CHARS: usize = 240;

/// A metadata value as text for the Summary: numbers and strings as they are, arrays as
/// `[a, b, …]`, cut after [`META_CHARS`] characters with the array's length said.
pub fn meta_text(v: &MetaValue) -> String {
    fn put(v: &MetaValue, out: &mut String) {
        if out.len() > META_CHARS {
            return;
        }
        match v {
            MetaValue::Bool(b) => out.push_str(&b.to_string()),
            MetaValue::UInt(n) => out.push_str(&n.to_string()),
            MetaValue::Int(n) => out.push_str(&n.to_string()),
            MetaValue::Float(x) => out.push_str(&x.to_string()),
            MetaValue::Str(s) => out.push_str(s),
            MetaValue::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if out.len() > META_CHARS {
                        out.push_str(&format!("… {} items", items.len()));
                        break;
                    }
                    if i > 0 {
                        out.push_str(", ");
                    }
                    put(item, out);
                }
                out.push(']');
            }
        }
    }
    let mut out = String::new();
    put(v, &mut out);
    if out.chars().count() > META_CHARS + 40 {
        out = out.chars().take(META_CHARS).collect::<String>() + "…";
    }
    out
}

/// Gives every checkpoint its display label among the others loaded ([`label::labels`]); call it
/// whenever checkpoints are added or removed.
pub fn relabel(checkpoints: &mut [Checkpoint]) {
    let sources: Vec<label::Source> = checkpoints
        .iter()
        .map(|c| label::Source {
            path: &c.path,
            step: c.step(),
        })
        .collect();
    let labels = label::labels(&sources);
    for (c, l) in checkpoints.iter_mut().zip(labels) {
        c.name = l;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bitlens_tensors::Header;

    /// A valid safetensors header for tensors `(name, dtype, shape)` laid out in order.
    pub fn header(tensors: &[(&str, &str, &[u64])]) -> Header {
        let mut json = String::from("{");
        let mut off = 0u64;
        for (i, (name, dtype, shape)) in tensors.iter().enumerate() {
            let size: u64 = shape.iter().product::<u64>()
                * u64::from(dtype.parse::<Dtype>().unwrap().bits())
                / 8;
            if i > 0 {
                json.push(',');
            }
            json.push_str(&format!(
                r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{off},{}]}}"#,
                off + size
            ));
            off += size;
        }
        json.push('}');
        let mut prefix = (json.len() as u64).to_le_bytes().to_vec();
        prefix.extend_from_slice(json.as_bytes());
        Header::parse(&prefix, prefix.len() as u64 + off).unwrap()
    }

    fn file(path: &str, tensors: &[(&str, &str, &[u64])]) -> FileInfo {
        FileInfo::safetensors(path.into(), header(tensors))
    }

    #[test]
    fn a_layout_of_another_format_gives_rows_by_element_type() {
        use bitlens_tensors::format::{Entry, Format, GgmlType};
        let entry = |name: &str, ty, shape: Vec<u64>, data| Entry {
            name: name.into(),
            ty,
            shape,
            data,
        };
        let layout = Layout {
            format: Format::Gguf,
            kind: "GGUF v3".into(),
            file_size: 4096,
            entries: vec![
                entry(
                    "blk.q8",
                    ElementType::Ggml(GgmlType(8)),
                    vec![4, 32],
                    Data::Range {
                        offset: 1024,
                        len: 136,
                    },
                ),
                entry(
                    "a",
                    ElementType::Dtype(Dtype::F32),
                    vec![8],
                    Data::Deflated {
                        offset: 2000,
                        compressed: 20,
                        skip: 128,
                        len: 32,
                    },
                ),
            ],
            metadata: vec![("general.name".into(), MetaValue::Str("tiny".into()))],
        };
        let f = FileInfo::other("tiny.gguf".into(), layout);
        assert_eq!(f.header_bytes(), 0);
        let c = Checkpoint::new(1, "tiny.gguf".into(), vec![f], None).unwrap();
        assert_eq!(c.file_bytes(), 4096);
        let (q, a) = (&c.rows[0], &c.rows[1]);
        assert_eq!(
            (q.type_name(), q.dtype, q.bytes, q.offset),
            ("Q8_0".into(), Dtype::U8, 136, 1024)
        );
        assert_eq!((a.type_name(), a.bytes, a.params), ("F32".into(), 32, 8));
        assert!(
            !q.is_range() && q.is_stored_range(),
            "ggml blocks are read as a range, and compared in element order"
        );
        assert!(
            !a.is_range() && !a.is_stored_range(),
            "a deflated member is streamed"
        );
    }

    #[test]
    fn long_metadata_arrays_are_cut_and_counted() {
        let tokens = MetaValue::Array(
            (0..100_000)
                .map(|i| MetaValue::Str(format!("tok{i}")))
                .collect(),
        );
        let text = meta_text(&tokens);
        assert!(text.starts_with("[tok0, tok1, "), "{text}");
        assert!(text.ends_with("… 100000 items]"), "{text}");
        assert!(text.len() < 400);
        assert_eq!(
            meta_text(&MetaValue::Array(vec![
                MetaValue::UInt(1),
                MetaValue::Float(0.5)
            ])),
            "[1, 0.5]"
        );
    }

    #[test]
    fn rows_span_files_and_names_are_unique() {
        let c = Checkpoint::new(
            1,
            "m".into(),
            vec![
                file(
                    "a.safetensors",
                    &[("x", "BF16", &[4, 4]), ("y", "F32", &[3])],
                ),
                file("b.safetensors", &[("z", "BF16", &[2])]),
            ],
            None,
        )
        .unwrap();
        assert_eq!(c.rows.len(), 3);
        assert_eq!(c.params(), 16 + 3 + 2);
        assert_eq!(c.data_bytes(), 32 + 12 + 4);
        assert_eq!(c.rows[2].file, 1);
        assert_eq!(c.dtype_mix()[0].dtype, Dtype::BF16);
        assert_eq!(c.dtype_mix()[0].bytes, 36);
        let dup = Checkpoint::new(
            2,
            "d".into(),
            vec![
                file("a.safetensors", &[("x", "BF16", &[4])]),
                file("b.safetensors", &[("x", "BF16", &[4])]),
            ],
            None,
        );
        assert!(matches!(dup, Err(CheckpointError::DuplicateTensor { .. })));
    }

    #[test]
    fn stats_fill_the_summary_once() {
        let mut c = Checkpoint::new(
            1,
            "m".into(),
            vec![file("a.safetensors", &[("x", "BF16", &[4])])],
            None,
        )
        .unwrap();
        let mut acc = bitlens_stats::Accumulator::new(Dtype::BF16, 8);
        acc.update(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        let s = acc.finish().unwrap();
        c.set_stats(0, s.clone());
        c.set_stats(0, s);
        assert!(c.complete());
        assert_eq!(c.summary.tensors, 1);
        assert_eq!(c.summary.bytes, 8);
    }

    /// A one-tensor file whose `__metadata__` gives a step.
    fn file_at_step(path: &str, step: &str) -> FileInfo {
        let json = format!(
            r#"{{"__metadata__":{{"format":"pt","step":"{step}"}},"x":{{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}}}"#
        );
        let mut prefix = (json.len() as u64).to_le_bytes().to_vec();
        prefix.extend_from_slice(json.as_bytes());
        FileInfo::safetensors(
            path.into(),
            Header::parse(&prefix, prefix.len() as u64 + 1).unwrap(),
        )
    }

    #[test]
    fn an_index_is_checked_against_its_shards() {
        let index = |json: &str| ShardIndex::parse(json.as_bytes()).unwrap();
        let files = || {
            vec![
                file("m/a.safetensors", &[("x", "BF16", &[4])]),
                file("m/b.safetensors", &[("y", "BF16", &[4])]),
            ]
        };
        let good = index(r#"{"weight_map":{"x":"a.safetensors","y":"b.safetensors"}}"#);
        assert!(Checkpoint::new(1, "m".into(), files(), Some(good)).is_ok());
        let wrong = index(r#"{"weight_map":{"x":"b.safetensors","y":"a.safetensors"}}"#);
        let err = Checkpoint::new(1, "m".into(), files(), Some(wrong)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the index maps tensor `x` to b.safetensors, which has no such tensor"
        );
    }

    #[test]
    fn labels_tell_equal_names_apart_by_path_then_step() {
        let one = |id, path: &str, file: FileInfo| {
            Checkpoint::new(id, path.into(), vec![file], None).unwrap()
        };
        let mut loaded = vec![
            one(
                1,
                "model.bf16.safetensors",
                file_at_step("model.bf16.safetensors", "100"),
            ),
            one(
                2,
                "model.bf16.safetensors",
                file_at_step("model.bf16.safetensors", "120"),
            ),
        ];
        assert_eq!(loaded[0].name, "model.bf16.safetensors");
        assert_eq!(loaded[1].step(), Some("120"));
        relabel(&mut loaded);
        let names: Vec<&str> = loaded.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "model.bf16.safetensors · step 100",
                "model.bf16.safetensors · step 120"
            ]
        );
        loaded.push(one(
            3,
            "run/ckpt-140",
            file_at_step("run/ckpt-140/model.bf16.safetensors", "140"),
        ));
        relabel(&mut loaded);
        assert_eq!(loaded[2].name, "ckpt-140");
        // Removing one relabels the rest among those left.
        loaded.remove(1);
        relabel(&mut loaded);
        assert_eq!(loaded[0].name, "model.bf16.safetensors");
        assert_eq!(loaded[0].path, "model.bf16.safetensors");
    }
}
