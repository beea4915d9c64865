//! rANS encode and decode speed on the exponent bytes of a bf16 safetensors file, one 64 Ki block
//! at a time, best of 10 passes:
//! `cargo run --release -p bitlens-codecs --example rans_speed -- FILE`.
#![allow(clippy::unwrap_used)]
use bitlens_codecs::rans;
use std::time::Instant;

/// The fastest of 10 runs of `pass`, in seconds.
fn best_of_10(mut pass: impl FnMut()) -> f64 {
    (0..10)
        .map(|_| {
            let t = Instant::now();
            pass();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let file = std::fs::read(path).expect("read");
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    let exps: Vec<u8> = file[8 + n..]
        .chunks_exact(2)
        .map(|b| (u16::from_le_bytes([b[0], b[1]]) >> 7) as u8)
        .collect();
    let mut blocks: Vec<(Vec<u8>, usize)> = Vec::new();
    let encode = best_of_10(|| {
        blocks = exps
            .chunks(65536)
            .map(|c| {
                let mut out = Vec::new();
                rans::encode_block(c, &mut out);
                (out, c.len())
            })
            .collect();
    });
    let mut buf = vec![0u8; 65536];
    let decode = best_of_10(|| {
        for (b, len) in &blocks {
            rans::decode_block(b, &mut buf[..*len], 0).unwrap();
        }
    });
    let per = |s: f64| (s * 1e9 / exps.len() as f64, exps.len() as f64 / s / 1e6);
    let ((ens, ems), (dns, dms)) = (per(encode), per(decode));
    let coded: usize = blocks.iter().map(|(b, _)| b.len()).sum();
    println!(
        "{} symbols, coded to {coded} bytes: encode {ens:.2} ns/symbol ({ems:.0} M/s), decode {dns:.2} ns/symbol ({dms:.0} M/s)",
        exps.len(),
    );
}
