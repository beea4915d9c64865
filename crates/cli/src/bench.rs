//! `bitlens bench`: bitlens's codecs beside zstd (levels 1, 3, 19), lz4 (lz4_flex), deflate (flate2)
//! and bzip2, raw and byte-grouped, on the same tensors in one run.
//!
//! Every codec compresses each tensor separately (as the snapshot container does), decompresses it,
//! and the result is checked byte for byte. Times are wall-clock per call, summed over tensors;
//! peers run on one thread, LMC on one thread and on the `--threads` pool.

use crate::format;
use crate::source::Checkpoint;
use anyhow::{ensure, Context, Result};
use bitlens_codecs::{byte_group, Options, Transform, Width};
use serde::Serialize;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Instant;

/// One tensor's bytes and its byte-grouping width.
struct Sample {
    data: Vec<u8>,
    width: usize,
}

/// One row of the benchmark.
#[derive(Serialize)]
pub struct BenchRow {
    /// Codec and variant, e.g. `zstd-3 (byte-grouped)`.
    pub codec: String,
    /// Threads it ran on.
    pub threads: usize,
    /// Σ compressed / Σ original.
    pub ratio: f64,
    /// Σ compressed bytes.
    pub compressed_bytes: u64,
    /// Original megabytes (10⁶) per second of compression.
    pub compress_mb_s: f64,
    /// Original megabytes per second of decompression.
    pub decompress_mb_s: f64,
}

/// The `bench --json` document.
#[derive(Serialize)]
pub struct BenchReport {
    /// The inputs.
    pub inputs: Vec<PathBuf>,
    /// Tensors measured.
    pub tensors: usize,
    /// Their total bytes.
    pub bytes: u64,
    /// One row per codec.
    pub results: Vec<BenchRow>,
}

type Compress = Box<dyn Fn(&[u8], usize) -> Result<Vec<u8>>>;
type Decompress = Box<dyn Fn(&[u8], usize, usize) -> Result<Vec<u8>>>;

/// A codec under test: compress(data, width) and decompress(packed, original_len, width).
struct Candidate {
    name: String,
    threads: usize,
    compress: Compress,
    decompress: Decompress,
}

fn lmc(threads: usize) -> Candidate {
    let opts = Options {
        threads: Some(threads),
        ..Options::default()
    };
    Candidate {
        name: "lmc".into(),
        threads,
        compress: Box::new(move |d, w| {
            Ok(bitlens_codecs::encode(
                d,
                Width::from_bytes(w).unwrap_or(Width::W1),
                &opts,
            ))
        }),
        decompress: Box::new(move |p, n, _| {
            Ok(bitlens_codecs::plmc::decode_with_threads(
                p,
                n,
                Some(threads),
            )?)
        }),
    }
}

/// A peer byte compressor, optionally applied to byte-grouped input.
fn peer(
    name: &str,
    grouped: bool,
    compress: fn(&[u8]) -> Result<Vec<u8>>,
    decompress: fn(&[u8], usize) -> Result<Vec<u8>>,
) -> Candidate {
    Candidate {
        name: if grouped {
            format!("{name} (byte-grouped)")
        } else {
            name.to_owned()
        },
        threads: 1,
        compress: Box::new(move |d, w| {
            if grouped && w > 1 {
                let mut g = vec![0u8; d.len()];
                byte_group::split(d, w, Transform::None, &mut g);
                compress(&g)
            } else {
                compress(d)
            }
        }),
        decompress: Box::new(move |p, n, w| {
            let out = decompress(p, n)?;
            if grouped && w > 1 {
                let mut m = vec![0u8; out.len()];
                byte_group::merge(&out, w, Transform::None, &mut m);
                Ok(m)
            } else {
                Ok(out)
            }
        }),
    }
}

fn zstd_at(level: i32) -> fn(&[u8]) -> Result<Vec<u8>> {
    match level {
        1 => |d| Ok(zstd::bulk::compress(d, 1)?),
        3 => |d| Ok(zstd::bulk::compress(d, 3)?),
        _ => |d| Ok(zstd::bulk::compress(d, 19)?),
    }
}

fn zstd_decompress(p: &[u8], n: usize) -> Result<Vec<u8>> {
    Ok(zstd::bulk::decompress(p, n)?)
}

fn lz4_compress(d: &[u8]) -> Result<Vec<u8>> {
    Ok(lz4_flex::block::compress(d))
}

fn lz4_decompress(p: &[u8], n: usize) -> Result<Vec<u8>> {
    Ok(lz4_flex::block::decompress(p, n)?)
}

fn deflate_compress(d: &[u8]) -> Result<Vec<u8>> {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(d)?;
    Ok(e.finish()?)
}

fn deflate_decompress(p: &[u8], n: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    flate2::read::DeflateDecoder::new(p).read_to_end(&mut out)?;
    Ok(out)
}

fn bzip2_compress(d: &[u8]) -> Result<Vec<u8>> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    e.write_all(d)?;
    Ok(e.finish()?)
}

fn bzip2_decompress(p: &[u8], n: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(n);
    bzip2::read::BzDecoder::new(p).read_to_end(&mut out)?;
    Ok(out)
}

/// All candidates whose name contains one of `filter` (all when empty).
fn candidates(filter: &[String]) -> Vec<Candidate> {
    let pool = rayon::current_num_threads();
    let mut all = vec![lmc(1)];
    if pool > 1 {
        all.push(lmc(pool));
    }
    type Peer = (
        &'static str,
        fn(&[u8]) -> Result<Vec<u8>>,
        fn(&[u8], usize) -> Result<Vec<u8>>,
    );
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
    // `zstd-3` selects zstd-3 raw and byte-grouped, not zstd-19.
    all.retain(|c| {
        let base = c.name.split(" (").next().unwrap_or(&c.name);
        filter.is_empty() || filter.iter().any(|f| f == base || f == &c.name)
    });
    all
}

fn measure(c: &Candidate, samples: &[Sample]) -> Result<BenchRow> {
    let (mut packed_total, mut raw_total) = (0u64, 0u64);
    let (mut t_comp, mut t_dec) = (0f64, 0f64);
    for s in samples {
        let t0 = Instant::now();
        let packed = (c.compress)(&s.data, s.width)?;
        let t1 = Instant::now();
        let restored = (c.decompress)(&packed, s.data.len(), s.width)?;
        let t2 = Instant::now();
        ensure!(restored == s.data, "{} did not round-trip a tensor", c.name);
        t_comp += (t1 - t0).as_secs_f64();
        t_dec += (t2 - t1).as_secs_f64();
        packed_total += packed.len() as u64;
        raw_total += s.data.len() as u64;
    }
    Ok(BenchRow {
        codec: c.name.clone(),
        threads: c.threads,
        ratio: packed_total as f64 / raw_total.max(1) as f64,
        compressed_bytes: packed_total,
        compress_mb_s: raw_total as f64 / t_comp.max(1e-9) / 1e6,
        decompress_mb_s: raw_total as f64 / t_dec.max(1e-9) / 1e6,
    })
}

/// Runs the benchmark and prints the table (or JSON) to stdout.
pub fn run(inputs: &[PathBuf], json: bool, filter: &[String]) -> Result<()> {
    let mut samples = Vec::new();
    for input in inputs {
        let c = Checkpoint::open(input)?;
        for shard in &c.shards {
            for t in &shard.header.tensors {
                let (start, end) = shard.header.file_range(t);
                let mut data = vec![0u8; (end - start) as usize];
                bitlens_tensors::ReadAt::read_exact_at(&shard.source, start, &mut data)
                    .with_context(|| format!("{}: tensor `{}`", shard.path.display(), t.name))?;
                if !data.is_empty() {
                    samples.push(Sample {
                        data,
                        width: t.dtype.lane_bytes(),
                    });
                }
            }
        }
    }
    let bytes: u64 = samples.iter().map(|s| s.data.len() as u64).sum();
    let mut report = BenchReport {
        inputs: inputs.to_vec(),
        tensors: samples.len(),
        bytes,
        results: Vec::new(),
    };
    let mut out = std::io::stdout().lock();
    if !json {
        writeln!(out, "{} tensors, {}", samples.len(), format::bytes(bytes))?;
        writeln!(
            out,
            "{:<28} {:>7} {:>8} {:>12} {:>14} {:>14}",
            "codec", "threads", "ratio", "compressed", "compress MB/s", "decompress MB/s"
        )?;
    }
    for c in candidates(filter) {
        let row = measure(&c, &samples)?;
        if !json {
            writeln!(
                out,
                "{:<28} {:>7} {:>8.4} {:>12} {:>14.0} {:>14.0}",
                row.codec,
                row.threads,
                row.ratio,
                format::bytes(row.compressed_bytes),
                row.compress_mb_s,
                row.decompress_mb_s
            )?;
            out.flush()?;
        }
        report.results.push(row);
    }
    if json {
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    }
    Ok(())
}
