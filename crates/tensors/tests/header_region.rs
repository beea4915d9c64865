//! The header rule of sidecars (`format::header_region`) on a real file of every format (the
//! committed fixtures written by gguf-py, torch and numpy, and a safetensors file): the region is
//! what the format says it is, holds no tensor byte, and — read through a `Retaining` source after
//! the layout was read — costs no read of the file; and the `Retaining` source itself.
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::{self, Data, Entry, HeaderRegion, Layout};
use bitlens_tensors::source::Retaining;
use bitlens_tensors::{ReadAt, SourceError};
use std::cell::Cell;
use std::path::Path;

fn fixture(rel: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A file that counts the reads reaching it.
struct Counted(Vec<u8>, Cell<usize>);

impl ReadAt for Counted {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.1.set(self.1.get() + 1);
        self.0.read_exact_at(offset, buf)
    }
}

/// Where a tensor's stored bytes are.
fn stored(e: &Entry) -> (u64, u64) {
    match e.data {
        Data::Range { offset, len } | Data::Strided { offset, len, .. } => (offset, offset + len),
        Data::Deflated {
            offset, compressed, ..
        } => (offset, offset + compressed),
    }
}

/// The layout and the region of a fixture, checking that reading the region after the layout
/// reads nothing more of the file, and that no tensor's bytes lie in the region.
fn layout_and_region(rel: &str) -> (Vec<u8>, Layout, HeaderRegion) {
    let bytes = fixture(rel);
    let src = Retaining::new(Counted(bytes.clone(), Cell::new(0)));
    let layout = format::open_with(&src, format::zip::Locate::Predict).unwrap();
    let reads = src.inner().1.get();
    let region = format::header_region(&src).unwrap();
    let mut kept = vec![0u8; region.len as usize];
    src.read_exact_at(region.offset, &mut kept).unwrap();
    assert_eq!(
        src.inner().1.get(),
        reads,
        "{rel}: the region was read again"
    );
    assert_eq!(kept, bytes[region.offset as usize..region.end() as usize]);
    assert!(region.end() <= bytes.len() as u64, "{rel}");
    for e in &layout.entries {
        let (start, end) = stored(e);
        if start < end {
            assert!(
                end <= region.offset || start >= region.end(),
                "{rel}: tensor `{}` [{start}, {end}) inside the region {region:?}",
                e.name
            );
        }
    }
    (bytes, layout, region)
}

#[test]
fn safetensors_is_the_length_and_the_json_header() {
    let file = bitlens_test_support::safetensors::Builder::new()
        .metadata("format", "pt")
        .tensor("w", "F16", &[2, 2], &[7; 8])
        .build();
    let region = format::header_region(&file).unwrap();
    let n = u64::from_le_bytes(file[..8].try_into().unwrap());
    assert_eq!(
        region,
        HeaderRegion {
            offset: 0,
            len: 8 + n
        }
    );
}

#[test]
fn gguf_is_everything_before_the_tensor_data() {
    for rel in ["gguf/q4_0.gguf", "gguf/metadata.gguf", "gguf/v2.gguf"] {
        let (bytes, _, region) = layout_and_region(rel);
        let file = format::gguf::read_file(&bytes).unwrap();
        assert_eq!(region.offset, 0, "{rel}");
        assert_eq!(region.len, file.data_start.min(bytes.len() as u64), "{rel}");
    }
}

#[test]
fn npy_is_its_header() {
    for rel in [
        "numpy/minilm_f32_v1.npy",
        "numpy/minilm_f16_v2.npy",
        "numpy/empty_f4.npy",
    ] {
        let (_, layout, region) = layout_and_region(rel);
        assert_eq!(region.offset, 0, "{rel}");
        assert_eq!(
            region.end(),
            stored(&layout.entries[0]).0,
            "{rel}: up to the data"
        );
    }
}

#[test]
fn zips_are_the_central_directory_and_the_end_records() {
    for rel in [
        "numpy/minilm_stored.npz",
        "numpy/minilm_compressed.npz",
        "torch/state_bf16.pt",
        "torch/views.pt",
    ] {
        let (bytes, _, region) = layout_and_region(rel);
        let (cd_offset, _) = format::zip::Archive::open(&bytes)
            .unwrap()
            .central_directory();
        assert_eq!(region.offset, cd_offset, "{rel}");
        assert_eq!(
            region.end(),
            bytes.len() as u64,
            "{rel}: to the end of the file"
        );
    }
}

#[test]
fn legacy_pytorch_is_its_five_pickles() {
    for rel in ["torch/state_f32_legacy.pt", "torch/views_legacy.pt"] {
        let (_, layout, region) = layout_and_region(rel);
        assert_eq!(region.offset, 0, "{rel}");
        // The first storage's 8-byte element count follows the pickles, then its data.
        let first = layout.entries.iter().map(|e| stored(e).0).min().unwrap();
        assert!(region.end() + 8 <= first, "{rel}: {region:?} vs {first}");
    }
}

#[test]
fn unknown_files_have_no_region() {
    assert!(matches!(
        format::header_region(&b"hello, world, this is text".to_vec()),
        Err(format::FormatError::Unknown { .. })
    ));
}

#[test]
fn retained_bytes_are_read_once_and_gaps_alone_reach_the_source() {
    let data: Vec<u8> = (0..=255).collect();
    let src = Retaining::new(Counted(data.clone(), Cell::new(0)));
    let mut a = [0u8; 16];
    src.read_exact_at(10, &mut a).unwrap();
    src.read_exact_at(40, &mut a).unwrap();
    assert_eq!(src.inner().1.get(), 2);
    // Inside what was read: no read of the source.
    let mut b = [0u8; 6];
    src.read_exact_at(12, &mut b).unwrap();
    assert_eq!(b, [12, 13, 14, 15, 16, 17]);
    assert_eq!(src.inner().1.get(), 2);
    // Across both pieces: only the gap between them is read.
    let mut c = vec![0u8; 60];
    src.read_exact_at(5, &mut c).unwrap();
    assert_eq!(c, data[5..65]);
    assert_eq!(
        src.inner().1.get(),
        2 + 3,
        "before, between and after the pieces"
    );
    src.read_exact_at(5, &mut c).unwrap();
    assert_eq!(src.inner().1.get(), 5);
    assert!(matches!(
        src.read_exact_at(250, &mut c),
        Err(SourceError::OutOfBounds { .. })
    ));
}

#[test]
fn past_the_budget_bytes_are_passed_on_not_kept() {
    let data: Vec<u8> = (0..=255).collect();
    let src = Retaining::with_budget(Counted(data, Cell::new(0)), 8);
    let mut a = [0u8; 16];
    src.read_exact_at(0, &mut a).unwrap();
    src.read_exact_at(0, &mut a).unwrap();
    assert_eq!(src.inner().1.get(), 2);
    assert_eq!(a[15], 15);
}
