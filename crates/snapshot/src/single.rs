//! One tensor of a snapshot as a file of its own: [`tensor_file_prefix`] is the safetensors header
//! of a file holding only that tensor (the original `__metadata__` kept), and
//! [`SnapshotReader::decode_tensor_file`] writes that file — header, then the tensor's decoded,
//! checksum-verified bytes. `bitlens decompress SNAPSHOT --tensor NAME` and the page's preview of a
//! remote snapshot both write it, so their outputs are byte-identical.
//!
//! In a snapshot of another format (version 3) the tensors of a plain dtype are written the same
//! way (no metadata); quantized (ggml block) tensors, gaps and deflated streams are refused with
//! [`SnapshotError::NotPlainTensor`]: no safetensors dtype holds ggml blocks, and decompressing
//! the whole file gives them back.

use crate::error::SnapshotError;
use crate::layout::PieceKind;
use crate::reader::{BaseSource, SnapshotReader, Source};
use bitlens_tensors::format::safetensors::write::{header_prefix, HeaderEntry};
use bitlens_tensors::{Header, TensorInfo};

/// The header (8-byte length and JSON) of a safetensors file holding only tensor `name` of
/// `header`, metadata kept, as the reference writer makes it
/// ([`bitlens_tensors::format::safetensors::write::header_prefix`]).
pub fn tensor_file_prefix(header: &Header, name: &str) -> Result<Vec<u8>, SnapshotError> {
    let t = header
        .tensor(name)
        .ok_or_else(|| SnapshotError::NoTensor { name: name.into() })?;
    let entry = HeaderEntry {
        name: &t.name,
        dtype: t.dtype,
        shape: &t.shape,
        len: t.byte_len(),
    };
    header_prefix(&[entry], header.metadata.as_deref())
        .map_err(|e| SnapshotError::Misuse(format!("tensor header of `{name}`: {e}")))
}

impl<R: Source> SnapshotReader<R> {
    /// The index of tensor `name` when it is a tensor of a plain dtype (what a one-tensor
    /// safetensors file or an array can hold); a ggml block tensor, a storage of mixed element
    /// types, a gap or a deflated stream of a version 3 snapshot is
    /// [`SnapshotError::NotPlainTensor`].
    pub fn plain_tensor(&self, name: &str) -> Result<usize, SnapshotError> {
        let idx = self
            .find(name)
            .ok_or_else(|| SnapshotError::NoTensor { name: name.into() })?;
        let e = &self.entries[idx];
        if let Some(info) = &e.piece {
            if info.dtype(e.raw_len).is_none() {
                let what = match info.kind {
                    PieceKind::Tensor if info.is_quantized() => {
                        format!(
                            "{} blocks (quantized: no safetensors dtype holds them)",
                            info.ty
                        )
                    }
                    PieceKind::Tensor => "a storage of mixed element types".to_owned(),
                    kind => format!("a {} piece of the original file, not a tensor", kind.name()),
                };
                return Err(SnapshotError::NotPlainTensor {
                    name: name.into(),
                    what,
                });
            }
        }
        Ok(idx)
    }

    /// The tensors of a plain dtype, in file order: every tensor of a safetensors snapshot, the
    /// tensor pieces of a version 3 snapshot that [`SnapshotReader::plain_tensor`] takes.
    pub fn plain_tensors(&self) -> Vec<&TensorInfo> {
        self.entries
            .iter()
            .zip(&self.header.tensors)
            .filter(|(e, _)| {
                e.piece
                    .as_ref()
                    .is_none_or(|p| p.dtype(e.raw_len).is_some())
            })
            .map(|(_, t)| t)
            .collect()
    }

    /// Writes the safetensors file holding only tensor `name` to `sink`: its header
    /// ([`tensor_file_prefix`]), then the tensor's bytes, decoded with `base` for deltas and
    /// verified against the recorded checksum before the last bytes are handed over. Returns the
    /// bytes written.
    pub fn decode_tensor_file(
        &self,
        name: &str,
        base: Option<&BaseSource>,
        sink: &mut dyn FnMut(&[u8]) -> Result<(), SnapshotError>,
    ) -> Result<u64, SnapshotError> {
        let idx = self.plain_tensor(name)?;
        self.check_base(base)?;
        let prefix = tensor_file_prefix(&self.header, name)?;
        let mut written = prefix.len() as u64;
        sink(&prefix)?;
        self.decode_tensors(&[idx], base, &mut |bytes| {
            written += bytes.len() as u64;
            sink(bytes)
        })?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compress, CodecChoice, CodecKind};
    use bitlens_tensors::ReadAt;

    /// A snapshot (LMC) of a small safetensors file with metadata and two tensors.
    fn snapshot() -> (Vec<u8>, Vec<u8>) {
        let a: Vec<u8> = (0..64u8).collect();
        let b: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(7)).collect();
        let json = br#"{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[32],"data_offsets":[0,64]},"b":{"dtype":"F32","shape":[8],"data_offsets":[64,96]}}"#;
        let mut file = (json.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(json);
        file.extend_from_slice(&a);
        file.extend_from_slice(&b);
        let header = Header::parse(&file, file.len() as u64).unwrap();
        let (out, _) = compress(
            &file,
            &header,
            None,
            &|t| CodecChoice::new(CodecKind::Lmc).codec_for(t.dtype),
            Vec::new(),
            &mut |_| {},
        )
        .unwrap();
        (file, out)
    }

    #[test]
    fn one_tensor_file_is_a_valid_safetensors_file() {
        let (_, snap) = snapshot();
        let reader = SnapshotReader::open(&snap[..]).unwrap();
        let mut out = Vec::new();
        let n = reader
            .decode_tensor_file("b", None, &mut |b| {
                out.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
        assert_eq!(n, out.len() as u64);
        let header = Header::parse(&out, out.len() as u64).unwrap();
        assert_eq!(header.metadata, Some(vec![("format".into(), "pt".into())]));
        assert_eq!(header.tensors.len(), 1);
        assert_eq!(header.header_len % 8, 0);
        let t = &header.tensors[0];
        let bytes: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(7)).collect();
        let (start, end) = header.file_range(t);
        assert_eq!(&out[start as usize..end as usize], &bytes[..]);
        assert_eq!(end, out.size());
    }

    #[test]
    fn an_unknown_tensor_is_named() {
        let (_, snap) = snapshot();
        let reader = SnapshotReader::open(&snap[..]).unwrap();
        let e = reader
            .decode_tensor_file("nope", None, &mut |_| Ok(()))
            .unwrap_err();
        assert_eq!(e.to_string(), "no tensor `nope` in the snapshot");
    }
}
