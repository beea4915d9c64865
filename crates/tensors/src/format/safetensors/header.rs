//! The safetensors header: `u64` little-endian length `N`, then `N` bytes of UTF-8 JSON.
//!
//! [`Header::parse`] needs only those `8 + N` bytes and the file size, never the data section, so a
//! 10 GB shard (or a remote file read by HTTP range requests) is described after one small read.
//! Validation follows the reference `safetensors` crate (0.8): header length ≤ 100 MB, UTF-8 JSON
//! object of tensor entries and an optional `__metadata__` string map, offsets sorted and contiguous
//! from 0, byte length equal to `shape × dtype bits / 8` with overflow checks, and the data ending
//! exactly at the end of the file. Two rules are added: duplicate tensor names (and duplicate
//! metadata keys), which JSON maps would otherwise silently collapse, are rejected; and the
//! "data ends at end of file" check uses the file size, not a buffer.

use crate::dtype::Dtype;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The largest header the reference implementation accepts (100 MB).
pub const MAX_HEADER_LEN: u64 = 100_000_000;

/// Size of the length prefix in front of the JSON header.
pub const LEN_PREFIX: u64 = 8;

/// Why a safetensors header was rejected. Positions are byte offsets in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// The file is shorter than the 8-byte length prefix.
    #[error("file is {file_size} bytes, too small for the 8-byte header length")]
    FileTooSmall {
        /// Size of the file.
        file_size: u64,
    },
    /// The declared header length exceeds [`MAX_HEADER_LEN`].
    #[error("header length {header_len} (bytes 0..8) exceeds the limit of {max} bytes (not a safetensors file?)")]
    HeaderTooLarge {
        /// Declared header length.
        header_len: u64,
        /// The limit.
        max: u64,
    },
    /// The declared header runs past the end of the file.
    #[error(
        "header length {header_len} (bytes 0..8) runs past the end of the {file_size}-byte file"
    )]
    HeaderBeyondFile {
        /// Declared header length.
        header_len: u64,
        /// Size of the file.
        file_size: u64,
    },
    /// The caller passed fewer bytes than the header needs.
    #[error("need the first {needed} bytes of the file to parse the header, got {available}")]
    PrefixTooShort {
        /// Bytes needed (`8 + N`).
        needed: u64,
        /// Bytes given.
        available: u64,
    },
    /// The header is not valid UTF-8.
    #[error("header is not UTF-8: invalid byte at file offset {offset}")]
    InvalidUtf8 {
        /// File offset of the first invalid byte.
        offset: u64,
    },
    /// The header is not JSON of the expected shape.
    #[error(
        "header JSON invalid at file offset {offset} (line {line}, column {column}): {message}"
    )]
    InvalidJson {
        /// File offset where the parser stopped.
        offset: u64,
        /// 1-based line within the header.
        line: usize,
        /// 1-based column within the line.
        column: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// A tensor names a dtype the spec does not have.
    #[error("tensor `{tensor}`: unknown dtype `{dtype}`")]
    UnknownDtype {
        /// Tensor name.
        tensor: String,
        /// The dtype string found.
        dtype: String,
    },
    /// Two tensors share a name.
    #[error("tensor name `{name}` appears more than once in the header")]
    DuplicateTensor {
        /// The repeated name.
        name: String,
    },
    /// Two `__metadata__` entries share a key.
    #[error("`__metadata__` key `{key}` appears more than once")]
    DuplicateMetadataKey {
        /// The repeated key.
        key: String,
    },
    /// A tensor's end offset is before its start offset.
    #[error("tensor `{tensor}`: data_offsets [{start}, {end}] end before they start")]
    ReversedOffsets {
        /// Tensor name.
        tensor: String,
        /// Start offset (relative to the data section).
        start: u64,
        /// End offset.
        end: u64,
    },
    /// Sorted by offset, a tensor does not start where the previous one ended (gap or overlap).
    #[error("tensor `{tensor}`: data starts at {start} but the previous tensor ends at {expected} (gap or overlap)")]
    NotContiguous {
        /// Tensor name.
        tensor: String,
        /// Where it should start.
        expected: u64,
        /// Where it starts.
        start: u64,
    },
    /// The element count or bit count of a tensor overflows 64 bits.
    #[error("tensor `{tensor}`: shape {shape:?} overflows 64 bits")]
    ShapeOverflow {
        /// Tensor name.
        tensor: String,
        /// Its shape.
        shape: Vec<u64>,
    },
    /// A packed sub-byte tensor does not end on a byte boundary.
    #[error("tensor `{tensor}`: {elements} elements of {bits} bits do not fill whole bytes")]
    MisalignedPacked {
        /// Tensor name.
        tensor: String,
        /// Element count.
        elements: u64,
        /// Bits per element.
        bits: u32,
    },
    /// A tensor's byte range does not match its shape and dtype.
    #[error("tensor `{tensor}`: {dtype} {shape:?} needs {expected} bytes but data_offsets span {actual}")]
    SizeMismatch {
        /// Tensor name.
        tensor: String,
        /// Its dtype.
        dtype: Dtype,
        /// Its shape.
        shape: Vec<u64>,
        /// Bytes implied by shape and dtype.
        expected: u64,
        /// Bytes spanned by its offsets.
        actual: u64,
    },
    /// The data section does not end exactly at the end of the file.
    #[error("tensors end at file offset {data_end} but the file is {file_size} bytes (truncated or trailing data)")]
    DataSizeMismatch {
        /// File offset where the last tensor ends.
        data_end: u64,
        /// Size of the file.
        file_size: u64,
    },
}

/// One tensor entry of a header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorInfo {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// `[start, end)` byte range relative to the start of the data section.
    pub data_offsets: (u64, u64),
}

impl TensorInfo {
    /// Number of elements (1 for a scalar, 0 if any dimension is 0).
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Length of the tensor's data in bytes.
    pub fn byte_len(&self) -> u64 {
        self.data_offsets.1 - self.data_offsets.0
    }
}

/// A parsed, validated safetensors header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The declared JSON length `N`.
    pub header_len: u64,
    /// The `N` header bytes exactly as in the file (including any padding).
    pub raw: Vec<u8>,
    /// The `__metadata__` entries in file order, if present.
    pub metadata: Option<Vec<(String, String)>>,
    /// Tensors sorted by data offset.
    pub tensors: Vec<TensorInfo>,
    /// Size of the whole file.
    pub file_size: u64,
}

impl Header {
    /// Reads the declared header length from the first 8 bytes and checks it against the limit
    /// and the file size. Returns `8 + N`, the number of bytes [`Header::parse`] needs.
    pub fn needed_prefix(first8: [u8; 8], file_size: u64) -> Result<u64, HeaderError> {
        if file_size < LEN_PREFIX {
            return Err(HeaderError::FileTooSmall { file_size });
        }
        let header_len = u64::from_le_bytes(first8);
        if header_len > MAX_HEADER_LEN {
            return Err(HeaderError::HeaderTooLarge {
                header_len,
                max: MAX_HEADER_LEN,
            });
        }
        if LEN_PREFIX + header_len > file_size {
            return Err(HeaderError::HeaderBeyondFile {
                header_len,
                file_size,
            });
        }
        Ok(LEN_PREFIX + header_len)
    }

    /// Parses and validates a header from the file's first bytes (at least `8 + N` of them; more
    /// are ignored) and the total file size.
    pub fn parse(prefix: &[u8], file_size: u64) -> Result<Header, HeaderError> {
        let Some(first8) = prefix.get(..8) else {
            return Err(if file_size < LEN_PREFIX {
                HeaderError::FileTooSmall { file_size }
            } else {
                HeaderError::PrefixTooShort {
                    needed: LEN_PREFIX,
                    available: prefix.len() as u64,
                }
            });
        };
        let needed = Self::needed_prefix(first8.try_into().expect("8 bytes"), file_size)?;
        let raw = prefix.get(LEN_PREFIX as usize..needed as usize).ok_or(
            HeaderError::PrefixTooShort {
                needed,
                available: prefix.len() as u64,
            },
        )?;
        let text = std::str::from_utf8(raw).map_err(|e| HeaderError::InvalidUtf8 {
            offset: LEN_PREFIX + e.valid_up_to() as u64,
        })?;
        let entries: RawHeader = serde_json::from_str(text).map_err(|e| {
            let offset = LEN_PREFIX + byte_offset(text, e.line(), e.column());
            HeaderError::InvalidJson {
                offset,
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            }
        })?;
        let (metadata, tensors) = entries.validate(file_size, needed)?;
        Ok(Header {
            header_len: needed - LEN_PREFIX,
            raw: raw.to_vec(),
            metadata,
            tensors,
            file_size,
        })
    }

    /// File offset where the data section starts (`8 + N`).
    pub fn data_start(&self) -> u64 {
        LEN_PREFIX + self.header_len
    }

    /// Length of the data section in bytes.
    pub fn data_len(&self) -> u64 {
        self.file_size - self.data_start()
    }

    /// The tensor with this name, if any.
    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Absolute file range `[start, end)` of a tensor's bytes.
    pub fn file_range(&self, tensor: &TensorInfo) -> (u64, u64) {
        let base = self.data_start();
        (base + tensor.data_offsets.0, base + tensor.data_offsets.1)
    }
}

/// Converts serde_json's 1-based line/column into a byte offset within `text`.
fn byte_offset(text: &str, line: usize, column: usize) -> u64 {
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line.saturating_sub(1))
        .map(str::len)
        .sum();
    (line_start + column.saturating_sub(1)).min(text.len()) as u64
}

/// A header entry before validation: the JSON is read in file order so duplicates can be seen.
enum RawEntry {
    Metadata(Vec<(String, String)>),
    Tensor(RawTensor),
}

#[derive(Deserialize)]
struct RawTensor {
    dtype: String,
    shape: Vec<u64>,
    data_offsets: (u64, u64),
}

struct RawHeader(Vec<(String, RawEntry)>);

impl<'de> Deserialize<'de> for RawHeader {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct HeaderVisitor;
        impl<'de> Visitor<'de> for HeaderVisitor {
            type Value = RawHeader;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object of tensor entries")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawHeader, A::Error> {
                let mut out = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let entry = if key == "__metadata__" {
                        RawEntry::Metadata(map.next_value::<OrderedStringMap>()?.0)
                    } else {
                        RawEntry::Tensor(map.next_value()?)
                    };
                    out.push((key, entry));
                }
                Ok(RawHeader(out))
            }
        }
        d.deserialize_map(HeaderVisitor)
    }
}

/// A JSON object of string values, kept in file order (duplicates included, checked later).
struct OrderedStringMap(Vec<(String, String)>);

impl<'de> Deserialize<'de> for OrderedStringMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = OrderedStringMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of string values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, String>()? {
                    out.push(entry);
                }
                Ok(OrderedStringMap(out))
            }
        }
        d.deserialize_map(MapVisitor)
    }
}

/// The metadata entries and the offset-sorted tensors of a validated header.
type Validated = (Option<Vec<(String, String)>>, Vec<TensorInfo>);

impl RawHeader {
    fn validate(self, file_size: u64, data_start: u64) -> Result<Validated, HeaderError> {
        let mut metadata: Option<Vec<(String, String)>> = None;
        let mut tensors = Vec::with_capacity(self.0.len());
        let mut names = std::collections::HashSet::with_capacity(self.0.len());
        for (name, entry) in self.0 {
            match entry {
                RawEntry::Metadata(m) => {
                    if metadata.is_some() {
                        return Err(HeaderError::DuplicateTensor { name });
                    }
                    let mut keys = std::collections::HashSet::with_capacity(m.len());
                    if let Some((k, _)) = m.iter().find(|(k, _)| !keys.insert(k.as_str())) {
                        return Err(HeaderError::DuplicateMetadataKey { key: k.clone() });
                    }
                    metadata = Some(m);
                }
                RawEntry::Tensor(t) => {
                    if !names.insert(name.clone()) {
                        return Err(HeaderError::DuplicateTensor { name });
                    }
                    let dtype =
                        t.dtype
                            .parse::<Dtype>()
                            .map_err(|_| HeaderError::UnknownDtype {
                                tensor: name.clone(),
                                dtype: t.dtype.clone(),
                            })?;
                    tensors.push(TensorInfo {
                        name,
                        dtype,
                        shape: t.shape,
                        data_offsets: t.data_offsets,
                    });
                }
            }
        }
        tensors.sort_by_key(|t| t.data_offsets);
        let mut expected = 0u64;
        for t in &tensors {
            let (start, end) = t.data_offsets;
            if end < start {
                return Err(HeaderError::ReversedOffsets {
                    tensor: t.name.clone(),
                    start,
                    end,
                });
            }
            if start != expected {
                return Err(HeaderError::NotContiguous {
                    tensor: t.name.clone(),
                    expected,
                    start,
                });
            }
            expected = end;
            let overflow = || HeaderError::ShapeOverflow {
                tensor: t.name.clone(),
                shape: t.shape.clone(),
            };
            let elements = t
                .shape
                .iter()
                .try_fold(1u64, |acc, &d| acc.checked_mul(d))
                .ok_or_else(overflow)?;
            let bits = elements
                .checked_mul(u64::from(t.dtype.bits()))
                .ok_or_else(overflow)?;
            if bits % 8 != 0 {
                return Err(HeaderError::MisalignedPacked {
                    tensor: t.name.clone(),
                    elements,
                    bits: t.dtype.bits(),
                });
            }
            if bits / 8 != end - start {
                return Err(HeaderError::SizeMismatch {
                    tensor: t.name.clone(),
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    expected: bits / 8,
                    actual: end - start,
                });
            }
        }
        let data_end = data_start
            .checked_add(expected)
            .ok_or(HeaderError::DataSizeMismatch {
                data_end: u64::MAX,
                file_size,
            })?;
        if data_end != file_size {
            return Err(HeaderError::DataSizeMismatch {
                data_end,
                file_size,
            });
        }
        Ok((metadata, tensors))
    }
}
