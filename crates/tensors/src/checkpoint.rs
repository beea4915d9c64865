//! One checkpoint from several files: the rules that make parsed shard headers (and an optional
//! parsed shard index) one consistent checkpoint. The CLI (`bitlens inspect / diff / compress`)
//! and the web app both build their checkpoints here, so they accept and reject the same inputs.
//!
//! The caller finds and reads the files (paths, blobs, URLs); this module sees only each file's
//! path as the caller names it (`dir/model-00001-of-00002.safetensors`, or a bare name) and its
//! [`Layout`] (any format: a safetensors header becomes one with
//! [`crate::format::safetensors::layout`]). Index files are safetensors' only.
//! [`Checkpoint::new`] rejects, in this order:
//! 1. no files at all ([`CheckpointError::NoFiles`]);
//! 2. with an index: a shard the index names that none of the files is
//!    ([`CheckpointError::MissingShard`]), or a file that is none of the index's shards
//!    ([`CheckpointError::UnlistedFile`]). A file *is* shard `s` when its path is `s` or ends with
//!    `/s` (or `\s`); a file that would match two shard names is the longer one;
//! 3. a tensor name held by two files ([`CheckpointError::DuplicateTensor`], naming both; a single
//!    header already rejects its own duplicates);
//! 4. with an index: a tensor the index maps to a shard that does not hold it
//!    ([`CheckpointError::NotInShard`]).
//!
//! Tensors a shard holds but the index does not list are accepted; [`Checkpoint::unlisted`]
//! counts them so a caller can warn.

use crate::format::safetensors::index::ShardIndex;
use crate::format::{bytes, Entry, Layout};
use std::collections::HashMap;

/// Why a set of files does not make one consistent checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// No files were given.
    #[error("no .safetensors files")]
    NoFiles,
    /// The index names a shard that is not among the files.
    #[error("the index names shard `{shard}`, which is not among the files")]
    MissingShard {
        /// The shard name as the index has it.
        shard: String,
    },
    /// A file is not one of the shards the index names.
    #[error("{path} is not one of the shards the index names")]
    UnlistedFile {
        /// The file's path as given.
        path: String,
    },
    /// Two files hold a tensor of the same name.
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
        /// The shard name as the index has it.
        shard: String,
    },
}

/// One file of a checkpoint: its path as the caller names it and its layout.
#[derive(Debug, Clone, PartialEq)]
pub struct Shard {
    /// The file's path as given (`dir/name.safetensors` or a bare name); used to match the index's
    /// shard names and in error messages, never opened here.
    pub path: String,
    /// Its tensors and metadata, as its format's reader found them (with the file size).
    pub layout: Layout,
}

/// A validated checkpoint: its files in order and its index, if it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    shards: Vec<Shard>,
    index: Option<ShardIndex>,
}

/// True when the file at `path` is the shard the index calls `shard`.
fn is_shard(path: &str, shard: &str) -> bool {
    path.strip_suffix(shard)
        .is_some_and(|dir| dir.is_empty() || dir.ends_with('/') || dir.ends_with('\\'))
}

impl Checkpoint {
    /// Checks the rules of the module doc and builds the checkpoint. `shards` are in the order
    /// the caller wants them listed (the index's shard order, or sorted file names).
    pub fn new(
        shards: Vec<Shard>,
        index: Option<ShardIndex>,
    ) -> Result<Checkpoint, CheckpointError> {
        if shards.is_empty() {
            return Err(CheckpointError::NoFiles);
        }
        // Which of the index's shard names each file is.
        let shard_of_file: Option<Vec<&str>> = match &index {
            None => None,
            Some(index) => {
                let mut names = Vec::with_capacity(shards.len());
                for s in &shards {
                    let name = index
                        .shards
                        .iter()
                        .filter(|n| is_shard(&s.path, n))
                        .max_by_key(|n| n.len())
                        .ok_or_else(|| CheckpointError::UnlistedFile {
                            path: s.path.clone(),
                        })?;
                    names.push(name.as_str());
                }
                if let Some(missing) = index.shards.iter().find(|n| !names.contains(&n.as_str())) {
                    return Err(CheckpointError::MissingShard {
                        shard: missing.clone(),
                    });
                }
                Some(names)
            }
        };
        let mut holder: HashMap<&str, usize> = HashMap::new();
        for (i, s) in shards.iter().enumerate() {
            for t in &s.layout.entries {
                if let Some(&first) = holder.get(t.name.as_str()) {
                    return Err(CheckpointError::DuplicateTensor {
                        name: t.name.clone(),
                        first: shards[first].path.clone(),
                        second: s.path.clone(),
                    });
                }
                holder.insert(&t.name, i);
            }
        }
        if let (Some(index), Some(shard_of_file)) = (&index, &shard_of_file) {
            for (tensor, shard) in &index.weight_map {
                let held = holder.get(tensor.as_str()).map(|&i| shard_of_file[i]);
                if held != Some(shard.as_str()) {
                    return Err(CheckpointError::NotInShard {
                        tensor: tensor.clone(),
                        shard: shard.clone(),
                    });
                }
            }
        }
        Ok(Checkpoint { shards, index })
    }

    /// The files, in the order given.
    pub fn shards(&self) -> &[Shard] {
        &self.shards
    }

    /// The shard index, if the checkpoint has one.
    pub fn index(&self) -> Option<&ShardIndex> {
        self.index.as_ref()
    }

    /// Every tensor with the position of its file: files in order, each file's tensors in data
    /// order. This is the order comparisons and tables list tensors in.
    pub fn tensors(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.shards
            .iter()
            .enumerate()
            .flat_map(|(i, s)| s.layout.entries.iter().map(move |t| (i, t)))
    }

    /// For each file holding tensors the index does not list: `(file position, how many)`.
    /// Empty without an index.
    pub fn unlisted(&self) -> Vec<(usize, usize)> {
        let Some(index) = &self.index else {
            return Vec::new();
        };
        let listed: std::collections::HashSet<&str> =
            index.weight_map.iter().map(|(t, _)| t.as_str()).collect();
        self.shards
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let extra = s
                    .layout
                    .entries
                    .iter()
                    .filter(|t| !listed.contains(t.name.as_str()))
                    .count();
                (i, extra)
            })
            .filter(|&(_, extra)| extra > 0)
            .collect()
    }

    /// Bytes of tensor data over all files (each tensor's bytes in element order).
    pub fn data_bytes(&self) -> u64 {
        self.tensors().map(|(_, t)| bytes::byte_len(t)).sum()
    }

    /// The files and the index, for callers that keep them in their own types.
    pub fn into_parts(self) -> (Vec<Shard>, Option<ShardIndex>) {
        (self.shards, self.index)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{Dtype, Header};

    /// A valid header for tensors `(name, dtype, shape)` laid out in order.
    pub(crate) fn header(tensors: &[(&str, &str, &[u64])]) -> Header {
        let mut entries = Vec::new();
        let mut off = 0u64;
        for (name, dtype, shape) in tensors {
            let bits = u64::from(dtype.parse::<Dtype>().unwrap().bits());
            let size = shape.iter().product::<u64>() * bits / 8;
            entries.push(format!(
                r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{off},{}]}}"#,
                off + size
            ));
            off += size;
        }
        let json = format!("{{{}}}", entries.join(","));
        let mut prefix = (json.len() as u64).to_le_bytes().to_vec();
        prefix.extend_from_slice(json.as_bytes());
        Header::parse(&prefix, prefix.len() as u64 + off).unwrap()
    }

    pub(crate) fn shard(path: &str, tensors: &[(&str, &str, &[u64])]) -> Shard {
        Shard {
            path: path.into(),
            layout: crate::format::safetensors::layout(&header(tensors)),
        }
    }

    fn index(map: &[(&str, &str)]) -> ShardIndex {
        let map: serde_json::Map<String, serde_json::Value> = map
            .iter()
            .map(|(t, s)| (t.to_string(), s.to_string().into()))
            .collect();
        let json = serde_json::json!({ "weight_map": map }).to_string();
        ShardIndex::parse(json.as_bytes()).unwrap()
    }

    fn two_shards() -> Vec<Shard> {
        vec![
            shard(
                "run/m-1.safetensors",
                &[("a", "BF16", &[4]), ("b", "F32", &[2])],
            ),
            shard("run/m-2.safetensors", &[("c", "U8", &[3])]),
        ]
    }

    #[test]
    fn tensors_run_over_files_in_order() {
        let c = Checkpoint::new(two_shards(), None).unwrap();
        let names: Vec<_> = c.tensors().map(|(f, t)| (f, t.name.as_str())).collect();
        assert_eq!(names, [(0, "a"), (0, "b"), (1, "c")]);
        assert_eq!(c.data_bytes(), 8 + 8 + 3);
        assert!(c.unlisted().is_empty());
        assert_eq!(c.into_parts().0.len(), 2);
    }

    #[test]
    fn an_index_that_matches_its_shards_is_accepted() {
        let ix = index(&[
            ("a", "m-1.safetensors"),
            ("b", "m-1.safetensors"),
            ("c", "m-2.safetensors"),
        ]);
        let c = Checkpoint::new(two_shards(), Some(ix)).unwrap();
        assert_eq!(c.index().unwrap().shards.len(), 2);
        assert!(c.unlisted().is_empty());
    }

    #[test]
    fn rejects_no_files() {
        assert_eq!(
            Checkpoint::new(Vec::new(), None),
            Err(CheckpointError::NoFiles)
        );
    }

    #[test]
    fn rejects_a_shard_the_index_names_but_nobody_gave() {
        let ix = index(&[("a", "m-1.safetensors"), ("c", "m-3.safetensors")]);
        let files = vec![shard("m-1.safetensors", &[("a", "BF16", &[4])])];
        assert_eq!(
            Checkpoint::new(files, Some(ix)),
            Err(CheckpointError::MissingShard {
                shard: "m-3.safetensors".into()
            })
        );
    }

    #[test]
    fn rejects_a_file_the_index_does_not_name() {
        let ix = index(&[("a", "m-1.safetensors"), ("b", "m-1.safetensors")]);
        let err = Checkpoint::new(two_shards(), Some(ix)).unwrap_err();
        assert_eq!(
            err,
            CheckpointError::UnlistedFile {
                path: "run/m-2.safetensors".into()
            }
        );
        // A name that only ends like the shard is not it.
        let ix = index(&[("a", "1.safetensors")]);
        let files = vec![shard("m-1.safetensors", &[("a", "BF16", &[4])])];
        assert!(matches!(
            Checkpoint::new(files, Some(ix)),
            Err(CheckpointError::UnlistedFile { .. })
        ));
    }

    #[test]
    fn rejects_a_tensor_name_in_two_files_naming_both() {
        let files = vec![
            shard(
                "d/a.safetensors",
                &[("x", "BF16", &[4]), ("y", "BF16", &[1])],
            ),
            shard(
                "d/b.safetensors",
                &[("z", "F32", &[1]), ("x", "BF16", &[4])],
            ),
        ];
        let err = Checkpoint::new(files, None).unwrap_err();
        assert_eq!(
            err,
            CheckpointError::DuplicateTensor {
                name: "x".into(),
                first: "d/a.safetensors".into(),
                second: "d/b.safetensors".into(),
            }
        );
        assert_eq!(
            err.to_string(),
            "tensor `x` is in both d/a.safetensors and d/b.safetensors"
        );
    }

    #[test]
    fn rejects_an_index_mapping_a_tensor_to_a_shard_without_it() {
        // `c` is in m-2, the index says m-1.
        let ix = index(&[
            ("a", "m-1.safetensors"),
            ("c", "m-1.safetensors"),
            ("b", "m-2.safetensors"),
        ]);
        assert_eq!(
            Checkpoint::new(two_shards(), Some(ix)),
            Err(CheckpointError::NotInShard {
                tensor: "c".into(),
                shard: "m-1.safetensors".into()
            })
        );
        // A tensor no file holds at all.
        let ix = index(&[("a", "m-1.safetensors"), ("ghost", "m-2.safetensors")]);
        assert!(matches!(
            Checkpoint::new(two_shards(), Some(ix)),
            Err(CheckpointError::NotInShard { tensor, .. }) if tensor == "ghost"
        ));
    }

    #[test]
    fn layouts_of_any_format_follow_the_same_rules() {
        use crate::format::{Data, ElementType, Entry, Format, GgmlType};
        let gguf = Shard {
            path: "m.gguf".into(),
            layout: Layout {
                format: Format::Gguf,
                kind: "GGUF v3".into(),
                file_size: 100,
                entries: vec![Entry {
                    name: "a".into(),
                    ty: ElementType::Ggml(GgmlType(8)),
                    shape: vec![32],
                    data: Data::Range {
                        offset: 32,
                        len: 34,
                    },
                }],
                metadata: Vec::new(),
            },
        };
        let c = Checkpoint::new(vec![gguf.clone()], None).unwrap();
        assert_eq!(c.data_bytes(), 34);
        assert_eq!(c.tensors().next().unwrap().1.name, "a");
        let st = shard("m.safetensors", &[("a", "F32", &[1])]);
        assert!(matches!(
            Checkpoint::new(vec![gguf, st], None),
            Err(CheckpointError::DuplicateTensor { first, .. }) if first == "m.gguf"
        ));
    }

    #[test]
    fn counts_tensors_the_index_does_not_list() {
        let ix = index(&[("a", "m-1.safetensors"), ("c", "m-2.safetensors")]);
        let c = Checkpoint::new(two_shards(), Some(ix)).unwrap();
        assert_eq!(c.unlisted(), [(0, 1)]);
    }

    #[test]
    fn shard_names_with_directories_match_the_longest() {
        let ix = index(&[("a", "x.safetensors"), ("b", "sub/x.safetensors")]);
        let files = vec![
            shard("top/x.safetensors", &[("a", "BF16", &[1])]),
            shard("top/sub/x.safetensors", &[("b", "BF16", &[1])]),
        ];
        assert!(Checkpoint::new(files, Some(ix)).is_ok());
        let ix = index(&[("a", "x.safetensors")]);
        let files = vec![shard("C:\\m\\x.safetensors", &[("a", "BF16", &[1])])];
        assert!(Checkpoint::new(files, Some(ix)).is_ok());
    }
}
