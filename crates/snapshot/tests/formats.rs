//! Snapshots of GGUF, PyTorch and NumPy files (container version 3): every committed fixture comes
//! back byte for byte with each lossless codec and as a delta; synthetic layouts (random gaps,
//! ranges, overlapping views, dtypes, NaN / Inf / subnormal patterns, incompressible bytes) too;
//! and a malformed piece table is refused with its own error.
// Helpers outside the #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use bitlens_snapshot::layout::{pieces, PieceInfo, PieceKind};
use bitlens_snapshot::{
    compress_pieces, BaseSource, Codec, CodecChoice, CodecKind, SnapshotError, SnapshotReader,
};
use bitlens_tensors::format::{self, Data, ElementType, Entry, Format, Layout};
use bitlens_tensors::Dtype;
use bitlens_test_support::rng;
use proptest::prelude::*;
use std::path::PathBuf;

fn fixtures(dir: &str, ext: &str) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// Compresses `file` (read by `format::open`) with `choice`, against `base` if given.
fn pack(file: &[u8], choice: CodecKind, base: Option<&[u8]>) -> Vec<u8> {
    let layout = format::open(&file.to_vec()).unwrap();
    let p = pieces(&layout).unwrap();
    let base_pieces = base.map(|b| pieces(&format::open(&b.to_vec()).unwrap()).unwrap());
    let base_vec = base.map(<[u8]>::to_vec);
    let base_arg = base_vec
        .as_ref()
        .zip(base_pieces.as_ref())
        .map(|(s, p)| (s as &dyn bitlens_snapshot::Source, p));
    let (out, entries) = compress_pieces(
        &file.to_vec(),
        &p,
        base_arg,
        &CodecChoice::new(choice),
        Vec::new(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(entries.len(), p.pieces.len());
    out
}

/// Decodes a version 3 snapshot, with `base` (the base file) for deltas.
fn unpack(snap: &[u8], base: Option<&[u8]>) -> Result<Vec<u8>, SnapshotError> {
    let reader = SnapshotReader::open(snap.to_vec())?;
    let base_vec = base.map(<[u8]>::to_vec);
    let base_pieces = base.map(|b| pieces(&format::open(&b.to_vec()).unwrap()).unwrap());
    let base_header = base_pieces.as_ref().map(|p| p.header().unwrap());
    let shifted = base_vec.as_ref().zip(base_header.as_ref()).map(|(src, h)| {
        bitlens_snapshot::layout::Shifted {
            src,
            shift: h.data_start(),
        }
    });
    let base_source = shifted
        .as_ref()
        .zip(base_header.as_ref())
        .map(|(src, header)| BaseSource { src, header });
    let mut out = Vec::new();
    reader.decode_all(base_source.as_ref(), &mut |b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    assert_eq!(out.len() as u64, reader.original_size());
    Ok(out)
}

/// Every fixture a reader accepts: GGUF (every quantized type), PyTorch (zip and legacy, views
/// and shared storages), NumPy (.npy, stored and deflated .npz).
fn readable_fixtures() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for (dir, ext) in [
        ("gguf", "gguf"),
        ("torch", "pt"),
        ("numpy", "npy"),
        ("numpy", "npz"),
    ] {
        for path in fixtures(dir, ext) {
            let bytes = std::fs::read(&path).unwrap();
            if format::open(&bytes).is_ok() {
                files.push((path, bytes));
            }
        }
    }
    assert!(files.len() >= 40, "{} fixtures read", files.len());
    files
}

#[test]
fn every_fixture_round_trips_byte_for_byte_with_each_lossless_codec() {
    for (path, file) in readable_fixtures() {
        for choice in [CodecKind::Lmc, CodecKind::Neuzip, CodecKind::Stored] {
            let snap = pack(&file, choice, None);
            assert_eq!(snap[8], 3, "{}: version 3", path.display());
            let back = unpack(&snap, None).unwrap();
            assert!(back == file, "{} with {choice}", path.display());
        }
    }
}

#[test]
fn pieces_tile_the_file_and_views_share_one_piece() {
    for (path, file) in readable_fixtures() {
        let layout = format::open(&file).unwrap();
        let p = pieces(&layout).unwrap();
        let mut pos = 0;
        for piece in &p.pieces {
            assert_eq!(piece.offset, pos, "{}: `{}`", path.display(), piece.name);
            assert!(piece.len > 0);
            pos += piece.len;
        }
        assert_eq!(pos, file.len() as u64, "{}", path.display());
        // Every tensor byte range lies inside exactly one tensor piece.
        for e in &layout.entries {
            let (off, len) = match e.data {
                Data::Range { offset, len } | Data::Strided { offset, len, .. } => (offset, len),
                Data::Deflated { .. } => continue,
            };
            if len == 0 {
                continue;
            }
            let holders = p
                .pieces
                .iter()
                .filter(|q| q.info.kind == PieceKind::Tensor)
                .filter(|q| q.offset <= off && off + len <= q.offset + q.len)
                .count();
            assert_eq!(holders, 1, "{}: `{}`", path.display(), e.name);
        }
    }
    // The views fixture has fewer tensor pieces than tensors: shared storages are stored once.
    let views = std::fs::read(
        fixtures("torch", "pt")
            .into_iter()
            .find(|p| p.ends_with("views.pt"))
            .unwrap(),
    )
    .unwrap();
    let layout = format::open(&views).unwrap();
    let p = pieces(&layout).unwrap();
    let tensors = p
        .pieces
        .iter()
        .filter(|q| q.info.kind == PieceKind::Tensor)
        .count();
    assert!(
        tensors < layout.entries.len(),
        "{tensors} pieces for {} tensors",
        layout.entries.len()
    );
}

#[test]
fn gguf_codecs_follow_the_rules() {
    let q8 = std::fs::read(
        fixtures("gguf", "gguf")
            .into_iter()
            .find(|p| p.ends_with("q8_0.gguf"))
            .unwrap(),
    )
    .unwrap();
    let snap = pack(&q8, CodecKind::Neuzip, None);
    let reader = SnapshotReader::open(snap.clone()).unwrap();
    assert_eq!(
        reader.original.as_ref().unwrap().kind,
        format::open(&q8).unwrap().kind
    );
    for e in &reader.entries {
        let info = e.piece.as_ref().unwrap();
        match info.dtype(e.raw_len) {
            // Float tensors take the chosen codec.
            Some(Dtype::F32 | Dtype::F16 | Dtype::BF16) => {
                assert!(matches!(e.codec, Codec::NeuZip(_)), "`{}`", e.name)
            }
            // Gaps and quantized blocks: LMC on bytes or stored.
            None => assert!(
                matches!(e.codec, Codec::Stored | Codec::Lmc { .. }),
                "`{}` {:?}",
                e.name,
                e.codec
            ),
            Some(_) => {}
        }
    }
    assert!(reader
        .entries
        .iter()
        .any(|e| e.piece.as_ref().unwrap().is_quantized()));
    // A quantized tensor is not written as a safetensors file; a float one is.
    let q = reader
        .entries
        .iter()
        .find(|e| e.piece.as_ref().unwrap().is_quantized())
        .unwrap();
    let err = reader
        .decode_tensor_file(&q.name, None, &mut |_| Ok(()))
        .unwrap_err();
    assert!(matches!(err, SnapshotError::NotPlainTensor { .. }), "{err}");
    let gap = reader
        .entries
        .iter()
        .find(|e| e.piece.as_ref().unwrap().kind == PieceKind::Gap)
        .unwrap();
    let err = reader
        .decode_tensor_file(&gap.name, None, &mut |_| Ok(()))
        .unwrap_err();
    assert!(matches!(err, SnapshotError::NotPlainTensor { .. }), "{err}");
}

#[test]
fn npz_deflated_members_are_kept_verbatim() {
    let npz = std::fs::read(
        fixtures("numpy", "npz")
            .into_iter()
            .find(|p| p.ends_with("minilm_compressed.npz"))
            .unwrap(),
    )
    .unwrap();
    let snap = pack(&npz, CodecKind::Lmc, None);
    let reader = SnapshotReader::open(snap.clone()).unwrap();
    assert!(reader
        .entries
        .iter()
        .any(|e| e.piece.as_ref().unwrap().kind == PieceKind::Deflated));
    assert!(!reader
        .entries
        .iter()
        .any(|e| e.piece.as_ref().unwrap().kind == PieceKind::Tensor));
    assert_eq!(unpack(&snap, None).unwrap(), npz);
}

/// `file` with about one byte in 50 of each tensor piece changed.
fn changed(file: &[u8], seed: u64) -> Vec<u8> {
    let p = pieces(&format::open(&file.to_vec()).unwrap()).unwrap();
    let mut out = file.to_vec();
    let noise = rng::bytes(seed, file.len());
    for piece in p.pieces.iter().filter(|q| q.info.kind == PieceKind::Tensor) {
        for i in (piece.offset..piece.offset + piece.len).step_by(50) {
            out[i as usize] ^= noise[i as usize] | 1;
        }
    }
    out
}

#[test]
fn deltas_round_trip_with_the_right_base_only() {
    for (path, base) in readable_fixtures() {
        let new = changed(&base, 3);
        for choice in [CodecKind::Lmc, CodecKind::Bitsnap, CodecKind::Stored] {
            let snap = pack(&new, choice, Some(&base));
            let back = unpack(&snap, Some(&base)).unwrap();
            assert!(back == new, "{} delta with {choice}", path.display());
            assert!(matches!(
                unpack(&snap, None),
                Err(SnapshotError::BaseRequired { .. })
            ));
        }
        if new != base {
            // The changed file as a base: same layout, other tensor bytes.
            let snap = pack(&new, CodecKind::Lmc, Some(&base));
            let err = unpack(&snap, Some(&new)).unwrap_err();
            assert!(
                matches!(err, SnapshotError::WrongBase { .. }),
                "{}: {err}",
                path.display()
            );
        }
    }
}

/// A `.npy`-like synthetic layout: random gaps and tensor ranges (some overlapping, as views of a
/// storage) over random bytes with float special values.
fn synthetic(seed: u64, spans: &[(u64, u64, u8)], gap: u64) -> (Vec<u8>, Layout) {
    let mut entries = Vec::new();
    let mut pos = gap;
    for (i, &(len, overlap, dt)) in spans.iter().enumerate() {
        let dtype = [Dtype::BF16, Dtype::F16, Dtype::F32, Dtype::U8, Dtype::I64][dt as usize % 5];
        let elem = dtype.lane_bytes().max(1) as u64;
        let len = len / elem * elem;
        let start = pos.saturating_sub(overlap.min(pos) / elem * elem);
        entries.push(Entry {
            name: format!("t{i}"),
            ty: ElementType::Dtype(dtype),
            shape: vec![len / elem],
            data: Data::Range { offset: start, len },
        });
        pos = pos.max(start + len) + gap * (i as u64 % 3);
    }
    let size = pos + gap;
    let mut file = rng::bytes(seed, size as usize);
    // NaN, Inf, subnormal and zero patterns sprinkled in.
    for (i, chunk) in file.chunks_mut(64).enumerate() {
        let pattern: &[u8] = match i % 5 {
            0 => &[0x80, 0x7f, 0xc0, 0x7f],
            1 => &[0x00, 0x00, 0x80, 0x7f],
            2 => &[0x01, 0x00, 0x00, 0x00],
            3 => &[0; 4],
            _ => continue,
        };
        let n = chunk.len().min(4);
        chunk[..n].copy_from_slice(&pattern[..n]);
    }
    let layout = Layout {
        format: Format::Npy,
        kind: "synthetic".into(),
        file_size: size,
        entries,
        metadata: vec![],
    };
    (file, layout)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn synthetic_layouts_round_trip(
        seed in any::<u64>(),
        spans in prop::collection::vec((0u64..5000, 0u64..300, any::<u8>()), 0..8),
        gap in 0u64..700,
        choice in prop::sample::select(vec![CodecKind::Lmc, CodecKind::Neuzip, CodecKind::Stored]),
    ) {
        let (file, layout) = synthetic(seed, &spans, gap);
        let p = pieces(&layout).unwrap();
        let (snap, _) = compress_pieces(&file, &p, None, &CodecChoice::new(choice), Vec::new(), &mut |_| {}).unwrap();
        prop_assert_eq!(unpack(&snap, None).unwrap(), file);
    }
}

/// A small version 3 snapshot and its file (a GGUF fixture).
fn small_snapshot() -> (Vec<u8>, Vec<u8>) {
    let file = std::fs::read(
        fixtures("gguf", "gguf")
            .into_iter()
            .find(|p| p.ends_with("f16.gguf"))
            .unwrap(),
    )
    .unwrap();
    (pack(&file, CodecKind::Lmc, None), file)
}

/// Rewrites a version 3 snapshot's index with `edit` applied to its entries (frames and checksums
/// kept, the index checksum recomputed), so only the rule under test is broken.
fn with_entries(snap: &[u8], edit: impl FnOnce(&mut Vec<bitlens_snapshot::Entry>)) -> Vec<u8> {
    let reader = SnapshotReader::open(snap.to_vec()).unwrap();
    let mut entries = reader.entries.clone();
    edit(&mut entries);
    let index_offset =
        u64::from_le_bytes(snap[snap.len() - 32..snap.len() - 24].try_into().unwrap());
    let mut out = snap[..index_offset as usize].to_vec();
    let mut index = Vec::new();
    bitlens_snapshot::format::write_index(&entries, &mut index);
    out.extend_from_slice(&index);
    bitlens_snapshot::format::write_trailer(index_offset, &index, &mut out);
    out
}

fn reason(e: SnapshotError) -> String {
    match e {
        SnapshotError::HeaderMismatch { reason } => reason,
        SnapshotError::IndexCorrupt { reason, .. } => reason,
        other => panic!("unexpected error {other}"),
    }
}

#[test]
fn malformed_piece_tables_are_refused() {
    let (snap, _) = small_snapshot();
    // Pieces that do not add up to the original size (a gap longer than recorded).
    let longer = with_entries(&snap, |e| {
        let g = e
            .iter_mut()
            .find(|e| e.piece.as_ref().unwrap().kind == PieceKind::Gap)
            .unwrap();
        g.raw_len += 1;
    });
    let err = SnapshotReader::open(longer).err().unwrap();
    assert!(
        matches!(err, SnapshotError::IndexCorrupt { .. }),
        "frames no longer cover it: {err}"
    );
    // A piece dropped: the rest no longer tiles the file.
    let dropped = with_entries(&snap, |e| {
        e.pop();
    });
    let r = reason(SnapshotReader::open(dropped).err().unwrap());
    assert!(r.contains("frames end at"), "{r}");
    // Two pieces with one name (overlapping claims on the same bytes).
    let twice = with_entries(&snap, |e| {
        let name = e[0].name.clone();
        e[1].name = name;
    });
    let r = reason(SnapshotReader::open(twice).err().unwrap());
    assert!(r.contains("two pieces are named"), "{r}");
    // A gap with an element type, an unknown piece kind.
    let typed_gap = with_entries(&snap, |e| {
        let g = e
            .iter_mut()
            .find(|e| e.piece.as_ref().unwrap().kind == PieceKind::Gap)
            .unwrap();
        g.piece = Some(PieceInfo {
            kind: PieceKind::Gap,
            ty: "F16".into(),
            shape: vec![],
        });
    });
    let r = reason(SnapshotReader::open(typed_gap).err().unwrap());
    assert!(r.contains("gap piece has an element type"), "{r}");
    // The recorded original size disagrees with the pieces.
    let mut bigger = snap.clone();
    let size = u64::from_le_bytes(bigger[24..32].try_into().unwrap());
    bigger[24..32].copy_from_slice(&(size + 1).to_le_bytes());
    let err = SnapshotReader::open(bigger.clone()).err().unwrap();
    assert!(matches!(err, SnapshotError::PrefixChecksum { .. }), "{err}");
    let p = u64::from_le_bytes(bigger[16..24].try_into().unwrap()) as usize;
    let sum = bitlens_snapshot::checksum(&bigger[24..24 + p]);
    bigger[24 + p..32 + p].copy_from_slice(&sum.to_le_bytes());
    let r = reason(SnapshotReader::open(bigger).err().unwrap());
    assert!(
        r.contains(&format!(
            "pieces cover {size} bytes but the original file has {}",
            size + 1
        )),
        "{r}"
    );
}

#[test]
fn malformed_descriptions_are_refused() {
    let (snap, _) = small_snapshot();
    // A description longer than the limit, and shorter than its size field.
    for len in [4097u64, 7] {
        let mut bad = snap.clone();
        bad[16..24].copy_from_slice(&len.to_le_bytes());
        let r = reason(SnapshotReader::open(bad).err().unwrap());
        assert!(r.contains("description of the original file"), "{r}");
    }
}

/// Snapshots written by earlier builds (the fuzz seeds: version 1 and version 2, made by the CLI of
/// their time) still open and decode, checksums verified; deltas ask for their base.
#[test]
fn snapshots_of_earlier_versions_still_decode() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/snapshot_decode");
    let mut decoded = 0;
    for path in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
        let snap = std::fs::read(&path).unwrap();
        let reader = SnapshotReader::open(snap.clone()).unwrap();
        let version = snap[8];
        let mut n = 0u64;
        match reader.decode_all(None, &mut |b| {
            n += b.len() as u64;
            Ok(())
        }) {
            Ok(()) => {
                assert_eq!(n, reader.original_size(), "{}", path.display());
                decoded += usize::from(version < 3);
            }
            Err(SnapshotError::BaseRequired { .. }) => assert!(reader.base.is_some()),
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    assert!(decoded >= 6, "{decoded} old snapshots decoded");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random corruption of a version 3 snapshot (a quantized GGUF, a PyTorch file with views, a
    /// deflated .npz) never panics; whatever decodes is the original (checksums guarantee it).
    #[test]
    fn random_corruption_of_version_3_never_panics(
        which in 0usize..3,
        pos in any::<prop::sample::Index>(),
        xor in 1u8..,
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let (dir, ext, name) = [("gguf", "gguf", "q4_k.gguf"), ("torch", "pt", "views.pt"), ("numpy", "npz", "minilm_compressed.npz")][which];
        let path = fixtures(dir, ext).into_iter().find(|p| p.ends_with(name)).unwrap();
        let file = std::fs::read(path).unwrap();
        let snap = pack(&file, CodecKind::Lmc, None);
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
}
