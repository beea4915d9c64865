//! A loaded checkpoint: its files with their parsed headers, one row per tensor, and the statistics
//! that arrive from the workers.

use bitlens_stats::{Summary, TensorStats};
use bitlens_tensors::{Dtype, Header, ShardIndex};
use std::collections::HashMap;
use std::rc::Rc;

/// Why a set of files does not make a consistent checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Two shards hold a tensor of the same name.
    #[error("tensor `{name}` is in both {first} and {second}")]
    DuplicateTensor {
        /// Tensor name.
        name: String,
        /// First file holding it.
        first: String,
        /// Second file holding it.
        second: String,
    },
    /// The index maps a tensor to a shard that does not hold it.
    #[error("the index maps tensor `{tensor}` to {shard}, which has no such tensor")]
    NotInShard {
        /// Tensor name.
        tensor: String,
        /// The shard's path.
        shard: String,
    },
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct FileInfo {
    /// Relative path as given.
    pub path: String,
    /// Its parsed header (with the file size).
    pub header: Header,
}

/// One tensor of a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorRow {
    /// Index of the file in [`Checkpoint::files`].
    pub file: usize,
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element count.
    pub params: u64,
    /// Bytes of data.
    pub bytes: u64,
    /// Absolute offset of the data in its file.
    pub offset: u64,
    /// Statistics, once computed.
    pub stats: Option<Rc<TensorStats>>,
}

/// Tensors, parameters and bytes of one dtype, known from the headers alone.
#[derive(Debug, Clone, PartialEq)]
pub struct DtypeMix {
    /// The dtype.
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
    /// Display name.
    pub name: String,
    /// Its files in shard order.
    pub files: Vec<FileInfo>,
    /// Its tensors: files in order, each file's tensors in data order.
    pub rows: Vec<TensorRow>,
    /// Whole-checkpoint totals over the rows that have statistics.
    pub summary: Rc<Summary>,
    /// Rows with statistics.
    pub done: usize,
}

impl Checkpoint {
    /// Builds a checkpoint from its parsed files, checking tensor names are unique across shards
    /// and, when there is an index, that every mapped tensor is in its shard.
    pub fn new(
        id: u32,
        name: String,
        files: Vec<FileInfo>,
        index: Option<&ShardIndex>,
    ) -> Result<Checkpoint, CheckpointError> {
        let mut rows = Vec::new();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (fi, f) in files.iter().enumerate() {
            for t in &f.header.tensors {
                if let Some(&first) = seen.get(t.name.as_str()) {
                    return Err(CheckpointError::DuplicateTensor {
                        name: t.name.clone(),
                        first: files[first].path.clone(),
                        second: f.path.clone(),
                    });
                }
                seen.insert(&t.name, fi);
                rows.push(TensorRow {
                    file: fi,
                    name: t.name.clone(),
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    params: t.elements(),
                    bytes: t.byte_len(),
                    offset: f.header.file_range(t).0,
                    stats: None,
                });
            }
        }
        if let Some(index) = index {
            for (tensor, shard) in &index.weight_map {
                let holder = seen.get(tensor.as_str()).map(|&fi| &files[fi].path);
                if !holder.is_some_and(|p| p == shard || p.ends_with(&format!("/{shard}"))) {
                    return Err(CheckpointError::NotInShard {
                        tensor: tensor.clone(),
                        shard: shard.clone(),
                    });
                }
            }
        }
        Ok(Checkpoint {
            id,
            name,
            files,
            rows,
            summary: Rc::new(Summary::default()),
            done: 0,
        })
    }

    /// Bytes of tensor data over all files.
    pub fn data_bytes(&self) -> u64 {
        self.rows.iter().map(|r| r.bytes).sum()
    }

    /// Bytes of all files (headers included).
    pub fn file_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.header.file_size).sum()
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

    /// Tensors, parameters and bytes per dtype, from the headers.
    pub fn dtype_mix(&self) -> Vec<DtypeMix> {
        let mut mix: Vec<DtypeMix> = Vec::new();
        for r in &self.rows {
            match mix.iter_mut().find(|m| m.dtype == r.dtype) {
                Some(m) => {
                    m.tensors += 1;
                    m.params += r.params;
                    m.bytes += r.bytes;
                }
                None => mix.push(DtypeMix {
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

    /// The row with this name.
    pub fn row_by_name(&self, name: &str) -> Option<usize> {
        self.rows.iter().position(|r| r.name == name)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

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
        FileInfo {
            path: path.into(),
            header: header(tensors),
        }
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
}
