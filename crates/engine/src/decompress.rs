//! `bitlens decompress`: a snapshot (file, directory of shard snapshots, or URL) back to the
//! original files byte for byte, or one tensor of it as a safetensors file of its own; an
//! Inshrinkerator snapshot through its chain ([`crate::inshrink`]).

use crate::bail;
use crate::checkpoint::{Checkpoint, Shard};
use crate::compress::{on_pool, open_pieces, Totals};
use crate::error::{Context, Result};
use crate::output::write_output;
use crate::progress::Progress;
use crate::snapshots::open_snapshot;
use crate::source::Source;
use bitlens_snapshot::layout::Shifted;
use bitlens_snapshot::{BaseSource, SnapshotReader};
use bitlens_tensors::{naming, Header};
use std::io::Write;
use std::path::{Path, PathBuf};

/// `bitlens decompress` of any input: a chain directory (every step into `output`, or only
/// `step`) through [`crate::chain::decompress`], anything else through [`decompress`]; an option
/// that does not apply to the input is refused. Returns the bytes read and written (`None` for a
/// chain).
pub fn restore(
    input: &Path,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
    step: Option<&str>,
    progress: &dyn Progress,
) -> Result<Option<Totals>> {
    if crate::chain::is_chain(input) {
        if base.is_some() || tensor.is_some() {
            bail!("--base and --tensor do not apply to a chain directory");
        }
        crate::chain::decompress(input, output, step, progress)?;
        return Ok(None);
    }
    if step.is_some() {
        bail!(
            "--step applies to a chain directory (one holding {}), {} is not",
            bitlens_snapshot::chain::MANIFEST_NAME,
            input.display()
        );
    }
    decompress(input, output, base, tensor, progress).map(Some)
}

/// `bitlens decompress` of a snapshot file, URL or directory of shard snapshots: the original
/// files byte for byte into `output` (a directory for a directory), or with `tensor` that tensor
/// as a one-tensor safetensors file; `base` is the checkpoint a delta was made against (for an
/// Inshrinkerator delta, the previous snapshot of its chain when it is not next to `input`).
pub fn decompress(
    input: &Path,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
    progress: &dyn Progress,
) -> Result<Totals> {
    on_pool(|| decompress_on_pool(input, output, base, tensor, progress))
}

fn decompress_on_pool(
    input: &Path,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
    progress: &dyn Progress,
) -> Result<Totals> {
    // A single snapshot is opened once (a URL's index is read once), whatever its version.
    let single = if input.is_dir() {
        None
    } else {
        let (reader, size) = open_snapshot(input)?;
        let chained = bitlens_snapshot::inshrink::Annex::of(&reader)
            .with_context(|| input.display().to_string())?
            .is_some_and(|a| a.base.is_some());
        // A full inshrink snapshot decodes tensor by tensor like any other (`--tensor`); a delta
        // needs its chain, restored whole.
        if reader.annex.is_some() && (chained || tensor.is_none()) {
            if tensor.is_some() {
                bail!(
                    "--tensor is not supported for an inshrink delta snapshot: restore the whole file"
                );
            }
            let output_bytes = crate::inshrink::decompress(input, &reader, output, base)?;
            return Ok(Totals {
                input: size,
                output: output_bytes,
            });
        }
        if reader.original.is_some() {
            return decompress_pieces(input, reader, output, base, tensor, progress);
        }
        Some((reader, size))
    };
    let base = base.map(Checkpoint::open).transpose()?;
    let mut totals = Totals::default();
    if input.is_dir() {
        if tensor.is_some() {
            bail!(
                "--tensor needs a single snapshot file, {} is a directory",
                input.display()
            );
        }
        std::fs::create_dir_all(output)
            .with_context(|| format!("{}: cannot create directory", output.display()))?;
        let mut found = false;
        let mut entries: Vec<PathBuf> = std::fs::read_dir(input)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for path in entries {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .to_string();
            if naming::is_snapshot_name(&name) {
                found = true;
                let shard_name = naming::restored_name(&name);
                let base_shard = base
                    .as_ref()
                    .map(|b| {
                        let names: Vec<String> = b
                            .shards
                            .iter()
                            .map(|s| s.path.to_string_lossy().into_owned())
                            .collect();
                        naming::base_file(&names, &shard_name)
                            .map(|i| &b.shards[i])
                            .with_context(|| format!("base has no shard named {shard_name}"))
                    })
                    .transpose()?;
                decompress_file(
                    &path,
                    &output.join(&shard_name),
                    base_shard,
                    None,
                    &mut totals,
                    progress,
                )?;
            } else if naming::is_shard_index_name(&name) {
                std::fs::copy(&path, output.join(&name))?;
            }
        }
        if !found {
            bail!(
                "{}: no .{} snapshots in directory",
                input.display(),
                naming::SNAPSHOT_EXTENSION
            );
        }
    } else if let Some((reader, size)) = single {
        let base_shard = match &base {
            Some(b) if b.shards.len() == 1 => Some(&b.shards[0]),
            Some(_) => bail!("--base for a single snapshot must be a single safetensors file"),
            None => None,
        };
        decode_file(
            input,
            &reader,
            size,
            output,
            base_shard,
            tensor,
            &mut totals,
            progress,
        )?;
    }
    Ok(totals)
}

/// `bitlens decompress` of a version 3 snapshot: the original GGUF / PyTorch / NumPy file, or
/// with `tensor` one plain tensor of it as a safetensors file.
fn decompress_pieces(
    input: &Path,
    reader: SnapshotReader<Source>,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
    progress: &dyn Progress,
) -> Result<Totals> {
    let base = base.map(|b| Base::open(&reader, b)).transpose()?;
    let mut totals = Totals {
        input: std::fs::metadata(input).map_or(0, |m| m.len()),
        output: 0,
    };
    let mut write = |b: Option<&BaseSource>| {
        write_decoded(input, &reader, output, b, tensor, &mut totals, progress)
    };
    match &base {
        Some(b) => b.with(|b| write(Some(b)))?,
        None => write(None)?,
    }
    Ok(totals)
}

/// The base a delta snapshot was made against, opened for decoding: a single safetensors file,
/// or for a snapshot of another format (version 3) a file of that format, read at the piece
/// header's offsets.
pub(crate) struct Base {
    src: Source,
    header: Header,
    /// Read through [`Shifted`] (version 3).
    pieces: bool,
}

impl Base {
    /// Opens the base at `path` for the snapshot `reader`.
    pub(crate) fn open(reader: &SnapshotReader<Source>, path: &Path) -> Result<Base> {
        if reader.original.is_some() {
            let src = Source::open(path)?;
            let header = open_pieces(path, &src)?.header()?;
            return Ok(Base {
                src,
                header,
                pieces: true,
            });
        }
        let mut base = Checkpoint::open(path)?;
        if base.shards.len() != 1 {
            bail!("--base for a single snapshot must be a single safetensors file");
        }
        let shard = base.shards.remove(0);
        Ok(Base {
            src: shard.source,
            header: shard.header,
            pieces: false,
        })
    }

    /// Runs `f` with the base as the decoder takes it.
    pub(crate) fn with<R>(&self, f: impl FnOnce(&BaseSource) -> R) -> R {
        if self.pieces {
            let shifted = Shifted {
                src: &self.src,
                shift: self.header.data_start(),
            };
            return f(&BaseSource {
                src: &shifted,
                header: &self.header,
            });
        }
        f(&BaseSource {
            src: &self.src,
            header: &self.header,
        })
    }
}

fn decompress_file(
    input: &Path,
    output: &Path,
    base: Option<&Shard>,
    tensor: Option<&str>,
    totals: &mut Totals,
    progress: &dyn Progress,
) -> Result<()> {
    let (reader, size) = open_snapshot(input)?;
    decode_file(input, &reader, size, output, base, tensor, totals, progress)
}

#[allow(clippy::too_many_arguments)]
/// Writes what an open snapshot of `size` bytes holds (the file, or one tensor) to `output`.
fn decode_file(
    input: &Path,
    reader: &SnapshotReader<Source>,
    size: u64,
    output: &Path,
    base: Option<&Shard>,
    tensor: Option<&str>,
    totals: &mut Totals,
    progress: &dyn Progress,
) -> Result<()> {
    let base_source = base.map(|b| BaseSource {
        src: &b.source,
        header: &b.header,
    });
    totals.input += size;
    write_decoded(
        input,
        reader,
        output,
        base_source.as_ref(),
        tensor,
        totals,
        progress,
    )
}

#[allow(clippy::too_many_arguments)]
/// Writes the decoded file (or with `tensor`, that tensor's one-tensor file) of the snapshot
/// `input` to `output`, counting the bytes in `totals`.
fn write_decoded(
    input: &Path,
    reader: &SnapshotReader<Source>,
    output: &Path,
    base: Option<&BaseSource>,
    tensor: Option<&str>,
    totals: &mut Totals,
    progress: &dyn Progress,
) -> Result<()> {
    let ctx = || input.display().to_string();
    progress.start(reader.original_size(), "decompress");
    write_output(output, |out| {
        let mut sink = |bytes: &[u8]| -> Result<(), bitlens_snapshot::SnapshotError> {
            out.write_all(bytes)?;
            progress.inc(bytes.len() as u64);
            totals.output += bytes.len() as u64;
            Ok(())
        };
        match tensor {
            None => reader.decode_all(base, &mut sink).with_context(ctx)?,
            Some(name) => {
                reader
                    .decode_tensor_file(name, base, &mut sink)
                    .with_context(ctx)?;
            }
        }
        Ok(())
    })?;
    progress.finish();
    Ok(())
}
