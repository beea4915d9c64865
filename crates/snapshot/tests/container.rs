//! Round trips through the container: every dtype, frames, deltas, the thread count, the
//! writer by hand (its rejection rules: `rejections.rs`).
// Helpers outside the #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

mod common;

use common::{builder, pack, unpack, weights_bf16, zoo};

use bitlens_snapshot::{
    BaseSource, Codec, FrameJob, SnapshotError, SnapshotReader, SnapshotWriter, TensorPlan,
    FRAME_BYTES, LMC_FRAME_BYTES, STREAM_WINDOW,
};
use bitlens_tensors::{read_header, Dtype};
use bitlens_test_support::floats::{second_moment_bf16, SECOND_MOMENT};
use bitlens_test_support::rng;
use bitlens_test_support::safetensors::{changed, Builder};
use proptest::prelude::*;

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

/// Everything `decode_all` writes after the stored prefix, decoded in steps
/// ([`SnapshotReader::decoding`]) whose limits come from `limits(frame end)`, each step run with
/// the limit it gives for the next frame still to decode.
fn decode_in_steps(
    snap: &[u8],
    base: Option<&[u8]>,
    mut limit: impl FnMut(u64) -> u64,
) -> Result<Vec<u8>, SnapshotError> {
    let reader = SnapshotReader::open(snap.to_vec())?;
    let base_vec = base.map(<[u8]>::to_vec);
    let base_header = base_vec.as_ref().map(|b| read_header(b).unwrap());
    let base_source = match (&base_vec, &base_header) {
        (Some(src), Some(header)) => Some(BaseSource { src, header }),
        _ => None,
    };
    let all: Vec<usize> = (0..reader.entries.len()).collect();
    let mut decoding = reader.decoding(&all, base_source.as_ref())?;
    let mut out = reader.prefix.clone();
    let mut steps = 0;
    while let Some((start, end)) = decoding.next_frame() {
        assert!(start < end, "a frame's payload is never empty");
        decoding.step(limit(end), &mut |b| {
            out.extend_from_slice(b);
            Ok(())
        })?;
        steps += 1;
        assert!(steps < 100_000, "no progress");
    }
    decoding.finish()?;
    Ok(out)
}

/// The checkpoint the stepping tests code: small bf16 weights, an empty tensor, `big_bytes` of
/// bf16 weights (several frames) and a few raw bytes, from seeds `seed`, `seed + 1`, `seed + 2`.
fn stepping_file(big_bytes: usize, seed: u64) -> Vec<u8> {
    builder(true)
        .tensor("a", Dtype::BF16, &[700], &weights_bf16(seed, 700))
        .tensor("empty", Dtype::F32, &[0], &[])
        .tensor(
            "big",
            Dtype::BF16,
            &[big_bytes as u64 / 2],
            &weights_bf16(seed + 1, big_bytes / 2),
        )
        .tensor("b", Dtype::U8, &[33], &rng::bytes(seed + 2, 33))
        .build()
}

/// Decoding in steps (what the page does while it reads a snapshot as a stream) gives what
/// decoding at once gives, whatever the steps: one frame each, every few bytes (steps that decode
/// nothing included), all at once; on small grouped frames, empty tensors, a frame decoded window
/// by window, and deltas. A step past the limit decodes nothing; ending early is an error.
#[test]
fn decoding_in_steps_gives_the_same_bytes() {
    let file = stepping_file(STREAM_WINDOW + 4_098, 41);
    let next = changed(&file, 40, 44);
    let cases = [
        (pack(&file, Codec::lmc_for_width(2), None), None, &file),
        (write_by_hand(&file, None, FRAME_BYTES), None, &file),
        (
            pack(&next, Codec::lmc_for_width(2), Some(&file)),
            Some(&file[..]),
            &next,
        ),
        (
            write_by_hand(&next, Some(&file), FRAME_BYTES),
            Some(&file[..]),
            &next,
        ),
    ];
    for (i, (snap, base, want)) in cases.iter().enumerate() {
        let by_frame = decode_in_steps(snap, *base, |end| end).unwrap();
        assert!(&by_frame == *want, "case {i}: one frame a step");
        let mut at = 0u64;
        let by_bytes = decode_in_steps(snap, *base, |_| {
            at += 200_003;
            at
        })
        .unwrap();
        assert!(&by_bytes == *want, "case {i}: every 200 003 bytes");
        let at_once = decode_in_steps(snap, *base, |_| u64::MAX).unwrap();
        assert!(&at_once == *want, "case {i}: at once");
    }

    let (snap, _, _) = &cases[0];
    let reader = SnapshotReader::open(snap.clone()).unwrap();
    let mut decoding = reader.decoding(&[0, 1, 2], None).unwrap();
    let (_, first) = decoding.next_frame().unwrap();
    let mut got = 0;
    decoding
        .step(first - 1, &mut |b| {
            got += b.len();
            Ok(())
        })
        .unwrap();
    assert_eq!(got, 0, "the first frame is not all in");
    assert_eq!(decoding.next_frame().map(|f| f.1), Some(first));
    decoding.step(first, &mut |_| Ok(())).unwrap();
    assert!(matches!(decoding.finish(), Err(SnapshotError::Misuse(_))));
}

/// Writing a snapshot in steps (what the page does while it reads a checkpoint as a stream)
/// gives the bytes `compress` gives, whatever the steps (one frame each, every few bytes, all at
/// once; deltas included); a step short of the next frame appends nothing; ending early is an
/// error.
#[test]
fn encoding_in_steps_gives_the_same_snapshot() {
    let file = stepping_file(3 * LMC_FRAME_BYTES + 4_098, 51);
    let next = changed(&file, 40, 54);
    let header = read_header(&file).unwrap();
    let base = BaseSource {
        src: &file,
        header: &header,
    };
    let lmc = |t: &bitlens_tensors::TensorInfo| Codec::lmc_for_width(t.dtype.lane_bytes());
    for (input, base) in [(&file, None), (&next, Some(&base))] {
        let want = pack(input, Codec::lmc_for_width(1), base.map(|_| &file[..]));
        let in_header = read_header(input).unwrap();
        let in_steps = |mut limit: Box<dyn FnMut(u64) -> u64>| {
            let src = input.to_vec();
            let mut e =
                bitlens_snapshot::encoding(&src, &in_header, base, &lmc, Vec::new()).unwrap();
            let mut fed = 0;
            while let Some((start, end)) = e.next_frame() {
                assert!(start < end);
                e.step(limit(end), &mut |n| fed += n).unwrap();
            }
            let (out, _) = e.finish().unwrap();
            assert_eq!(fed, (input.len() as u64) - in_header.data_start());
            out
        };
        assert!(in_steps(Box::new(|end| end)) == want, "one frame a step");
        let mut at = 0u64;
        let every = in_steps(Box::new(move |_| {
            at += 300_007;
            at
        }));
        assert!(every == want, "every 300 007 bytes");
        assert!(in_steps(Box::new(|_| u64::MAX)) == want, "at once");
    }

    let src = file.clone();
    let mut e = bitlens_snapshot::encoding(&src, &header, None, &lmc, Vec::new()).unwrap();
    let (_, end) = e.next_frame().unwrap();
    e.step(end - 1, &mut |_| ()).unwrap();
    assert_eq!(e.next_frame().map(|f| f.1), Some(end), "nothing appended");
    e.step(end, &mut |_| ()).unwrap();
    assert!(matches!(e.finish(), Err(SnapshotError::Misuse(_))));
}
