//! Round trips through the container and one test per rejection rule.
// Helpers outside the #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use bitlens_snapshot::{
    compress, BaseSource, Codec, FrameJob, SnapshotError, SnapshotReader, SnapshotWriter,
    TensorPlan, FRAME_BYTES, LMC_FRAME_BYTES, STREAM_WINDOW,
};
use bitlens_tensors::{read_header, Dtype, Header};
use bitlens_test_support::floats::{bf16_bits, second_moment_bf16, BF16, SECOND_MOMENT};
use bitlens_test_support::rng;
use bitlens_test_support::safetensors::{changed, Builder};
use proptest::prelude::*;

/// A safetensors file builder, with the `__metadata__` of a PyTorch export at step 100 if
/// `metadata`.
fn builder(metadata: bool) -> Builder {
    let builder = Builder::new();
    if metadata {
        builder.metadata("format", "pt").metadata("step", "100")
    } else {
        builder
    }
}

fn pack(file: &[u8], codec: Codec, base: Option<&[u8]>) -> Vec<u8> {
    let header = read_header(&file.to_vec()).unwrap();
    let base_header = base.map(|b| read_header(&b.to_vec()).unwrap());
    let base_vec = base.map(|b| b.to_vec());
    let base_source = match (&base_vec, &base_header) {
        (Some(src), Some(h)) => Some(BaseSource { src, header: h }),
        _ => None,
    };
    let src = file.to_vec();
    let (out, _) = compress(
        &src,
        &header,
        base_source.as_ref(),
        &|t| match codec {
            Codec::Lmc { .. } => Codec::lmc_for_width(t.dtype.lane_bytes()),
            other => other,
        },
        Vec::new(),
        &mut |_| {},
    )
    .unwrap();
    out
}

fn unpack(snapshot: &[u8], base: Option<&[u8]>) -> Result<Vec<u8>, SnapshotError> {
    let reader = SnapshotReader::open(snapshot.to_vec())?;
    let base_vec = base.map(|b| b.to_vec());
    let base_header: Option<Header> = base_vec.as_ref().map(|b| read_header(b).unwrap());
    let base_source = match (&base_vec, &base_header) {
        (Some(src), Some(h)) => Some(BaseSource { src, header: h }),
        _ => None,
    };
    let mut out = Vec::new();
    reader.decode_all(base_source.as_ref(), &mut |b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    Ok(out)
}

/// bf16 values of a normal-ish distribution, with NaN / Inf / subnormal patterns sprinkled in.
fn weights_bf16(seed: u64, n: usize) -> Vec<u8> {
    let noise = rng::bytes(seed, 2 * n);
    let mut out = Vec::with_capacity(2 * n);
    for (i, c) in noise.chunks(2).enumerate() {
        let v = ((c[0] as f32 - 128.0) * (c[1] as f32 - 128.0)) / 4e5;
        let bits = match i % 97 {
            0 => BF16.nan,
            1 => BF16.inf,
            2 => BF16.neg_inf,
            3 => BF16.min_subnormal,
            _ => u32::from(bf16_bits(v)),
        };
        out.extend_from_slice(&bits.to_le_bytes()[..2]);
    }
    out
}

/// A file with a tensor of every kind of dtype, a scalar, an empty and a constant tensor, and
/// metadata.
fn zoo(seed: u64) -> Vec<u8> {
    let i64s: Vec<u8> = (0..4i64).flat_map(|v| v.to_le_bytes()).collect();
    builder(true)
        .tensor("bf16", Dtype::BF16, &[300, 7], &weights_bf16(seed, 2100))
        .tensor("f32", Dtype::F32, &[1000], &rng::bytes(seed + 1, 4000))
        .tensor("f16", Dtype::F16, &[3], &rng::bytes(seed + 2, 6))
        .tensor("f64", Dtype::F64, &[5], &rng::bytes(seed + 3, 40))
        .tensor("i64", Dtype::I64, &[4], &i64s)
        .tensor("u8", Dtype::U8, &[17], &rng::bytes(seed + 4, 17))
        .tensor("f8", Dtype::F8_E4M3, &[33], &rng::bytes(seed + 5, 33))
        .tensor("f4", Dtype::F4, &[6], &rng::bytes(seed + 6, 3))
        .tensor("c64", Dtype::C64, &[2], &rng::bytes(seed + 7, 16))
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

/// Adam's second moment in bf16 (`second_moment_bf16`: its low bytes a flat code of evenly
/// spaced symbols, coded by arithmetic where the CPU allows) gives the same snapshot on every
/// build: here with the x86-64-v3 kernels and again on the portable ones (the test command runs
/// this file with `BITLENS_CPU=baseline` too), and in the page's workers (the wasm test
/// `a_second_moment_round_trips_through_the_computed_flat_code` asserts the same value).
#[test]
fn a_second_moment_snapshot_is_the_same_on_every_build() {
    let (n, seed, expected) = SECOND_MOMENT;
    let file = Builder::new()
        .tensor(
            "exp_avg_sq",
            "BF16",
            &[n as u64],
            &second_moment_bf16(n, seed),
        )
        .build();
    let snap = pack(&file, Codec::lmc_for_width(2), None);
    assert_eq!((snap.len(), bitlens_snapshot::checksum(&snap)), expected);
    assert!(
        snap.len() < file.len() * 15 / 16,
        "the low bytes were coded"
    );
    assert_eq!(unpack(&snap, None).unwrap(), file);
}

#[test]
fn every_dtype_round_trips_byte_for_byte() {
    let file = zoo(1);
    for codec in [Codec::Stored, Codec::lmc_for_width(1)] {
        let snap = pack(&file, codec, None);
        assert_eq!(unpack(&snap, None).unwrap(), file, "{codec:?}");
    }
    let lmc = pack(&file, Codec::lmc_for_width(1), None);
    assert!(lmc.len() < file.len(), "constant tensor must compress");
}

#[test]
fn a_single_tensor_decodes_alone() {
    let file = zoo(2);
    let snap = pack(&file, Codec::lmc_for_width(1), None);
    let reader = SnapshotReader::open(snap).unwrap();
    let idx = reader.find("f32").unwrap();
    let mut out = Vec::new();
    reader
        .decode_tensors(&[idx], None, &mut |b| {
            out.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
    let h = read_header(&file).unwrap();
    let (s, e) = h.file_range(h.tensor("f32").unwrap());
    assert_eq!(out, &file[s as usize..e as usize]);
}

#[test]
fn tensors_larger_than_a_frame_are_split_into_frames() {
    let big = rng::bytes(9, FRAME_BYTES * 2 + 12_346);
    let file = builder(false)
        .tensor("big", Dtype::U8, &[big.len() as u64], &big)
        .build();
    let snap = pack(&file, Codec::Stored, None);
    let reader = SnapshotReader::open(snap.clone()).unwrap();
    assert_eq!(reader.entries[0].frames.len(), 3);
    assert_eq!(unpack(&snap, None).unwrap(), file);
}

#[test]
fn deltas_round_trip_with_the_right_base_only() {
    let base = zoo(3);
    for per_mille in [0, 50, 1000] {
        let next = changed(&base, per_mille, 4 + per_mille);
        let snap = pack(&next, Codec::lmc_for_width(1), Some(&base));
        assert_eq!(unpack(&snap, Some(&base)).unwrap(), next, "{per_mille}‰");
        assert!(matches!(
            unpack(&snap, None),
            Err(SnapshotError::BaseRequired { .. })
        ));
        let other = zoo(99);
        assert!(matches!(
            unpack(&snap, Some(&other)),
            Err(SnapshotError::WrongBase { .. })
        ));
    }
    // Unchanged data: the delta is all zero runs and costs almost nothing.
    let snap = pack(&base, Codec::lmc_for_width(1), Some(&base));
    let plain = pack(&base, Codec::lmc_for_width(1), None);
    assert!(
        snap.len() * 2 < plain.len(),
        "{} vs {}",
        snap.len(),
        plain.len()
    );
}

#[test]
fn a_base_with_same_header_but_other_data_is_refused_per_tensor() {
    let base = zoo(5);
    let next = changed(&base, 50, 6);
    let snap = pack(&next, Codec::lmc_for_width(1), Some(&base));
    let mut tampered = base.clone();
    let last = tampered.len() - 1;
    tampered[last - 200] ^= 0xFF; // inside the `const` tensor
    match unpack(&snap, Some(&tampered)) {
        Err(SnapshotError::WrongBase { reason }) => assert!(reason.contains("const"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_magic_and_version_are_named() {
    let snap = pack(&zoo(7), Codec::Stored, None);
    let mut bad = snap.clone();
    bad[0] = b'X';
    assert!(matches!(
        unpack(&bad, None),
        Err(SnapshotError::BadMagic { offset: 0, .. })
    ));
    let mut bad = snap.clone();
    bad[8] = 5;
    assert!(matches!(
        unpack(&bad, None),
        Err(SnapshotError::UnsupportedVersion {
            version: 5,
            supported: 4
        })
    ));
    // A version 2 snapshot relabelled 4 has no annex where version 4 has one: a typed error.
    let mut bad = snap.clone();
    bad[8] = 4;
    assert!(unpack(&bad, None).is_err());
    assert!(matches!(
        unpack(b"safetensors", None),
        Err(SnapshotError::BadMagic { .. })
    ));
}

/// A corrupt byte in the stored safetensors header is caught even where the header still
/// parses and matches the index (a metadata value): version 2 checksums it. Found by
/// `random_corruption_never_panics`: version 1 decoded such a file "successfully".
#[test]
fn corrupt_stored_header_is_caught_by_its_checksum() {
    let file = zoo(14);
    let snap = pack(&file, Codec::lmc_for_width(1), None);
    let meta = file
        .windows(4)
        .position(|w| w == b"\"pt\"")
        .expect("metadata value")
        + 1;
    let mut bad = snap.clone();
    bad[24 + meta] ^= 1;
    assert!(
        matches!(
            unpack(&bad, None),
            Err(SnapshotError::PrefixChecksum { .. })
        ),
        "{:?}",
        unpack(&bad, None).map(|_| ())
    );
    // Every single-bit flip anywhere is an error, never a different file.
    for i in 0..snap.len() {
        let mut bad = snap.clone();
        bad[i] ^= 1;
        if let Ok(out) = unpack(&bad, None) {
            assert_eq!(out, file, "flip at {i}");
        }
    }
}

/// Version 1 snapshots (no stored-header checksum) are still read.
#[test]
fn version_1_snapshots_still_decode() {
    let file = zoo(15);
    let snap = pack(&file, Codec::lmc_for_width(1), None);
    let prefix_len = u64::from_le_bytes(snap[16..24].try_into().unwrap()) as usize;
    // The same snapshot as version 1 wrote it: no checksum after the prefix, offsets 8 less.
    let mut v1 = snap[..24 + prefix_len].to_vec();
    v1[8] = 1;
    v1.extend_from_slice(&snap[24 + prefix_len + 8..]);
    let reader = SnapshotReader::open(snap.clone()).unwrap();
    let mut entries = reader.entries.clone();
    for e in &mut entries {
        for f in &mut e.frames {
            f.offset -= 8;
        }
    }
    let index_offset = entries
        .iter()
        .flat_map(|e| e.frames.iter())
        .map(|f| f.offset + f.stored_len)
        .max()
        .unwrap_or(24 + prefix_len as u64);
    v1.truncate(index_offset as usize);
    let mut index = Vec::new();
    bitlens_snapshot::format::write_index(&entries, &mut index);
    v1.extend_from_slice(&index);
    bitlens_snapshot::format::write_trailer(index_offset, &index, &mut v1);
    assert_eq!(unpack(&v1, None).unwrap(), file);
}

#[test]
fn truncation_is_a_typed_error() {
    let snap = pack(&zoo(8), Codec::lmc_for_width(1), None);
    for cut in [
        0,
        7,
        23,
        100,
        snap.len() / 2,
        snap.len() - 33,
        snap.len() - 1,
    ] {
        let r = unpack(&snap[..cut], None);
        assert!(
            matches!(
                r,
                Err(SnapshotError::BadMagic { .. } | SnapshotError::Truncated { .. })
            ),
            "cut at {cut}: {r:?}"
        );
    }
}

#[test]
fn corrupt_payload_is_caught_by_decoder_or_checksum() {
    let file = zoo(10);
    let snap = pack(&file, Codec::Stored, None);
    let reader = SnapshotReader::open(snap.clone()).unwrap();
    let f = reader.entries[reader.find("f32").unwrap()].frames[0];
    let mut bad = snap.clone();
    bad[f.offset as usize + 5] ^= 1;
    match unpack(&bad, None) {
        Err(SnapshotError::ChecksumMismatch { tensor, .. }) => assert_eq!(tensor, "f32"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn corrupt_index_is_caught_by_its_checksum() {
    let snap = pack(&zoo(11), Codec::Stored, None);
    let mut bad = snap.clone();
    let at = bad.len() - 40;
    bad[at] ^= 0x10;
    assert!(matches!(
        unpack(&bad, None),
        Err(SnapshotError::IndexChecksum { .. })
    ));
}

#[test]
fn unknown_codec_is_named() {
    let snap = pack(&zoo(12), Codec::Stored, None);
    // Rewrite the first entry's codec id and fix up the index checksum, as a newer writer would.
    let n = snap.len();
    let index_offset = u64::from_le_bytes(snap[n - 32..n - 24].try_into().unwrap()) as usize;
    let index_len = u64::from_le_bytes(snap[n - 24..n - 16].try_into().unwrap()) as usize;
    let mut bad = snap.clone();
    let name_len =
        u32::from_le_bytes(bad[index_offset + 4..index_offset + 8].try_into().unwrap()) as usize;
    bad[index_offset + 8 + name_len] = 200;
    let sum = bitlens_snapshot::checksum(&bad[index_offset..index_offset + index_len]);
    bad[n - 16..n - 8].copy_from_slice(&sum.to_le_bytes());
    assert!(matches!(
        unpack(&bad, None),
        Err(SnapshotError::UnknownCodec { id: 200, .. })
    ));
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let file = zoo(13);
    let one = rayon_pool(1).install(|| pack(&file, Codec::lmc_for_width(1), None));
    let two = rayon_pool(2).install(|| pack(&file, Codec::lmc_for_width(1), None));
    assert_eq!(one, two);
}

/// The frame pipeline on 1–3 threads: a file of multi-frame tensors with small ones between
/// them (grouped into one item) compresses to the same bytes whatever the thread count, for LMC,
/// LMC deltas and lossy NeuZip (64 MiB frames: an item of its own), and decodes back on any
/// thread count (lossless: the file; lossy: the same decoded bytes).
#[test]
fn the_frame_pipeline_gives_the_same_bytes_on_any_thread_count() {
    let mib = 1usize << 20;
    let (a, b) = (7 * mib / 4, 5 * mib / 2 + 17);
    let file = builder(true)
        .tensor("a", Dtype::BF16, &[a as u64], &weights_bf16(1, a))
        .tensor("bias", Dtype::F32, &[100], &rng::bytes(2, 400))
        .tensor("norm", Dtype::BF16, &[300], &weights_bf16(3, 300))
        .tensor("b", Dtype::BF16, &[b as u64], &weights_bf16(4, b))
        .tensor("tail", Dtype::U8, &[70_000], &rng::bytes(5, 70_000))
        .build();
    let base = changed(&file, 100, 9);
    let lossy = Codec::NeuZip(
        bitlens_codecs::neuzip::Settings::lossy(bitlens_codecs::float::FloatFormat::Bf16, 3, 128)
            .unwrap(),
    );
    for (codec, with_base) in [
        (Codec::lmc_for_width(2), false),
        (Codec::lmc_for_width(2), true),
        (lossy, false),
    ] {
        let b = with_base.then_some(&base[..]);
        let one = rayon_pool(1).install(|| pack(&file, codec, b));
        let restored = rayon_pool(1).install(|| unpack(&one, b).unwrap());
        if !codec.is_lossy() {
            assert_eq!(restored, file, "{codec:?}");
        }
        for threads in [2, 3] {
            let snap = rayon_pool(threads).install(|| pack(&file, codec, b));
            assert!(snap == one, "{codec:?} base {with_base}: {threads} threads");
            let out = rayon_pool(threads).install(|| unpack(&snap, b).unwrap());
            assert!(out == restored, "{codec:?}: decoded on {threads} threads");
        }
    }
}

fn rayon_pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random corruption never panics; whatever decodes is the original (checksums guarantee it).
    #[test]
    fn random_corruption_never_panics(pos in any::<prop::sample::Index>(), xor in 1u8.., cut in any::<prop::sample::Index>(), truncate in any::<bool>()) {
        let file = zoo(14);
        let snap = pack(&file, Codec::lmc_for_width(1), None);
        let mut bad = snap.clone();
        if truncate {
            bad.truncate(cut.index(snap.len()));
        } else {
            let i = pos.index(bad.len());
            bad[i] ^= xor;
        }
        if let Ok(out) = unpack(&bad, None) {
            prop_assert_eq!(out, file);
        }
    }

    #[test]
    fn random_files_round_trip(seed in any::<u64>(), n in 0usize..5000, dtype in prop::sample::select(vec![Dtype::BF16, Dtype::F32, Dtype::U8, Dtype::F64])) {
        let lane = dtype.lane_bytes();
        let data = rng::bytes(seed, n * lane);
        let file = builder(seed % 2 == 0).tensor("t", dtype, &[n as u64], &data).build();
        for codec in [Codec::Stored, Codec::lmc_for_width(1)] {
            let snap = pack(&file, codec, None);
            prop_assert_eq!(unpack(&snap, None).unwrap(), file.clone());
        }
    }
}

/// A bf16 snapshot of `file` written frame by frame with the writer, every tensor LMC in frames
/// of `frame` bytes (a delta against `base` if given), with no batching.
fn write_by_hand(file: &[u8], base: Option<&[u8]>, frame: usize) -> Vec<u8> {
    let header = read_header(&file.to_vec()).unwrap();
    let base_vec = base.map(|b| b.to_vec());
    let base_header = base_vec.as_ref().map(|b| read_header(b).unwrap());
    let base_ref = base_vec
        .as_ref()
        .zip(base_header.as_ref())
        .map(|(src, header)| BaseSource { src, header }.reference());
    let plans = header
        .tensors
        .iter()
        .map(|t| TensorPlan {
            name: t.name.clone(),
            codec: Codec::lmc_for_width(2),
            raw_len: t.byte_len(),
            delta: base.is_some(),
        })
        .collect();
    let prefix = &file[..header.data_start() as usize];
    let mut w = SnapshotWriter::new(Vec::new(), prefix, plans, base_ref).unwrap();
    for (i, t) in header.tensors.iter().enumerate() {
        let (s, e) = header.file_range(t);
        let (s, e) = (s as usize, e as usize);
        for at in (s..e).step_by(frame) {
            let end = (at + frame).min(e);
            w.write_frames(&[FrameJob {
                tensor: i,
                raw: &file[at..end],
                base: base.map(|b| &b[at..end]),
            }])
            .unwrap();
        }
    }
    w.finish().unwrap().0
}

/// `compress` cuts LMC tensors into frames of `LMC_FRAME_BYTES` and writes the bytes the writer
/// gives for those frames one by one, whatever the batching and thread count; snapshots whose LMC
/// frames are larger than the streaming window (as written before `LMC_FRAME_BYTES`: one frame of
/// up to 64 MiB) still decode window by window, deltas included, and a corrupt window there is
/// an error.
#[test]
fn lmc_frames_and_large_old_frames() {
    let n = STREAM_WINDOW * 2 + 4_098; // three windows of bf16 weights, odd tail
    let weights = weights_bf16(21, n / 2);
    let file = builder(true)
        .tensor("small", Dtype::BF16, &[500], &weights_bf16(22, 500))
        .tensor("big", Dtype::BF16, &[n as u64 / 2], &weights)
        .build();
    for threads in [1, 2] {
        let snap = rayon_pool(threads).install(|| pack(&file, Codec::lmc_for_width(2), None));
        assert_eq!(unpack(&snap, None).unwrap(), file);
        let reader = SnapshotReader::open(snap.clone()).unwrap();
        let big = &reader.entries[reader.find("big").unwrap()];
        assert_eq!(big.frames.len(), n.div_ceil(LMC_FRAME_BYTES));
        assert!(big.frames[..big.frames.len() - 1]
            .iter()
            .all(|f| f.raw_len == LMC_FRAME_BYTES as u64));
        assert!(
            write_by_hand(&file, None, LMC_FRAME_BYTES) == snap,
            "batching changed the snapshot bytes ({threads} threads)"
        );
    }

    // One frame per tensor, as before: the big one is decoded window by window.
    let old = write_by_hand(&file, None, FRAME_BYTES);
    let reader = SnapshotReader::open(old.clone()).unwrap();
    let big = &reader.entries[reader.find("big").unwrap()];
    assert_eq!(big.frames.len(), 1);
    assert!(big.frames[0].raw_len > STREAM_WINDOW as u64);
    assert_eq!(unpack(&old, None).unwrap(), file);

    // Deltas against a changed copy, in both layouts.
    let next = changed(&file, 30, 23);
    let delta = pack(&next, Codec::lmc_for_width(2), Some(&file));
    assert_eq!(unpack(&delta, Some(&file)).unwrap(), next);
    assert!(write_by_hand(&next, Some(&file), LMC_FRAME_BYTES) == delta);
    let old_delta = write_by_hand(&next, Some(&file), FRAME_BYTES);
    assert_eq!(unpack(&old_delta, Some(&file)).unwrap(), next);

    // A flipped byte deep inside the big frame's payload is an error, never a wrong file.
    let f = big.frames[0];
    let mut bad = old.clone();
    bad[(f.offset + f.stored_len * 3 / 4) as usize] ^= 0x5A;
    assert!(unpack(&bad, None).is_err());
}

/// The writer takes a tensor's frames all as long as its first but the last, which may be
/// shorter, and none longer than `FRAME_BYTES`.
#[test]
fn writer_checks_frame_lengths() {
    let data = weights_bf16(31, 3000);
    let file = builder(false)
        .tensor("t", Dtype::BF16, &[3000], &data)
        .build();
    let header = read_header(&file).unwrap();
    let plan = vec![TensorPlan {
        name: "t".into(),
        codec: Codec::lmc_for_width(2),
        raw_len: 6000,
        delta: false,
    }];
    let prefix = &file[..header.data_start() as usize];
    let raw = &file[header.data_start() as usize..];
    let frames = |lens: &[usize]| {
        let mut w = SnapshotWriter::new(Vec::new(), prefix, plan.clone(), None).unwrap();
        let mut at = 0;
        for &n in lens {
            w.write_frames(&[FrameJob {
                tensor: 0,
                raw: &raw[at..at + n],
                base: None,
            }])?;
            at += n;
        }
        w.finish().map(|_| ())
    };
    frames(&[2000, 2000, 2000]).unwrap();
    frames(&[2500, 2500, 1000]).unwrap();
    assert!(matches!(
        frames(&[2000, 3000, 1000]),
        Err(SnapshotError::Misuse(_))
    ));
    assert!(matches!(
        frames(&[2000, 1000, 3000]),
        Err(SnapshotError::Misuse(_))
    ));
    assert!(matches!(
        frames(&[2000, 2000]),
        Err(SnapshotError::Misuse(_))
    ));
}

/// Inputs the fuzzer found (`fuzz/fuzz_targets/snapshot_decode.rs`), kept as they were found: each
/// must give a typed error, never a panic.
#[test]
fn fuzzer_findings_are_errors() {
    // A NeuZip f16 frame whose corrupt rANS stream decodes an exponent above 31 (it used to index
    // past the 32-entry power table).
    let found = include_bytes!("regressions/neuzip-f16-exponent-out-of-range.bls");
    match unpack(found, None) {
        Err(SnapshotError::Frame { source, .. }) => {
            assert!(source.to_string().contains("exponent"), "{source}")
        }
        other => panic!("expected a frame error, got {other:?}"),
    }
}

/// Files of many frames decode with later frames decoding while earlier ones are checked and
/// handed over: on 1 and 2 threads the bytes are the file's, and a corrupt tensor further on is
/// named after every earlier tensor has been handed over, as in a sequential run.
#[test]
fn frames_decode_ahead_and_errors_keep_their_order() {
    let n = 6 << 20;
    let file = (0..10u64)
        .fold(builder(false), |b, i| {
            b.tensor(
                &format!("t{i}"),
                Dtype::U8,
                &[n as u64],
                &rng::bytes(100 + i, n),
            )
        })
        .build();
    assert!(file.len() > 3 * STREAM_WINDOW);
    let snap = pack(&file, Codec::Stored, None);
    let reader = SnapshotReader::open(snap.clone()).unwrap();
    let bad_tensor = reader.find("t7").unwrap();
    let f = reader.entries[bad_tensor].frames[0];
    let mut bad = snap.clone();
    bad[f.offset as usize + 99] ^= 0x40;
    let header = read_header(&file).unwrap();
    let t6_end = header.file_range(header.tensor("t6").unwrap()).1 as usize;
    for threads in [1, 2] {
        rayon_pool(threads).install(|| {
            assert_eq!(unpack(&snap, None).unwrap(), file, "{threads} threads");
            let reader = SnapshotReader::open(bad.clone()).unwrap();
            let mut out = Vec::new();
            let err = reader
                .decode_all(None, &mut |b| {
                    out.extend_from_slice(b);
                    Ok(())
                })
                .unwrap_err();
            match err {
                SnapshotError::ChecksumMismatch { tensor, .. } => assert_eq!(tensor, "t7"),
                other => panic!("{other:?}"),
            }
            assert_eq!(out, file[..t6_end], "{threads} threads");
        });
    }
}

/// Safetensors files are still written as version 2, byte for byte as before version 3 existed:
/// the xxh3 of snapshots of a fixed file were taken with the code of main before version 3
/// (commit 02543a2).
#[test]
fn safetensors_snapshots_keep_their_bytes() {
    let file = zoo(1);
    let got: Vec<(u8, u64)> = [
        Codec::lmc_for_width(1),
        Codec::Stored,
        Codec::NeuZip(bitlens_codecs::neuzip::Settings::lossless(
            bitlens_codecs::float::FloatFormat::Bf16,
        )),
    ]
    .into_iter()
    .map(|c| {
        let snap = pack(&file, c, None);
        (snap[8], bitlens_snapshot::checksum(&snap))
    })
    .collect();
    let changed = pack(&zoo(2), Codec::lmc_for_width(1), Some(&file));
    let delta = (changed[8], bitlens_snapshot::checksum(&changed));
    assert_eq!(got, GOLDEN_V2);
    assert_eq!(delta, GOLDEN_V2_DELTA);
}

const GOLDEN_V2: [(u8, u64); 3] = [
    (2, 0xf697c111747a5da1),
    (2, 0xad64550fa778b8ab),
    (2, 0xa723224901640a04),
];
const GOLDEN_V2_DELTA: (u8, u64) = (2, 0xbe1cce6e0c6e22d0);
