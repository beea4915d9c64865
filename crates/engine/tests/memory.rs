//! The engine's functions for callers that hold tensors in memory (the Python package): a
//! safetensors image compressed without a file equals the file compressed from disk, tensors read
//! back as arrays from the snapshot and from the file equal their bytes, and `inspect_with`
//! measures only the tensors named.
#![allow(clippy::unwrap_used)]

use bitlens_engine::arrays::TensorFile;
use bitlens_engine::compress::compress_image;
use bitlens_engine::inspect::{inspect_with, Sidecars};
use bitlens_engine::{compress, ErrorKind, Inspection, Silent};
use bitlens_snapshot::{CodecChoice, CodecKind};
use bitlens_tensors::format::safetensors::write::{Image, TensorBytes};
use bitlens_tensors::{Dtype, ReadAt};
use std::path::{Path, PathBuf};

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("bitlens-engine-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Three tensors of three dtypes, with metadata, as arrays would give them.
fn tensors() -> Vec<(String, Dtype, Vec<u64>, Vec<u8>)> {
    let bf16: Vec<u8> = (0..4096u32)
        .flat_map(|i| bitlens_test_support::floats::bf16_bits((i as f32).sin()).to_le_bytes())
        .collect();
    let f32s: Vec<u8> = (0..999u32)
        .flat_map(|i| (i as f32 * 0.25 - 7.0).to_le_bytes())
        .collect();
    vec![
        ("layer.weight".into(), Dtype::BF16, vec![64, 64], bf16),
        ("layer.bias".into(), Dtype::F32, vec![999], f32s),
        (
            "steps".into(),
            Dtype::I64,
            vec![],
            7i64.to_le_bytes().to_vec(),
        ),
    ]
}

fn image<'a>(t: &'a [(String, Dtype, Vec<u64>, Vec<u8>)], meta: &[(String, String)]) -> Image<'a> {
    let bytes: Vec<TensorBytes> = t
        .iter()
        .map(|(name, dtype, shape, data)| TensorBytes {
            name,
            dtype: *dtype,
            shape,
            data,
        })
        .collect();
    Image::new(&bytes, Some(meta)).unwrap()
}

fn file_of(image: &Image) -> Vec<u8> {
    let mut all = vec![0u8; image.size() as usize];
    image.read_exact_at(0, &mut all).unwrap();
    all
}

#[test]
fn an_image_compresses_to_the_bytes_its_file_compresses_to() {
    let dir = TempDir::new("image");
    let t = tensors();
    let meta = [("format".to_owned(), "np".to_owned())];
    let image = image(&t, &meta);
    let file = dir.path("m.safetensors");
    std::fs::write(&file, file_of(&image)).unwrap();
    for kind in [CodecKind::Lmc, CodecKind::Neuzip, CodecKind::Auto] {
        let choice = CodecChoice::new(kind);
        let (from_disk, from_memory) = (dir.path("disk.bls"), dir.path("memory.bls"));
        let a = compress(&file, &from_disk, choice, None, &Silent).unwrap();
        let b = compress_image(
            &file,
            &image,
            image.header(),
            &from_memory,
            choice,
            None,
            &Silent,
        )
        .unwrap();
        assert_eq!(
            std::fs::read(&from_disk).unwrap(),
            std::fs::read(&from_memory).unwrap(),
            "{kind}"
        );
        assert_eq!(a.totals, b.totals);
        assert_eq!(a.entries, b.entries);
        assert_eq!(a.auto.is_some(), b.auto.is_some());
    }
    // A choice that cannot work is refused as the CLI refuses it.
    let e = compress_image(
        &file,
        &image,
        image.header(),
        &dir.path("x.bls"),
        CodecChoice::new(CodecKind::Bitsnap),
        None,
        &Silent,
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().starts_with("--codec bitsnap: "), "{e}");
}

/// The arrays of `path` equal the tensors, by name, dtype, shape and bytes.
fn check_arrays(path: &Path, t: &[(String, Dtype, Vec<u64>, Vec<u8>)]) {
    let f = TensorFile::open(path, None).unwrap();
    let arrays = f.arrays();
    assert_eq!(arrays.len(), t.len());
    let names: Vec<String> = arrays.iter().map(|a| a.name.clone()).collect();
    let all = f.read_all(&names).unwrap();
    for (a, bytes) in arrays.iter().zip(&all) {
        let (_, dtype, shape, data) = t.iter().find(|x| x.0 == a.name).unwrap();
        assert_eq!(
            (&a.dtype, &a.shape, a.len),
            (dtype, shape, data.len() as u64)
        );
        assert_eq!(bytes, data, "{}", a.name);
        assert_eq!(&f.read(&a.name).unwrap(), data);
    }
    assert_eq!(
        f.metadata(),
        Some(vec![("format".to_owned(), "np".to_owned())])
    );
    let e = f.read("nope").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid, "{e}");
}

#[test]
fn tensors_read_back_as_arrays_from_the_snapshot_and_the_file() {
    let dir = TempDir::new("arrays");
    let t = tensors();
    let meta = [("format".to_owned(), "np".to_owned())];
    let file = dir.path("m.safetensors");
    std::fs::write(&file, file_of(&image(&t, &meta))).unwrap();
    check_arrays(&file, &t);
    let snap = dir.path("m.bls");
    compress(
        &file,
        &snap,
        CodecChoice::new(CodecKind::Lmc),
        None,
        &Silent,
    )
    .unwrap();
    check_arrays(&snap, &t);
    // A delta reads with its base, and is refused without it.
    let mut changed = t.clone();
    changed[1].3[5] ^= 1;
    let file_b = dir.path("b.safetensors");
    std::fs::write(&file_b, file_of(&image(&changed, &meta))).unwrap();
    let delta = dir.path("delta.bls");
    compress(
        &file_b,
        &delta,
        CodecChoice::new(CodecKind::Lmc),
        Some(&file),
        &Silent,
    )
    .unwrap();
    let f = TensorFile::open(&delta, Some(&file)).unwrap();
    assert_eq!(f.read("layer.bias").unwrap(), changed[1].3);
    let without = TensorFile::open(&delta, None).unwrap();
    assert_eq!(
        without.read("layer.bias").unwrap_err().kind(),
        ErrorKind::Invalid
    );
}

#[test]
fn inspect_with_measures_only_the_tensors_named() {
    let dir = TempDir::new("inspect");
    let t = tensors();
    let file = dir.path("m.safetensors");
    std::fs::write(&file, file_of(&image(&t, &[]))).unwrap();
    let inputs = [file.clone()];
    let Inspection::Checkpoints(r) = inspect_with(
        &inputs,
        Some(&["layer.bias".to_owned()]),
        Sidecars::Skip,
        &Silent,
    )
    .unwrap() else {
        panic!("not checkpoints")
    };
    let measured: Vec<&str> = r.files[0]
        .tensors
        .iter()
        .filter(|t| t.stats.is_some())
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(measured, ["layer.bias"]);
    assert_eq!(r.summary.tensors, 1);
    let e = inspect_with(&inputs, Some(&["nope".to_owned()]), Sidecars::Skip, &Silent).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.to_string().starts_with("no tensor `nope` in "), "{e}");
}
