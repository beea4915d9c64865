//! Inshrinkerator on a real safetensors file: searches a plan under the per-tensor relative L2
//! budget, encodes every float tensor, decodes it again (checking the round trip), and prints per
//! tensor the setting chosen, the ratio, the error and the compression speed on one core.
//!
//!     cargo run --release -p bitlens-inshrink --example ratio -- FILE [MAX_ERROR] [BALANCE]
//!
//! MAX_ERROR defaults to 0.05, BALANCE (the quantizer's frequency/magnitude mix β) to the
//! quantizer's default.
#![allow(clippy::unwrap_used)]

use bitlens_inshrink::search::{search, Options};
use bitlens_inshrink::stream::{decode, encode, Meta};
use bitlens_inshrink::{values, L2Budget, NonUniform, Prepared, TensorInput};
use bitlens_tensors::Header;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args
        .first()
        .expect("usage: ratio FILE [MAX_ERROR] [BALANCE]");
    let budget: f64 = args.get(1).map_or(0.05, |s| s.parse().unwrap());
    let balance: f64 = args
        .get(2)
        .map_or(NonUniform::DEFAULT_BALANCE, |s| s.parse().unwrap());
    let file = std::fs::read(path).unwrap();
    let first8: [u8; 8] = file[..8].try_into().unwrap();
    let need = Header::needed_prefix(first8, file.len() as u64).unwrap() as usize;
    let header = Header::parse(&file[..need], file.len() as u64).unwrap();
    let start = header.data_start() as usize;
    let mut names = Vec::new();
    let mut vals = Vec::new();
    for t in &header.tensors {
        let (a, b) = (
            start + t.data_offsets.0 as usize,
            start + t.data_offsets.1 as usize,
        );
        if let Ok(v) = values::to_f32(&file[a..b], t.dtype) {
            names.push((t.name.clone(), t.dtype));
            vals.push(v);
        }
    }
    let inputs = names
        .iter()
        .zip(&vals)
        .map(|((name, dtype), v)| TensorInput {
            name,
            dtype: *dtype,
            values: v,
            second_moment: None,
        })
        .collect();
    let options = Options {
        quantizer: NonUniform {
            balance,
            ..NonUniform::default()
        },
        ..Options::default()
    };
    let t0 = Instant::now();
    let prep = Prepared::new(inputs, options).unwrap();
    let out = search(&prep, &mut L2Budget { max_error: budget }, None).unwrap();
    let search_s = t0.elapsed().as_secs_f64();
    println!("quality: {}, β = {balance}", out.report.quality);
    for g in &out.report.groups {
        println!(
            "group {:9} {:?}: {} ({} trials, worst error {:.4})",
            g.group.name(),
            g.mode,
            g.setting,
            g.trials,
            g.score
        );
    }
    println!(
        "{:<55} {:>10} {:>48} {:>7} {:>7} {:>8}",
        "tensor", "kind", "setting", "ratio", "error", "MB/s"
    );
    let (mut orig, mut packed, mut secs) = (0u64, 0u64, 0f64);
    for (i, t) in out.report.tensors.iter().enumerate() {
        // Compression of one tensor on one core: quantize under the chosen setting, then encode.
        let t1 = Instant::now();
        let q = prep.quantize(i, t.setting);
        let bytes = encode(
            &q,
            &Meta {
                layer: t.kind,
                error: t.error as f32,
            },
            None,
            false,
        )
        .unwrap();
        let dt = t1.elapsed().as_secs_f64();
        let d = decode(&bytes, vals[i].len() as u64, None).unwrap();
        assert_eq!(d.tensor, out.quantized[i]);
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
        "total: {:.1} MB -> {:.2} MB, ratio {:.2}; compress {:.1} MB/s on one core; search {:.1} s",
        orig as f64 / 1e6,
        packed as f64 / 1e6,
        orig as f64 / packed as f64,
        orig as f64 / secs / 1e6,
        search_s
    );
}
