//! The GGUF reader (llama.cpp's checkpoint format): header, key/values of every type, tensor
//! infos, alignment, and the checks that make every tensor's byte range trustworthy.
//!
//! Follows the GGUF spec (`ggml/docs/gguf.md` in llama.cpp), ggml's `gguf.cpp` and gguf-py's
//! `GGUFReader` (the `gguf` package 0.19.0). Versions 2 and 3, little-endian (their layouts are
//! the same). A big-endian file (its version field read little-endian has an empty low half,
//! which is how gguf-py tells it) is refused with [`GgufError::BigEndian`]; version 1 (32-bit
//! counts) is refused.
//!
//! **Shapes.** GGUF stores a tensor's dims fastest-varying first (`ne[0]` is the row length).
//! [`Entry::shape`] reports them reversed, row-major like numpy, safetensors and PyTorch: a
//! GGUF `[384, 1536]` (gguf-py's `ReaderTensor.shape`) is `[1536, 384]` here, which is
//! gguf-py's `ReaderTensor.data.shape` for plain types and the shape of `dequantize`'s result
//! for quantized ones. [`TensorInfo::dims`] keeps the file's order.
//!
//! **Rules checked** (each a [`GgufError`] variant): the magic, the version, counts that fit
//! the bytes left (and [`MAX_TENSORS`]), strings within the file (and [`meta::MAX_STRING`]), known value types,
//! arrays no longer than the bytes left and nested at most [`meta::MAX_DEPTH`], at most
//! [`meta::MAX_VALUES`] values, unique keys, `general.alignment` a non-zero power-of-two u32
//! (default 32), at most 4 dims (`GGML_MAX_DIMS`), dims ≤ `i64::MAX` whose product and byte
//! size do not overflow, known ggml types, a first dim that is a multiple of the block size,
//! offsets that are multiples of the alignment, byte ranges inside the file that do not
//! overlap, unique tensor names. Nothing is allocated from a count before the bytes it claims
//! are seen.

mod cursor;
pub mod dequant;
mod error;
pub mod meta;
pub mod parts;
#[cfg(test)]
mod tests;
pub mod types;

use crate::format::{Data, ElementType, Entry, Format, GgmlType, Layout, MetaValue};
use crate::source::ReadAt;
use cursor::Cursor;
use meta::{KeyValue, MetaReader, ValueType};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

pub use dequant::{
    can_dequantize, can_dequantize_with_codes, dequantize, dequantize_to_vec,
    dequantize_with_codes, DequantError,
};
pub use error::GgufError;
pub use parts::block_parts;

/// `GGUF` read as a little-endian u32.
pub const MAGIC: [u8; 4] = *b"GGUF";
/// The alignment of tensor data when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u32 = 32;
/// `GGML_MAX_DIMS`.
pub const MAX_DIMS: u32 = 4;
/// Most tensors accepted in one file (the largest models have a few thousand; each info costs
/// ~100 bytes of memory, so a hostile multi-GB file cannot make the table take GBs).
pub const MAX_TENSORS: u64 = 1 << 20;
/// The key that sets the alignment.
pub const ALIGNMENT_KEY: &str = "general.alignment";

/// One tensor info, as the file has it, with its checked byte range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorInfo {
    /// Its name.
    pub name: String,
    /// Its dims in file order (fastest-varying first, `ne[0]` first).
    pub dims: Vec<u64>,
    /// Its ggml type.
    pub ty: GgmlType,
    /// Its offset relative to the data section.
    pub offset: u64,
    /// Absolute offset of its bytes.
    pub start: u64,
    /// Its byte length.
    pub len: u64,
}

impl TensorInfo {
    /// The shape row-major (dims reversed), as numpy, safetensors and [`Entry::shape`] have it.
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().copied().collect()
    }

    /// Number of elements.
    pub fn elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// Everything the reader learned from a GGUF file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GgufFile {
    /// 2 or 3.
    pub version: u32,
    /// The alignment of the tensor data.
    pub alignment: u32,
    /// Absolute offset of the data section.
    pub data_start: u64,
    /// The file size.
    pub file_size: u64,
    /// The key/values, in file order.
    pub metadata: Vec<KeyValue>,
    /// The tensor infos, in file order.
    pub tensors: Vec<TensorInfo>,
}

impl GgufFile {
    /// The shared checkpoint layout: tensors as [`Entry`]s (plain types as
    /// [`ElementType::Dtype`], block types as [`ElementType::Ggml`]; shapes row-major) and the
    /// key/values as metadata.
    pub fn into_layout(self) -> Layout {
        let entries = self
            .tensors
            .iter()
            .map(|t| Entry {
                name: t.name.clone(),
                ty: t
                    .ty
                    .dtype()
                    .map_or(ElementType::Ggml(t.ty), ElementType::Dtype),
                shape: t.shape(),
                data: Data::Range {
                    offset: t.start,
                    len: t.len,
                },
            })
            .collect();
        Layout {
            format: Format::Gguf,
            kind: format!("GGUF v{}", self.version),
            file_size: self.file_size,
            entries,
            metadata: self
                .metadata
                .into_iter()
                .map(|kv| (kv.key, kv.value))
                .collect(),
        }
    }
}

/// Reads a GGUF file's layout (header, key/values, tensor infos; never the tensor data).
pub fn read(src: &dyn ReadAt) -> Result<Layout, GgufError> {
    read_file(src).map(GgufFile::into_layout)
}

/// Reads a GGUF file with everything the format says about it.
pub fn read_file(src: &dyn ReadAt) -> Result<GgufFile, GgufError> {
    let file_size = src.size();
    let mut cur = Cursor::new(src);
    if file_size < 4 {
        return Err(GgufError::BadMagic {
            found: first_bytes(src)?,
        });
    }
    let magic = cur.array::<4>("magic")?;
    if magic != MAGIC {
        return Err(GgufError::BadMagic {
            found: magic.to_vec(),
        });
    }
    let version = cur.u32("version")?;
    if version & 0xFFFF == 0 && version != 0 {
        return Err(GgufError::BigEndian {
            version: version.swap_bytes(),
        });
    }
    if version != 2 && version != 3 {
        return Err(GgufError::UnsupportedVersion { version });
    }
    let offset = cur.pos();
    let tensor_count = cur.u64("tensor count")?;
    let kv_count = cur.u64("key/value count")?;
    // Each key/value takes ≥ 13 bytes (key length, type, a u8), each tensor info ≥ 24 (name
    // length, dim count, type, offset).
    let left = cur.left();
    if kv_count > left / 13 {
        return Err(GgufError::TooManyKeys {
            count: kv_count,
            offset: offset + 8,
            left,
            max: left / 13,
        });
    }
    if tensor_count > (left / 24).min(MAX_TENSORS) {
        return Err(GgufError::TooManyTensors {
            count: tensor_count,
            offset,
            left,
            max: (left / 24).min(MAX_TENSORS),
        });
    }

    let mut r = MetaReader {
        cur: &mut cur,
        values: 0,
    };
    let mut metadata = Vec::new();
    let mut keys = HashSet::new();
    for _ in 0..kv_count {
        let offset = r.cur.pos();
        let key = r.name("key")?;
        let ty = r.value_type(&key)?;
        let (value, elem_ty) = r.value(ty, &key, 0)?;
        if !keys.insert(key.clone()) {
            return Err(GgufError::DuplicateKey { key, offset });
        }
        metadata.push(KeyValue {
            key,
            ty,
            elem_ty,
            value,
            offset,
        });
    }
    let alignment = alignment(&metadata)?;

    let mut infos = Vec::new();
    for _ in 0..tensor_count {
        let name = r.name("tensor name")?;
        let n_dims = r.cur.u32("dim count")?;
        if n_dims > MAX_DIMS {
            return Err(GgufError::TooManyDims {
                tensor: name,
                n_dims,
            });
        }
        let mut dims = Vec::with_capacity(n_dims as usize);
        for _ in 0..n_dims {
            dims.push(r.cur.u64("dim")?);
        }
        let ty = GgmlType(r.cur.u32("tensor type")?);
        let offset = r.cur.u64("tensor offset")?;
        infos.push((name, dims, ty, offset));
    }
    let pad = (u64::from(alignment) - cur.pos() % u64::from(alignment)) % u64::from(alignment);
    let data_start = cur.pos() + pad;

    let mut tensors = Vec::with_capacity(infos.len());
    for (name, dims, ty, offset) in infos {
        tensors.push(check_tensor(
            name, dims, ty, offset, alignment, data_start, file_size,
        )?);
    }
    check_layout(&tensors)?;
    Ok(GgufFile {
        version,
        alignment,
        data_start,
        file_size,
        metadata,
        tensors,
    })
}

/// The bytes of a source shorter than the magic, for [`GgufError::BadMagic`].
fn first_bytes(src: &dyn ReadAt) -> Result<Vec<u8>, GgufError> {
    let mut b = vec![0u8; src.size().min(4) as usize];
    src.read_exact_at(0, &mut b)?;
    Ok(b)
}

/// `general.alignment`: a non-zero power-of-two u32, or the default.
fn alignment(metadata: &[KeyValue]) -> Result<u32, GgufError> {
    let Some(kv) = metadata.iter().find(|kv| kv.key == ALIGNMENT_KEY) else {
        return Ok(DEFAULT_ALIGNMENT);
    };
    match (kv.ty, &kv.value) {
        (ValueType::U32, &MetaValue::UInt(a)) => {
            let a = u32::try_from(a).unwrap_or(0);
            if a.is_power_of_two() {
                Ok(a)
            } else {
                Err(GgufError::BadAlignment { alignment: a })
            }
        }
        (ty, _) => Err(GgufError::AlignmentType { ty }),
    }
}

/// Checks one tensor info and computes its byte range.
fn check_tensor(
    name: String,
    dims: Vec<u64>,
    ty: GgmlType,
    offset: u64,
    alignment: u32,
    data_start: u64,
    file_size: u64,
) -> Result<TensorInfo, GgufError> {
    let (Some(ty_name), Some(block)) = (ty.name(), ty.block_elems()) else {
        return Err(GgufError::UnknownType {
            tensor: name,
            id: ty.0,
        });
    };
    let elems = dims
        .iter()
        .try_fold(1u64, |n, &d| {
            if d > i64::MAX as u64 {
                None
            } else {
                n.checked_mul(d)
            }
        })
        .filter(|&n| n <= i64::MAX as u64);
    let Some(elems) = elems else {
        return Err(GgufError::SizeOverflow { tensor: name, dims });
    };
    let ne0 = dims.first().copied().unwrap_or(1);
    if !ne0.is_multiple_of(u64::from(block)) {
        return Err(GgufError::NotWholeBlocks {
            tensor: name,
            ty: ty_name,
            ne0,
            block,
        });
    }
    // ne[0] is a multiple of the block size, so the element count is too.
    let Some(len) = ty.bytes_for(elems) else {
        return Err(GgufError::SizeOverflow { tensor: name, dims });
    };
    if !offset.is_multiple_of(u64::from(alignment)) {
        return Err(GgufError::Misaligned {
            tensor: name,
            offset,
            alignment,
        });
    }
    let start = data_start.checked_add(offset);
    let end = start.and_then(|s| s.checked_add(len));
    match (start, end) {
        (Some(start), Some(end)) if end <= file_size => Ok(TensorInfo {
            name,
            dims,
            ty,
            offset,
            start,
            len,
        }),
        _ => Err(GgufError::OutOfFile {
            tensor: name,
            start: start.unwrap_or(u64::MAX),
            end: end.unwrap_or(u64::MAX),
            file_size,
        }),
    }
}

/// Unique names, and no two non-empty byte ranges sharing a byte.
fn check_layout(tensors: &[TensorInfo]) -> Result<(), GgufError> {
    let mut names = HashSet::new();
    for t in tensors {
        if !names.insert(t.name.as_str()) {
            return Err(GgufError::DuplicateTensor {
                tensor: t.name.clone(),
            });
        }
    }
    let mut ranges: Vec<&TensorInfo> = tensors.iter().filter(|t| t.len > 0).collect();
    ranges.sort_by_key(|t| t.start);
    for w in ranges.windows(2) {
        if w[1].start < w[0].start + w[0].len {
            return Err(GgufError::Overlap {
                first: w[0].name.clone(),
                second: w[1].name.clone(),
                at: w[1].start,
            });
        }
    }
    Ok(())
}
