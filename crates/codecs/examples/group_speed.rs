//! Decode speed of each byte group of a safetensors file's data section on its own (one thread):
//! where LMC's decode time goes.
//!
//! ```text
//! cargo run --release -p bitlens-codecs --example group_speed -- FILE WIDTH [--iters N]
//! ```
#![allow(clippy::unwrap_used)]
use bitlens_codecs::{byte_group, plmc, Options, Transform, Width};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let file = std::fs::read(&args[0]).expect("read file");
    let w: usize = args[1].parse().expect("width");
    let iters: usize = args
        .iter()
        .position(|a| a == "--iters")
        .map_or(20, |i| args[i + 1].parse().unwrap());
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let data = &file[8 + n..];
    let data = &data[..data.len() / w * w];
    let mut g = vec![0u8; data.len()];
    byte_group::split(data, w, Transform::SignRotate, &mut g);
    let e = data.len() / w;
    let block_kib: usize = args
        .iter()
        .position(|a| a == "--block")
        .map_or(64, |i| args[i + 1].parse().unwrap());
    let opts = Options {
        threads: Some(1),
        block_bytes: Some(block_kib << 10),
        ..Options::default()
    };
    for k in 0..w {
        let s = &g[k * e..(k + 1) * e];
        let enc = plmc::encode(s, Width::W1, &opts);
        let mut out = vec![0u8; s.len()];
        let mut best = f64::INFINITY;
        for _ in 0..iters {
            let t = Instant::now();
            plmc::decode_into_with_threads(&enc, &mut out, Some(1)).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
        }
        assert!(out == s);
        let mut best_c = f64::INFINITY;
        let mut buf = Vec::new();
        for _ in 0..iters.div_ceil(4) {
            let t = Instant::now();
            plmc::encode_into(s, Width::W1, &opts, &mut buf);
            best_c = best_c.min(t.elapsed().as_secs_f64());
        }
        println!(
            "group {k}: {:.4} bits/byte, decode {:.2} ns/byte ({:.0} MB/s), encode {:.2} ns/byte",
            enc.len() as f64 * 8.0 / s.len() as f64,
            best * 1e9 / s.len() as f64,
            s.len() as f64 / best / 1e6,
            best_c * 1e9 / s.len() as f64
        );
    }
    let mut out = vec![0u8; data.len()];
    let mut best = f64::INFINITY;
    for _ in 0..iters {
        let t = Instant::now();
        byte_group::merge(&g, w, Transform::SignRotate, &mut out);
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("merge: {:.3} ns/element", best * 1e9 / e as f64);
    let mut best = f64::INFINITY;
    for _ in 0..iters {
        let t = Instant::now();
        byte_group::split(data, w, Transform::SignRotate, &mut g);
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!("split: {:.3} ns/element", best * 1e9 / e as f64);
}
