//! `--codec auto` ([`bitlens_snapshot::compress_auto`]): its output decodes byte for byte for
//! every dtype, NaN / Inf / subnormal patterns, incompressible and constant tensors, with and
//! without a base (changed, unchanged, of another dtype); it is never larger than LMC's output by
//! more than a small margin on random and real inputs; the sizes it predicts for tensors sampled
//! whole are the sizes it achieves; and its choice per tensor is the smallest of the candidates
//! forced one by one.
// Helpers outside the #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use bitlens_snapshot::auto::SLOW_MIN_SAVING;
use bitlens_snapshot::{
    compress, compress_auto, AutoChoice, BaseSource, Candidate, Codec, CodecChoice, CodecKind,
    Entry, SnapshotReader,
};
use bitlens_tensors::{read_header, Dtype, Header};
use bitlens_test_support::floats::{bf16_bits, BF16, F16, F32};
use bitlens_test_support::safetensors::{changed, Builder};
use bitlens_test_support::{rng, weights};
use proptest::prelude::*;

/// A base file's bytes and header.
fn base_parts(base: Option<&[u8]>) -> Option<(Vec<u8>, Header)> {
    base.map(|b| (b.to_vec(), read_header(&b.to_vec()).unwrap()))
}

/// Compresses `file` with auto, against `base` if given.
fn pack_auto(file: &[u8], base: Option<&[u8]>) -> (Vec<u8>, Vec<Entry>, Vec<AutoChoice>) {
    let header = read_header(&file.to_vec()).unwrap();
    let parts = base_parts(base);
    let base_source = parts
        .as_ref()
        .map(|(src, header)| BaseSource { src, header });
    compress_auto(
        &file.to_vec(),
        &header,
        base_source.as_ref(),
        Vec::new(),
        &mut |_| {},
    )
    .unwrap()
}

/// Compresses `file` with one codec for every tensor (`kind`'s codec for its dtype; BitSnap's
/// delta for every dtype), against `base` if given.
fn pack_with(file: &[u8], kind: CodecKind, base: Option<&[u8]>) -> (Vec<u8>, Vec<Entry>) {
    let header = read_header(&file.to_vec()).unwrap();
    let parts = base_parts(base);
    let base_source = parts
        .as_ref()
        .map(|(src, header)| BaseSource { src, header });
    let choice = CodecChoice::new(kind);
    compress(
        &file.to_vec(),
        &header,
        base_source.as_ref(),
        &|t| choice.codec_for(t.dtype),
        Vec::new(),
        &mut |_| {},
    )
    .unwrap()
}

fn unpack(snapshot: &[u8], base: Option<&[u8]>) -> Vec<u8> {
    let reader = SnapshotReader::open(snapshot.to_vec()).unwrap();
    let parts = base_parts(base);
    let base_source = parts
        .as_ref()
        .map(|(src, header)| BaseSource { src, header });
    let mut out = Vec::new();
    reader
        .decode_all(base_source.as_ref(), &mut |b| {
            out.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
    out
}

/// `n` values of a float format (`width` bytes, `specials`), normal-ish with NaN / ±Inf /
/// subnormal / -0 patterns every few values.
fn floats(
    seed: u64,
    n: usize,
    width: usize,
    specials: bitlens_test_support::floats::Specials,
) -> Vec<u8> {
    let noise = rng::bytes(seed, 2 * n);
    let mut out = Vec::with_capacity(width * n);
    for (i, c) in noise.chunks(2).enumerate() {
        let v = ((c[0] as f32 - 128.0) * (c[1] as f32 - 128.0)) / 4e5;
        let bits = match i % 89 {
            0 => specials.nan,
            1 => specials.inf,
            2 => specials.neg_inf,
            3 => specials.min_subnormal,
            4 => specials.neg_zero,
            _ => match width {
                2 if specials == BF16 => u32::from(bf16_bits(v)),
                2 => u32::from(half::f16::from_f32(v).to_bits()),
                _ => v.to_bits(),
            },
        };
        out.extend_from_slice(&bits.to_le_bytes()[..width]);
    }
    out
}

/// A file with every kind of dtype, small (sampled whole) and large (sampled in chunks), with
/// special values, incompressible, constant, scalar and empty tensors.
fn zoo(seed: u64) -> Vec<u8> {
    let i64s: Vec<u8> = (0..20_000i64).flat_map(|v| (v * 3).to_le_bytes()).collect();
    Builder::new()
        .metadata("format", "pt")
        .tensor(
            "bf16",
            Dtype::BF16,
            &[600, 300],
            &floats(seed, 180_000, 2, BF16),
        )
        .tensor(
            "f16",
            Dtype::F16,
            &[90_000],
            &floats(seed + 1, 90_000, 2, F16),
        )
        .tensor(
            "f32",
            Dtype::F32,
            &[70_000],
            &floats(seed + 2, 70_000, 4, F32),
        )
        .tensor(
            "f32-small",
            Dtype::F32,
            &[100],
            &floats(seed + 3, 100, 4, F32),
        )
        .tensor(
            "random",
            Dtype::F32,
            &[50_000],
            &rng::bytes(seed + 4, 200_000),
        )
        .tensor("f64", Dtype::F64, &[5], &rng::bytes(seed + 5, 40))
        .tensor("i64", Dtype::I64, &[20_000], &i64s)
        .tensor("u8", Dtype::U8, &[17], &rng::bytes(seed + 6, 17))
        .tensor(
            "f8",
            Dtype::F8_E4M3,
            &[100_000],
            &rng::bytes(seed + 7, 100_000),
        )
        .tensor("f4", Dtype::F4, &[6], &rng::bytes(seed + 8, 3))
        .tensor("c64", Dtype::C64, &[2], &rng::bytes(seed + 9, 16))
        .tensor("scalar", Dtype::F32, &[], &1.5f32.to_le_bytes())
        .tensor("empty", Dtype::BF16, &[0, 5], &[])
        .tensor(
            "const",
            Dtype::BF16,
            &[70_000],
            &[0x80, 0x3F].repeat(70_000),
        )
        .build()
}

fn total(entries: &[Entry]) -> u64 {
    entries.iter().map(Entry::stored_len).sum()
}

#[test]
fn every_dtype_round_trips_without_and_with_a_base() {
    let file = zoo(1);
    let (snap, entries, choices) = pack_auto(&file, None);
    assert_eq!(unpack(&snap, None), file);
    assert_eq!(choices.len(), entries.len());
    for (c, e) in choices.iter().zip(&entries) {
        assert_eq!(c.name, e.name);
        assert_eq!((c.codec(), c.chosen.is_delta()), (e.codec, e.delta));
        assert!(!e.codec.is_lossy(), "{}", e.name);
        assert!(!c.chosen.is_delta());
    }
    for per_mille in [0, 20, 300, 1000] {
        let new = changed(&file, per_mille, 7);
        let (snap, entries, _) = pack_auto(&new, Some(&file));
        assert_eq!(unpack(&snap, Some(&file)), new, "{per_mille} ‰ changed");
        let (lmc, lmc_entries) = pack_with(&new, CodecKind::Lmc, Some(&file));
        assert!(
            total(&entries) <= total(&lmc_entries) + 64 * entries.len() as u64,
            "{per_mille} ‰: auto {} vs LMC delta {}",
            snap.len(),
            lmc.len()
        );
    }
}

#[test]
fn unchanged_tensors_cost_a_few_bytes_per_mib() {
    let file = zoo(2);
    let (snap, entries, choices) = pack_auto(&file, Some(&file));
    assert_eq!(unpack(&snap, Some(&file)), file);
    for (c, e) in choices.iter().zip(&entries) {
        if e.raw_len > 0 {
            // A constant tensor costs LMC as little without its base (the tie goes to LMC), and a
            // few bytes stored cost less than any stream header.
            assert!(
                c.chosen == Candidate::Unchanged
                    || (c.name == "const" && !e.delta)
                    || (c.chosen == Candidate::Stored && e.raw_len < 64),
                "{}: {:?}",
                e.name,
                c.chosen
            );
            // LMC on an all-zero XOR: run blocks and a stream header per 1 MiB frame.
            assert!(e.stored_len() <= 80, "{}: {} bytes", e.name, e.stored_len());
        }
    }
}

#[test]
fn a_base_of_another_dtype_or_without_the_tensor_gives_no_delta() {
    let file = zoo(3);
    let other = Builder::new()
        .tensor("bf16", Dtype::F16, &[600, 300], &floats(4, 180_000, 2, F16))
        .build();
    let (snap, entries, choices) = pack_auto(&file, Some(&other));
    assert!(entries.iter().all(|e| !e.delta));
    assert!(choices
        .iter()
        .all(|c| c.predictions.iter().all(|p| !p.candidate.is_delta())));
    // No tensor is a delta, so the snapshot records no base and decodes without one.
    assert_eq!(unpack(&snap, None), file);
}

#[test]
fn whole_sampled_tensors_are_predicted_exactly_and_the_choice_is_the_smallest() {
    let file = zoo(5);
    let new = changed(&file, 50, 9);
    let (_, entries, choices) = pack_auto(&new, Some(&file));
    let forced = [
        (Candidate::Lmc, pack_with(&new, CodecKind::Lmc, None).1),
        (
            Candidate::Neuzip,
            pack_with(&new, CodecKind::Neuzip, None).1,
        ),
        (
            Candidate::LmcDelta,
            pack_with(&new, CodecKind::Lmc, Some(&file)).1,
        ),
        (
            Candidate::Bitsnap,
            pack_with(&new, CodecKind::Bitsnap, Some(&file)).1,
        ),
        (
            Candidate::Stored,
            pack_with(&new, CodecKind::Stored, None).1,
        ),
    ];
    for (i, (c, e)) in choices.iter().zip(&entries).enumerate() {
        if c.sample_bytes != c.bytes || c.bytes == 0 {
            continue;
        }
        assert_eq!(c.predicted_bytes(), e.stored_len(), "{}", c.name);
        for p in &c.predictions {
            let kind = match p.candidate {
                Candidate::Unchanged => Candidate::LmcDelta,
                k => k,
            };
            let (_, sizes) = forced.iter().find(|(k, _)| *k == kind).unwrap();
            assert_eq!(
                p.bytes,
                sizes[i].stored_len(),
                "{} {:?}",
                c.name,
                p.candidate
            );
        }
        let best = forced
            .iter()
            .filter(|(k, _)| {
                c.predictions.iter().any(|p| {
                    p.candidate == *k
                        || (p.candidate == Candidate::Unchanged && *k == Candidate::LmcDelta)
                })
            })
            // NeuZip counts only where it saves SLOW_MIN_SAVING (auto's speed rule).
            .map(|(k, s)| {
                let bytes = s[i].stored_len() as f64;
                let weighed = if k.is_slow() {
                    bytes / (1.0 - SLOW_MIN_SAVING)
                } else {
                    bytes
                };
                (weighed, s[i].stored_len())
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap()
            .1;
        assert_eq!(e.stored_len(), best, "{}", c.name);
    }
}

/// A few real tensors of the MiniLM bf16 weights (the embedding and one layer), as a file.
fn minilm_part() -> Option<Vec<u8>> {
    let path = weights::path_or_skip("minilm-bf16.safetensors")?;
    let file = std::fs::read(&path).unwrap();
    let header = read_header(&file).unwrap();
    let mut b = Builder::new();
    for t in header
        .tensors
        .iter()
        .filter(|t| t.name.starts_with("encoder.layer.0.") || t.name.contains("position"))
    {
        let (s, e) = header.file_range(t);
        b = b.tensor(&t.name, t.dtype, &t.shape, &file[s as usize..e as usize]);
    }
    Some(b.build())
}

#[test]
fn real_weights_are_no_larger_than_with_lmc_and_predicted_closely() {
    let Some(file) = minilm_part() else { return };
    let (snap, entries, choices) = pack_auto(&file, None);
    assert_eq!(unpack(&snap, None), file);
    let (lmc, _) = pack_with(&file, CodecKind::Lmc, None);
    assert!(
        snap.len() <= lmc.len(),
        "auto {} vs LMC {}",
        snap.len(),
        lmc.len()
    );
    let predicted: u64 = choices.iter().map(AutoChoice::predicted_bytes).sum();
    let achieved = total(&entries);
    let off = predicted as f64 / achieved as f64 - 1.0;
    assert!(
        off.abs() < 0.03,
        "predicted {predicted}, achieved {achieved}"
    );
    // Against a slightly trained copy: the deltas win, and decode with their base.
    let new = changed(&file, 30, 11);
    let (snap, entries, _) = pack_auto(&new, Some(&file));
    assert_eq!(unpack(&snap, Some(&file)), new);
    let (lmc, _) = pack_with(&new, CodecKind::Lmc, Some(&file));
    assert!(
        snap.len() <= lmc.len(),
        "auto {} vs LMC delta {}",
        snap.len(),
        lmc.len()
    );
    assert!(entries.iter().filter(|e| e.raw_len > 4096).all(|e| e.delta));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn random_files_round_trip_and_stay_near_lmc(
        seed in 1u64..u64::MAX,
        n in 0usize..40_000,
        dtype in prop::sample::select(vec![Dtype::BF16, Dtype::F16, Dtype::F32, Dtype::U8, Dtype::I64]),
        per_mille in prop::option::of(0u64..1000),
    ) {
        let width = dtype.lane_bytes();
        let data = match dtype {
            Dtype::BF16 => floats(seed, n, 2, BF16),
            Dtype::F16 => floats(seed, n, 2, F16),
            Dtype::F32 => floats(seed, n, 4, F32),
            _ => rng::bytes(seed, n * width),
        };
        let file = Builder::new()
            .tensor("t", dtype, &[n as u64], &data)
            .tensor("noise", Dtype::U8, &[n as u64 % 999], &rng::bytes(seed ^ 1, n % 999))
            .build();
        let base = per_mille.map(|p| changed(&file, p, seed ^ 2));
        let (snap, entries, _) = pack_auto(&file, base.as_deref());
        prop_assert_eq!(unpack(&snap, base.as_deref()), file.clone());
        let (_, lmc) = pack_with(&file, CodecKind::Lmc, base.as_deref());
        let (auto, lmc) = (total(&entries), total(&lmc));
        prop_assert!(auto <= lmc + lmc / 100 + 64, "auto {} vs LMC {}", auto, lmc);
    }
}

#[test]
fn the_codec_of_auto_from_a_dtype_alone_is_lmc() {
    let c = CodecChoice::new(CodecKind::Auto);
    assert!(c.check(false).is_ok() && c.check(true).is_ok() && !c.is_lossy());
    assert_eq!(c.codec_for(Dtype::BF16), Codec::lmc_for_width(2));
    assert_eq!("auto".parse::<CodecKind>().unwrap(), CodecKind::Auto);
}
