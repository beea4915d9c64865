//! BitSnap: exact delta round trips at every change rate, the 93.75 % break-even, cluster
//! quantization's ratio and error against naive global uint8, and garbage input.
// Helpers outside the #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use bitlens_codecs::bitsnap::Clusters;
use bitlens_codecs::bitsnap::{self, decode_delta, decode_quant, encode_delta, encode_quant};
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::Width;
use bitlens_test_support::{floats, rng};
use proptest::prelude::*;

/// `base` with `per_mille` ‰ of its `width`-byte elements changed.
fn changed(base: &[u8], width: usize, per_mille: u64, seed: u64) -> Vec<u8> {
    let r = rng::bytes(seed, base.len() / width + 1);
    let mut out = base.to_vec();
    for (i, e) in out.chunks_exact_mut(width).enumerate() {
        if u64::from(r[i]) * 1000 / 256 < per_mille || (per_mille == 1000) {
            e[0] ^= 1 | r[(i + 1) % r.len()];
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn deltas_round_trip(width in prop::sample::select(vec![1usize, 2, 4, 8]), n in 0usize..3000, per_mille in 0u64..=1000, coded in any::<bool>(), tail in 0usize..8, seed in any::<u64>()) {
        let mut base = rng::bytes(seed, n * width);
        base.extend(rng::bytes(seed + 1, tail % width));
        let new = changed(&base, width, per_mille, seed + 2);
        let packed = encode_delta(&new, &base, Width::from_bytes(width).unwrap(), coded);
        prop_assert_eq!(decode_delta(&packed, &base).unwrap(), new);
    }

    #[test]
    fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..500), len in 0usize..3000) {
        let base = vec![0u8; len];
        let _ = decode_delta(&data, &base);
        let _ = decode_quant(&data, len);
        for magic in [b"BSDL", b"BSQ8"] {
            let mut framed = magic.to_vec();
            framed.extend_from_slice(&[1, 2, 0, 0]);
            framed.extend_from_slice(&data);
            let _ = decode_delta(&framed, &base);
            let _ = decode_quant(&framed, len);
        }
    }
}

#[test]
fn sparse_deltas_shrink_with_the_change_rate_and_fall_back_to_dense() {
    let n = 1 << 18;
    let base = rng::bytes(1, 2 * n);
    let mut last = 0;
    for per_mille in [10, 30, 150, 500, 950] {
        let new = changed(&base, 2, per_mille, 2);
        let packed = encode_delta(&new, &base, Width::W2, false);
        assert!(packed.len() > last, "{per_mille}");
        last = packed.len();
        let ratio = new.len() as f64 / packed.len() as f64;
        if per_mille == 150 {
            // Paper: ≈5× at 15 % changed (bf16: 1/(1/16 + 0.15) = 4.7×).
            assert!((4.4..5.1).contains(&ratio), "15 %: {ratio}");
        }
        if per_mille == 950 {
            assert!(
                packed.len() <= new.len() + 64,
                "dense fallback above 93.75 %"
            );
        }
    }
}

#[test]
fn corrupt_deltas_are_typed_errors() {
    let base = rng::bytes(3, 4000);
    let new = changed(&base, 2, 50, 4);
    let packed = encode_delta(&new, &base, Width::W2, false);
    assert!(
        decode_delta(&packed, &base[..3998]).is_err(),
        "wrong base length"
    );
    assert!(
        decode_delta(&packed[..packed.len() - 1], &base).is_err(),
        "truncated"
    );
    let mut bad = packed.clone();
    bad[30] ^= 0x40; // a bitmask bit: count no longer matches
    assert!(decode_delta(&bad, &base).is_err());
    let mut bad = packed.clone();
    bad.push(0);
    assert!(decode_delta(&bad, &base).is_err(), "trailing");
}

fn f32_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect()
}

fn f32_values(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(4)
        .map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap())))
        .collect()
}

fn mse(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>() / a.len() as f64
}

/// Adam-like second moments: log-normal, all positive, heavy right tail.
fn optimizer_like(n: usize, seed: u64) -> Vec<f64> {
    let r = rng::bytes(seed, 2 * n);
    r.chunks(2)
        .map(|c| {
            let u = (f64::from(c[0]) + 0.5) / 256.0;
            let v = (f64::from(c[1]) + 0.5) / 256.0;
            let z = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            1e-6 * (1.5 * z).exp() + 1e-3 * (z * 0.01)
        })
        .collect()
}

#[test]
fn cluster_quantization_beats_naive_uint8_at_2_67x() {
    let values = optimizer_like(100_000, 5);
    let data = f32_bytes(&values);
    let packed = encode_quant(&data, FloatFormat::F32, Clusters::MAX);
    let ratio = data.len() as f64 / packed.len() as f64;
    assert!((2.6..2.7).contains(&ratio), "ratio {ratio}");
    let back = f32_values(&decode_quant(&packed, data.len()).unwrap());
    let naive = bitsnap::naive_uint8(&values);
    let (m_cluster, m_naive) = (mse(&values, &back), mse(&values, &naive));
    assert!(
        m_cluster < m_naive / 10.0,
        "cluster MSE {m_cluster:e} vs naive {m_naive:e}"
    );
    // Every value is within half a code step of its cluster, and no cluster is wider than the
    // whole range: the error never exceeds the naive scheme's worst case.
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    for (x, y) in values.iter().zip(&back) {
        assert!((x - y).abs() <= (hi - lo) / 510.0 * 1.001, "{x} → {y}");
    }
    let mre = |v: &[f64]| {
        values
            .iter()
            .zip(v)
            .map(|(x, y)| ((x - y) / x).abs())
            .sum::<f64>()
            / values.len() as f64
    };
    assert!(
        mre(&back) < mre(&naive) / 10.0,
        "MRE {} vs naive {}",
        mre(&back),
        mre(&naive)
    );
}

#[test]
fn quantization_keeps_specials_and_all_formats_decode() {
    for (f, specials) in [
        (FloatFormat::Bf16, floats::BF16),
        (FloatFormat::F16, floats::F16),
        (FloatFormat::F32, floats::F32),
    ] {
        let w = f.width();
        let mut data = rng::bytes(6, 1000 * w);
        // NaN and +Inf patterns at known positions
        data[..w].copy_from_slice(&specials.nan.to_le_bytes()[..w]);
        data[w..2 * w].copy_from_slice(&specials.inf.to_le_bytes()[..w]);
        let packed = encode_quant(&data, f, Clusters::MAX);
        let back = decode_quant(&packed, data.len()).unwrap();
        assert_eq!(&back[..2 * w], &data[..2 * w], "{f:?}");
    }
}

#[test]
fn boundaries_are_denser_near_the_mean() {
    let b = bitsnap::cluster_boundaries(0.0, 1.0, 16);
    assert_eq!(b.len(), 15);
    assert!(b.windows(2).all(|w| w[0] < w[1]));
    let width_mid = b[8] - b[7];
    let width_edge = b[14] - b[13];
    assert!(width_mid < width_edge / 2.0);
    assert!((bitsnap::normal_quantile(0.975) - 1.959964).abs() < 1e-5);
}
