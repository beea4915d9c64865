//! End-to-end properties of the codec: the search's error budget holds on the decoded tensors,
//! protected values come back bit-exact, pruned ones are zero, full and delta streams round-trip,
//! and corrupt input gives typed errors.
#![allow(clippy::unwrap_used)]

use bitlens_inshrink::levels::{PROTECTED, PRUNED};
use bitlens_inshrink::search::{search, Options};
use bitlens_inshrink::stream::{decode, encode, DecodeError, Meta};
use bitlens_inshrink::{
    values, L2Budget, LayerKind, Plan, Prepared, ProtectStorage, Setting, TensorInput,
};
use bitlens_tensors::Dtype;
use proptest::prelude::*;

/// Pseudo-random weights: a scaled sum of uniforms (≈ normal) with a few outliers.
fn weights(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut state = bitlens_test_support::rng::xorshift(seed);
    let mut next = move || (state() >> 11) as f32 / (1u64 << 53) as f32;
    (0..n)
        .map(|i| {
            let g: f32 = (0..4).map(|_| next()).sum::<f32>() - 2.0;
            if i % 97 == 0 {
                g * scale * 8.0
            } else {
                g * scale
            }
        })
        .collect()
}

fn relative_l2(a: &[f32], b: &[f32]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| (f64::from(x) - f64::from(y)).powi(2))
        .sum();
    let den: f64 = a.iter().map(|&x| f64::from(x).powi(2)).sum();
    if num == 0.0 {
        0.0
    } else {
        (num / den).sqrt()
    }
}

const NAMES: [&str; 4] = [
    "embeddings.word_embeddings.weight",
    "encoder.layer.0.attention.self.query.weight",
    "encoder.layer.0.intermediate.dense.weight",
    "encoder.layer.0.output.LayerNorm.weight",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// For any budget, the search's choice decodes (through the stream, in the tensor's dtype) to
    /// tensors within the budget; protected values are bit-exact and pruned values zero.
    #[test]
    fn budget_never_exceeded(
        seed in any::<u64>(),
        budget in prop_oneof![Just(0.001f64), 0.005f64..0.3],
        dtype in prop_oneof![Just(Dtype::F32), Just(Dtype::F16), Just(Dtype::BF16)],
        storage in prop_oneof![Just(ProtectStorage::Original), Just(ProtectStorage::Bf16)],
        with_moment in any::<bool>(),
    ) {
        let raw: Vec<Vec<u8>> = (0..4)
            .map(|k| values::from_f32(&weights(seed ^ k, 600 + 300 * k as usize, 0.05), dtype).unwrap())
            .collect();
        let vals: Vec<Vec<f32>> = raw.iter().map(|r| values::to_f32(r, dtype).unwrap()).collect();
        let moments: Vec<Vec<f32>> = vals.iter().enumerate().map(|(k, v)| weights(seed ^ 99 ^ k as u64, v.len(), 0.01).iter().map(|g| g * g).collect()).collect();
        let inputs = (0..4).map(|k| TensorInput {
            name: NAMES[k],
            dtype,
            values: &vals[k],
            second_moment: with_moment.then(|| moments[k].as_slice()),
        }).collect();
        let prep = Prepared::new(inputs, Options { storage, ..Options::default() }).unwrap();
        let out = search(&prep, &mut L2Budget { max_error: budget }, None).unwrap();
        for (k, q) in out.quantized.iter().enumerate() {
            let bytes = encode(q, &Meta { layer: LayerKind::classify(NAMES[k]), error: 0.0 }, None, false).unwrap();
            let d = decode(&bytes, vals[k].len() as u64, None).unwrap();
            prop_assert_eq!(&d.tensor, q);
            let restored_bytes = d.tensor.restore_bytes();
            let restored = values::to_f32(&restored_bytes, dtype).unwrap();
            let err = relative_l2(&vals[k], &restored);
            prop_assert!(err <= budget, "tensor {} error {} > {}", k, err, budget);
            let exact_protect = storage == ProtectStorage::Original || dtype == Dtype::BF16 || q.setting == Setting::Exact;
            let w = values::width(dtype).unwrap();
            for (i, &l) in q.levels.iter().enumerate() {
                let (a, b) = (&raw[k][i * w..(i + 1) * w], &restored_bytes[i * w..(i + 1) * w]);
                if l == PRUNED {
                    prop_assert_eq!(restored[i], 0.0);
                } else if l == PROTECTED && exact_protect {
                    prop_assert_eq!(a, b, "protected element {} of tensor {}", i, k);
                }
            }
        }
        for g in &out.report.groups {
            prop_assert!(g.max_error <= budget, "{:?}", g);
        }
        // The report agrees with an independent error computation.
        for (k, t) in out.report.tensors.iter().enumerate() {
            let r = out.quantized[k].restore();
            prop_assert!((t.error - relative_l2(&vals[k], &r)).abs() < 1e-12);
        }
    }
}

fn prepared<'a>(vals: &'a [Vec<f32>]) -> Prepared<'a> {
    let inputs = vals
        .iter()
        .enumerate()
        .map(|(k, v)| TensorInput {
            name: NAMES[k],
            dtype: Dtype::F32,
            values: v,
            second_moment: None,
        })
        .collect();
    Prepared::new(inputs, Options::default()).unwrap()
}

/// A chain: checkpoint 2 as a delta against checkpoint 1 decodes to exactly its levels, with and
/// without rearrangement; the neighbourhood search starts from checkpoint 1's plan.
#[test]
fn delta_chain_round_trips() {
    let v1: Vec<Vec<f32>> = (0..4).map(|k| weights(k + 1, 5000, 0.05)).collect();
    // A small training step: most values move a little.
    let v2: Vec<Vec<f32>> = v1
        .iter()
        .zip((0..4).map(|k| weights(k + 50, 5000, 0.0005)))
        .map(|(a, d)| a.iter().zip(d).map(|(x, y)| x + y).collect())
        .collect();
    let (p1, p2) = (prepared(&v1), prepared(&v2));
    let mut q = L2Budget { max_error: 0.05 };
    let o1 = search(&p1, &mut q, None).unwrap();
    let o2 = search(&p2, &mut q, Some(&o1.plan)).unwrap();
    assert_ne!(
        o2.report.groups[0].mode,
        bitlens_inshrink::search::SearchMode::Exhaustive
    );
    let mut sizes = [0usize; 3];
    for k in 0..4 {
        let meta = Meta {
            layer: p2.kind(k),
            error: o2.report.tensors[k].error as f32,
        };
        let b1 = encode(&o1.quantized[k], &meta, None, false).unwrap();
        let base = decode(&b1, 5000, None).unwrap().tensor;
        for (j, rearranged) in [false, true].into_iter().enumerate() {
            let b2 = encode(&o2.quantized[k], &meta, Some(&base), rearranged).unwrap();
            let d = decode(&b2, 5000, Some(&base)).unwrap();
            assert_eq!(d.tensor, o2.quantized[k]);
            assert_eq!(d.header.rearranged, rearranged);
            sizes[j] += b2.len();
            // The wrong base is refused or decodes to something else, never to a panic.
            let wrong = decode(&b2, 5000, Some(&o2.quantized[(k + 1) % 4]));
            assert!(
                wrong.is_err()
                    || wrong.unwrap().tensor != o2.quantized[k]
                    || o2.quantized[(k + 1) % 4].levels == base.levels
            );
        }
        sizes[2] += encode(&o2.quantized[k], &meta, None, false).unwrap().len();
    }
    // The delta is smaller than the full stream.
    assert!(sizes[1] < sizes[2] && sizes[0] < sizes[2], "{sizes:?}");
}

/// Truncations and single-byte corruptions of a stream give typed errors or (for bytes that
/// only change values) a tensor of the right length; never a panic.
#[test]
fn corrupt_input_gives_typed_errors() {
    let v: Vec<Vec<f32>> = (0..4).map(|k| weights(k + 7, 3000, 0.05)).collect();
    let p = prepared(&v);
    let plan = Plan {
        main: Setting::Quantized(bitlens_inshrink::Configuration {
            bins: 8,
            prune: 0.2,
            metric: bitlens_inshrink::Metric::Magnitude,
            protect: 0.01,
        }),
        embedding: Setting::Exact,
    };
    let qs = p.apply(&plan);
    let bytes = encode(
        &qs[1],
        &Meta {
            layer: LayerKind::Attention,
            error: 0.0,
        },
        None,
        false,
    )
    .unwrap();
    for cut in 0..bytes.len() {
        assert!(decode(&bytes[..cut], 3000, None).is_err(), "cut {cut}");
    }
    for i in 0..bytes.len() {
        for flip in [1u8, 0x80, 0xFF] {
            let mut b = bytes.clone();
            b[i] ^= flip;
            if let Ok(d) = decode(&b, 3000, None) {
                assert_eq!(d.tensor.levels.len(), 3000);
            }
        }
    }
    assert!(matches!(
        decode(b"NOPE", 1, None),
        Err(DecodeError::Truncated { .. })
    ));
    let mut bad = bytes.clone();
    bad[0] = b'X';
    assert!(matches!(
        decode(&bad, 3000, None),
        Err(DecodeError::BadMagic { .. })
    ));
    let mut bad = bytes.clone();
    bad[4] = 9;
    assert!(matches!(
        decode(&bad, 3000, None),
        Err(DecodeError::UnsupportedVersion { version: 9 })
    ));
    assert!(matches!(
        decode(&bytes, 2999, None),
        Err(DecodeError::LengthMismatch { .. })
    ));
    assert!(matches!(
        decode(&bytes, 3000, Some(&qs[2])),
        Err(DecodeError::Base { .. })
    ));
    let mut long = bytes.clone();
    long.push(0);
    assert!(matches!(
        decode(&long, 3000, None),
        Err(DecodeError::Trailing { .. })
    ));
}

/// Empty, one-element, all-zero and non-finite tensors go through search, encode and decode.
#[test]
fn degenerate_tensors() {
    let cases: Vec<Vec<f32>> = vec![
        vec![],
        vec![0.25],
        vec![0.0; 1000],
        vec![1.0, f32::NAN, -2.0, f32::INFINITY, 0.5, -0.0],
    ];
    for v in &cases {
        let prep = Prepared::new(
            vec![TensorInput {
                name: "x.weight",
                dtype: Dtype::F32,
                values: v,
                second_moment: None,
            }],
            Options::default(),
        )
        .unwrap();
        let out = search(&prep, &mut L2Budget { max_error: 0.1 }, None).unwrap();
        let q = &out.quantized[0];
        let bytes = encode(
            q,
            &Meta {
                layer: LayerKind::Linear,
                error: 0.0,
            },
            None,
            false,
        )
        .unwrap();
        let d = decode(&bytes, v.len() as u64, None).unwrap();
        assert_eq!(d.tensor.levels, q.levels);
        let r = d.tensor.restore();
        for (a, b) in v.iter().zip(&r) {
            assert!(
                a.to_bits() == b.to_bits()
                    || (a.is_finite() && (a - b).abs() <= 0.1 * a.abs().max(1e-30))
                    || (*a == 0.0 && *b == 0.0),
                "{a} -> {b}"
            );
        }
        let delta = encode(
            q,
            &Meta {
                layer: LayerKind::Linear,
                error: 0.0,
            },
            Some(q),
            true,
        )
        .unwrap();
        assert_eq!(
            decode(&delta, v.len() as u64, Some(q))
                .unwrap()
                .tensor
                .levels,
            q.levels
        );
    }
}
