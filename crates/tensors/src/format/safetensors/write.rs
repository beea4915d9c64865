//! Writing safetensors: the file the reference writer (`safetensors` 0.8's `serialize`, what
//! Python's `safetensors.numpy.save_file` calls) makes of a set of tensors, byte for byte, as a
//! [`ReadAt`] [`Image`] over the caller's tensor bytes (nothing is copied until it is read).
//!
//! The reference writer's rules: tensors ordered by dtype, the widest alignment first (the
//! [`Dtype`] order, reversed), then by name; the header a compact JSON object with
//! `__metadata__` first (when given) and then each tensor's `dtype`, `shape`, `data_offsets`;
//! the JSON padded with spaces to a multiple of 8 bytes. The one difference is the order of
//! metadata keys: the reference keeps them in a hash map (an order that changes from run to run
//! when there are two or more); here they keep the caller's order. The header written is parsed
//! back with [`Header::parse`], so every rule of a valid file (byte length equal to
//! `shape × dtype bits / 8`, no duplicate names) is checked by the reader's own code.

use super::header::{Header, HeaderError, LEN_PREFIX};
use crate::dtype::Dtype;
use crate::source::{check_bounds, ReadAt, SourceError};

/// One tensor to write: its name, dtype, shape and bytes (C order, little-endian).
#[derive(Debug, Clone, Copy)]
pub struct TensorBytes<'a> {
    /// Tensor name.
    pub name: &'a str,
    /// Element type.
    pub dtype: Dtype,
    /// Shape (empty for a scalar).
    pub shape: &'a [u64],
    /// Its bytes.
    pub data: &'a [u8],
}

impl<'a> TensorBytes<'a> {
    /// What the header says of it.
    pub fn entry(&self) -> HeaderEntry<'a> {
        HeaderEntry {
            name: self.name,
            dtype: self.dtype,
            shape: self.shape,
            len: self.data.len() as u64,
        }
    }
}

/// What the header says of one tensor: name, dtype, shape and byte length.
#[derive(Debug, Clone, Copy)]
pub struct HeaderEntry<'a> {
    /// Tensor name.
    pub name: &'a str,
    /// Element type.
    pub dtype: Dtype,
    /// Shape.
    pub shape: &'a [u64],
    /// Length of its bytes.
    pub len: u64,
}

/// Why a set of tensors cannot be written as a safetensors file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A tensor is named `__metadata__`, the header's key for the metadata.
    #[error("a tensor cannot be named `__metadata__` (the header's key for the metadata)")]
    ReservedName,
    /// The header would break a rule of the format (a byte length that does not match the shape
    /// and dtype, a name given twice, a header over the size limit).
    #[error(transparent)]
    Header(#[from] HeaderError),
}

/// The order the reference writer stores tensors in: by dtype, widest alignment first, then by
/// name. Returns the indices of `tensors` in that order.
pub fn write_order(tensors: &[TensorBytes]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..tensors.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&tensors[a], &tensors[b]);
        b.dtype.cmp(&a.dtype).then_with(|| a.name.cmp(b.name))
    });
    order
}

/// The header bytes (the 8-byte length, then the padded JSON) of a file holding `tensors` in
/// the given order, back to back from offset 0, with `metadata` as `__metadata__` (in its order).
/// Byte lengths are not checked against the shapes here ([`Image::new`] checks them).
pub fn header_prefix(
    tensors: &[HeaderEntry],
    metadata: Option<&[(String, String)]>,
) -> Result<Vec<u8>, WriteError> {
    let mut map = serde_json::Map::new();
    if let Some(meta) = metadata {
        let m: serde_json::Map<String, serde_json::Value> = meta
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect();
        map.insert("__metadata__".into(), m.into());
    }
    let mut offset = 0u64;
    for t in tensors {
        if t.name == "__metadata__" {
            return Err(WriteError::ReservedName);
        }
        let end = offset + t.len;
        let entry = serde_json::json!({
            "dtype": t.dtype,
            "shape": t.shape,
            "data_offsets": [offset, end],
        });
        if map.insert(t.name.to_owned(), entry).is_some() {
            return Err(HeaderError::DuplicateTensor {
                name: t.name.to_owned(),
            }
            .into());
        }
        offset = end;
    }
    // A map of strings and numbers always serializes.
    let mut json = serde_json::to_vec(&map).unwrap_or_default();
    json.resize(json.len().next_multiple_of(LEN_PREFIX as usize), b' ');
    let mut prefix = (json.len() as u64).to_le_bytes().to_vec();
    prefix.extend_from_slice(&json);
    Ok(prefix)
}

/// A safetensors file made of tensors in memory, as the reference writer lays it out: its header
/// is built once, its data is read from the tensors' own bytes.
#[derive(Debug, Clone)]
pub struct Image<'a> {
    prefix: Vec<u8>,
    /// The tensors' bytes in file order, with the file offset each starts at.
    parts: Vec<(u64, &'a [u8])>,
    header: Header,
}

impl<'a> Image<'a> {
    /// The file of `tensors` (any order: they are stored in [`write_order`]) and `metadata`.
    pub fn new(
        tensors: &[TensorBytes<'a>],
        metadata: Option<&[(String, String)]>,
    ) -> Result<Image<'a>, WriteError> {
        let ordered: Vec<TensorBytes<'a>> = write_order(tensors)
            .into_iter()
            .map(|i| tensors[i])
            .collect();
        let entries: Vec<HeaderEntry> = ordered.iter().map(TensorBytes::entry).collect();
        let prefix = header_prefix(&entries, metadata)?;
        let mut parts = Vec::with_capacity(ordered.len());
        let mut at = prefix.len() as u64;
        for t in &ordered {
            parts.push((at, t.data));
            at += t.data.len() as u64;
        }
        let header = Header::parse(&prefix, at)?;
        Ok(Image {
            prefix,
            parts,
            header,
        })
    }

    /// Its parsed header (the tensors in file order).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Its first bytes: the 8-byte length and the JSON header.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }
}

impl ReadAt for Image<'_> {
    fn size(&self) -> u64 {
        self.header.file_size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        check_bounds(offset, buf.len(), self.size())?;
        let mut pos = offset;
        let mut out = &mut buf[..];
        if let Some(head) = self.prefix.get(pos as usize..) {
            let n = head.len().min(out.len());
            out[..n].copy_from_slice(&head[..n]);
            out = &mut out[n..];
            pos += n as u64;
        }
        // The part holding `pos`, then the ones after it.
        let first = self.parts.partition_point(|&(start, _)| start <= pos);
        for &(start, data) in &self.parts[first.saturating_sub(1)..] {
            if out.is_empty() {
                break;
            }
            let Some(from) = data.get((pos - start) as usize..) else {
                continue;
            };
            let n = from.len().min(out.len());
            out[..n].copy_from_slice(&from[..n]);
            out = &mut out[n..];
            pos += n as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    fn read_all(image: &Image) -> Vec<u8> {
        let mut out = vec![0u8; image.size() as usize];
        image.read_exact_at(0, &mut out).unwrap();
        out
    }

    /// The reference crate's own test vector (`test_serialization`): one F32 tensor.
    #[test]
    fn one_tensor_is_written_as_the_reference_writer_does() {
        let data = f32_bytes(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let t = TensorBytes {
            name: "attn.0",
            dtype: Dtype::F32,
            shape: &[1, 2, 3],
            data: &data,
        };
        let image = Image::new(&[t], None).unwrap();
        let json = br#"{"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}}"#;
        let mut want = 64u64.to_le_bytes().to_vec();
        want.extend_from_slice(json);
        want.extend_from_slice(&data);
        assert_eq!(json.len(), 64);
        assert_eq!(read_all(&image), want);
    }

    #[test]
    fn no_tensors_and_metadata_only_are_padded_to_eight_bytes() {
        let empty = Image::new(&[], None).unwrap();
        assert_eq!(read_all(&empty), b"\x08\0\0\0\0\0\0\0{}      ");
        let meta = [("framework".to_owned(), "pt".to_owned())];
        let image = Image::new(&[], Some(&meta)).unwrap();
        let bytes = read_all(&image);
        assert_eq!(&bytes[8..], br#"{"__metadata__":{"framework":"pt"}}     "#);
        assert_eq!(image.header().metadata, Some(meta.to_vec()));
    }

    #[test]
    fn tensors_go_widest_dtype_first_then_by_name() {
        let (a, b, c) = (vec![0u8; 2], vec![0u8; 8], vec![1u8; 4]);
        let t = |name, dtype, shape: &'static [u64], data| TensorBytes {
            name,
            dtype,
            shape,
            data,
        };
        let tensors = [
            t("z", Dtype::BF16, &[1], &a[..]),
            t("y", Dtype::F64, &[1], &b[..]),
            t("b", Dtype::F32, &[1], &c[..]),
            t("a", Dtype::F32, &[1], &c[..]),
        ];
        let image = Image::new(&tensors, None).unwrap();
        let names: Vec<&str> = image
            .header()
            .tensors
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(names, ["y", "a", "b", "z"]);
        let all = read_all(&image);
        // Reads that straddle the header and the parts give the same bytes.
        for start in 0..all.len() {
            for len in [1, 3, 7, 16] {
                let end = (start + len).min(all.len());
                let mut buf = vec![0u8; end - start];
                image.read_exact_at(start as u64, &mut buf).unwrap();
                assert_eq!(buf, all[start..end]);
            }
        }
    }

    #[test]
    fn bad_tensors_are_refused_by_the_readers_rules() {
        let data = [0u8; 3];
        let t = TensorBytes {
            name: "w",
            dtype: Dtype::F32,
            shape: &[1],
            data: &data,
        };
        assert!(matches!(
            Image::new(&[t], None),
            Err(WriteError::Header(HeaderError::SizeMismatch { .. }))
        ));
        let ok = TensorBytes { data: &[], ..t };
        let reserved = TensorBytes {
            name: "__metadata__",
            shape: &[0],
            ..ok
        };
        assert_eq!(
            Image::new(&[reserved], None).unwrap_err(),
            WriteError::ReservedName
        );
        let twice = TensorBytes { shape: &[0], ..ok };
        assert!(matches!(
            Image::new(&[twice, twice], None),
            Err(WriteError::Header(HeaderError::DuplicateTensor { .. }))
        ));
    }
}
