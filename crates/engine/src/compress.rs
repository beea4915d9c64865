//! `bitlens compress` and `bitlens decompress`: checkpoints ⇄ bitlens snapshots, streaming.
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

use crate::progress::Progress;
use crate::source::{Checkpoint, Shard, Source};
use anyhow::{bail, Context, Result};
use bitlens_snapshot::layout::{PieceKind, Pieces, Shifted};
use bitlens_snapshot::{AutoChoice, BaseSource, CodecChoice, CodecKind, Entry, SnapshotReader};
use bitlens_stats::format;
use bitlens_tensors::format as tformat;
use bitlens_tensors::Dtype;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Extension of snapshot files inside a snapshot directory.
const SNAPSHOT_EXT: &str = "bls";

/// The codecs `--codec` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CodecName {
    /// LMC / PLMC: byte grouping + block-adaptive Huffman + runs (lossless).
    Lmc,
    /// NeuZip: rANS exponents + raw sign/mantissa; lossy with --mantissa-bits 0, 1 or 3.
    Neuzip,
    /// BitSnap delta against --base: bitmask of changed elements + their new values (lossless).
    Bitsnap,
    /// BitSnap cluster-based uint8 quantization, for optimizer states (lossy).
    BitsnapQuant,
    /// No compression (lossless), for comparison.
    Stored,
    /// Per tensor the smallest of LMC, NeuZip and, with --base, LMC on the XOR, BitSnap delta or
    /// unchanged, predicted from a sample (lossless); --json prints the predictions.
    Auto,
    /// Inshrinkerator: prune / protect / non-uniform bins searched under --max-error or
    /// --eval-cmd/--max-degradation; with --base, a delta against the previous snapshot (lossy).
    Inshrink,
}

impl CodecName {
    /// The container's codec family (`None` for inshrink, which has a path of its own).
    pub fn kind(self) -> Option<CodecKind> {
        Some(match self {
            CodecName::Lmc => CodecKind::Lmc,
            CodecName::Neuzip => CodecKind::Neuzip,
            CodecName::Bitsnap => CodecKind::Bitsnap,
            CodecName::BitsnapQuant => CodecKind::BitsnapQuant,
            CodecName::Stored => CodecKind::Stored,
            CodecName::Auto => CodecKind::Auto,
            CodecName::Inshrink => return None,
        })
    }
}

/// Writes the output to `path`. A regular file (or a new path) is written through a temporary
/// sibling file that is renamed into place only on success, so a failed run leaves no partial
/// output; a symlink to a regular file keeps pointing at it (its target is replaced). Anything
/// else that exists (a device such as `/dev/null` or `/dev/stdout`, a pipe) is written in
/// place: renaming a file over it would replace the device itself. Writes of 64 KiB or more go
/// straight to the file; smaller ones (small tensors, headers) are gathered.
pub fn write_output(path: &Path, f: impl FnOnce(&mut BufWriter<File>) -> Result<()>) -> Result<()> {
    let write = |file: File, shown: &Path| -> Result<()> {
        // 64 KiB, not more: a frame under the capacity is copied into the buffer first, and
        // every page of the buffer is first-touched once per run (a 1 MiB buffer took 250 page
        // faults and held every compressed frame in passing; BENCHMARKS.md, issue 16).
        let mut w = BufWriter::with_capacity(64 << 10, file);
        f(&mut w)?;
        w.flush()
            .with_context(|| format!("{}: write failed", shown.display()))
    };
    let target = match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("{}: cannot open for writing", path.display()))?;
            return write(file, path);
        }
        Ok(_) => std::fs::canonicalize(path)
            .with_context(|| format!("{}: cannot resolve", path.display()))?,
        Err(_) => path.to_path_buf(),
    };
    let tmp = target.with_extension("bitlens-partial");
    let result = (|| {
        let file =
            File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
        write(file, &tmp)?;
        std::fs::rename(&tmp, &target)
            .with_context(|| format!("{}: cannot rename", target.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Totals of a compress or decompress run.
#[derive(Default)]
struct Totals {
    input: u64,
    output: u64,
}

/// Runs `f` on a thread of the rayon pool (the `--threads` pool), so that the container's frame
/// pipeline has one thread per core: the calling thread checksums, writes and codes frames, and
/// the pool's other threads code frames (from the main thread, the main thread would wait on the
/// pool instead, and with one pool thread a frame would be coded on a different thread from the
/// one that read it).
fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::scope(|_| f())
}

/// `bitlens compress`.
pub fn compress(
    input: &Path,
    output: &Path,
    codec: CodecChoice,
    base: Option<&Path>,
) -> Result<()> {
    compress_reporting(input, output, codec, base, false)
}

/// [`compress`]; with `json` and `--codec auto`, each tensor's predictions, choice and achieved
/// size as one JSON document on stdout.
pub fn compress_reporting(
    input: &Path,
    output: &Path,
    codec: CodecChoice,
    base: Option<&Path>,
    json: bool,
) -> Result<()> {
    on_pool(|| compress_on_pool(input, output, codec, base, json))
}

fn compress_on_pool(
    input: &Path,
    output: &Path,
    codec: CodecChoice,
    base: Option<&Path>,
    json: bool,
) -> Result<()> {
    codec
        .check(base.is_some())
        .map_err(|e| anyhow::anyhow!("--codec {}: {e}", codec.kind))?;
    if json && codec.kind != CodecKind::Auto {
        bail!("--json applies to --codec auto and --codec inshrink");
    }
    if let Some(src) = other_format(input)? {
        return compress_pieces(input, src, output, codec, base, json);
    }
    let checkpoint = Checkpoint::open(input)?;
    if checkpoint.index.is_some() && crate::remote::is_url(input)? {
        bail!(
            "{}: compress reads a sharded checkpoint from local files only",
            input.display()
        );
    }
    let base = base.map(Checkpoint::open).transpose()?;
    let started = Instant::now();
    let progress = Progress::new(checkpoint.data_bytes(), "compress");
    let mut totals = Totals::default();
    let mut entries = Vec::new();
    let mut reports = Vec::new();
    let mut one_shard = |shard: &Shard, base: Option<&Shard>, out: &Path| {
        let (written, shard_entries) = compress_shard(shard, base, codec, out, &progress)?;
        if let Some((entries, choices)) = &shard_entries.1 {
            reports.push(crate::auto_cmd::FileReport::new(
                &shard.path,
                out,
                base.map(|b| b.path.as_path()),
                choices,
                entries,
                written,
            ));
        }
        entries.extend(shard_entries.0);
        anyhow::Ok(written)
    };
    if checkpoint.index.is_none() && checkpoint.shards.len() == 1 {
        let shard = &checkpoint.shards[0];
        let base_shard = base.as_ref().map(|b| pick_base(b, shard)).transpose()?;
        totals.output += one_shard(shard, base_shard, output)?;
    } else {
        std::fs::create_dir_all(output)
            .with_context(|| format!("{}: cannot create directory", output.display()))?;
        for shard in &checkpoint.shards {
            let name = shard.path.file_name().expect("shard files have names");
            let out = output.join(format!("{}.{SNAPSHOT_EXT}", name.to_string_lossy()));
            let base_shard = base.as_ref().map(|b| pick_base(b, shard)).transpose()?;
            totals.output += one_shard(shard, base_shard, &out)?;
        }
        if let Some(index_path) = index_path(input, &checkpoint)? {
            let dst = output.join(index_path.file_name().expect("index has a name"));
            std::fs::copy(&index_path, &dst)
                .with_context(|| format!("{}: cannot copy index", dst.display()))?;
        }
    }
    totals.input = checkpoint.shards.iter().map(|s| s.header.file_size).sum();
    progress.finish();
    summary("compressed", &totals, started);
    lossy_summary(&entries);
    if codec.kind == CodecKind::Auto {
        crate::auto_cmd::print(&reports, json)?;
    }
    Ok(())
}

/// The input opened, when it is a single file of another format than safetensors (GGUF, PyTorch,
/// NumPy); `None` for safetensors files, indexes and directories.
fn other_format(input: &Path) -> Result<Option<Source>> {
    if !crate::remote::is_url(input)? && input.is_dir() {
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
fn open_pieces(path: &Path, src: &Source) -> Result<Pieces> {
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
    json: bool,
) -> Result<()> {
    let pieces = open_pieces(input, &src)?;
    let base_path = base;
    let base = base
        .map(|b| open_base_pieces(b, input, &pieces))
        .transpose()?;
    let started = Instant::now();
    let progress = Progress::new(pieces.file_size, "compress");
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
    summary("compressed", &totals, started);
    lossy_summary(&entries);
    if codec.kind == CodecKind::Auto {
        let report = crate::auto_cmd::FileReport::new(
            input,
            output,
            base_path,
            &choices,
            &entries,
            totals.output,
        );
        crate::auto_cmd::print(&[report], json)?;
    }
    Ok(())
}

/// One line on the error of lossily stored tensors.
fn lossy_summary(entries: &[Entry]) {
    let lossy: Vec<_> = entries
        .iter()
        .filter_map(|e| e.error.map(|r| (e, r)))
        .collect();
    if lossy.is_empty() {
        return;
    }
    let values: u64 = lossy.iter().map(|(_, r)| r.values).sum();
    let mse = lossy
        .iter()
        .map(|(_, r)| r.mse * r.values as f64)
        .sum::<f64>()
        / values.max(1) as f64;
    let (worst, r) = lossy
        .iter()
        .max_by(|a, b| a.1.max_rel.total_cmp(&b.1.max_rel))
        .expect("non-empty");
    let mean_rel = lossy
        .iter()
        .map(|(_, r)| r.mean_rel * r.values as f64)
        .sum::<f64>()
        / values.max(1) as f64;
    eprintln!(
        "bitlens: lossy ({}): {} tensors, MSE {mse:.3e}, mean relative error {mean_rel:.3e}, max relative error {:.3e} (tensor `{}`)",
        worst.codec.name(),
        lossy.len(),
        r.max_rel,
        worst.name
    );
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
        if p.to_string_lossy().ends_with(".safetensors.index.json") {
            return Ok(Some(p));
        }
    }
    Ok(None)
}

/// The base shard for an input shard: the only base file, or the base shard with the same name.
fn pick_base<'a>(base: &'a Checkpoint, shard: &Shard) -> Result<&'a Shard> {
    if base.shards.len() == 1 {
        return Ok(&base.shards[0]);
    }
    let name = shard.path.file_name();
    base.shards
        .iter()
        .find(|b| b.path.file_name() == name)
        .with_context(|| format!("base has no shard named {}", shard.path.display()))
}

/// The index entries of a compressed shard and, with `--codec auto`, its entries again with the
/// choices they were made by.
type ShardEntries = (Vec<Entry>, Option<(Vec<Entry>, Vec<AutoChoice>)>);

/// Compresses one shard; returns the bytes written and its entries.
fn compress_shard(
    shard: &Shard,
    base: Option<&Shard>,
    codec: CodecChoice,
    output: &Path,
    progress: &Progress,
) -> Result<(u64, ShardEntries)> {
    let base = base.map(|b| BaseSource {
        src: &b.source,
        header: &b.header,
    });
    let mut written = 0;
    let mut result = (Vec::new(), None);
    write_output(output, |out| {
        let counter = CountingWriter {
            inner: out,
            count: 0,
        };
        let mut progress = |n| progress.inc(n);
        let counter = if codec.kind == CodecKind::Auto {
            let (counter, entries, choices) = bitlens_snapshot::compress_auto(
                &shard.source,
                &shard.header,
                base.as_ref(),
                counter,
                &mut progress,
            )
            .with_context(|| shard.path.display().to_string())?;
            result = (entries.clone(), Some((entries, choices)));
            counter
        } else {
            let (counter, entries) = bitlens_snapshot::compress(
                &shard.source,
                &shard.header,
                base.as_ref(),
                &|t| codec.codec_for(t.dtype),
                counter,
                &mut progress,
            )
            .with_context(|| shard.path.display().to_string())?;
            result.0 = entries;
            counter
        };
        written = counter.count;
        Ok(())
    })?;
    Ok((written, result))
}

/// Counts the bytes passed through to the inner writer.
pub struct CountingWriter<W: Write> {
    /// Where the bytes go.
    pub inner: W,
    /// How many went.
    pub count: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `bitlens decompress`.
pub fn decompress(
    input: &Path,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
) -> Result<()> {
    on_pool(|| decompress_on_pool(input, output, base, tensor))
}

fn decompress_on_pool(
    input: &Path,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
) -> Result<()> {
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
            let started = Instant::now();
            let output_bytes = crate::inshrink_cmd::decompress(input, &reader, output, base)?;
            let totals = Totals {
                input: size,
                output: output_bytes,
            };
            summary("decompressed", &totals, started);
            return Ok(());
        }
        if reader.original.is_some() {
            return decompress_pieces(input, reader, output, base, tensor);
        }
        Some((reader, size))
    };
    let base = base.map(Checkpoint::open).transpose()?;
    let started = Instant::now();
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
            if let Some(shard_name) = name.strip_suffix(&format!(".{SNAPSHOT_EXT}")) {
                found = true;
                let base_shard = base
                    .as_ref()
                    .map(|b| {
                        b.shards
                            .iter()
                            .find(|s| s.path.file_name().is_some_and(|n| n == shard_name))
                            .or((b.shards.len() == 1).then(|| &b.shards[0]))
                            .with_context(|| format!("base has no shard named {shard_name}"))
                    })
                    .transpose()?;
                decompress_file(
                    &path,
                    &output.join(shard_name),
                    base_shard,
                    None,
                    &mut totals,
                )?;
            } else if name.ends_with(".safetensors.index.json") {
                std::fs::copy(&path, output.join(&name))?;
            }
        }
        if !found {
            bail!(
                "{}: no .{SNAPSHOT_EXT} snapshots in directory",
                input.display()
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
        )?;
    }
    summary("decompressed", &totals, started);
    Ok(())
}

/// `bitlens decompress` of a version 3 snapshot: the original GGUF / PyTorch / NumPy file, or
/// with `tensor` one plain tensor of it as a safetensors file.
fn decompress_pieces(
    input: &Path,
    reader: SnapshotReader<Source>,
    output: &Path,
    base: Option<&Path>,
    tensor: Option<&str>,
) -> Result<()> {
    let started = Instant::now();
    let base = base
        .map(|b| -> Result<_> {
            let src = Source::open(b)?;
            let header = open_pieces(b, &src)?.header()?;
            Ok((src, header))
        })
        .transpose()?;
    let shifted = base.as_ref().map(|(src, header)| Shifted {
        src,
        shift: header.data_start(),
    });
    let base_source = shifted
        .as_ref()
        .zip(base.as_ref())
        .map(|(src, (_, header))| BaseSource { src, header });
    let mut totals = Totals {
        input: std::fs::metadata(input).map_or(0, |m| m.len()),
        output: 0,
    };
    write_decoded(
        input,
        &reader,
        output,
        base_source.as_ref(),
        tensor,
        &mut totals,
    )?;
    summary("decompressed", &totals, started);
    Ok(())
}

/// Opens a snapshot file or URL: its reader and its size.
pub fn open_snapshot(input: &Path) -> Result<(SnapshotReader<Source>, u64)> {
    let src = Source::open(input)?;
    let size = bitlens_tensors::ReadAt::size(&src);
    let reader = SnapshotReader::open(src).with_context(|| input.display().to_string())?;
    Ok((reader, size))
}

fn decompress_file(
    input: &Path,
    output: &Path,
    base: Option<&Shard>,
    tensor: Option<&str>,
    totals: &mut Totals,
) -> Result<()> {
    let (reader, size) = open_snapshot(input)?;
    decode_file(input, &reader, size, output, base, tensor, totals)
}

/// Writes what an open snapshot of `size` bytes holds (the file, or one tensor) to `output`.
fn decode_file(
    input: &Path,
    reader: &SnapshotReader<Source>,
    size: u64,
    output: &Path,
    base: Option<&Shard>,
    tensor: Option<&str>,
    totals: &mut Totals,
) -> Result<()> {
    let base_source = base.map(|b| BaseSource {
        src: &b.source,
        header: &b.header,
    });
    totals.input += size;
    write_decoded(input, reader, output, base_source.as_ref(), tensor, totals)
}

/// Writes the decoded file (or with `tensor`, that tensor's one-tensor file) of the snapshot
/// `input` to `output`, counting the bytes in `totals`.
fn write_decoded(
    input: &Path,
    reader: &SnapshotReader<Source>,
    output: &Path,
    base: Option<&BaseSource>,
    tensor: Option<&str>,
    totals: &mut Totals,
) -> Result<()> {
    let ctx = || input.display().to_string();
    let progress = Progress::new(reader.original_size(), "decompress");
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

fn summary(verb: &str, t: &Totals, started: Instant) {
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let (raw, packed) = if verb == "compressed" {
        (t.input, t.output)
    } else {
        (t.output, t.input)
    };
    eprintln!(
        "bitlens: {verb} {} → {} (ratio {:.4}) in {:.2} s, {:.0} MB/s",
        format::bytes(t.input),
        format::bytes(t.output),
        packed as f64 / raw.max(1) as f64,
        secs,
        raw as f64 / secs / 1e6
    );
}

/// True when the file (or URL: its probe, whose errors are returned) starts with the snapshot
/// magic.
pub fn is_snapshot(path: &Path) -> Result<bool> {
    let mut magic = [0u8; 8];
    if crate::remote::is_url(path)? {
        let src = Source::open(path)?;
        return Ok(
            bitlens_tensors::ReadAt::read_exact_at(&src, 0, &mut magic).is_ok()
                && magic == bitlens_snapshot::format::MAGIC,
        );
    }
    Ok(File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok()
        && magic == bitlens_snapshot::format::MAGIC)
}

/// One tensor of a snapshot, as `inspect` reports it.
#[derive(serde::Serialize)]
struct SnapshotTensor {
    name: String,
    dtype: Dtype,
    shape: Vec<u64>,
    codec: &'static str,
    delta: bool,
    bytes: u64,
    stored_bytes: u64,
    ratio: f64,
    frames: usize,
    /// For lossy codecs: `values`, `mse`, `max_abs`, `max_rel`, `mean_rel`.
    error: Option<serde_json::Value>,
    /// Inshrink snapshots: the tensor's layer type and group, setting, achieved relative L2
    /// error, protected count, bins and whether it is a delta (from its streams).
    #[serde(skip_serializing_if = "Option::is_none")]
    inshrink: Option<serde_json::Value>,
    /// Snapshots of other formats: what the entry is (`tensor`, `gap`, `deflated`) and its element
    /// type (`F16`, `Q8_0`, …; empty for gaps).
    #[serde(skip_serializing_if = "Option::is_none")]
    piece: Option<(&'static str, String)>,
}

/// One snapshot file, as `inspect` reports it.
#[derive(serde::Serialize)]
struct SnapshotInfo {
    path: PathBuf,
    snapshot_size: u64,
    original_size: u64,
    ratio: f64,
    lossy: bool,
    delta: bool,
    metadata: Option<Vec<(String, String)>>,
    tensors: Vec<SnapshotTensor>,
    /// The original file's format when it is not safetensors (`GGUF v3`, `PyTorch zip`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    original_format: Option<String>,
    /// Inshrink snapshots: the plan per layer group, the quality measure, the search report and
    /// the base of the chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    inshrink: Option<serde_json::Value>,
}

/// `bitlens inspect` on snapshot files: codec, sizes and (lossy) error per tensor.
pub fn inspect_snapshots(paths: &[PathBuf], json: bool) -> Result<()> {
    let mut infos = Vec::new();
    for path in paths {
        let src = Source::open(path)?;
        let size = bitlens_tensors::ReadAt::size(&src);
        let r = SnapshotReader::open(src).with_context(|| path.display().to_string())?;
        let inshrink =
            crate::inshrink_cmd::inspect_json(&r).with_context(|| path.display().to_string())?;
        let (inshrink, mut per_tensor) = match inshrink {
            Some((info, tensors)) => (Some(info), tensors),
            None => (None, Vec::new()),
        };
        let tensors = r
            .entries
            .iter()
            .zip(&r.header.tensors)
            .enumerate()
            .map(|(i, (e, t))| SnapshotTensor {
                name: e.name.clone(),
                dtype: t.dtype,
                shape: t.shape.clone(),
                codec: e.codec.name(),
                delta: e.delta,
                bytes: e.raw_len,
                stored_bytes: e.stored_len(),
                ratio: e.stored_len() as f64 / e.raw_len.max(1) as f64,
                frames: e.frames.len(),
                error: e.error.map(|r| {
                    serde_json::json!({"values": r.values, "mse": r.mse, "max_abs": r.max_abs,
                        "max_rel": r.max_rel, "mean_rel": r.mean_rel})
                }),
                piece: e.piece.as_ref().map(|p| (p.kind.name(), p.ty.clone())),
                inshrink: per_tensor
                    .get_mut(i)
                    .map(std::mem::take)
                    .filter(|v| !v.is_null()),
            })
            .collect();
        infos.push(SnapshotInfo {
            path: path.clone(),
            snapshot_size: size,
            original_size: r.original_size(),
            ratio: size as f64 / r.original_size().max(1) as f64,
            lossy: r.is_lossy(),
            delta: r.base.is_some(),
            metadata: r.header.metadata.clone(),
            tensors,
            original_format: r.original.as_ref().map(|o| o.kind.clone()),
            inshrink,
        });
    }
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut out, &serde_json::json!({ "snapshots": infos }))?;
        writeln!(out)?;
        return Ok(());
    }
    for s in &infos {
        writeln!(
            out,
            "{}  (snapshot {} of a {} {} file, ratio {:.4}{}{})",
            s.path.display(),
            format::bytes(s.snapshot_size),
            format::bytes(s.original_size),
            s.original_format.as_deref().unwrap_or("safetensors"),
            s.ratio,
            if s.lossy { ", LOSSY" } else { "" },
            if s.delta {
                ", delta: needs its base"
            } else {
                ""
            }
        )?;
        if let Some(info) = &s.inshrink {
            print_inshrink(&mut out, info)?;
        }
        // Several codecs (a `--codec auto` snapshot): how many tensors and bytes each one holds.
        let mut codecs: std::collections::BTreeMap<String, (usize, u64)> = Default::default();
        for t in &s.tensors {
            let c = codecs
                .entry(format!("{}{}", t.codec, if t.delta { " Δ" } else { "" }))
                .or_default();
            c.0 += 1;
            c.1 += t.stored_bytes;
        }
        if codecs.len() > 1 {
            let parts: Vec<String> = codecs
                .iter()
                .map(|(k, (n, b))| format!("{k} {n} ({})", format::bytes(*b)))
                .collect();
            writeln!(out, "  codecs (tensors, stored): {}", parts.join(", "))?;
        }
        if s.original_format.is_some() {
            writeln!(
                out,
                "  the file's bytes in order: tensor data, and the bytes between (gaps) kept verbatim"
            )?;
            if s.tensors
                .iter()
                .any(|t| matches!(&t.piece, Some((k, _)) if *k == PieceKind::Deflated.name()))
            {
                writeln!(
                    out,
                    "  deflated: a deflated .npz member's compressed bytes, stored as they are (re-deflating cannot reproduce them byte for byte)"
                )?;
            }
        }
        writeln!(
            out,
            "  {:<44} {:<7} {:<14} {:>9} {:>9} {:>7}  error",
            "tensor", "dtype", "codec", "bytes", "stored", "ratio"
        )?;
        for t in &s.tensors {
            let dtype = match &t.piece {
                Some((kind, ty)) if ty.is_empty() => (*kind).to_owned(),
                Some((_, ty)) => ty.clone(),
                None => t.dtype.to_string(),
            };
            let mut error = t.error.as_ref().map_or(String::new(), |e| {
                format!(
                    "MSE {:.2e}, max rel {:.2e}",
                    e["mse"].as_f64().unwrap_or(0.0),
                    e["max_rel"].as_f64().unwrap_or(0.0)
                )
            });
            if let Some(i) = &t.inshrink {
                error = format!(
                    "rel L2 {:.4}, {}, {} protected; {error}",
                    i["error"].as_f64().unwrap_or(0.0),
                    crate::inshrink_cmd::setting_text(&i["setting"]),
                    i["protected"]
                );
            }
            writeln!(
                out,
                "  {:<44} {:<7} {:<14} {:>9} {:>9} {:>7.4}  {}",
                format::name(&t.name, 44),
                dtype,
                format!("{}{}", t.codec, if t.delta { " Δ" } else { "" }),
                format::bytes(t.bytes),
                format::bytes(t.stored_bytes),
                t.ratio,
                error
            )?;
        }
    }
    Ok(())
}

/// The plan and quality measure of an inshrink snapshot, as `inspect` prints them.
fn print_inshrink(out: &mut impl Write, info: &serde_json::Value) -> Result<()> {
    writeln!(
        out,
        "  inshrink: quality {}",
        info["quality"]["name"].as_str().unwrap_or("(not recorded)")
    )?;
    for g in info["groups"].as_array().into_iter().flatten() {
        let search = &g["search"];
        writeln!(
            out,
            "  group {:<9} {}{}, largest tensor error {:.4}{}",
            g["group"].as_str().unwrap_or(""),
            crate::inshrink_cmd::setting_text(&g["setting"]),
            if search["exact_fallback"].as_bool() == Some(true) {
                " (nothing on the grid passed: exact fallback)"
            } else {
                ""
            },
            g["max_error"].as_f64().unwrap_or(0.0),
            match search["trials"].as_u64() {
                Some(n) => format!(
                    ", {} search, {n} trials",
                    search["mode"].as_str().unwrap_or("")
                ),
                None => String::new(),
            }
        )?;
    }
    if let Some(b) = info["base"].as_object() {
        writeln!(
            out,
            "  delta against {} (index checksum {})",
            b["name"].as_str().unwrap_or(""),
            b["index_checksum"].as_str().unwrap_or("")
        )?;
    }
    Ok(())
}
