//! NeuZip speed on a safetensors file's data section (single thread):
//! `cargo run --release -p bitlens-codecs --example neuzip_speed -- FILE [bf16|f16|f32] [--lossless]`.
#![allow(clippy::unwrap_used)]
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::neuzip::{self, Settings};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let file = std::fs::read(&args[1]).expect("read file");
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let format = match args.get(2).map(String::as_str) {
        Some("f16") => FloatFormat::F16,
        Some("f32") => FloatFormat::F32,
        _ => FloatFormat::Bf16,
    };
    let data = &file[8 + n..];
    let data = &data[..data.len() / 4 * 4];
    let mut all = vec![Settings::lossless(format)];
    if !args.iter().any(|a| a == "--lossless") {
        all.push(Settings::lossy(format, 3, 512).expect("valid lossy settings"));
    }
    for s in all {
        let t = Instant::now();
        let packed = neuzip::encode(data, &s);
        let enc = t.elapsed().as_secs_f64();
        let mut best = f64::MAX;
        let mut fresh = f64::MAX;
        let mut out = vec![0u8; data.len()];
        for _ in 0..5 {
            let t = Instant::now();
            neuzip::decode_into(&packed, &mut out).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let v = neuzip::decode(&packed, data.len()).unwrap();
            fresh = fresh.min(t.elapsed().as_secs_f64());
            std::hint::black_box(v);
        }
        assert!(s.is_lossy() || out == data);
        println!(
            "k={:2} ratio {:.4}  encode {:.0} MB/s  decode {:.0} MB/s (into a reused buffer; {:.0} MB/s into a fresh Vec)",
            s.mantissa_bits(),
            packed.len() as f64 / data.len() as f64,
            data.len() as f64 / enc / 1e6,
            data.len() as f64 / best / 1e6,
            data.len() as f64 / fresh / 1e6
        );
    }
}
