//! `bitlens bench`: bitlens's codecs beside zstd (levels 1, 3, 19), lz4 (lz4_flex), deflate (flate2)
//! and bzip2, raw and byte-grouped, on the same tensors in one run.
//!
//! Every codec compresses each tensor separately (as the snapshot container does) and decompresses
//! it; lossless rows are checked byte for byte, lossy rows report their error. Times are wall-clock
//! per call, summed over tensors; peers run on one thread, LMC on one thread and on the `--threads`
//! pool. Container codecs (NeuZip, BitSnap quant) are chosen per tensor exactly as
//! `bitlens compress` chooses them: float-only codecs use LMC for other dtypes.

use crate::source::Checkpoint;
use anyhow::{ensure, Context, Result};
use bitlens_codecs::{byte_group, Options, Transform, Width};
use bitlens_snapshot::Codec;
use bitlens_snapshot::{CodecChoice, CodecKind};
use bitlens_stats::format;
use bitlens_tensors::Dtype;
use serde::Serialize;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Instant;

/// One tensor's bytes, dtype and byte-grouping width.
struct Sample {
    data: Vec<u8>,
    dtype: Dtype,
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
    /// Error over finite float values, for lossy codecs (lossless rows are checked byte for byte).
    pub error: Option<LossyError>,
}

/// How far a lossy codec's output is from the original.
#[derive(Serialize, Default, Clone, Copy)]
pub struct LossyError {
    /// Mean squared error.
    pub mse: f64,
    /// Mean relative error over nonzero values.
    pub mean_rel: f64,
    /// Largest relative error.
    pub max_rel: f64,
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

type Compress = Box<dyn Fn(&Sample) -> Result<Vec<u8>>>;
type Decompress = Box<dyn Fn(&[u8], &Sample) -> Result<Vec<u8>>>;

/// A codec under test.
struct Candidate {
    name: String,
    threads: usize,
    compress: Compress,
    decompress: Decompress,
    lossy: bool,
}

fn lmc(threads: usize) -> Candidate {
    let opts = Options {
        threads: Some(threads),
        ..Options::default()
    };
    Candidate {
        name: "lmc".into(),
        threads,
        compress: Box::new(move |s| {
            let w = Width::from_bytes(s.width).unwrap_or(Width::W1);
            Ok(bitlens_codecs::encode(&s.data, w, &opts))
        }),
        decompress: Box::new(move |p, s| {
            Ok(bitlens_codecs::plmc::decode_with_threads(
                p,
                s.data.len(),
                Some(threads),
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
        compress: Box::new(move |s| {
            let mut out = Vec::new();
            codec(s).encode_frame(&s.data, None, &mut out);
            Ok(out)
        }),
        decompress: Box::new(move |p, s| Ok(codec(s).decode_frame(p, s.data.len(), None)?)),
        lossy,
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
        compress: Box::new(move |s| {
            if grouped && s.width > 1 {
                let mut g = vec![0u8; s.data.len()];
                byte_group::split(&s.data, s.width, Transform::None, &mut g);
                compress(&g)
            } else {
                compress(&s.data)
            }
        }),
        decompress: Box::new(move |p, s| {
            let out = decompress(p, s.data.len())?;
            if grouped && s.width > 1 {
                let mut m = vec![0u8; out.len()];
                byte_group::merge(&out, s.width, Transform::None, &mut m);
                Ok(m)
            } else {
                Ok(out)
            }
        }),
        lossy: false,
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
    all.retain(|c| {
        let base = c.name.split(" (").next().unwrap_or(&c.name);
        filter.is_empty() || filter.iter().any(|f| f == base || f == &c.name)
    });
    all
}

/// Decodes float values for the error report (`None` for non-float dtypes).
fn float_values(dtype: Dtype, bytes: &[u8]) -> Option<Vec<f64>> {
    let f = bitlens_snapshot::choice::float_format(dtype)?;
    Some(bytes.chunks_exact(f.width()).map(|b| f.value(b)).collect())
}

/// Running error sums of a lossy row.
#[derive(Default)]
struct ErrorSums {
    n: u64,
    sq: f64,
    rel: f64,
    rel_n: u64,
    max_rel: f64,
}

impl ErrorSums {
    fn add(&mut self, dtype: Dtype, original: &[u8], restored: &[u8]) {
        let (Some(a), Some(b)) = (float_values(dtype, original), float_values(dtype, restored))
        else {
            return;
        };
        for (x, y) in a.iter().zip(&b) {
            if x.is_finite() {
                let e = (y - x).abs();
                self.n += 1;
                self.sq += e * e;
                if *x != 0.0 {
                    self.rel += e / x.abs();
                    self.rel_n += 1;
                    self.max_rel = self.max_rel.max(e / x.abs());
                }
            }
        }
    }

    fn report(&self) -> LossyError {
        LossyError {
            mse: self.sq / self.n.max(1) as f64,
            mean_rel: self.rel / self.rel_n.max(1) as f64,
            max_rel: self.max_rel,
        }
    }
}

fn measure(c: &Candidate, samples: &[Sample]) -> Result<BenchRow> {
    let (mut packed_total, mut raw_total) = (0u64, 0u64);
    let (mut t_comp, mut t_dec) = (0f64, 0f64);
    let mut errors = ErrorSums::default();
    for s in samples {
        let t0 = Instant::now();
        let packed = (c.compress)(s)?;
        let t1 = Instant::now();
        let restored = (c.decompress)(&packed, s)?;
        let t2 = Instant::now();
        if c.lossy {
            ensure!(
                restored.len() == s.data.len(),
                "{} changed a tensor's length",
                c.name
            );
            errors.add(s.dtype, &s.data, &restored);
        } else {
            ensure!(restored == s.data, "{} did not round-trip a tensor", c.name);
        }
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
        error: c.lossy.then(|| errors.report()),
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
                        dtype: t.dtype,
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
            "{:<24} {:>7} {:>8} {:>10} {:>13} {:>15}  error (lossy)",
            "codec", "threads", "ratio", "compressed", "compress MB/s", "decompress MB/s",
        )?;
    }
    for c in candidates(filter) {
        let row = measure(&c, &samples)?;
        if !json {
            let error = row.error.map_or(String::new(), |e| {
                format!(
                    "MSE {:.2e}, mean rel {:.2e}, max rel {:.2e}",
                    e.mse, e.mean_rel, e.max_rel
                )
            });
            writeln!(
                out,
                "{:<24} {:>7} {:>8.4} {:>10} {:>13.0} {:>15.0}  {}",
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
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    }
    Ok(())
}
