//! The `.npy` / `.npz` readers against numpy: the committed fixtures in tests/fixtures/numpy
//! (written by numpy from real MiniLM tensors by tests/python/make_numpy_fixtures.py) must give
//! the names, dtypes, shapes and bytes (CRC-32 of what `arr.tobytes()` gives) in expected.json;
//! and one malformed file per rule, each refused with its own error.
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::npy::{self, NpyError, MAX_DIMS, MAX_HEADER_LEN};
use bitlens_tensors::format::npz::{self, for_each_inflated, NpzError};
use bitlens_tensors::format::zip::{crc32, ZipError};
use bitlens_tensors::format::{detect, Data, ElementType, Format, Layout};
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/numpy")
}

fn read_any(bytes: &[u8]) -> Result<Layout, String> {
    match detect(&bytes[..bytes.len().min(16)], bytes.len() as u64) {
        Some(Format::Npy) => npy::read(&bytes).map_err(|e| format!("{e:?}")),
        Some(Format::Zip) => npz::read(&bytes).map_err(|e| format!("{e:?}")),
        other => panic!("detected {other:?}"),
    }
}

/// CRC-32 of an entry's bytes as stored (row-major, or column-major for a Fortran array).
fn data_crc(bytes: &[u8], data: &Data) -> u32 {
    match data {
        Data::Range { offset, len } | Data::Strided { offset, len, .. } => {
            crc32(0, &bytes[*offset as usize..(*offset + *len) as usize])
        }
        Data::Deflated {
            offset,
            compressed,
            skip,
            len,
        } => {
            let mut crc = 0;
            let mut seen = 0u64;
            for_each_inflated::<_, ZipError>(
                &bytes,
                *offset,
                *compressed,
                *skip,
                *len,
                1000,
                |w| {
                    crc = crc32(crc, w);
                    seen += w.len() as u64;
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(seen, *len);
            crc
        }
    }
}

#[test]
fn numpy_fixtures_read_as_numpy_wrote_them() {
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap())
            .unwrap();
    let expected = expected.as_object().unwrap();
    assert!(expected.len() >= 15);
    for (file, want) in expected {
        let bytes = std::fs::read(fixtures().join(file)).unwrap();
        let got = read_any(&bytes);
        if let Some(variant) = want.get("error") {
            let err = got.expect_err(file);
            assert!(
                err.contains(&format!("{} {{", variant.as_str().unwrap())),
                "{file}: {err}"
            );
            continue;
        }
        let layout = got.unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(layout.kind, want["kind"], "{file}");
        let entries = want["entries"].as_array().unwrap();
        assert_eq!(layout.entries.len(), entries.len(), "{file}");
        for (e, w) in layout.entries.iter().zip(entries) {
            let ctx = format!("{file}: {}", e.name);
            assert_eq!(e.name, w["name"], "{ctx}");
            let ElementType::Dtype(d) = e.ty else {
                panic!("{ctx}")
            };
            assert_eq!(d.name(), w["dtype"], "{ctx}");
            let shape: Vec<u64> = serde_json::from_value(w["shape"].clone()).unwrap();
            assert_eq!(e.shape, shape, "{ctx}");
            let fortran = w["fortran_order"].as_bool().unwrap();
            let long_dims = shape.iter().filter(|&&n| n > 1).count();
            if let Data::Strided {
                strides,
                storage_offset,
                ..
            } = &e.data
            {
                assert!(fortran, "{ctx}");
                assert_eq!(*storage_offset, 0);
                let mut s = 1;
                for (i, &n) in shape.iter().enumerate() {
                    assert_eq!(strides[i], s, "{ctx}: column-major strides");
                    s *= n;
                }
            } else {
                assert!(!fortran || long_dims <= 1, "{ctx}");
            }
            assert_eq!(
                u64::from(data_crc(&bytes, &e.data)),
                w["crc32"].as_u64().unwrap(),
                "{ctx}: bytes differ from numpy's"
            );
        }
    }
}

// ---- .npy: one malformed file per rule ----

/// A `.npy` of `version` with `dict` as its header text (padded as numpy pads), then `data` bytes.
fn npy_file(version: u8, dict: &str, data: usize) -> Vec<u8> {
    let fixed = if version == 1 { 10 } else { 12 };
    let mut text = dict.as_bytes().to_vec();
    while !(fixed + text.len() + 1).is_multiple_of(64) {
        text.push(b' ');
    }
    text.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&text);
    out.extend(std::iter::repeat_n(0u8, data));
    out
}

fn dict(descr: &str, fortran: &str, shape: &str) -> String {
    format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}")
}

#[test]
fn valid_hand_made_headers() {
    for v in [1, 2, 3] {
        let f = npy_file(v, &dict("'<f4'", "False", "(3, 4)"), 48);
        let l = npy::read(&f).unwrap();
        assert_eq!(l.kind, format!("NumPy .npy v{v}.0"));
        assert_eq!(l.entries[0].shape, vec![3, 4]);
    }
    // Double quotes, no trailing comma, keys in another order, a 1-D Fortran array (a range).
    let f = npy_file(
        1,
        "{\"shape\": (5,), \"fortran_order\": True, \"descr\": \"<i2\"}",
        10,
    );
    let l = npy::read(&f).unwrap();
    let offset = f.len() as u64 - 10;
    assert_eq!(l.entries[0].data, Data::Range { offset, len: 10 });
    // v3: a UTF-8 header.
    let f = npy_file(3, &dict("'<u2'", "False", "(2,)"), 4);
    assert!(npy::read(&f).is_ok());
}

/// The malformed corpus: one file per rule, with the start of the error's `Debug` it must give.
fn npy_corpus() -> Vec<(Vec<u8>, &'static str)> {
    let ok = dict("'<f4'", "False", "(3, 4)");
    let with = |mut f: Vec<u8>, at: usize, bytes: &[u8]| {
        f[at..at + bytes.len()].copy_from_slice(bytes);
        f
    };
    let mut bad_utf8 = npy_file(3, &dict("'<f4#'", "False", "()"), 4);
    let hash = bad_utf8.iter().position(|&b| b == b'#').unwrap();
    bad_utf8[hash] = 0xFF;
    let too_long = (MAX_HEADER_LEN as u32 + 1).to_le_bytes();
    let dims = format!("({})", vec!["1"; MAX_DIMS + 1].join(", "));
    let d = |descr, fortran, shape| npy_file(1, &dict(descr, fortran, shape), 24);
    vec![
        (b"\x93NUMPY\x01".to_vec(), "TooSmall"),
        (b"\x93NUMPX\x01\x00\x00\x00".to_vec(), "BadMagic"),
        (
            with(npy_file(1, &ok, 48), 6, &[4]),
            "UnsupportedVersion { major: 4",
        ),
        (with(npy_file(2, &ok, 48), 8, &too_long), "HeaderTooLong"),
        (
            with(npy_file(2, &ok, 0), 8, &1000u32.to_le_bytes()),
            "HeaderOutOfFile",
        ),
        (bad_utf8, "HeaderEncoding"),
        (npy_file(1, "{'descr': '<f4' 'x'}", 0), "Syntax"),
        (npy_file(1, "__import__('os').system('x')", 0), "Syntax"),
        (npy_file(1, "('<f4', False, (3,))", 0), "NotADict"),
        (
            npy_file(1, "{'descr': '<f4', 'shape': (3,)}", 12),
            "MissingKey { key: \"fortran_order\"",
        ),
        (d("'<f4'", "False", "(3,), 'extra': 1"), "UnexpectedKey"),
        (d("'<f4'", "False", "(3,), 'shape': (4,)"), "UnexpectedKey"),
        (d("'<f4'", "0", "(3,)"), "BadValue { key: \"fortran_order\""),
        (d("'<f4'", "False", "[3]"), "BadValue { key: \"shape\""),
        (d("'<f4'", "False", "(-1,)"), "BadValue { key: \"shape\""),
        (d("'<f4'", "False", "(3, 'a')"), "BadValue { key: \"shape\""),
        (d("'<f4'", "False", "3"), "BadValue { key: \"shape\""),
        (d("4", "False", "(3,)"), "BadValue { key: \"descr\""),
        (d("'|O'", "False", "(3,)"), "Pickle"),
        (d("[('a', '<f4')]", "False", "(3,)"), "Structured"),
        (d("'<V2'", "False", "(3,)"), "Void"),
        (d("'>f8'", "False", "(3,)"), "BigEndian"),
        (d("'<M8[ns]'", "False", "(3,)"), "UnsupportedDtype"),
        (
            npy_file(2, &dict("'<f4'", "False", &dims), 4),
            "TooManyDims",
        ),
        (
            d("'<f8'", "False", "(4294967296, 4294967296)"),
            "SizeOverflow",
        ),
        (d("'<f4'", "False", "(1000000000000,)"), "DataOutOfFile"),
        (npy_file(1, &ok, 47), "DataOutOfFile { offset: 128, len: 48"),
    ]
}

#[test]
fn npy_rules() {
    for (bytes, want) in npy_corpus() {
        let got = format!("{:?}", npy::read(&bytes).unwrap_err());
        assert!(got.starts_with(want), "want {want}, got {got}");
    }
}

#[test]
fn fortran_arrays_get_column_major_strides() {
    let f = npy_file(1, &dict("'<f4'", "True", "(2, 3, 4)"), 96);
    let l = npy::read(&f).unwrap();
    assert_eq!(
        l.entries[0].data,
        Data::Strided {
            offset: f.len() as u64 - 96,
            len: 96,
            storage_offset: 0,
            strides: vec![1, 2, 6]
        }
    );
    // Only one dimension longer than 1: the same bytes in either order.
    let f = npy_file(1, &dict("'<f4'", "True", "(1, 5, 1)"), 20);
    assert!(matches!(
        npy::read(&f).unwrap().entries[0].data,
        Data::Range { .. }
    ));
}

// ---- .npz: one malformed file per rule (mutations of numpy's own files) ----

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(name)).unwrap()
}

/// Replaces every occurrence of `from` by `to` (same length) in `bytes`; panics if none.
fn replace_all(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut hits = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            hits += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert!(hits > 0);
}

fn npz_err(bytes: Vec<u8>) -> NpzError {
    npz::read(&bytes).unwrap_err()
}

#[test]
fn npz_rules() {
    // A member that is not a .npy (renamed in its local header and the central directory).
    let mut f = fixture("minilm_stored.npz");
    replace_all(&mut f, b"scalar.npy", b"scalar.pkl");
    assert!(matches!(npz_err(f), NpzError::NotNpy { member } if member == "scalar.pkl"));
    // A stored member whose .npy magic is broken.
    let mut f = fixture("minilm_stored.npz");
    let (off, _) = first_member(&f);
    f[off as usize] = b'X';
    assert!(matches!(
        npz_err(f),
        NpzError::Npy {
            source: NpyError::BadMagic,
            ..
        }
    ));
    // A stored member whose header declares more data than the member holds.
    let mut f = fixture("minilm_stored.npz");
    replace_all(&mut f, b"'shape': (8, 40)", b"'shape': (9, 40)");
    assert!(matches!(
        npz_err(f),
        NpzError::Npy {
            source: NpyError::DataOutOfFile { .. },
            ..
        }
    ));
    // The same in a deflated member (only its header is inflated to find out).
    let f = fixture("minilm_compressed.npz");
    assert!(npz::read(&f).is_ok());
    let a = bitlens_tensors::format::zip::Archive::open(&f).unwrap();
    let m = &a.members()[0];
    // Declare the member 100 bytes long: shorter than its own header.
    let mut g = f.clone();
    set_member_size(&mut g, m.header_offset, &a, 0, 100);
    assert!(matches!(
        npz_err(g),
        NpzError::Npy {
            source: NpyError::HeaderOutOfFile { .. },
            ..
        }
    ));
    // Declare it 200 bytes: the header fits, its data does not.
    let mut g = f.clone();
    set_member_size(&mut g, m.header_offset, &a, 0, 200);
    assert!(matches!(
        npz_err(g),
        NpzError::Npy {
            source: NpyError::DataOutOfFile { .. },
            ..
        }
    ));
    // A zip bomb: a small deflated member declaring 4 GB.
    let mut g = f.clone();
    set_member_size(&mut g, m.header_offset, &a, 0, u32::MAX - 1);
    assert!(matches!(
        npz_err(g),
        NpzError::Zip(ZipError::RatioTooHigh { .. })
    ));
    // A corrupt deflate stream.
    let mut g = f.clone();
    let data = a.data_offset(&f, m).unwrap() as usize;
    g[data..data + 16].fill(0xFF);
    assert!(matches!(npz_err(g), NpzError::Zip(_)));
    // A zip rule (here: the end record) is reported as the zip's.
    let mut g = f.clone();
    let n = g.len();
    g[n - 22] = b'X';
    assert!(matches!(npz_err(g), NpzError::Zip(ZipError::NoEocd { .. })));
    // Fortran order in a deflated member.
    assert!(matches!(
        npz_err(fixture("fortran_compressed.npz")),
        NpzError::FortranDeflated { .. }
    ));
}

/// Data offset and size of the first member.
fn first_member(f: &[u8]) -> (u64, u64) {
    let a = bitlens_tensors::format::zip::Archive::open(&f).unwrap();
    let m = &a.members()[0];
    (a.data_offset(&f, m).unwrap(), m.size)
}

/// Sets the inflated size of the member whose local header is at `local` (local header, its
/// zip64 extra when numpy wrote one, and the central directory entry).
fn set_member_size(
    f: &mut [u8],
    local: u64,
    a: &bitlens_tensors::format::zip::Archive,
    index: usize,
    size: u32,
) {
    let m = &a.members()[index];
    let l = local as usize;
    let name_len = u16::from_le_bytes([f[l + 26], f[l + 27]]) as usize;
    let extra_len = u16::from_le_bytes([f[l + 28], f[l + 29]]) as usize;
    if u32::from_le_bytes(f[l + 22..l + 26].try_into().unwrap()) == u32::MAX {
        // numpy's zip64 local extra: id, len, size (u64), compressed (u64).
        let x = l + 30 + name_len;
        assert_eq!(&f[x..x + 2], &[1, 0]);
        assert!(extra_len >= 20);
        f[x + 4..x + 12].copy_from_slice(&u64::from(size).to_le_bytes());
    } else {
        f[l + 22..l + 26].copy_from_slice(&size.to_le_bytes());
    }
    // The central directory entry: found by its local header offset field.
    let (cd, cd_len) = a.central_directory();
    let mut p = cd as usize;
    while p < (cd + cd_len) as usize {
        let nl = u16::from_le_bytes([f[p + 28], f[p + 29]]) as usize;
        let xl = u16::from_le_bytes([f[p + 30], f[p + 31]]) as usize;
        let cl = u16::from_le_bytes([f[p + 32], f[p + 33]]) as usize;
        if &f[p + 46..p + 46 + nl] == m.name.as_bytes() {
            f[p + 24..p + 28].copy_from_slice(&size.to_le_bytes());
            return;
        }
        p += 46 + nl + xl + cl;
    }
    panic!("no central entry for {}", m.name);
}

#[test]
fn fuzz_regressions_are_errors_not_panics() {
    // A deflated member whose .npy v1.0 header is shorter than the 12 bytes inflated first.
    let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/npz_read");
    let f = std::fs::read(seeds.join("regression-short-v1-header.npz")).unwrap();
    assert!(npz::read(&f).is_err());
}
