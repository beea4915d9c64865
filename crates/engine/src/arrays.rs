//! Tensors as arrays: a `.bls` snapshot (file or URL; LMC §4's container, any codec) or a
//! checkpoint of any format bitlens reads, opened once, asked for the names, dtypes and shapes of
//! its tensors and for one tensor's bytes (in C order, little-endian) — what the Python package's
//! `safe_open`, `load_file` and `get_tensor` hand out as NumPy arrays.
//!
//! A tensor of a snapshot is decoded from its own frames only (for a URL only their byte ranges
//! are fetched), its checksum verified, as `decompress --tensor` does; a tensor of a checkpoint
//! is read from its byte range (or streamed in element order: a deflated `.npz` member, a
//! PyTorch view). Only tensors of a plain dtype are arrays: ggml block-quantized tensors, the gaps
//! of a snapshot of another format and an Inshrinkerator delta (which restores through its chain)
//! are refused, naming what they are.

use crate::analyze::WINDOW;
use crate::bail;
use crate::chain::is_chain;
use crate::checkpoint::Model;
use crate::decompress::Base;
use crate::error::{Context, Result};
use crate::snapshots::is_snapshot;
use crate::snapshots::open_snapshot;
use crate::source::Source;
use bitlens_snapshot::{SnapshotError, SnapshotReader};
use bitlens_tensors::format::{bytes, ElementType, Entry};
use bitlens_tensors::{Dtype, ReadAt};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// What an array of a tensor is: its name, dtype, shape and byte length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArrayInfo {
    /// Tensor name.
    pub name: String,
    /// Element type.
    pub dtype: Dtype,
    /// Shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// Length of its bytes.
    pub len: u64,
}

/// A file whose tensors are read as arrays.
pub struct TensorFile {
    path: PathBuf,
    inner: Inner,
}

enum Inner {
    /// A snapshot, with the base a delta was made against.
    Snapshot {
        reader: Box<SnapshotReader<Source>>,
        base: Option<Base>,
    },
    /// A checkpoint of any format.
    Checkpoint(Model),
}

impl TensorFile {
    /// Opens a snapshot (told by its magic) or a checkpoint (a file of any format, an index, a
    /// directory of shards; a URL of either). `base` is the checkpoint a delta snapshot was made
    /// against (refused for a checkpoint, which needs none).
    pub fn open(path: &Path, base: Option<&Path>) -> Result<TensorFile> {
        if is_chain(path) {
            bail!(
                "{}: a chain directory; restore one of its steps with decompress (--step)",
                path.display()
            );
        }
        let inner = if is_snapshot(path)? {
            let (reader, _) = open_snapshot(path)?;
            let chained = bitlens_snapshot::inshrink::Annex::of(&reader)
                .with_context(|| path.display().to_string())?
                .is_some_and(|a| a.base.is_some());
            if chained {
                bail!(
                    "{}: an inshrink delta snapshot restores through its chain: decompress the whole file",
                    path.display()
                );
            }
            let base = base.map(|b| Base::open(&reader, b)).transpose()?;
            Inner::Snapshot {
                reader: Box::new(reader),
                base,
            }
        } else {
            if let Some(b) = base {
                bail!(
                    "--base {}: {} is a checkpoint, not a delta snapshot",
                    b.display(),
                    path.display()
                );
            }
            Inner::Checkpoint(Model::open(path)?)
        };
        Ok(TensorFile {
            path: path.to_path_buf(),
            inner,
        })
    }

    /// The tensors that are arrays, in file order (files in order for a sharded checkpoint).
    pub fn arrays(&self) -> Vec<ArrayInfo> {
        match &self.inner {
            Inner::Snapshot { reader, .. } => reader
                .plain_tensors()
                .into_iter()
                .map(|t| ArrayInfo {
                    name: t.name.clone(),
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    len: t.byte_len(),
                })
                .collect(),
            Inner::Checkpoint(model) => entries(model).filter_map(|(_, e)| array_of(e)).collect(),
        }
    }

    /// The safetensors `__metadata__` (of a snapshot's original file, or of a checkpoint's first
    /// safetensors file that has one); `None` for other formats.
    pub fn metadata(&self) -> Option<Vec<(String, String)>> {
        match &self.inner {
            Inner::Snapshot { reader, .. } => reader.header.metadata.clone(),
            Inner::Checkpoint(model) => model
                .files
                .iter()
                .find_map(|f| f.header.as_ref().and_then(|h| h.metadata.clone())),
        }
    }

    /// Tensor `name` as an array: its dtype, shape and length, or why it is none.
    pub fn array(&self, name: &str) -> Result<ArrayInfo> {
        let ctx = || self.path.display().to_string();
        match &self.inner {
            Inner::Snapshot { reader, .. } => {
                let t = &reader.header.tensors[reader.plain_tensor(name).with_context(ctx)?];
                Ok(ArrayInfo {
                    name: t.name.clone(),
                    dtype: t.dtype,
                    shape: t.shape.clone(),
                    len: t.byte_len(),
                })
            }
            Inner::Checkpoint(model) => {
                let (_, entry) = self.entry(model, name)?;
                array_of(entry).with_context(|| {
                    format!(
                        "{}: tensor `{name}` is {} blocks (quantized): no array dtype holds them",
                        self.path.display(),
                        match entry.ty {
                            ElementType::Ggml(g) => g.name().unwrap_or("ggml").to_owned(),
                            ElementType::Dtype(d) => d.to_string(),
                        }
                    )
                })
            }
        }
    }

    /// Tensor `name` of a checkpoint, with its file's source.
    fn entry<'m>(&self, model: &'m Model, name: &str) -> Result<(&'m Source, &'m Entry)> {
        entries(model)
            .find(|(_, e)| e.name == name)
            .with_context(|| format!("{}: no tensor `{name}`", self.path.display()))
    }

    /// The bytes of tensor `name` (C order, little-endian), checked against its checksum for a
    /// snapshot.
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        let mut out = self.read_all(&[name.to_owned()])?;
        Ok(out.pop().unwrap_or_default())
    }

    /// The bytes of every tensor of `names` (arrays, [`TensorFile::array`]), in that order: a
    /// snapshot's frames decoded in one pass on the rayon pool, a checkpoint's tensors read in
    /// parallel.
    pub fn read_all(&self, names: &[String]) -> Result<Vec<Vec<u8>>> {
        let infos = names
            .iter()
            .map(|n| self.array(n))
            .collect::<Result<Vec<_>>>()?;
        let ctx = || self.path.display().to_string();
        match &self.inner {
            Inner::Snapshot { reader, base } => {
                let which = names
                    .iter()
                    .map(|n| reader.plain_tensor(n))
                    .collect::<Result<Vec<_>, _>>()
                    .with_context(ctx)?;
                let mut out: Vec<Vec<u8>> = infos
                    .iter()
                    .map(|i| Vec::with_capacity(i.len as usize))
                    .collect();
                let mut at = 0;
                let mut sink = |mut bytes: &[u8]| -> Result<(), SnapshotError> {
                    // The tensors come in order, each one's bytes whole before the next's.
                    while !bytes.is_empty() {
                        let room = infos[at].len as usize - out[at].len();
                        if room == 0 {
                            at += 1;
                            continue;
                        }
                        let n = room.min(bytes.len());
                        out[at].extend_from_slice(&bytes[..n]);
                        bytes = &bytes[n..];
                    }
                    Ok(())
                };
                crate::compress::on_pool(|| match base {
                    Some(b) => b.with(|b| reader.decode_tensors(&which, Some(b), &mut sink)),
                    None => reader.decode_tensors(&which, None, &mut sink),
                })
                .with_context(ctx)?;
                Ok(out)
            }
            Inner::Checkpoint(model) => {
                let found = names
                    .iter()
                    .map(|n| self.entry(model, n))
                    .collect::<Result<Vec<_>>>()?;
                found
                    .par_iter()
                    .map(|&(src, entry)| {
                        let mut out = Vec::with_capacity(bytes::byte_len(entry) as usize);
                        bytes::for_each_window(src as &dyn ReadAt, entry, WINDOW, |w| {
                            out.extend_from_slice(w);
                            Ok::<_, crate::Error>(())
                        })
                        .with_context(|| {
                            format!("{}: tensor `{}`", self.path.display(), entry.name)
                        })?;
                        Ok(out)
                    })
                    .collect()
            }
        }
    }
}

/// Every tensor of a checkpoint with its file's source, files in order.
fn entries(model: &Model) -> impl Iterator<Item = (&Source, &Entry)> {
    model
        .files
        .iter()
        .flat_map(|f| f.layout.entries.iter().map(move |e| (&f.source, e)))
}

/// A checkpoint's tensor as an array, when its element type is a plain dtype.
fn array_of(e: &Entry) -> Option<ArrayInfo> {
    let ElementType::Dtype(dtype) = e.ty else {
        return None;
    };
    Some(ArrayInfo {
        name: e.name.clone(),
        dtype,
        shape: e.shape.clone(),
        len: bytes::byte_len(e),
    })
}
