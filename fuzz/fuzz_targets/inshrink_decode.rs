//! Inshrink tensor streams: arbitrary bytes decode to a typed error or a tensor of the declared
//! length (never a panic, hang or oversized allocation), as full streams and as deltas against a
//! base; and arbitrary values encode and decode back to the same levels.
#![no_main]

use bitlens_inshrink::levels::{quantize_tensor, ProtectStorage};
use bitlens_inshrink::partition::Thresholds;
use bitlens_inshrink::stream::{decode, encode, read_header, Meta};
use bitlens_inshrink::{Configuration, LayerKind, Metric, NonUniform, Setting};
use bitlens_tensors::Dtype;
use bitlens_inshrink::Quantized;
use libfuzzer_sys::fuzz_target;

/// Equal levels, codebook and protected bit patterns (NaN protected values compare by bits).
fn same(a: &Quantized, b: &Quantized) -> bool {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    a.levels == b.levels && bits(&a.codebook) == bits(&b.codebook) && bits(&a.protected) == bits(&b.protected)
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    // The base: the input's own bytes as f32 values, quantized to a few bins.
    let values: Vec<f32> = rest.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let config = Configuration { bins: 1 + selector % 16, prune: 0.0, metric: Metric::Magnitude, protect: 0.0 };
    let t = Thresholds { prune: None, protect_magnitude: Some(1e3), protect_sensitivity: None };
    let storage = if selector & 0x80 != 0 { ProtectStorage::Bf16 } else { ProtectStorage::Original };
    let base = quantize_tensor(&values, Dtype::F32, None, Setting::Quantized(config), &t, &NonUniform::default(), storage);
    // Round trip, full and delta.
    let meta = Meta { layer: LayerKind::Linear, error: 0.0 };
    let full = encode(&base, &meta, None, false).unwrap();
    assert!(same(&decode(&full, values.len() as u64, None).unwrap().tensor, &base));
    let delta = encode(&base, &meta, Some(&base), selector & 1 != 0).unwrap();
    assert!(same(&decode(&delta, values.len() as u64, Some(&base)).unwrap().tensor, &base));
    // Garbage, with the element count the header declares (capped) and the base's.
    let n = read_header(rest).map_or(0, |(h, _)| h.elements.min(1 << 20));
    for (expected, b) in [(n, None), (values.len() as u64, Some(&base))] {
        if let Ok(d) = decode(rest, expected, b) {
            assert_eq!(d.tensor.levels.len() as u64, expected);
        }
    }
});
