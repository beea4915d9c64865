//! `bitlens bench`: bitlens's codecs beside zstd (levels 1, 3, 19), lz4 (lz4_flex), deflate (flate2)
//! and bzip2, raw and byte-grouped, and the Hugging Face hub's own scheme `bg4-lz4`
//! (`bitlens_peers::xet`: 64 KiB content-defined chunks, each None / LZ4 / byte-grouped LZ4), on
//! the same tensors in one run.
//!
//! Every codec compresses each tensor separately (as the snapshot container does) and decompresses
//! it; lossless rows are checked byte for byte, lossy rows report their error. Times are wall-clock
//! per call, summed over tensors, best of `--repeat` passes (default 3); every codec writes into
//! output buffers reused from call to call where its API allows (zstd, lz4, deflate and bzip2
//! included), so no row pays for fresh pages. Peers run on one thread, LMC on one thread and on
//! the `--threads` pool. Container codecs (NeuZip, BitSnap quant) are chosen per tensor exactly as
//! `bitlens compress` chooses them: float-only codecs use LMC for other dtypes.
//!
//! The `snapshot` rows run the whole container in memory on each input file, as `bitlens
//! compress` / `decompress` do on disk: the file's bytes in, a `.bls` out (checksums, index and
//! all), then back to the identical file. They are the figures to set beside a whole-file
//! compressor such as ZipNN (`scripts/bench-peers.sh`). Likewise `bg4-lz4 (whole file)` stores each
//! input file's bytes as the hub does (chunks cut across tensors, header included), on one thread.

use anyhow::{bail, ensure, Context, Result};
use bitlens_codecs::{byte_group, Options, Transform, Width};
use bitlens_engine::Checkpoint;
use bitlens_report::bench::{BenchReport, BenchRow};
use bitlens_snapshot::Codec;
use bitlens_snapshot::{CodecChoice, CodecKind, ErrorStats};
use bitlens_stats::format;
use bitlens_tensors::Dtype;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Instant;

/// One tensor's bytes, dtype and byte-grouping width.
struct Sample {
    data: Vec<u8>,
    dtype: Dtype,
    width: usize,
}

/// Wall times of every pass of a row, compress and decompress: the best and the median.
#[derive(Default)]
struct Passes {
    compress: Vec<f64>,
    decompress: Vec<f64>,
}

impl Passes {
    /// Megabytes (10⁶) per second for `bytes` in `secs`.
    fn mb_s(bytes: u64, secs: f64) -> f64 {
        bytes as f64 / secs.max(1e-9) / 1e6
    }

    /// The median of `times` (the upper one of an even count).
    fn median(times: &[f64]) -> f64 {
        let mut t = times.to_vec();
        t.sort_by(f64::total_cmp);
        t.get(t.len() / 2).copied().unwrap_or(f64::INFINITY)
    }

    /// A row's speeds for `bytes` original bytes: best and median, compress and decompress.
    fn row(&self, codec: String, threads: usize, stored: u64, bytes: u64) -> BenchRow {
        let best = |t: &[f64]| t.iter().copied().fold(f64::INFINITY, f64::min);
        BenchRow {
            codec,
            threads,
            ratio: stored as f64 / bytes.max(1) as f64,
            compressed_bytes: stored,
            compress_mb_s: Self::mb_s(bytes, best(&self.compress)),
            decompress_mb_s: Self::mb_s(bytes, best(&self.decompress)),
            compress_median_mb_s: Self::mb_s(bytes, Self::median(&self.compress)),
            decompress_median_mb_s: Self::mb_s(bytes, Self::median(&self.decompress)),
            error: None,
        }
    }
}

/// Compresses a sample into the given buffer (whose capacity it may reuse).
type Compress = Box<dyn Fn(&Sample, &mut Vec<u8>) -> Result<()>>;
/// Decompresses a payload of a sample into the given buffer.
type Decompress = Box<dyn Fn(&[u8], &Sample, &mut Vec<u8>) -> Result<()>>;

/// A codec under test.
struct Candidate {
    name: String,
    threads: usize,
    compress: Compress,
    decompress: Decompress,
    lossy: bool,
}

/// LMC on `threads` threads: one means the calling thread only, more means the current rayon pool
/// (the `--threads` pool), never a pool built per call.
fn lmc(threads: usize) -> Candidate {
    let pool = if threads > 1 { None } else { Some(1) };
    let opts = Options {
        threads: pool,
        ..Options::default()
    };
    Candidate {
        name: "lmc".into(),
        threads,
        compress: Box::new(move |s, out| {
            let w = Width::from_bytes(s.width).unwrap_or(Width::W1);
            bitlens_codecs::encode_into(&s.data, w, &opts, out);
            Ok(())
        }),
        decompress: Box::new(move |p, s, out| {
            bitlens_codecs::plmc::check(p, s.data.len())?;
            out.resize(s.data.len(), 0);
            Ok(bitlens_codecs::plmc::decode_into_with_threads(
                p, out, pool,
            )?)
        }),
        lossy: false,
    }
}

/// A container codec, chosen per tensor as `bitlens compress` would.
fn container(name: &str, choice: CodecChoice, lossy: bool) -> Candidate {
    let codec = move |s: &Sample| -> Codec { choice.codec_for(s.dtype) };
    Candidate {
        name: name.into(),
        threads: 1,
        compress: Box::new(move |s, out| {
            codec(s).encode_frame(&s.data, None, out);
            Ok(())
        }),
        decompress: Box::new(move |p, s, out| {
            Ok(codec(s).decode_frame_into(p, s.data.len(), None, out)?)
        }),
        lossy,
    }
}

/// A peer byte compressor writing into a reused buffer, optionally on byte-grouped input.
type PeerCompress = fn(&[u8], &mut Vec<u8>) -> Result<()>;
/// A peer's decompressor: payload, original length, reused output buffer.
type PeerDecompress = fn(&[u8], usize, &mut Vec<u8>) -> Result<()>;

fn peer(
    name: &str,
    grouped: bool,
    compress: PeerCompress,
    decompress: PeerDecompress,
) -> Candidate {
    // Grouping scratch, reused like the output buffers.
    let scratch = std::cell::RefCell::new(Vec::new());
    let scratch2 = std::cell::RefCell::new(Vec::new());
    Candidate {
        name: if grouped {
            format!("{name} (byte-grouped)")
        } else {
            name.to_owned()
        },
        threads: 1,
        compress: Box::new(move |s, out| {
            if grouped && s.width > 1 {
                let mut g = scratch.borrow_mut();
                g.resize(s.data.len(), 0);
                byte_group::split(&s.data, s.width, Transform::None, &mut g);
                compress(&g, out)
            } else {
                compress(&s.data, out)
            }
        }),
        decompress: Box::new(move |p, s, out| {
            if grouped && s.width > 1 {
                let mut g = scratch2.borrow_mut();
                decompress(p, s.data.len(), &mut g)?;
                out.resize(g.len(), 0);
                byte_group::merge(&g, s.width, Transform::None, out);
                Ok(())
            } else {
                decompress(p, s.data.len(), out)
            }
        }),
        lossy: false,
    }
}

fn zstd_at(level: i32) -> PeerCompress {
    fn run(d: &[u8], out: &mut Vec<u8>, level: i32) -> Result<()> {
        // A Vec destination is bounded by its capacity (reserved, not zero-filled).
        out.clear();
        out.reserve(zstd::zstd_safe::compress_bound(d.len()));
        zstd::bulk::Compressor::new(level)?.compress_to_buffer(d, out)?;
        Ok(())
    }
    match level {
        1 => |d, out| run(d, out, 1),
        3 => |d, out| run(d, out, 3),
        _ => |d, out| run(d, out, 19),
    }
}

fn zstd_decompress(p: &[u8], n: usize, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    out.reserve(n);
    let got = zstd::bulk::Decompressor::new()?.decompress_to_buffer(p, out)?;
    ensure!(got == n, "zstd restored {got} of {n} bytes");
    Ok(())
}

fn lz4_compress(d: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.resize(lz4_flex::block::get_maximum_output_size(d.len()), 0);
    let n = lz4_flex::block::compress_into(d, out)?;
    out.truncate(n);
    Ok(())
}

fn lz4_decompress(p: &[u8], n: usize, out: &mut Vec<u8>) -> Result<()> {
    out.resize(n, 0);
    let got = lz4_flex::block::decompress_into(p, out)?;
    ensure!(got == n, "lz4 restored {got} of {n} bytes");
    Ok(())
}

fn bg4_lz4_compress(d: &[u8], out: &mut Vec<u8>) -> Result<()> {
    bitlens_peers::compress_into(d, out)?;
    Ok(())
}

fn bg4_lz4_decompress(p: &[u8], n: usize, out: &mut Vec<u8>) -> Result<()> {
    bitlens_peers::decompress_into(p, out)?;
    ensure!(
        out.len() == n,
        "bg4-lz4 restored {} of {n} bytes",
        out.len()
    );
    Ok(())
}

fn deflate_compress(d: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let mut e = flate2::write::DeflateEncoder::new(out, flate2::Compression::default());
    e.write_all(d)?;
    e.finish()?;
    Ok(())
}

fn deflate_decompress(p: &[u8], n: usize, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    out.reserve(n);
    flate2::read::DeflateDecoder::new(p).read_to_end(out)?;
    Ok(())
}

fn bzip2_compress(d: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    let mut e = bzip2::write::BzEncoder::new(out, bzip2::Compression::best());
    e.write_all(d)?;
    e.finish()?;
    Ok(())
}

fn bzip2_decompress(p: &[u8], n: usize, out: &mut Vec<u8>) -> Result<()> {
    out.clear();
    out.reserve(n);
    bzip2::read::BzDecoder::new(p).read_to_end(out)?;
    Ok(())
}

/// Every candidate, filtered by name (`zstd-3` selects zstd-3 raw and byte-grouped, not zstd-19).
fn candidates(filter: &[String]) -> Vec<Candidate> {
    let pool = rayon::current_num_threads();
    let mut all = vec![lmc(1)];
    if pool > 1 {
        all.push(lmc(pool));
    }
    let choice = |kind, mantissa_bits| CodecChoice {
        mantissa_bits,
        ..CodecChoice::new(kind)
    };
    all.push(container("neuzip", choice(CodecKind::Neuzip, None), false));
    for k in [3, 1, 0] {
        let name = format!("neuzip-k{k}");
        all.push(container(&name, choice(CodecKind::Neuzip, Some(k)), true));
    }
    all.push(container(
        "bitsnap-quant",
        choice(CodecKind::BitsnapQuant, None),
        true,
    ));
    type Peer = (&'static str, PeerCompress, PeerDecompress);
    let peers: [Peer; 6] = [
        ("zstd-1", zstd_at(1), zstd_decompress),
        ("zstd-3", zstd_at(3), zstd_decompress),
        ("zstd-19", zstd_at(19), zstd_decompress),
        ("lz4", lz4_compress, lz4_decompress),
        ("deflate", deflate_compress, deflate_decompress),
        ("bzip2", bzip2_compress, bzip2_decompress),
    ];
    for (name, c, d) in peers {
        all.push(peer(name, false, c, d));
        all.push(peer(name, true, c, d));
    }
    // The hub's scheme groups bytes itself (by 4, whatever the dtype): no grouped variant.
    all.push(bg4_lz4());
    all.retain(|c| {
        let base = c.name.split(" (").next().unwrap_or(&c.name);
        filter.is_empty() || filter.iter().any(|f| f == base || f == &c.name)
    });
    all
}

/// The hub's Xet scheme, each tensor stored as one file would be.
fn bg4_lz4() -> Candidate {
    peer("bg4-lz4", false, bg4_lz4_compress, bg4_lz4_decompress)
}

fn measure(c: &Candidate, samples: &[Sample], repeat: usize) -> Result<BenchRow> {
    let (mut packed_total, mut raw_total) = (0u64, 0u64);
    let mut passes = Passes::default();
    let mut errors = ErrorStats::default();
    let (mut packed, mut restored) = (Vec::new(), Vec::new());
    for pass in 0..repeat.max(1) {
        let (mut t_comp, mut t_dec) = (0f64, 0f64);
        for s in samples {
            let t0 = Instant::now();
            (c.compress)(s, &mut packed)?;
            let t1 = Instant::now();
            (c.decompress)(&packed, s, &mut restored)?;
            let t2 = Instant::now();
            t_comp += (t1 - t0).as_secs_f64();
            t_dec += (t2 - t1).as_secs_f64();
            if pass > 0 {
                continue;
            }
            if c.lossy {
                ensure!(
                    restored.len() == s.data.len(),
                    "{} changed a tensor's length",
                    c.name
                );
                // Dtypes without a lossy float format were stored losslessly: nothing to report.
                if bitlens_snapshot::choice::float_format(s.dtype).is_some() {
                    errors.add_bytes(s.dtype, &s.data, &restored)?;
                }
            } else {
                ensure!(restored == s.data, "{} did not round-trip a tensor", c.name);
            }
            packed_total += packed.len() as u64;
            raw_total += s.data.len() as u64;
        }
        passes.compress.push(t_comp);
        passes.decompress.push(t_dec);
    }
    let mut row = passes.row(c.name.clone(), c.threads, packed_total, raw_total);
    row.error = c.lossy.then(|| errors.report().into());
    Ok(row)
}

/// The whole container on each file in memory: its bytes into a snapshot and back (LMC for every
/// tensor, as `bitlens compress` does by default), each file restored byte for byte, on the
/// current rayon pool (`threads` of them). Times summed over files, best of `repeat` passes.
fn measure_snapshot(files: &[Sample], threads: usize, repeat: usize) -> Result<BenchRow> {
    let headers = files
        .iter()
        .map(|f| Ok(bitlens_tensors::read_header(&f.data)?))
        .collect::<Result<Vec<_>>>()?;
    let codec_for = |t: &bitlens_tensors::TensorInfo| Codec::lmc_for_width(t.dtype.lane_bytes());
    let mut passes = Passes::default();
    let (mut stored, mut original) = (0u64, 0u64);
    let mut snapshot = Vec::new();
    let mut restored = Vec::new();
    for pass in 0..repeat.max(1) {
        let (mut t_comp, mut t_dec) = (0f64, 0f64);
        for (file, header) in files.iter().zip(&headers) {
            let file = &file.data;
            snapshot.clear();
            let t0 = Instant::now();
            let (out, _) =
                bitlens_snapshot::compress(file, header, None, &codec_for, snapshot, &mut |_| {})?;
            let t1 = Instant::now();
            snapshot = out;
            restored.clear();
            let reader = bitlens_snapshot::SnapshotReader::open(&snapshot[..])?;
            reader.decode_all(None, &mut |b| {
                restored.extend_from_slice(b);
                Ok(())
            })?;
            let t2 = Instant::now();
            ensure!(restored == *file, "the snapshot did not restore the file");
            t_comp += (t1 - t0).as_secs_f64();
            t_dec += (t2 - t1).as_secs_f64();
            if pass == 0 {
                stored += snapshot.len() as u64;
                original += file.len() as u64;
            }
        }
        passes.compress.push(t_comp);
        passes.decompress.push(t_dec);
    }
    Ok(passes.row("snapshot (whole file)".into(), threads, stored, original))
}

/// Whether the filter selects `name` (an empty filter selects everything).
fn selected(filter: &[String], name: &str) -> bool {
    filter.is_empty() || filter.iter().any(|f| f == name)
}

/// The names `--codecs` accepts: `snapshot` and each candidate's (without its thread count or
/// layout), in the order of the table.
fn known_codecs() -> Vec<String> {
    let mut names = vec!["snapshot".to_string()];
    for c in candidates(&[]) {
        let base = c.name.split(" (").next().unwrap_or(&c.name).to_string();
        if !names.contains(&base) {
            names.push(base);
        }
    }
    names
}

/// Refuses a `--codecs` name no codec has (it would select nothing and print no rows).
fn check_filter(filter: &[String]) -> Result<()> {
    let known = known_codecs();
    match filter.iter().find(|f| !known.contains(f)) {
        Some(unknown) => bail!(
            "unknown codec `{unknown}` in --codecs; known: {}",
            known.join(", ")
        ),
        None => Ok(()),
    }
}

/// Runs the benchmark and prints the table (or JSON) to stdout.
pub fn run(inputs: &[PathBuf], json: bool, filter: &[String], repeat: usize) -> Result<()> {
    check_filter(filter)?;
    // Whole files are read for the rows that store them as they are.
    let whole_files = selected(filter, "snapshot") || selected(filter, "bg4-lz4");
    let mut samples = Vec::new();
    let mut files = Vec::new();
    for input in inputs {
        let c = Checkpoint::open(input)?;
        for shard in &c.shards {
            if whole_files {
                let mut file = vec![0u8; shard.header.file_size as usize];
                bitlens_tensors::ReadAt::read_exact_at(&shard.source, 0, &mut file)
                    .with_context(|| format!("{}: cannot read", shard.path.display()))?;
                files.push(Sample {
                    data: file,
                    dtype: Dtype::U8,
                    width: 1,
                });
            }
            for t in &shard.header.tensors {
                let (start, end) = shard.header.file_range(t);
                let mut data = vec![0u8; (end - start) as usize];
                bitlens_tensors::ReadAt::read_exact_at(&shard.source, start, &mut data)
                    .with_context(|| format!("{}: tensor `{}`", shard.path.display(), t.name))?;
                if !data.is_empty() {
                    samples.push(Sample {
                        data,
                        dtype: t.dtype,
                        width: t.dtype.lane_bytes(),
                    });
                }
            }
        }
    }
    let bytes: u64 = samples.iter().map(|s| s.data.len() as u64).sum();
    let mut report = BenchReport {
        inputs: inputs
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect(),
        tensors: samples.len(),
        bytes,
        results: Vec::new(),
    };
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(out, "{} tensors, {}", samples.len(), format::bytes(bytes))?;
        writeln!(
            out,
            "{:<26} {:>7} {:>8} {:>10} {:>13} {:>15}  error (lossy)",
            "codec", "threads", "ratio", "compressed", "compress MB/s", "decompress MB/s",
        )?;
    }
    let pool = rayon::current_num_threads();
    let mut rows: Vec<Box<dyn Fn() -> Result<BenchRow>>> = candidates(filter)
        .into_iter()
        .map(|c| -> Box<dyn Fn() -> Result<BenchRow>> {
            let samples = &samples;
            Box::new(move || measure(&c, samples, repeat))
        })
        .collect();
    if !files.is_empty() && selected(filter, "bg4-lz4") {
        let files = &files;
        rows.push(Box::new(move || {
            let mut row = measure(&bg4_lz4(), files, repeat)?;
            row.codec = "bg4-lz4 (whole file)".into();
            Ok(row)
        }));
    }
    if !files.is_empty() && selected(filter, "snapshot") {
        let files = &files;
        rows.insert(
            0,
            Box::new(move || {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()?
                    .install(|| measure_snapshot(files, 1, repeat))
            }),
        );
        if pool > 1 {
            rows.insert(1, Box::new(move || measure_snapshot(files, pool, repeat)));
        }
    }
    for row in rows {
        let row = row()?;
        if !json {
            let error = row.error.map_or(String::new(), |e| {
                format!(
                    "MSE {:.2e}, mean rel {:.2e}, max rel {:.2e}",
                    e.mse, e.mean_rel, e.max_rel
                )
            });
            writeln!(
                out,
                "{:<26} {:>7} {:>8.4} {:>10} {:>13.0} {:>15.0}  {}",
                row.codec,
                row.threads,
                row.ratio,
                format::bytes(row.compressed_bytes),
                row.compress_mb_s,
                row.decompress_mb_s,
                error
            )?;
            out.flush()?;
        }
        report.results.push(row);
    }
    if json {
        drop(out);
        crate::io::print_json(&report)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{check_filter, known_codecs, Passes};

    /// Every name the help lists is known; a name no codec has is an error listing the known ones.
    #[test]
    fn codec_names_are_checked_and_the_error_lists_them() {
        let known = known_codecs();
        for name in [
            "snapshot",
            "lmc",
            "neuzip",
            "neuzip-k3",
            "bitsnap-quant",
            "zstd-19",
            "lz4",
            "bzip2",
            "bg4-lz4",
        ] {
            assert!(known.iter().any(|k| k == name), "{name} in {known:?}");
        }
        check_filter(&["lmc".into(), "zstd-3".into()]).unwrap();
        let err = check_filter(&["lmc".into(), "bg4-lz4x".into()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`bg4-lz4x`")
                && err.contains("zstd-19")
                && err.contains("snapshot")
                && err.contains(", bg4-lz4"),
            "{err}"
        );
    }

    /// Best and median speeds come from the fastest and the middle pass, computed by hand.
    #[test]
    fn passes_give_best_and_median_speeds() {
        let passes = Passes {
            compress: vec![0.4, 0.1, 0.3, 0.2, 0.5],
            decompress: vec![0.2, 0.8, 0.4, 0.6],
        };
        let row = passes.row("x".into(), 1, 50, 100_000_000);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b;
        assert!(close(row.compress_mb_s, 100.0 / 0.1));
        assert!(close(row.compress_median_mb_s, 100.0 / 0.3));
        assert!(close(row.decompress_mb_s, 100.0 / 0.2));
        // An even count takes the upper middle pass (the slower of the two).
        assert!(close(row.decompress_median_mb_s, 100.0 / 0.6));
        assert!(close(row.ratio, 50.0 / 100_000_000.0));
    }
}
