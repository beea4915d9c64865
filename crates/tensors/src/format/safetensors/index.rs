//! Sharded checkpoints: the `*.safetensors.index.json` file that maps tensor names to shard files.
//!
//! The index is untrusted input (it may come from a remote hub page), so its size and shard count
//! are capped and every shard name must be a plain relative path: no `..` component, no leading `/`
//! or `\`, no drive letter and no URL scheme. Resolving names to files or URLs is the caller's job.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::HashSet;
use std::fmt;

/// Largest index file accepted (32 MiB; real indexes of 1T-parameter models are a few MB).
pub const MAX_INDEX_LEN: u64 = 32 << 20;

/// Largest number of distinct shards accepted.
pub const MAX_SHARDS: usize = 4096;

/// Why a shard index was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The index file is larger than [`MAX_INDEX_LEN`].
    #[error("index is {len} bytes, over the limit of {max}")]
    TooLarge {
        /// Size of the index.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// Not JSON of the expected shape.
    #[error("index JSON invalid at line {line}, column {column}: {message}")]
    InvalidJson {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The object has no `weight_map`.
    #[error("index has no `weight_map` object")]
    MissingWeightMap,
    /// `weight_map` is empty.
    #[error("index `weight_map` lists no tensors")]
    EmptyWeightMap,
    /// A tensor is listed twice in `weight_map`.
    #[error("tensor `{name}` appears more than once in `weight_map`")]
    DuplicateTensor {
        /// The repeated name.
        name: String,
    },
    /// More distinct shards than [`MAX_SHARDS`].
    #[error("index names {count} shards, over the limit of {max}")]
    TooManyShards {
        /// Distinct shards named (counted up to the limit + 1).
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A shard name is not a plain relative path.
    #[error("tensor `{tensor}`: shard name `{shard}` rejected: {reason}")]
    UnsafeShardName {
        /// The tensor mapped to it.
        tensor: String,
        /// The shard name.
        shard: String,
        /// Which rule it broke.
        reason: &'static str,
    },
}

/// A parsed shard index.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardIndex {
    /// The index's `metadata` object, if any (e.g. `total_size`), as it was.
    pub metadata: Option<serde_json::Value>,
    /// `(tensor name, shard name)` in file order.
    pub weight_map: Vec<(String, String)>,
    /// Distinct shard names in order of first appearance.
    pub shards: Vec<String>,
}

impl ShardIndex {
    /// Parses and checks an index file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<ShardIndex, IndexError> {
        if bytes.len() as u64 > MAX_INDEX_LEN {
            return Err(IndexError::TooLarge {
                len: bytes.len() as u64,
                max: MAX_INDEX_LEN,
            });
        }
        let raw: RawIndex = serde_json::from_slice(bytes).map_err(|e| IndexError::InvalidJson {
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        let weight_map = raw.weight_map.ok_or(IndexError::MissingWeightMap)?.0;
        if weight_map.is_empty() {
            return Err(IndexError::EmptyWeightMap);
        }
        let mut names = HashSet::with_capacity(weight_map.len());
        let mut seen_shards = HashSet::new();
        let mut shards = Vec::new();
        for (tensor, shard) in &weight_map {
            if !names.insert(tensor.as_str()) {
                return Err(IndexError::DuplicateTensor {
                    name: tensor.clone(),
                });
            }
            if let Some(reason) = unsafe_shard_name(shard) {
                return Err(IndexError::UnsafeShardName {
                    tensor: tensor.clone(),
                    shard: shard.clone(),
                    reason,
                });
            }
            if seen_shards.insert(shard.as_str()) {
                if shards.len() == MAX_SHARDS {
                    return Err(IndexError::TooManyShards {
                        count: MAX_SHARDS + 1,
                        max: MAX_SHARDS,
                    });
                }
                shards.push(shard.clone());
            }
        }
        Ok(ShardIndex {
            metadata: raw.metadata,
            weight_map,
            shards,
        })
    }

    /// The shard a tensor lives in.
    pub fn shard_of(&self, tensor: &str) -> Option<&str> {
        self.weight_map
            .iter()
            .find(|(t, _)| t == tensor)
            .map(|(_, s)| s.as_str())
    }
}

/// Returns why a shard name is not a plain relative path, or `None` if it is acceptable.
pub fn unsafe_shard_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("empty name");
    }
    if name.contains('\0') {
        return Some("contains a NUL byte");
    }
    if name.starts_with('/') || name.starts_with('\\') {
        return Some("absolute path");
    }
    if name.contains("://") {
        return Some("URL scheme");
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Some("drive letter");
    }
    if name.split(['/', '\\']).any(|c| c == "..") {
        return Some("`..` path component");
    }
    if name.ends_with('/') || name.ends_with('\\') {
        return Some("names a directory");
    }
    None
}

#[derive(Deserialize)]
struct RawIndex {
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    weight_map: Option<OrderedPairs>,
}

/// A JSON object of string values in file order, duplicates kept (they are checked afterwards).
struct OrderedPairs(Vec<(String, String)>);

impl<'de> Deserialize<'de> for OrderedPairs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PairsVisitor;
        impl<'de> Visitor<'de> for PairsVisitor {
            type Value = OrderedPairs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object mapping tensor names to shard file names")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, String>()? {
                    if out.len() >= (MAX_INDEX_LEN / 8) as usize {
                        return Err(de::Error::custom("weight_map has too many entries"));
                    }
                    out.push(entry);
                }
                Ok(OrderedPairs(out))
            }
        }
        d.deserialize_map(PairsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(weight_map: &str) -> Result<ShardIndex, IndexError> {
        ShardIndex::parse(
            format!(r#"{{"metadata":{{"total_size":16}},"weight_map":{weight_map}}}"#).as_bytes(),
        )
    }

    #[test]
    fn parses_shards_in_first_appearance_order() {
        let idx = index(r#"{"b":"m-2.safetensors","a":"m-1.safetensors","c":"m-2.safetensors"}"#)
            .unwrap();
        assert_eq!(idx.shards, ["m-2.safetensors", "m-1.safetensors"]);
        assert_eq!(idx.shard_of("a"), Some("m-1.safetensors"));
        assert_eq!(idx.metadata.unwrap()["total_size"], 16);
    }

    #[test]
    fn rejects_parent_directory_components() {
        let err = index(r#"{"a":"../secret.safetensors"}"#).unwrap_err();
        assert!(matches!(
            err,
            IndexError::UnsafeShardName {
                reason: "`..` path component",
                ..
            }
        ));
        assert!(index(r#"{"a":"sub/..\\x.safetensors"}"#).is_err());
    }

    #[test]
    fn rejects_absolute_paths_and_urls() {
        for bad in [
            "/etc/passwd",
            "\\\\host\\share",
            "https://evil/x.safetensors",
            "C:x",
            "",
        ] {
            let json = serde_json::json!({ "a": bad }).to_string();
            assert!(
                matches!(index(&json), Err(IndexError::UnsafeShardName { .. })),
                "{bad}"
            );
        }
        assert!(index(r#"{"a":"sub/dir/model.safetensors"}"#).is_ok());
    }

    #[test]
    fn dots_inside_a_name_are_not_a_parent_directory() {
        // Found by the shard_index fuzz target (its assertion was stricter than the rule).
        let idx = index(r#"{"a":"m-1.safetensors","b":"s=b/m-2..afetensizs"}"#).unwrap();
        assert_eq!(idx.shards[1], "s=b/m-2..afetensizs");
    }

    #[test]
    fn rejects_duplicate_tensors() {
        let err = index(r#"{"a":"x.safetensors","a":"y.safetensors"}"#).unwrap_err();
        assert_eq!(err, IndexError::DuplicateTensor { name: "a".into() });
    }

    #[test]
    fn rejects_missing_or_empty_weight_map_and_bad_json() {
        assert_eq!(
            ShardIndex::parse(br#"{"metadata":{}}"#).unwrap_err(),
            IndexError::MissingWeightMap
        );
        assert_eq!(index("{}").unwrap_err(), IndexError::EmptyWeightMap);
        assert!(matches!(
            ShardIndex::parse(b"{\"weight_map\": {\"a\": 3}}"),
            Err(IndexError::InvalidJson { line: 1, .. })
        ));
    }

    #[test]
    fn caps_size_and_shard_count() {
        let big = vec![b' '; MAX_INDEX_LEN as usize + 1];
        assert!(matches!(
            ShardIndex::parse(&big),
            Err(IndexError::TooLarge { .. })
        ));
        let map: serde_json::Map<String, serde_json::Value> = (0..=MAX_SHARDS)
            .map(|i| (format!("t{i}"), format!("s{i}.safetensors").into()))
            .collect();
        let json = serde_json::json!({ "weight_map": map }).to_string();
        assert!(matches!(
            ShardIndex::parse(json.as_bytes()),
            Err(IndexError::TooManyShards {
                max: MAX_SHARDS,
                ..
            })
        ));
    }
}
