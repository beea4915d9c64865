//! Inshrinkerator on real safetensors files: searches a plan under the per-tensor relative L2
//! budget, encodes every float tensor, decodes it again (checking the round trip), and prints per
//! tensor the setting chosen, the ratio, the error and the compression speed on one core (thread
//! CPU time: quantize under the chosen setting, then encode). Further
//! files are treated as the next checkpoints of a chain: delta-neighbourhood search from the
//! previous plan, and each tensor also encoded as a delta against the previous checkpoint's
//! levels, with and without the rearrangement by source bucket.
//!
//!     cargo run --release -p bitlens-inshrink --example ratio -- [--max-error E] [--balance B] FILE [NEXT ...]
//!
//! `--max-error` defaults to 0.05, `--balance` (the quantizer's frequency/magnitude mix β) to the
//! quantizer's default.
#![allow(clippy::unwrap_used)]

use bitlens_inshrink::search::{search, Options};
use bitlens_inshrink::stream::{decode, encode, Meta};
use bitlens_inshrink::{values, L2Budget, NonUniform, Plan, Prepared, Quantized, TensorInput};
use bitlens_tensors::{Dtype, Header};
use std::time::Instant;

/// CPU time of the calling thread in seconds (falls back to wall time where unavailable).
fn thread_cpu(wall: Instant) -> f64 {
    cpu_time::ThreadTime::try_now().map_or_else(
        |_| wall.elapsed().as_secs_f64(),
        |t| t.as_duration().as_secs_f64(),
    )
}

/// The float tensors of a safetensors file as `(name, dtype, f32 values)`.
fn read(path: &str) -> Vec<(String, Dtype, Vec<f32>)> {
    let file = std::fs::read(path).unwrap();
    let need =
        Header::needed_prefix(file[..8].try_into().unwrap(), file.len() as u64).unwrap() as usize;
    let header = Header::parse(&file[..need], file.len() as u64).unwrap();
    let start = header.data_start() as usize;
    header
        .tensors
        .iter()
        .filter_map(|t| {
            let (a, b) = (
                start + t.data_offsets.0 as usize,
                start + t.data_offsets.1 as usize,
            );
            values::to_f32(&file[a..b], t.dtype)
                .ok()
                .map(|v| (t.name.clone(), t.dtype, v))
        })
        .collect()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut budget, mut balance, mut files) = (0.05, NonUniform::DEFAULT_BALANCE, Vec::new());
    while let Some(a) = args.next() {
        match a.as_str() {
            "--max-error" => budget = args.next().unwrap().parse().unwrap(),
            "--balance" => balance = args.next().unwrap().parse().unwrap(),
            _ => files.push(a),
        }
    }
    assert!(
        !files.is_empty(),
        "usage: ratio [--max-error E] [--balance B] FILE [NEXT ...]"
    );
    let options = Options {
        quantizer: NonUniform {
            balance,
            ..NonUniform::default()
        },
        ..Options::default()
    };
    let mut previous: Option<(Plan, Vec<Quantized>)> = None;
    for path in &files {
        let tensors = read(path);
        let inputs = tensors
            .iter()
            .map(|(name, dtype, v)| TensorInput {
                name,
                dtype: *dtype,
                values: v,
                second_moment: None,
            })
            .collect();
        let t0 = Instant::now();
        let c0 = thread_cpu(t0);
        let prep = Prepared::new(inputs, options).unwrap();
        let out = search(
            &prep,
            &mut L2Budget { max_error: budget },
            previous.as_ref().map(|p| &p.0),
        )
        .unwrap();
        let search_s = thread_cpu(t0) - c0;
        println!("== {path}\nquality: {}, β = {balance}", out.report.quality);
        for g in &out.report.groups {
            println!(
                "group {:9} {:?}: {} ({} trials, largest error {:.4})",
                g.group.name(),
                g.mode,
                g.setting,
                g.trials,
                g.max_error
            );
        }
        println!(
            "{:<55} {:>10} {:>48} {:>7} {:>7} {:>8}",
            "tensor", "kind", "setting", "ratio", "error", "MB/s"
        );
        let (mut orig, mut packed, mut secs) = (0u64, 0u64, 0f64);
        let mut delta = [0u64; 2];
        for (i, t) in out.report.tensors.iter().enumerate() {
            // Compression of one tensor on one core: quantize under the chosen setting, encode.
            let t1 = thread_cpu(t0);
            let q = prep.quantize(i, t.setting);
            let meta = Meta {
                layer: t.kind,
                error: t.error as f32,
            };
            let bytes = encode(&q, &meta, None, false).unwrap();
            let dt = thread_cpu(t0) - t1;
            let n = tensors[i].2.len() as u64;
            assert_eq!(decode(&bytes, n, None).unwrap().tensor, out.quantized[i]);
            if let Some((_, prev)) = &previous {
                for (j, rearranged) in [false, true].into_iter().enumerate() {
                    let d = encode(&q, &meta, Some(&prev[i]), rearranged).unwrap();
                    assert_eq!(decode(&d, n, Some(&prev[i])).unwrap().tensor, q);
                    delta[j] += d.len() as u64;
                }
            }
            orig += t.original_bytes;
            packed += bytes.len() as u64;
            secs += dt;
            println!(
                "{:<55} {:>10} {:>48} {:>7.2} {:>7.4} {:>8.1}",
                t.name,
                t.kind.name(),
                t.setting.to_string(),
                t.original_bytes as f64 / bytes.len() as f64,
                t.error,
                t.original_bytes as f64 / dt / 1e6
            );
        }
        println!(
            "total: {:.2} MB -> {:.3} MB, ratio {:.2}; compress {:.1} MB/s on one core; search {:.1} s CPU",
            orig as f64 / 1e6,
            packed as f64 / 1e6,
            orig as f64 / packed as f64,
            orig as f64 / secs / 1e6,
            search_s
        );
        if previous.is_some() {
            println!(
                "delta against the previous checkpoint: ratio {:.2} plain, {:.2} rearranged by source bucket",
                orig as f64 / delta[0] as f64,
                orig as f64 / delta[1] as f64
            );
        }
        previous = Some((out.plan, out.quantized));
    }
}
