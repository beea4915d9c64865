//! safetensors: the `8 + N`-byte header ([`header`], validated with the reference crate's rules
//! plus explicit rejection of duplicate names) read with two small reads ([`read_header`]), as a
//! [`Layout`]: every tensor a [`Data::Range`] at its absolute offset (`8 + N + start`),
//! `__metadata__` as string metadata in file order. Sharded checkpoints' index files
//! (`*.safetensors.index.json`) are [`index`]'s; writing a file as the reference writer does is
//! [`write`](mod@write)'s.

pub mod header;
pub mod index;
pub mod write;

use super::{Data, ElementType, Entry, Format, Layout, MetaValue};
use crate::source::{ReadAt, SourceError};
use header::{Header, HeaderError, LEN_PREFIX};

/// The layout a parsed safetensors header describes.
pub fn layout(header: &Header) -> Layout {
    let data_start = header.data_start();
    Layout {
        format: Format::Safetensors,
        kind: "safetensors".into(),
        file_size: header.file_size,
        entries: header
            .tensors
            .iter()
            .map(|t| Entry {
                name: t.name.clone(),
                ty: ElementType::Dtype(t.dtype),
                shape: t.shape.clone(),
                data: Data::Range {
                    offset: data_start + t.data_offsets.0,
                    len: t.byte_len(),
                },
            })
            .collect(),
        metadata: header
            .metadata
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), MetaValue::Str(v.clone())))
            .collect(),
    }
}

/// Reads and validates the header of a safetensors source with two small reads (the 8-byte
/// length, then the JSON); the data section is never touched.
pub fn read_header<R: ReadAt + ?Sized>(src: &R) -> Result<Header, SourceError> {
    let size = src.size();
    if size < LEN_PREFIX {
        return Err(HeaderError::FileTooSmall { file_size: size }.into());
    }
    let mut first8 = [0u8; 8];
    src.read_exact_at(0, &mut first8)?;
    let needed = Header::needed_prefix(first8, size)?;
    // `needed` ≤ 8 + MAX_HEADER_LEN, so this allocation is bounded by the limit and the file size.
    let mut prefix = vec![0u8; needed as usize];
    src.read_exact_at(0, &mut prefix)?;
    Ok(Header::parse(&prefix, size)?)
}

/// Reads a safetensors file's header (two reads: the length, then the header) as a layout.
pub fn read(src: &dyn ReadAt) -> Result<Layout, SourceError> {
    Ok(layout(&read_header(src)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_test_support::safetensors::Builder;

    #[test]
    fn tensors_are_ranges_at_absolute_offsets() {
        let file = Builder::new()
            .metadata("format", "pt")
            .tensor("a", "F32", &[2], &[0; 8])
            .tensor("b", "BF16", &[3], &[0; 6])
            .build();
        let l = read(&file).unwrap();
        let data_start = bitlens_test_support::safetensors::data_start(&file) as u64;
        assert_eq!(l.entries.len(), 2);
        assert_eq!(
            l.entries[1].data,
            Data::Range {
                offset: data_start + 8,
                len: 6
            }
        );
        assert_eq!(l.entries[1].ty, ElementType::Dtype(crate::Dtype::BF16));
        assert_eq!(
            l.metadata,
            vec![("format".into(), MetaValue::Str("pt".into()))]
        );
        assert_eq!(l.file_size, file.len() as u64);
    }
}
