//! The lossy lesson's Inshrinkerator figures ([`bitlens_lessons::bins::bins_lesson`]) for one
//! tensor of a safetensors file, as JSON on stdout: what the page's worker computes, natively, so
//! the e2e test (tests/e2e/learn.test.mjs) checks the page's numbers against it.
//!
//! `cargo run --release -p bitlens-lessons --example bins_lesson -- FILE TENSOR MAX_VALUES BETA`
//! measures the tensor's first MAX_VALUES values with the non-uniform quantizer's β = BETA.

#![allow(clippy::unwrap_used)]

use bitlens_inshrink::{values, NonUniform};
use bitlens_lessons::bins::{bins_lesson, Fit};
use bitlens_tensors::Header;

fn fit(f: &Fit) -> String {
    let c: Vec<String> = f
        .centroids
        .iter()
        .map(|c| format!("{:?}", f64::from(*c)))
        .collect();
    format!(
        "{{\"rel_l2\":{:?},\"max_abs\":{:?},\"centroids\":[{}]}}",
        f.rel_l2,
        f.max_abs,
        c.join(",")
    )
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path, name, max, beta] = &args[..] else {
        panic!("usage: bins_lesson FILE TENSOR MAX_VALUES BETA");
    };
    let file = std::fs::read(path).unwrap();
    let need =
        Header::needed_prefix(file[..8].try_into().unwrap(), file.len() as u64).unwrap() as usize;
    let header = Header::parse(&file[..need], file.len() as u64).unwrap();
    let t = header.tensors.iter().find(|t| &t.name == name).unwrap();
    let start = header.data_start() as usize;
    let width = (t.dtype.bits() / 8) as usize;
    let len =
        ((t.data_offsets.1 - t.data_offsets.0) as usize).min(max.parse::<usize>().unwrap() * width);
    let a = start + t.data_offsets.0 as usize;
    let v = values::to_f32(&file[a..a + len], t.dtype).unwrap();
    let q = NonUniform {
        balance: beta.parse().unwrap(),
        ..NonUniform::default()
    };
    let l = bins_lesson(&v, &q);
    let rows: Vec<String> = l
        .rows
        .iter()
        .map(|r| {
            format!(
                "{{\"bins\":{},\"nonuniform\":{},\"uniform\":{}}}",
                r.bins,
                fit(&r.nonuniform),
                fit(&r.uniform)
            )
        })
        .collect();
    let fewest: Vec<String> = l
        .fewest
        .iter()
        .map(|f| {
            format!(
                "{{\"bins\":{},\"error\":{:?},\"nonuniform\":{},\"uniform\":{}}}",
                f.bins,
                f.error,
                f.nonuniform,
                f.uniform.map_or("null".into(), |u| u.to_string())
            )
        })
        .collect();
    println!(
        "{{\"values\":{},\"balance\":{:?},\"rows\":[{}],\"fewest\":[{}]}}",
        l.values,
        l.balance,
        rows.join(","),
        fewest.join(",")
    );
}
