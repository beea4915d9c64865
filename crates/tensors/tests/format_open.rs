//! `format::open` on a real file of every format (the committed fixtures written by gguf-py, torch
//! and numpy, and a safetensors file): each reaches its reader by its first bytes — never its
//! name — and a file no reader knows is refused with its first bytes.
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::{self, Data, FormatError};
use std::path::Path;

fn open(rel: &str) -> Result<format::Layout, FormatError> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    format::open(&bytes)
}

#[test]
fn every_format_opens_by_its_magic() {
    for (file, kind, tensors) in [
        ("tests/fixtures/gguf/q4_0.gguf", "GGUF", None),
        ("tests/fixtures/torch/state_f32.pt", "PyTorch", None),
        ("tests/fixtures/torch/state_f32_legacy.pt", "PyTorch", None),
        ("tests/fixtures/numpy/minilm_f32_v1.npy", "NumPy", Some(1)),
        ("tests/fixtures/numpy/minilm_stored.npz", "NumPy", None),
        ("tests/fixtures/numpy/minilm_compressed.npz", "NumPy", None),
    ] {
        let l = open(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(l.kind.contains(kind), "{file}: {}", l.kind);
        assert!(!l.entries.is_empty(), "{file}");
        if let Some(n) = tensors {
            assert_eq!(l.entries.len(), n, "{file}");
        }
        for e in &l.entries {
            if let Data::Range { offset, len } = e.data {
                assert!(offset + len <= l.file_size, "{file}: {}", e.name);
            }
        }
    }
    // The compressed .npz is deflated members, the stored one ranges.
    let z = open("tests/fixtures/numpy/minilm_compressed.npz").unwrap();
    assert!(z
        .entries
        .iter()
        .all(|e| matches!(e.data, Data::Deflated { .. })));
}

#[test]
fn a_safetensors_file_opens_as_its_header_says() {
    let file = bitlens_test_support::safetensors::Builder::new()
        .tensor("w", "F16", &[2, 2], &[0; 8])
        .build();
    let l = format::open(&file).unwrap();
    assert_eq!(l.kind, "safetensors");
    assert_eq!(l.entries[0].shape, vec![2, 2]);
}

#[test]
fn an_unknown_file_is_refused_with_its_first_bytes() {
    let e = format::open(&b"hello, world, this is text".to_vec()).unwrap_err();
    assert!(matches!(e, FormatError::Unknown { .. }), "{e}");
    assert!(e.to_string().contains("68656c6c6f"), "{e}");
    // A pickle that is not torch's legacy format, and a zip that is neither .npz nor PyTorch,
    // are their readers' errors.
    assert!(matches!(
        format::open(&b"\x80\x02K\x01.".to_vec()).unwrap_err(),
        FormatError::Torch(_)
    ));
}
