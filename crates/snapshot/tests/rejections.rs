//! One test per rejection rule of the container: what is wrong, named, never a panic.
#![allow(clippy::unwrap_used)]

mod common;

use bitlens_snapshot::{Codec, SnapshotError, SnapshotReader};
use common::{pack, unpack, zoo};

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
