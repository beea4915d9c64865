//! rANS decode speed on the exponent bytes of a bf16 safetensors file, one 64 Ki block at a time:
//! `cargo run --release -p bitlens-codecs --example rans_speed -- FILE`.
#![allow(clippy::unwrap_used)]
use bitlens_codecs::rans;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let file = std::fs::read(path).expect("read");
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let exps: Vec<u8> = file[8 + n..]
        .chunks_exact(2)
        .map(|b| (u16::from_le_bytes([b[0], b[1]]) >> 7) as u8)
        .collect();
    let blocks: Vec<(Vec<u8>, usize)> = exps
        .chunks(65536)
        .map(|c| {
            let mut out = Vec::new();
            rans::encode_block(c, &mut out);
            (out, c.len())
        })
        .collect();
    let mut buf = vec![0u8; 65536];
    let mut best = f64::MAX;
    for _ in 0..10 {
        let t = Instant::now();
        for (b, len) in &blocks {
            rans::decode_block(b, &mut buf[..*len], 0).unwrap();
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{} symbols: {:.2} ns/symbol ({:.0} M symbols/s)",
        exps.len(),
        best * 1e9 / exps.len() as f64,
        exps.len() as f64 / best / 1e6
    );
}
