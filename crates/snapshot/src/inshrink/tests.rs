use super::*;
use crate::error::FrameError;
use crate::reader::{SnapshotReader, Source};
use bitlens_inshrink::search::{search, L2Budget, Options, Prepared, TensorInput};
use bitlens_inshrink::stream::DecodeError;
use bitlens_inshrink::{
    values, Configuration, LayerKind, Meta, Metric, Plan, ProtectStorage, Setting,
};
use bitlens_tensors::Dtype;
use bitlens_tensors::Header;

fn safetensors(tensors: &[(&str, &[f32])]) -> Vec<u8> {
    let mut json = String::from("{");
    let mut off = 0;
    for (i, (n, v)) in tensors.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&format!(
            "\"{n}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{off},{}]}}",
            v.len(),
            off + 4 * v.len()
        ));
        off += 4 * v.len();
    }
    json.push('}');
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    for (_, v) in tensors {
        for x in *v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    out
}

fn weights(seed: u32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let x = (i as u32).wrapping_mul(2654435761).wrapping_add(seed) as f32;
            (x / u32::MAX as f32 - 0.5) * 0.1
        })
        .collect()
}

/// Compresses `file` (optionally against `base`'s levels and plan) under an L2 budget.
fn pack(file: &[u8], base: Option<(&Levels, &Annex)>) -> (Vec<u8>, Levels) {
    let header = Header::parse(file, file.len() as u64).unwrap();
    let vals: Vec<Vec<f32>> = header
        .tensors
        .iter()
        .map(|t| {
            let (a, b) = header.file_range(t);
            values::to_f32(&file[a as usize..b as usize], Dtype::F32).unwrap()
        })
        .collect();
    let inputs = header
        .tensors
        .iter()
        .zip(&vals)
        .map(|(t, v)| TensorInput {
            name: &t.name,
            dtype: t.dtype,
            values: v,
            second_moment: None,
        })
        .collect();
    let prep = Prepared::new(inputs, Options::default()).unwrap();
    let out = search(
        &prep,
        &mut L2Budget { max_error: 0.05 },
        base.map(|(_, a)| &a.plan),
    )
    .unwrap();
    let codes: Vec<Option<TensorCode>> = header
        .tensors
        .iter()
        .zip(&out.quantized)
        .map(|(t, q)| {
            Some(TensorCode {
                quantized: q,
                base: base.and_then(|(l, _)| l.get(&t.name)),
                meta: Meta {
                    layer: LayerKind::classify(&t.name),
                    error: 0.0,
                },
            })
        })
        .collect();
    let annex = Annex {
        plan: out.plan,
        storage: ProtectStorage::Original,
        base: base.map(|_| ChainLink {
            name: "prev.bls".into(),
            index_checksum: 7,
            file_size: 9,
        }),
        report: "{}".into(),
    };
    let src: &dyn Source = &file.to_vec();
    let (bytes, _) = write_snapshot(src, &header, &codes, &annex, Vec::new()).unwrap();
    let levels = header
        .tensors
        .iter()
        .zip(out.quantized)
        .map(|(t, q)| (t.name.clone(), q))
        .collect();
    (bytes, levels)
}

#[test]
fn full_and_delta_snapshots_restore_the_quantized_values() {
    let a = weights(1, 5000);
    let b: Vec<f32> = a.iter().map(|x| x * 1.01 + 1e-4).collect();
    let f0 = safetensors(&[("fc.weight", &a), ("emb.weight", &a[..3000])]);
    let f1 = safetensors(&[("fc.weight", &b), ("emb.weight", &b[..3000])]);
    let (s0, l0) = pack(&f0, None);
    let r0 = SnapshotReader::open(s0.clone()).unwrap();
    let annex0 = Annex::of(&r0).unwrap().unwrap();
    assert_eq!(decode_levels(&r0, None).unwrap(), l0);
    // The generic reader decodes full streams too.
    let mut generic = Vec::new();
    r0.decode_all(None, &mut |b| {
        generic.extend_from_slice(b);
        Ok(())
    })
    .unwrap();
    let mut ours = Vec::new();
    decode_all(&r0, &l0, &mut |b| {
        ours.extend_from_slice(b);
        Ok(())
    })
    .unwrap();
    assert_eq!(generic, ours);
    let (s1, l1) = pack(&f1, Some((&l0, &annex0)));
    let r1 = SnapshotReader::open(s1.clone()).unwrap();
    assert_eq!(
        Annex::of(&r1).unwrap().unwrap().base.unwrap().name,
        "prev.bls"
    );
    assert_eq!(decode_levels(&r1, Some(&l0)).unwrap(), l1);
    assert!(matches!(
        decode_levels(&r1, None),
        Err(InshrinkError::WrongBase(_))
    ));
    // A delta frame through the generic reader is a typed error.
    assert!(matches!(
        r1.decode_all(None, &mut |_| Ok(())),
        Err(SnapshotError::Frame {
            source: FrameError::Inshrink(DecodeError::Base { .. }),
            ..
        })
    ));
}

#[test]
fn annexes_round_trip_and_bad_ones_are_typed_errors() {
    let annex = Annex {
        plan: Plan {
            main: Setting::Quantized(Configuration {
                bins: 8,
                prune: 0.2,
                metric: Metric::Sensitivity,
                protect: 0.005,
            }),
            embedding: Setting::Exact,
        },
        storage: ProtectStorage::Bf16,
        base: Some(ChainLink {
            name: "step-1.bls".into(),
            index_checksum: 0xabc,
            file_size: 1234,
        }),
        report: "{\"quality\":\"x\"}".into(),
    };
    let b = annex.to_bytes();
    assert_eq!(Annex::parse(&b).unwrap(), annex);
    for cut in 0..b.len() {
        assert!(Annex::parse(&b[..cut]).is_err(), "cut at {cut}");
    }
    let mut long = b.clone();
    long.push(0);
    assert_eq!(Annex::parse(&long), Err(AnnexError::Trailing(1)));
    let mut bad = b.clone();
    bad[6] = 9;
    assert!(matches!(
        Annex::parse(&bad),
        Err(AnnexError::BadField {
            field: "main setting",
            ..
        })
    ));
    let evil = Annex {
        base: Some(ChainLink {
            name: "../x.bls".into(),
            index_checksum: 0,
            file_size: 0,
        }),
        ..annex
    };
    assert!(matches!(
        Annex::parse(&evil.to_bytes()),
        Err(AnnexError::BadField {
            field: "base name",
            ..
        })
    ));
}

/// Gaussian-like values (Box–Muller over a SplitMix sequence) with a few large outliers.
fn gaussian(seed: u64, n: usize, scale: f32) -> Vec<f32> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n)
        .map(|i| {
            let (u, v) = (next().max(1e-12), next());
            let g = (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos();
            let outlier = if i % 997 == 3 { 8.0 } else { 1.0 };
            (g * outlier) as f32 * scale
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// For random budgets and tensors, a snapshot written as the CLI writes it (search, then
    /// lossy codes not smaller than LMC dropped) restores every tensor within the budget, and no
    /// tensor is stored larger than in the lossless (LMC) snapshot of the same file.
    #[test]
    fn budget_met_and_never_larger_than_lossless(
        seed in proptest::prelude::any::<u64>(),
        budget in proptest::prop_oneof![proptest::strategy::Just(0.001f64), 0.002f64..0.3],
        sizes in proptest::collection::vec(16usize..6000, 3),
        constant in proptest::prelude::any::<bool>(),
    ) {
        let a = gaussian(seed, sizes[0], 0.02);
        let b = gaussian(seed ^ 1, sizes[1], 0.05);
        let c: Vec<f32> = if constant { vec![1.0; sizes[2]] } else { gaussian(seed ^ 2, sizes[2], 1.0) };
        let names = ["layers.0.mlp.fc.weight", "embed_tokens.weight", "layers.0.norm.weight"];
        let file = safetensors(&[(names[0], &a), (names[1], &b), (names[2], &c)]);
        let header = Header::parse(&file, file.len() as u64).unwrap();
        let vals = [a, b, c];
        let inputs = names.iter().zip(&vals).map(|(n, v)| TensorInput {
            name: n,
            dtype: Dtype::F32,
            values: v,
            second_moment: None,
        }).collect();
        let prep = Prepared::new(inputs, Options::default()).unwrap();
        let out = search(&prep, &mut L2Budget { max_error: budget }, None).unwrap();
        let mut codes: Vec<Option<TensorCode>> = out.quantized.iter().enumerate().map(|(k, q)| Some(TensorCode {
            quantized: q,
            base: None,
            meta: Meta { layer: LayerKind::classify(names[k]), error: 0.0 },
        })).collect();
        let src: &dyn Source = &file;
        drop_larger(src, &header, &mut codes).unwrap();
        let annex = Annex { plan: out.plan, storage: ProtectStorage::Original, base: None, report: "{}".into() };
        let (lossy, entries) = write_snapshot(src, &header, &codes, &annex, Vec::new()).unwrap();
        let lmc = |t: &bitlens_tensors::TensorInfo| crate::codec::Codec::lmc_for_width(t.dtype.lane_bytes());
        let (_, lossless) = crate::compress::compress(src, &header, None, &lmc, Vec::new(), &mut |_| {}).unwrap();
        for (e, l) in entries.iter().zip(&lossless) {
            proptest::prop_assert!(e.stored_len() <= l.stored_len(), "{}: {} > {} bytes", e.name, e.stored_len(), l.stored_len());
        }
        let r = SnapshotReader::open(lossy).unwrap();
        let levels = decode_levels(&r, None).unwrap();
        let mut restored = Vec::new();
        decode_all(&r, &levels, &mut |b| { restored.extend_from_slice(b); Ok(()) }).unwrap();
        for (t, v) in header.tensors.iter().zip(&vals) {
            let (x, y) = header.file_range(t);
            let got = values::to_f32(&restored[x as usize..y as usize], Dtype::F32).unwrap();
            let err = bitlens_inshrink::levels::relative_l2(v, &got);
            proptest::prop_assert!(err <= budget, "{}: error {} > budget {}", t.name, err, budget);
        }
    }
}
