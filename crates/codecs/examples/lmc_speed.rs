//! Ratio and speed of LMC/PLMC on a real safetensors file.
//!
//! ```text
//! cargo run --release -p bitlens-codecs --example lmc_speed -- FILE [--block KIB] [--limit BITS]
//!     [--segment MIB] [--transform none|rotate] [--iters N] [--quick]
//! ```
//! Prints, for the data section compressed as one stream of the file's element width:
//! ratio (compressed / original), the 64 KiB-block order-0 entropy bound (with and without the
//! sign rotation), compress / decompress MB/s with 1 and 2 threads (best of N runs), the ratio
//! when every tensor is compressed on its own, and the sparse-delta comparison against zstd -3.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use bitlens_codecs::{byte_group, huffman, plmc, Options, Params, Transform, Width};
use bitlens_stats::entropy::cost_bits;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The order-0 entropy bound of LMC §4.1 for `data` under `params`: the sum, over groups and over
/// blocks of each group, of the block's empirical byte entropy, in bytes (the trailing partial
/// element counted at 8 bits per byte). No block-local order-0 coder of the same grouping can do
/// better than this, table costs aside.
fn entropy_bound_bytes(data: &[u8], params: &Params) -> f64 {
    let w = params.width.bytes();
    let mut g = vec![0u8; data.len()];
    byte_group::split(data, w, params.transform, &mut g);
    let e = byte_group::group_len(data.len(), w);
    let bits: f64 = (0..w)
        .flat_map(|k| g[k * e..(k + 1) * e].chunks(params.block_bytes()))
        .map(|block| cost_bits(&huffman::histogram(block)))
        .sum();
    bits / 8.0 + (data.len() - w * e) as f64
}

fn dtype_size(d: &str) -> Option<usize> {
    Some(match d {
        "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2" => 1,
        "BF16" | "F16" | "I16" | "U16" => 2,
        "F32" | "I32" | "U32" => 4,
        "F64" | "I64" | "U64" => 8,
        _ => return None,
    })
}

/// CPU time of the calling thread in seconds, immune to other processes' scheduling.
fn thread_cpu() -> Option<f64> {
    Some(
        cpu_time::ThreadTime::try_now()
            .ok()?
            .as_duration()
            .as_secs_f64(),
    )
}

/// Best wall time of `iters` runs (and, single-threaded, the best CPU time).
fn best_of<T>(iters: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::INFINITY;
    let mut last = None;
    for _ in 0..iters {
        let t = Instant::now();
        let r = f();
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(r);
    }
    (best, last.unwrap())
}

fn best_cpu(iters: usize, mut f: impl FnMut()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..iters {
        let (Some(a), _, Some(b)) = (thread_cpu(), f(), thread_cpu()) else {
            return f64::NAN;
        };
        best = best.min(b - a);
    }
    best
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .expect("usage: lmc_speed FILE [options]")
        .clone();
    let opt = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let quick = args.iter().any(|a| a == "--quick");
    let iters: usize = opt("--iters").map_or(if quick { 1 } else { 5 }, |v| v.parse().unwrap());
    let mut opts = Options::default();
    if let Some(b) = opt("--block") {
        opts.block_bytes = Some(b.parse::<usize>().unwrap() << 10);
    }
    if let Some(l) = opt("--limit") {
        opts.code_limit = l.parse().unwrap();
    }
    if let Some(s) = opt("--segment") {
        opts.segment_bytes = s.parse::<usize>().unwrap() << 20;
    }
    if opt("--transform").as_deref() == Some("none") {
        opts.transform = Transform::None;
    }

    let file = std::fs::read(&path).expect("read file");
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&file[8..8 + n]).expect("header json");
    let data = &file[8 + n..];
    // Tensors (name, width, range) and the width covering most bytes.
    let mut tensors: Vec<(usize, usize, usize)> = Vec::new();
    for (name, v) in header.as_object().unwrap() {
        if name == "__metadata__" {
            continue;
        }
        let w = dtype_size(v["dtype"].as_str().unwrap()).unwrap_or(1);
        let o = v["data_offsets"].as_array().unwrap();
        tensors.push((
            w,
            o[0].as_u64().unwrap() as usize,
            o[1].as_u64().unwrap() as usize,
        ));
    }
    tensors.sort_by_key(|t| t.1);
    let mut by_width = [0usize; 9];
    for t in &tensors {
        by_width[t.0] += t.2 - t.1;
    }
    let w = (1..9).max_by_key(|&i| by_width[i]).unwrap();
    let width = Width::from_bytes(w).unwrap();
    let mb = data.len() as f64 / 1e6;
    println!(
        "file {path}: data section {:.1} MB, {} tensors, stream width {w}, block {} KiB, code limit {}, transform {:?}",
        mb,
        tensors.len(),
        opts.block_bytes
            .map_or(1usize << bitlens_codecs::lmc::default_block_log2(width), |b| b)
            >> 10,
        opts.code_limit,
        opts.transform
    );

    // `--loop compress|decompress`: just run that, single-threaded, for a profiler.
    if let Some(what) = opt("--loop") {
        let o = Options {
            threads: Some(1),
            ..opts
        };
        let enc = plmc::encode(data, width, &o);
        let mut out = vec![0u8; data.len()];
        let mut buf = Vec::new();
        let t = Instant::now();
        let cpu = best_cpu(iters, || {
            if what == "compress" {
                plmc::encode_into(data, width, &o, &mut buf);
            } else {
                plmc::decode_into_with_threads(&enc, &mut out, Some(1)).unwrap();
            }
        });
        println!(
            "{what}: {:.1} MB/s, best run {:.1} MB/s of thread CPU time",
            mb * iters as f64 / t.elapsed().as_secs_f64(),
            mb / cpu
        );
        return;
    }

    // Ratio and entropy bounds.
    let packed = plmc::encode(
        data,
        width,
        &Options {
            threads: Some(1),
            ..opts
        },
    );
    let ratio = packed.len() as f64 / data.len() as f64;
    let info = plmc::read_header(&packed).unwrap();
    let speed_only = args.iter().any(|a| a == "--speed-only");
    if !speed_only {
        let bound = entropy_bound_bytes(data, &info.params) / data.len() as f64;
        let p64 = Params {
            block_log2: 16,
            ..info.params
        };
        let bound64 = entropy_bound_bytes(data, &p64) / data.len() as f64;
        let bound64_plain = entropy_bound_bytes(
            data,
            &Params {
                transform: Transform::None,
                ..p64
            },
        ) / data.len() as f64;
        println!(
            "ratio {ratio:.5}  | order-0 bound at this block size {bound:.5} (ratio/bound = {:.4})",
            ratio / bound
        );
        println!(
        "      64 KiB-block order-0 bound: {bound64:.5} with this transform, {bound64_plain:.5} plain byte grouping (ratio/plain bound = {:.4})",
        ratio / bound64_plain
    );
        // Per tensor.
        let mut per = 0usize;
        for &(tw, a, b) in &tensors {
            per += plmc::encode(
                &data[a..b],
                Width::from_bytes(tw).unwrap(),
                &Options {
                    threads: Some(1),
                    ..opts
                },
            )
            .len();
        }
        println!(
            "per-tensor streams: ratio {:.5} (sum of {} PLMC streams incl. headers)",
            per as f64 / data.len() as f64,
            tensors.len()
        );

        if args.iter().any(|a| a == "--groups") {
            // Per-group breakdown: each group stream coded alone as width 1.
            let mut g = vec![0u8; data.len()];
            byte_group::split(data, w, info.params.transform, &mut g);
            let e = data.len() / w;
            for k in 0..w {
                let s = &g[k * e..(k + 1) * e];
                let p1 = Params {
                    width: Width::W1,
                    transform: Transform::None,
                    ..info.params
                };
                let c = plmc::encode(
                    s,
                    Width::W1,
                    &Options {
                        threads: Some(1),
                        ..opts
                    },
                )
                .len();
                let b = entropy_bound_bytes(s, &p1);
                println!(
                    "  group {k}: {:.4} bits/byte, bound {:.4} bits/byte",
                    c as f64 * 8.0 / e as f64,
                    b * 8.0 / e as f64
                );
            }
        }
        if args.iter().any(|a| a == "--ratio-only") {
            return;
        }
    }
    // Speed. "compress" reuses the output buffer (encode_into), as decompress writes into a
    // caller buffer (decode_into); "fresh" is encode() returning a new Vec each time (includes
    // the kernel's first-touch page faults on the output).
    let mut t1 = (0.0, 0.0);
    for threads in [1usize, 2] {
        // Multi-threaded runs use one persistent pool (as an application would), not a pool per
        // call (`Options::threads = Some(n)` builds one per call).
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let o = Options {
            threads: if threads == 1 { Some(1) } else { None },
            ..opts
        };
        let mut buf = Vec::new();
        let (tf, _) = pool.install(|| best_of(iters, || plmc::encode(data, width, &o).len()));
        let (tc, _) =
            pool.install(|| best_of(iters, || plmc::encode_into(data, width, &o, &mut buf)));
        assert_eq!(buf, packed, "output differs with {threads} threads");
        let mut out = vec![0u8; data.len()];
        let (td, _) = pool.install(|| {
            best_of(iters, || {
                plmc::decode_into_with_threads(&buf, &mut out, o.threads).unwrap()
            })
        });
        assert!(out == data, "round trip failed");
        if threads == 1 {
            t1 = (tc, td);
            let cc = best_cpu(iters, || plmc::encode_into(data, width, &o, &mut buf));
            let cd = best_cpu(iters, || {
                plmc::decode_into_with_threads(&buf, &mut out, Some(1)).unwrap()
            });
            println!(
                "threads 1 by thread CPU time: compress {:7.1} MB/s   decompress {:7.1} MB/s",
                mb / cc,
                mb / cd
            );
        }
        println!(
            "threads {threads}: compress {:7.1} MB/s (fresh Vec {:7.1})   decompress {:7.1} MB/s{}",
            mb / tc,
            mb / tf,
            mb / td,
            if threads > 1 {
                format!("   speed-up {:.2}x / {:.2}x", t1.0 / tc, t1.1 / td)
            } else {
                String::new()
            }
        );
    }

    if speed_only {
        return;
    }
    // Sparse delta: 5 % of elements changed.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for (label, random_value) in [
        ("small change (±1..8 ulp)", false),
        ("random new value", true),
    ] {
        let mut changed = data.to_vec();
        let mut count = 0;
        for e in changed.chunks_exact_mut(w) {
            if rng.next() % 100 < 5 {
                count += 1;
                let mut v = [0u8; 8];
                v[..w].copy_from_slice(e);
                let x = u64::from_le_bytes(v);
                let r = rng.next();
                let y = if random_value {
                    r
                } else {
                    let d = 1 + (r % 8);
                    if r & 0x100 != 0 {
                        x.wrapping_add(d)
                    } else {
                        x.wrapping_sub(d)
                    }
                };
                e.copy_from_slice(&y.to_le_bytes()[..w]);
            }
        }
        let xor: Vec<u8> = data.iter().zip(&changed).map(|(a, b)| a ^ b).collect();
        let t = Instant::now();
        let lmc_len = plmc::encode(
            &xor,
            width,
            &Options {
                threads: Some(1),
                ..opts
            },
        )
        .len();
        let t_lmc = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let z = zstd::bulk::compress(&xor, 3).unwrap().len();
        let t_z = t.elapsed().as_secs_f64();
        let back =
            plmc::decode(&plmc::encode(&xor, width, &Options::default()), xor.len()).unwrap();
        assert!(back == xor);
        println!(
            "delta 5% ({label}, {count} elements): LMC {lmc_len} B (ratio {:.5}, {:.0} MB/s)  zstd -3 {z} B (ratio {:.5}, {:.0} MB/s)  LMC/zstd = {:.3}",
            lmc_len as f64 / xor.len() as f64,
            mb / t_lmc,
            z as f64 / xor.len() as f64,
            mb / t_z,
            lmc_len as f64 / z as f64
        );
    }
}
