//! The accumulator against a naive, independent per-element computation, and known answers.
// Helpers outside the #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use bitlens_stats::{split_ranges, Accumulator, FlipAccumulator, TensorStats, BLOCK_LANES};
use bitlens_tensors::Dtype;
use bitlens_test_support::{floats::bf16_bits, rng};
use proptest::prelude::*;

/// Naive reference: per-lane loops, no histogram folding, no blocks shared across code paths.
struct Reference {
    bit_counts: Vec<u64>,
    group_entropy: Vec<f64>,
    block_bits: f64,
    lanes: u64,
}

fn entropy(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n as f64;
            -p * p.log2()
        })
        .sum()
}

fn reference(dtype: Dtype, data: &[u8]) -> Reference {
    let lane = dtype.lane_bytes();
    let lanes: Vec<&[u8]> = data.chunks_exact(lane).collect();
    let mut bit_counts = vec![0u64; 8 * lane];
    for l in &lanes {
        for (k, &b) in l.iter().enumerate() {
            for bit in 0..8 {
                bit_counts[8 * k + bit] += u64::from(b >> bit & 1);
            }
        }
    }
    let mut group_entropy = Vec::new();
    let mut block_bits = 0.0;
    for k in 0..lane {
        let stream: Vec<u8> = lanes.iter().map(|l| l[k]).collect();
        let mut h = vec![0u64; 256];
        stream.iter().for_each(|&b| h[b as usize] += 1);
        group_entropy.push(if stream.is_empty() { 0.0 } else { entropy(&h) });
        for block in stream.chunks(BLOCK_LANES as usize) {
            let mut h = vec![0u64; 256];
            block.iter().for_each(|&b| h[b as usize] += 1);
            block_bits += entropy(&h) * block.len() as f64;
        }
    }
    Reference {
        bit_counts,
        group_entropy,
        block_bits,
        lanes: lanes.len() as u64,
    }
}

fn accumulate(dtype: Dtype, data: &[u8], window: usize) -> TensorStats {
    let mut acc = Accumulator::new(dtype, data.len() as u64);
    for w in data.chunks(window.max(1)) {
        acc.update(w).unwrap();
    }
    acc.finish().unwrap()
}

fn check_against_reference(dtype: Dtype, data: &[u8], s: &TensorStats) {
    let r = reference(dtype, data);
    assert_eq!(s.lanes, r.lanes);
    assert_eq!(s.bit_set_counts, r.bit_counts);
    if let Some(v) = &s.values {
        assert!(v.mean.is_none_or(|m| !m.is_nan()) && v.std.is_none_or(|x| !x.is_nan()));
    }
    for (a, b) in s.byte_group_entropy.iter().zip(&r.group_entropy) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
    assert!(
        (s.block_entropy_bits - r.block_bits).abs() <= 1e-6 * r.block_bits.max(1.0),
        "{} vs {}",
        s.block_entropy_bits,
        r.block_bits
    );
    assert_eq!(
        s.predicted_bytes,
        (s.block_entropy_bits / 8.0).ceil() as u64
    );
}

fn dtypes() -> impl Strategy<Value = Dtype> {
    prop::sample::select(Dtype::ALL.to_vec())
}

/// Byte lengths that are whole lanes and exercise small blocks, big blocks and partial last blocks.
fn len_for(dtype: Dtype, lanes: usize) -> usize {
    lanes * dtype.lane_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_bytes_match_the_reference(
        dtype in dtypes(),
        lanes in prop_oneof![0usize..5000, 60_000usize..140_000],
        window in 1usize..100_000,
        seed in any::<u64>(),
    ) {
        let mut rng = seed;
        let data: Vec<u8> = (0..len_for(dtype, lanes)).map(|_| {
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            // Skewed bytes so the entropies are not all 8.
            let x = (rng >> 33) as u32;
            if x.is_multiple_of(3) { (x >> 8) as u8 } else { (x % 7) as u8 }
        }).collect();
        let s = accumulate(dtype, &data, window);
        check_against_reference(dtype, &data, &s);
        // A different window size gives the identical result.
        prop_assert!(s == accumulate(dtype, &data, 4093), "result depends on the window size");
    }

    #[test]
    fn split_and_merge_equals_sequential(
        dtype in prop::sample::select(vec![Dtype::BF16, Dtype::F32, Dtype::U8, Dtype::F64, Dtype::C64]),
        blocks in 1u64..5,
        extra in 0u64..70_000,
        part_blocks in 1u64..3,
    ) {
        let lane = dtype.lane_bytes() as u64;
        let len = (blocks * BLOCK_LANES + extra) * lane;
        let data: Vec<u8> = (0..len).map(|i| (i.wrapping_mul(2654435761) >> 7) as u8).collect();
        let whole = accumulate(dtype, &data, 1 << 20);
        let mut merged: Option<Accumulator> = None;
        for r in split_ranges(dtype, len, part_blocks * BLOCK_LANES * lane) {
            let mut part = Accumulator::for_range(dtype, len, r.clone()).unwrap();
            part.update(&data[r.start as usize..r.end as usize]).unwrap();
            merged = Some(match merged { None => part, Some(m) => m.merge(part).unwrap() });
        }
        let merged = merged.unwrap().finish().unwrap();
        // Identical, not merely close: the result must not depend on how the tensor was split.
        prop_assert!(merged == whole, "split result differs from sequential");
    }
}

fn bf16(v: f32) -> [u8; 2] {
    bf16_bits(v).to_le_bytes()
}

#[test]
fn known_bf16_tensor() {
    // 1.0 = 0x3F80, -2.0 = 0xC000, 0.5 = 0x3F00, 0 = 0x0000
    let values = [1.0f32, -2.0, 0.5, 0.0];
    let data: Vec<u8> = values.iter().flat_map(|&v| bf16(v)).collect();
    let s = accumulate(Dtype::BF16, &data, 3);
    let mut expected_bits = vec![0u64; 16];
    for v in [0x3F80u16, 0xC000, 0x3F00, 0] {
        for (b, e) in expected_bits.iter_mut().enumerate() {
            *e += u64::from(v >> b & 1);
        }
    }
    assert_eq!(s.bit_set_counts, expected_bits);
    assert_eq!(s.bit_set_ratio[15], 0.25); // one negative value
    let f = s.float.as_ref().unwrap();
    assert_eq!(f.sign_hist, [3, 1]);
    assert_eq!(f.exponent_hist[127], 1); // 1.0
    assert_eq!(f.exponent_hist[128], 1); // -2.0
    assert_eq!(f.exponent_hist[126], 1); // 0.5
    assert_eq!(f.exponent_hist[0], 1); // 0
    assert_eq!(f.exponent_entropy, 2.0);
    assert_eq!(s.exponent_entropy, Some(2.0));
    assert_eq!(f.mantissa_hist[0], 4);
    let v = s.values.unwrap();
    assert_eq!(
        (v.min, v.max, v.mean, v.zeros),
        (Some(-2.0), Some(1.0), Some(-0.125), 1)
    );
    let var = [1.0f64, -2.0, 0.5, 0.0]
        .iter()
        .map(|x| (x + 0.125) * (x + 0.125))
        .sum::<f64>()
        / 4.0;
    assert!((v.std.unwrap() - var.sqrt()).abs() < 1e-12);
    let h = v.histogram.unwrap();
    assert_eq!((h.lo, h.hi, h.counts.iter().sum::<u64>()), (-2.0, 1.0, 4));
    assert_eq!(h.counts[0], 1);
    assert_eq!(h.counts[63], 1);
}

#[test]
fn special_values_are_counted_not_averaged() {
    let vals = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.0,
        -1.0,
        f32::from_bits(1),
        -0.0,
    ];
    for dtype in [Dtype::F32, Dtype::BF16, Dtype::F16] {
        let data: Vec<u8> = match dtype {
            Dtype::F32 => vals.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Dtype::BF16 => vals.iter().flat_map(|&v| bf16(v)).collect(),
            _ => vals
                .iter()
                .flat_map(|&v| half::f16::from_f32(v).to_bits().to_le_bytes())
                .collect(),
        };
        let v = accumulate(dtype, &data, 5).values.unwrap();
        assert_eq!(
            (v.count, v.nan, v.pos_inf, v.neg_inf, v.finite),
            (7, 1, 1, 1, 4),
            "{dtype}"
        );
        assert_eq!((v.min, v.max), (Some(-1.0), Some(3.0)), "{dtype}");
        // -0.0 always, and the f32 subnormal too once it flushes to zero in the narrower types
        assert_eq!(v.zeros, if dtype == Dtype::F32 { 1 } else { 2 }, "{dtype}");
    }
}

#[test]
fn constant_blocks_predict_nothing_and_random_blocks_predict_everything() {
    let zeros = vec![0u8; 3 * 65536 * 2];
    let s = accumulate(Dtype::BF16, &zeros, 1 << 16);
    assert_eq!(s.predicted_bytes, 0);
    assert_eq!(s.block_entropy[0].len(), 3);
    let noise = rng::bytes(1, 65536 * 4);
    let s = accumulate(Dtype::F32, &noise, 1 << 20);
    assert!(
        s.predicted_ratio > 0.99 && s.predicted_ratio <= 1.0,
        "{}",
        s.predicted_ratio
    );
}

#[test]
fn integer_and_packed_types() {
    let data: Vec<u8> = [-3i32, 7, 0, 100]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let v = accumulate(Dtype::I32, &data, 3).values.unwrap();
    assert_eq!(
        (v.min, v.max, v.mean, v.zeros),
        (Some(-3.0), Some(100.0), Some(26.0), 1)
    );
    assert!(v.histogram.is_none());
    // F4: byte 0x21 holds 0.5 (low nibble 1) and 1.0 (high nibble 2)
    let s = accumulate(Dtype::F4, &[0x21, 0x21], 1);
    let v = s.values.unwrap();
    assert_eq!(
        (v.count, v.min, v.max, v.mean),
        (4, Some(0.5), Some(1.0), Some(0.75))
    );
    assert_eq!(s.float.unwrap().exponent_hist, [2, 2, 0, 0]);
    // F6 is packed across bytes: bits and bytes only.
    let s = accumulate(Dtype::F6_E2M3, &[1, 2, 3], 1);
    assert!(s.values.is_none() && s.float.is_none());
    assert_eq!(s.lanes, 3);
}

#[test]
fn flips_count_changed_elements_and_bits() {
    let a: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let b: Vec<u8> = [1.0f32, -2.0, 3.0, f32::from_bits(4.0f32.to_bits() ^ 0b101)]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut acc = FlipAccumulator::new(Dtype::F32, a.len() as u64);
    acc.update(&a[..5], &b[..5]).unwrap();
    acc.update(&a[5..], &b[5..]).unwrap();
    let f = acc.finish().unwrap();
    assert_eq!((f.lanes, f.changed_lanes, f.changed_fraction), (4, 2, 0.5));
    let mut expected = vec![0u64; 32];
    expected[31] = 1; // sign of 2.0
    expected[0] = 1;
    expected[2] = 1;
    assert_eq!(f.bit_flip_counts, expected);
    assert_eq!(f.bit_flip_ratio[31], 0.25);
    assert!(FlipAccumulator::new(Dtype::F32, 16)
        .update(&a[..4], &b[..3])
        .is_err());
}

#[test]
fn misuse_is_a_typed_error() {
    let mut acc = Accumulator::new(Dtype::BF16, 4);
    assert!(acc.update(&[0; 5]).is_err());
    acc.update(&[0; 3]).unwrap();
    assert!(acc.clone().finish().is_err());
    assert!(Accumulator::for_range(Dtype::BF16, 1 << 20, 2..1 << 20).is_err());
    let a = Accumulator::for_range(Dtype::BF16, 1 << 20, 0..1 << 17).unwrap();
    let c = Accumulator::for_range(Dtype::BF16, 1 << 20, 1 << 18..1 << 20).unwrap();
    assert!(a.merge(c).is_err());
}
