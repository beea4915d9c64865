//! `bitlens compress`: a checkpoint into a bitlens snapshot, streaming (the container of LMC §4,
//! every codec of the papers; docs/FORMAT.md).
//!
//! A GGUF, PyTorch (`.pt`/`.bin`) or NumPy (`.npy`/`.npz`) file is read with
//! `bitlens_tensors::format::open` and stored as a version 3 snapshot (its pieces: tensor data,
//! deflated members and the bytes between them, see `bitlens_snapshot::layout`), which decompresses
//! to the identical file; `--base` takes a file of the same format with the same tensors, and
//! `decompress --tensor` writes a plain tensor of it as a one-tensor safetensors file (quantized
//! ggml blocks are refused: no safetensors dtype holds them).
//!
//! A single-file checkpoint becomes one snapshot file. A sharded checkpoint (index or directory)
//! becomes a directory with one snapshot per shard (`<shard>.bls`) and the index copied verbatim;
//! decompressing that directory restores the shards and the index. A delta (`--base`) is made
//! against the base checkpoint's shard of the same file name (or the single base file).

use crate::bail;
use crate::checkpoint::{Checkpoint, Shard, ShardFile};
use crate::error::{Context, Error, Result};
use crate::output::{write_output, CountingWriter};
use crate::progress::Progress;
use crate::source::{is_url, Source};
use bitlens_report::auto::{AutoFile, AutoReport};
use bitlens_report::transfer::CompressedReport;
use bitlens_snapshot::layout::{PieceKind, Pieces};
use bitlens_snapshot::{BaseSource, CodecChoice, CodecKind, Entry};
use bitlens_tensors::format as tformat;
use bitlens_tensors::{naming, Header};
use std::path::{Path, PathBuf};

/// Bytes in and out of a compress or decompress run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// Bytes read (the checkpoint's files, or the snapshots').
    pub input: u64,
    /// Bytes written.
    pub output: u64,
}

/// What a compression wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Compressed {
    /// Bytes of the checkpoint's files and of the snapshots written.
    pub totals: Totals,
    /// Every tensor's (piece's) index entry, file by file, in file order.
    pub entries: Vec<Entry>,
    /// With `--codec auto`: each tensor's predictions, choice and achieved size.
    pub auto: Option<AutoReport>,
}

impl Compressed {
    /// Its document ([`CompressedReport`]): `input` and `output` as the request named them, the
    /// sizes, every entry's codec, sizes and error, and `auto`'s report.
    pub fn report(&self, input: &Path, output: &Path) -> CompressedReport {
        bitlens_snapshot::report::compressed_report(
            &input.to_string_lossy(),
            &output.to_string_lossy(),
            (self.totals.input, self.totals.output),
            &self.entries,
            self.auto.clone(),
        )
    }
}

/// Runs `f` on a thread of the rayon pool (the caller's pool), so that the container's frame
/// pipeline has one thread per core: the calling thread checksums, writes and codes frames, and
/// the pool's other threads code frames (from the main thread, the main thread would wait on the
/// pool instead, and with one pool thread a frame would be coded on a different thread from the
/// one that read it).
pub(crate) fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| f())
}

/// `bitlens compress`: the checkpoint at `input` (a file of any format, an index, a directory of
/// shards, or a URL of one file) into the snapshot `output` (a directory of `<shard>.bls` for a
/// sharded checkpoint), every tensor by `codec`; with `base`, as deltas against it.
pub fn compress(
    input: &Path,
    output: &Path,
    codec: CodecChoice,
    base: Option<&Path>,
    progress: &dyn Progress,
) -> Result<Compressed> {
    on_pool(|| compress_on_pool(input, output, codec, base, progress))
}

fn compress_on_pool(
    input: &Path,
    output: &Path,
    codec: CodecChoice,
    base: Option<&Path>,
    progress: &dyn Progress,
) -> Result<Compressed> {
    check_choice(codec, base.is_some())?;
    if let Some(src) = other_format(input)? {
        return compress_pieces(input, src, output, codec, base, progress);
    }
    let checkpoint = Checkpoint::open(input)?;
    checkpoint.warn(progress);
    if checkpoint.index.is_some() && is_url(input)? {
        bail!(
            "{}: compress reads a sharded checkpoint from local files only",
            input.display()
        );
    }
    let base = base.map(Checkpoint::open).transpose()?;
    progress.start(checkpoint.data_bytes(), "compress");
    let mut totals = Totals::default();
    let mut entries = Vec::new();
    let mut reports = Vec::new();
    let mut one_shard = |shard: &Shard, base: Option<&Shard>, out: &Path| {
        let written = compress_shard(
            &shard.as_file(),
            base,
            codec,
            out,
            progress,
            &mut entries,
            &mut reports,
        )?;
        Ok::<_, Error>(written)
    };
    if checkpoint.index.is_none() && checkpoint.shards.len() == 1 {
        let shard = &checkpoint.shards[0];
        let base_shard = base
            .as_ref()
            .map(|b| pick_base(b, &shard.path))
            .transpose()?;
        totals.output += one_shard(shard, base_shard, output)?;
    } else {
        std::fs::create_dir_all(output)
            .with_context(|| format!("{}: cannot create directory", output.display()))?;
        for shard in &checkpoint.shards {
            let out = output.join(naming::snapshot_name(&shard.path.to_string_lossy(), true));
            let base_shard = base
                .as_ref()
                .map(|b| pick_base(b, &shard.path))
                .transpose()?;
            totals.output += one_shard(shard, base_shard, &out)?;
        }
        if let Some(index_path) = index_path(input, &checkpoint)? {
            let name = index_path
                .file_name()
                .context("the shard index has no file name")?;
            let dst = output.join(name);
            std::fs::copy(&index_path, &dst)
                .with_context(|| format!("{}: cannot copy index", dst.display()))?;
        }
    }
    totals.input = checkpoint.shards.iter().map(|s| s.header.file_size).sum();
    progress.finish();
    Ok(Compressed {
        totals,
        entries,
        auto: (codec.kind == CodecKind::Auto).then(|| AutoReport::new(reports)),
    })
}

/// Refuses a codec choice that cannot work (with a base or without), naming the codec as
/// `--codec` does.
fn check_choice(codec: CodecChoice, has_base: bool) -> Result<()> {
    codec
        .check(has_base)
        .map_err(|e| Error::invalid(format!("--codec {}: {e}", codec.kind)))
}

/// The input opened, when it is a single file of another format than safetensors (GGUF, PyTorch,
/// NumPy); `None` for safetensors files, indexes and directories.
fn other_format(input: &Path) -> Result<Option<Source>> {
    if !is_url(input)? && input.is_dir() {
        return Ok(None);
    }
    let src = Source::open(input)?;
    let size = bitlens_tensors::ReadAt::size(&src);
    let mut first = vec![0u8; size.min(tformat::DETECT_BYTES as u64) as usize];
    bitlens_tensors::ReadAt::read_exact_at(&src, 0, &mut first)
        .with_context(|| input.display().to_string())?;
    Ok(match tformat::detect(&first, size) {
        Some(tformat::Format::Safetensors) | None => None,
        Some(_) => Some(src),
    })
}

/// A file of any format read as its pieces.
pub(crate) fn open_pieces(path: &Path, src: &Source) -> Result<Pieces> {
    let layout = tformat::open(src).with_context(|| path.display().to_string())?;
    bitlens_snapshot::layout::pieces(&layout).with_context(|| path.display().to_string())
}

/// The base of a delta between two files of another format: it must be of the same format and
/// hold the same tensor data (names, types, lengths); gaps may differ.
fn open_base_pieces(base: &Path, input: &Path, ours: &Pieces) -> Result<(Source, Pieces)> {
    let src = Source::open(base)?;
    let theirs = open_pieces(base, &src)?;
    let tensors = |p: &Pieces| -> Vec<(String, String, u64)> {
        p.pieces
            .iter()
            .filter(|q| q.info.kind != PieceKind::Gap)
            .map(|q| (q.name.clone(), q.info.ty.clone(), q.len))
            .collect()
    };
    if theirs.kind != ours.kind {
        bail!(
            "--base {} is a {} file, {} is a {} file: a delta needs two files of the same format",
            base.display(),
            theirs.kind,
            input.display(),
            ours.kind
        );
    }
    if tensors(&theirs) != tensors(ours) {
        bail!(
            "--base {} does not have the tensors of {} (names, types and sizes, in file order): a delta needs two files of the same layout",
            base.display(),
            input.display()
        );
    }
    Ok((src, theirs))
}

/// `bitlens compress` of a GGUF, PyTorch or NumPy file: a version 3 snapshot of its pieces.
fn compress_pieces(
    input: &Path,
    src: Source,
    output: &Path,
    codec: CodecChoice,
    base: Option<&Path>,
    progress: &dyn Progress,
) -> Result<Compressed> {
    let pieces = open_pieces(input, &src)?;
    let base_path = base;
    let base = base
        .map(|b| open_base_pieces(b, input, &pieces))
        .transpose()?;
    progress.start(pieces.file_size, "compress");
    let mut totals = Totals {
        input: pieces.file_size,
        output: 0,
    };
    let mut entries = Vec::new();
    let mut choices = Vec::new();
    write_output(output, |out| {
        let base = base
            .as_ref()
            .map(|(s, p)| (s as &dyn bitlens_snapshot::Source, p));
        let counter = CountingWriter {
            inner: out,
            count: 0,
        };
        let mut progress = |n| progress.inc(n);
        let (counter, written, chosen) = if codec.kind == CodecKind::Auto {
            bitlens_snapshot::compress_pieces_auto(&src, &pieces, base, counter, &mut progress)
        } else {
            bitlens_snapshot::compress_pieces(&src, &pieces, base, &codec, counter, &mut progress)
                .map(|(c, e)| (c, e, Vec::new()))
        }
        .with_context(|| input.display().to_string())?;
        totals.output = counter.count;
        entries = written;
        choices = chosen;
        Ok(())
    })?;
    progress.finish();
    let auto = (codec.kind == CodecKind::Auto).then(|| {
        AutoReport::new(vec![bitlens_snapshot::report::auto_file_report(
            &input.to_string_lossy(),
            &output.to_string_lossy(),
            base_path.map(|b| b.to_string_lossy()).as_deref(),
            &choices,
            &entries,
            totals.output,
        )])
    });
    Ok(Compressed {
        totals,
        entries,
        auto,
    })
}

fn index_path(input: &Path, checkpoint: &Checkpoint) -> Result<Option<PathBuf>> {
    if checkpoint.index.is_none() {
        return Ok(None);
    }
    if input.is_file() {
        return Ok(Some(input.to_path_buf()));
    }
    for entry in std::fs::read_dir(input)? {
        let p = entry?.path();
        if naming::is_shard_index_name(&p.to_string_lossy()) {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// The base shard for the input shard at `path` ([`naming::base_file`]).
pub(crate) fn pick_base<'a>(base: &'a Checkpoint, path: &Path) -> Result<&'a Shard> {
    let names: Vec<String> = base
        .shards
        .iter()
        .map(|b| b.path.to_string_lossy().into_owned())
        .collect();
    naming::base_file(&names, &path.to_string_lossy())
        .map(|i| &base.shards[i])
        .with_context(|| format!("base has no shard named {}", path.display()))
}

/// Compresses one safetensors file into the snapshot `output`; returns the bytes written, and
/// adds its entries to `entries` and (with `--codec auto`) its choices to `reports`.
fn compress_shard(
    shard: &ShardFile,
    base: Option<&Shard>,
    codec: CodecChoice,
    output: &Path,
    progress: &dyn Progress,
    entries: &mut Vec<Entry>,
    reports: &mut Vec<AutoFile>,
) -> Result<u64> {
    let base_source = base.map(|b| BaseSource {
        src: &b.source,
        header: &b.header,
    });
    let mut written = 0;
    let mut choices = None;
    let mut shard_entries = Vec::new();
    write_output(output, |out| {
        let counter = CountingWriter {
            inner: out,
            count: 0,
        };
        let mut progress = |n| progress.inc(n);
        let counter = if codec.kind == CodecKind::Auto {
            let (counter, written, chosen) = bitlens_snapshot::compress_auto(
                shard.source,
                shard.header,
                base_source.as_ref(),
                counter,
                &mut progress,
            )
            .with_context(|| shard.path.display().to_string())?;
            shard_entries = written;
            choices = Some(chosen);
            counter
        } else {
            let (counter, written) = bitlens_snapshot::compress(
                shard.source,
                shard.header,
                base_source.as_ref(),
                &|t| codec.codec_for(t.dtype),
                counter,
                &mut progress,
            )
            .with_context(|| shard.path.display().to_string())?;
            shard_entries = written;
            counter
        };
        written = counter.count;
        Ok(())
    })?;
    if let Some(choices) = choices {
        reports.push(bitlens_snapshot::report::auto_file_report(
            &shard.path.to_string_lossy(),
            &output.to_string_lossy(),
            base.map(|b| b.path.to_string_lossy()).as_deref(),
            &choices,
            &shard_entries,
            written,
        ));
    }
    entries.extend(shard_entries);
    Ok(written)
}

/// `bitlens compress` of a safetensors file made in memory (`bitlens.save_file`'s arrays, laid
/// out by `bitlens_tensors::format::safetensors::write::Image`) into the snapshot `output`:
/// what [`compress`] does with a single file of that content. `name` is what messages call it;
/// `base` is the checkpoint a delta is made against.
pub fn compress_image(
    name: &Path,
    image: &dyn bitlens_snapshot::Source,
    header: &Header,
    output: &Path,
    codec: CodecChoice,
    base: Option<&Path>,
    progress: &dyn Progress,
) -> Result<Compressed> {
    on_pool(|| {
        check_choice(codec, base.is_some())?;
        let shard = ShardFile {
            path: name,
            source: image,
            header,
        };
        let base = base.map(Checkpoint::open).transpose()?;
        let base_shard = base.as_ref().map(|b| pick_base(b, name)).transpose()?;
        progress.start(header.data_len(), "compress");
        let mut entries = Vec::new();
        let mut reports = Vec::new();
        let output_bytes = compress_shard(
            &shard,
            base_shard,
            codec,
            output,
            progress,
            &mut entries,
            &mut reports,
        )?;
        progress.finish();
        Ok(Compressed {
            totals: Totals {
                input: header.file_size,
                output: output_bytes,
            },
            entries,
            auto: (codec.kind == CodecKind::Auto).then(|| AutoReport::new(reports)),
        })
    })
}
