//! The wasm-bindgen API run as WebAssembly (in node, by `wasm-bindgen-test-runner`): header
//! probing and parsing, statistics and flips fed in odd-sized windows, and the typed errors, all
//! checked against the core crates called directly in the same wasm build.
#![cfg(target_arch = "wasm32")]
#![allow(clippy::unwrap_used)]

use bitlens_stats::{Accumulator, FlipAccumulator};
use bitlens_tensors::Dtype;
use bitlens_wasm::{header_prefix_len, parse_header, FlipsAccumulator, StatsAccumulator};
use wasm_bindgen_test::wasm_bindgen_test;

/// A safetensors file with one BF16 tensor `w` of `n` elements.
fn file(n: usize) -> (Vec<u8>, Vec<u8>) {
    let json = format!(
        r#"{{"w":{{"dtype":"BF16","shape":[{n}],"data_offsets":[0,{}]}}}}"#,
        2 * n
    );
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    let data: Vec<u8> = (0..2 * n as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    out.extend_from_slice(&data);
    (out, data)
}

#[wasm_bindgen_test]
fn header_is_read_in_two_steps() {
    let (f, _) = file(100);
    let needed = header_prefix_len(&f[..8], f.len() as f64).unwrap();
    let json = parse_header(&f[..needed as usize], f.len() as f64).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["tensors"][0]["name"], "w");
    assert_eq!(v["data_start"].as_f64().unwrap(), needed);
    assert_eq!(v["file_size"].as_u64().unwrap(), f.len() as u64);
}

#[wasm_bindgen_test]
fn bad_input_is_an_error_not_a_panic() {
    let (f, _) = file(100);
    assert!(header_prefix_len(&[0xff; 8], 100.0).is_err());
    assert!(header_prefix_len(&f[..4], f.len() as f64).is_err());
    assert!(parse_header(&f[..20], f.len() as f64).is_err());
    assert!(parse_header(&f, (f.len() - 1) as f64).is_err());
    assert!(parse_header(&f, -1.0).is_err());
    assert!(parse_header(&f, 0.5).is_err());
    assert!(StatsAccumulator::new("BF17", 10.0).is_err());
    let mut acc = StatsAccumulator::new("BF16", 4.0).unwrap();
    assert!(acc.update(&[0; 6]).is_err());
    assert!(acc.finish().is_err());
    assert!(acc.finish().is_err());
}

#[wasm_bindgen_test]
fn stats_match_the_core_crate_for_any_windows() {
    let (_, data) = file(200_000);
    let mut direct = Accumulator::new(Dtype::BF16, data.len() as u64);
    direct.update(&data).unwrap();
    let expected = serde_json::to_string(&direct.finish().unwrap()).unwrap();
    let mut acc = StatsAccumulator::new("BF16", data.len() as f64).unwrap();
    for w in data.chunks(77_777) {
        acc.update(w).unwrap();
    }
    assert_eq!(acc.remaining_bytes(), 0.0);
    assert_eq!(acc.finish().unwrap(), expected);
}

#[wasm_bindgen_test]
fn flips_match_the_core_crate() {
    let (_, a) = file(50_000);
    let b: Vec<u8> = a
        .iter()
        .enumerate()
        .map(|(i, &x)| if i % 10 == 0 { x ^ 1 } else { x })
        .collect();
    let mut direct = FlipAccumulator::new(Dtype::BF16, a.len() as u64);
    direct.update(&a, &b).unwrap();
    let expected = serde_json::to_string(&direct.finish().unwrap()).unwrap();
    let mut acc = FlipsAccumulator::new("BF16", a.len() as f64).unwrap();
    for (wa, wb) in a.chunks(12_345).zip(b.chunks(12_345)) {
        acc.update(wa, wb).unwrap();
    }
    let json = acc.finish().unwrap();
    assert_eq!(json, expected);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["changed_lanes"].as_u64().unwrap(), 10_000);
    assert!(acc.update(&a[..2], &b[..4]).is_err());
}

#[wasm_bindgen_test]
fn memory_size_is_reported() {
    assert!(bitlens_wasm::memory_bytes() >= 65_536.0);
}
