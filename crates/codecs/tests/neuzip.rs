//! NeuZip: lossless round trips over every float pattern, the lossy error bound of §2.3, size
//! against the exponent-entropy bound on real weights, and garbage input.
#![allow(clippy::unwrap_used)]

use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::neuzip::{self, Settings};
use bitlens_test_support::{floats, rng::xorshift, safetensors, weights};
use proptest::prelude::*;

const FORMATS: [FloatFormat; 3] = [FloatFormat::Bf16, FloatFormat::F16, FloatFormat::F32];

fn to_f64(f: FloatFormat, b: &[u8]) -> f64 {
    match f {
        FloatFormat::Bf16 => f64::from(f32::from_bits(
            u32::from(u16::from_le_bytes([b[0], b[1]])) << 16,
        )),
        FloatFormat::F16 => half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64(),
        FloatFormat::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
    }
}

/// The special values' bit patterns of `f`.
fn specials(f: FloatFormat) -> floats::Specials {
    match f {
        FloatFormat::Bf16 => floats::BF16,
        FloatFormat::F16 => floats::F16,
        FloatFormat::F32 => floats::F32,
    }
}

/// Values with sign, NaN / Inf / subnormal / zero patterns and a weight-like bulk.
fn patterned(f: FloatFormat, seed: u64, n: usize) -> Vec<u8> {
    let mut next = xorshift(seed);
    let special = specials(f);
    let mut out = Vec::with_capacity(n * f.width());
    for i in 0..n {
        let x = next();
        let bits: u32 = match (i % 53, f) {
            (0, FloatFormat::F32) => 0x7FC0_0001, // NaN with payload
            (0, _) => 0x7FC1,
            (1, _) => special.neg_inf,
            (2, _) => special.min_subnormal,
            (3, _) => special.neg_zero,
            _ => {
                let v =
                    ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.2 * (1.0 + (i % 7) as f64);
                match f {
                    FloatFormat::Bf16 => u32::from(half::bf16::from_f64(v).to_bits()),
                    FloatFormat::F16 => u32::from(half::f16::from_f64(v).to_bits()),
                    FloatFormat::F32 => (v as f32).to_bits(),
                }
            }
        };
        out.extend_from_slice(&bits.to_le_bytes()[..f.width()]);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn lossless_round_trips(fi in 0usize..3, n in 0usize..70_000, seed in any::<u64>(), tail in 0usize..4) {
        let f = FORMATS[fi];
        let mut data = patterned(f, seed, n);
        data.extend(std::iter::repeat_n(0xAB, tail % f.width()));
        let packed = neuzip::encode(&data, &Settings::lossless(f));
        prop_assert_eq!(neuzip::decode(&packed, data.len()).unwrap(), data);
    }

    #[test]
    fn random_bits_round_trip(fi in 0usize..3, data in prop::collection::vec(any::<u8>(), 0..5000)) {
        let f = FORMATS[fi];
        let packed = neuzip::encode(&data, &Settings::lossless(f));
        prop_assert_eq!(neuzip::decode(&packed, data.len()).unwrap(), data);
    }

    /// §2.3: every finite value within 2^-k relative error, block maxima exact, specials exact.
    #[test]
    fn lossy_error_is_bounded(fi in 0usize..3, k in prop::sample::select(vec![0u32, 1, 3]), log_b in 5u32..10, n in 1usize..5000, seed in any::<u64>()) {
        let f = FORMATS[fi];
        let b = 1usize << log_b;
        let data = patterned(f, seed, n);
        let s = Settings::lossy(f, k, b).unwrap();
        let packed = neuzip::encode(&data, &s);
        let back = neuzip::decode(&packed, data.len()).unwrap();
        let w = f.width();
        for (block_o, block_r) in data.chunks(b * w).zip(back.chunks(b * w)) {
            let mut max = (0.0f64, 0usize);
            for (j, (o, r)) in block_o.chunks(w).zip(block_r.chunks(w)).enumerate() {
                let (x, y) = (to_f64(f, o), to_f64(f, r));
                let subnormal = x != 0.0 && x.abs() < 2f64.powi(if f == FloatFormat::F16 { -14 } else { -126 });
                if !x.is_finite() || subnormal {
                    prop_assert_eq!(o, r, "special values are kept exactly");
                    continue;
                }
                if x.abs() > max.0 { max = (x.abs(), j); }
                if x == 0.0 {
                    prop_assert_eq!(o, r);
                } else {
                    let rel = (y - x).abs() / x.abs();
                    prop_assert!(rel <= 2f64.powi(-(k as i32)), "rel error {} > 2^-{} for {} → {}", rel, k, x, y);
                }
            }
            if max.0 > 0.0 {
                let j = max.1;
                prop_assert_eq!(&block_o[j * w..j * w + w], &block_r[j * w..j * w + w], "block maximum must be exact");
            }
        }
    }

    #[test]
    fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..600), len in 0usize..4000) {
        let _ = neuzip::decode(&data, len);
        let mut framed = b"NZIP\x01\x00\x07\x00".to_vec();
        framed.extend_from_slice(&data);
        let _ = neuzip::decode(&framed, len);
    }
}

#[test]
fn corrupt_streams_are_typed_errors() {
    let data = patterned(FloatFormat::Bf16, 3, 10_000);
    let packed = neuzip::encode(&data, &Settings::lossless(FloatFormat::Bf16));
    assert!(
        neuzip::decode(&packed, data.len() + 2).is_err(),
        "length mismatch"
    );
    assert!(
        neuzip::decode(&packed[..packed.len() - 1], data.len()).is_err(),
        "truncated"
    );
    let mut bad = packed.clone();
    bad[0] = b'X';
    assert!(neuzip::decode(&bad, data.len()).is_err(), "magic");
    let mut bad = packed.clone();
    bad[6] = 5; // lossy k without a block size
    assert!(neuzip::decode(&bad, data.len()).is_err(), "settings");
    let mut bad = packed.clone();
    bad.push(0);
    assert!(neuzip::decode(&bad, data.len()).is_err(), "trailing bytes");
    // A huge declared length is refused before allocating.
    let mut bad = packed.clone();
    bad[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(neuzip::decode(&bad, 2 << 40).is_err());
}

/// The float weights of a real weights file (`scripts/fetch-weights.sh`), or `None` (and a line
/// on stderr saying the test is skipped) where it has not been fetched.
fn real_weights(dtype: &str) -> Option<Vec<u8>> {
    let path = weights::path_or_skip(&format!("minilm-{dtype}.safetensors"))?;
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // Skip the first tensor (int64 position ids, 4096 bytes): the rest is float weights.
    Some(file[safetensors::data_start(&file) + 4096..].to_vec())
}

fn block_entropy_bits(symbols: &[u8]) -> f64 {
    symbols
        .chunks(neuzip::EXPONENT_BLOCK)
        .map(|b| {
            let mut h = [0u64; 256];
            b.iter().for_each(|&s| h[s as usize] += 1);
            let n = b.len() as f64;
            h.iter()
                .filter(|&&c| c > 0)
                .map(|&c| c as f64 * (n / c as f64).log2())
                .sum::<f64>()
        })
        .sum()
}

#[test]
fn lossless_size_is_within_one_percent_of_the_exponent_bound_on_real_weights() {
    for (dtype, f) in [
        ("bf16", FloatFormat::Bf16),
        ("f16", FloatFormat::F16),
        ("f32", FloatFormat::F32),
    ] {
        let Some(data) = real_weights(dtype) else {
            return;
        };
        let w = f.width();
        let shift = f.mantissa_bits();
        let exps: Vec<u8> = data
            .chunks_exact(w)
            .map(|b| {
                let mut v = [0u8; 4];
                v[..w].copy_from_slice(b);
                ((u32::from_le_bytes(v) >> shift) & ((1 << f.exponent_bits()) - 1)) as u8
            })
            .collect();
        let n = exps.len() as f64;
        let bound = (block_entropy_bits(&exps) + n * f64::from(1 + f.mantissa_bits())) / 8.0;
        let packed = neuzip::encode(&data, &Settings::lossless(f));
        assert_eq!(neuzip::decode(&packed, data.len()).unwrap(), data);
        let excess = packed.len() as f64 / bound - 1.0;
        assert!(
            excess < 0.01,
            "{dtype}: {} bytes vs bound {bound:.0} ({:+.3} %)",
            packed.len(),
            100.0 * excess
        );
    }
}

#[test]
fn lossy_on_real_weights_shrinks_and_stays_bounded() {
    let Some(data) = real_weights("bf16") else {
        return;
    };
    let mut last = usize::MAX;
    for k in [3, 1, 0] {
        let s = Settings::lossy(FloatFormat::Bf16, k, 512).unwrap();
        let packed = neuzip::encode(&data, &s);
        assert!(packed.len() < last);
        last = packed.len();
        let back = neuzip::decode(&packed, data.len()).unwrap();
        let worst = data
            .chunks(2)
            .zip(back.chunks(2))
            .map(|(o, r)| (to_f64(FloatFormat::Bf16, o), to_f64(FloatFormat::Bf16, r)))
            .filter(|(x, _)| *x != 0.0 && x.is_finite())
            .map(|(x, y)| (y - x).abs() / x.abs())
            .fold(0.0, f64::max);
        assert!(
            worst <= 2f64.powi(-(k as i32)),
            "k={k}: worst relative error {worst}"
        );
    }
}
