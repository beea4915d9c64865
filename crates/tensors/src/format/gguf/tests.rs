//! The GGUF reader against gguf-py (fixtures written by `tests/python/make_gguf_fixtures.py`:
//! every key/value and tensor info as `GGUFReader` reads them, every dequantized value bit for
//! bit as `quants.dequantize` computes it), and a malformed corpus: one hand-made file per rule,
//! each checked for its error.

use super::meta::ValueType;
use super::parts::{block_scales, code_bits, quant_codes};
use super::*;
use crate::format::MetaValue;
use serde_json::Value;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/gguf")
}

fn expected() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(fixtures().join("expected.json")).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .clone()
}

/// A value's leaves in the fixture JSON's typed form (floats as bit patterns of the leaf type).
fn leaves(v: &MetaValue, leaf: ValueType, out: &mut Vec<Value>) {
    match v {
        MetaValue::Array(items) => items.iter().for_each(|i| leaves(i, leaf, out)),
        MetaValue::Float(f) if leaf == ValueType::F32 => {
            out.push(Value::from((*f as f32).to_bits()))
        }
        MetaValue::Float(f) => out.push(Value::from(f.to_bits())),
        MetaValue::UInt(u) => out.push(Value::from(*u)),
        MetaValue::Int(i) => out.push(Value::from(*i)),
        MetaValue::Bool(b) => out.push(Value::from(*b)),
        MetaValue::Str(s) => out.push(Value::from(s.as_str())),
    }
}

#[test]
fn every_file_reads_as_gguf_py_reads_it() {
    let all = expected();
    assert!(all.len() >= 28, "fixtures missing");
    for (file, exp) in &all {
        let bytes = std::fs::read(fixtures().join(file)).unwrap();
        let g = read_file(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(
            u64::from(g.version),
            exp["version"].as_u64().unwrap(),
            "{file}"
        );
        assert_eq!(
            u64::from(g.alignment),
            exp["alignment"].as_u64().unwrap(),
            "{file}"
        );
        assert_eq!(g.data_start, exp["data_offset"].as_u64().unwrap(), "{file}");
        assert_eq!(g.file_size, exp["file_size"].as_u64().unwrap(), "{file}");
        let kvs = exp["kvs"].as_array().unwrap();
        assert_eq!(g.metadata.len(), kvs.len(), "{file}");
        for (kv, e) in g.metadata.iter().zip(kvs) {
            let types: Vec<u32> = e["types"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_u64().unwrap() as u32)
                .collect();
            assert_eq!(kv.key, e["key"].as_str().unwrap(), "{file}");
            assert_eq!(
                kv.offset,
                e["offset"].as_u64().unwrap(),
                "{file} {}",
                kv.key
            );
            assert_eq!(kv.ty.id(), types[0], "{file} {}", kv.key);
            assert_eq!(
                kv.elem_ty.map(ValueType::id),
                types.get(1).copied(),
                "{file} {}",
                kv.key
            );
            let leaf = ValueType::from_id(*types.last().unwrap()).unwrap();
            let mut got = Vec::new();
            leaves(&kv.value, leaf, &mut got);
            let want = match &e["value"] {
                Value::Array(a) => a.clone(),
                v => vec![v.clone()],
            };
            assert_eq!(got, want, "{file} {}", kv.key);
        }
        let tensors = exp["tensors"].as_array().unwrap();
        assert_eq!(g.tensors.len(), tensors.len(), "{file}");
        for (t, e) in g.tensors.iter().zip(tensors) {
            assert_eq!(t.name, e["name"].as_str().unwrap());
            assert_eq!(
                u64::from(t.ty.0),
                e["type"].as_u64().unwrap(),
                "{file} {}",
                t.name
            );
            let dims: Vec<u64> = e["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            assert_eq!(t.dims, dims, "{file} {}", t.name);
            assert_eq!(t.elements(), e["n_elements"].as_u64().unwrap());
            assert_eq!(t.len, e["n_bytes"].as_u64().unwrap(), "{file} {}", t.name);
            assert_eq!(
                t.start,
                e["data_offset"].as_u64().unwrap(),
                "{file} {}",
                t.name
            );
        }
        // The shared layout: row-major shapes, plain types as dtypes.
        let layout = g.clone().into_layout();
        assert_eq!(layout.kind, format!("GGUF v{}", g.version));
        for (entry, t) in layout.entries.iter().zip(&g.tensors) {
            let mut rev = t.dims.clone();
            rev.reverse();
            assert_eq!(entry.shape, rev);
            match entry.ty {
                ElementType::Dtype(d) => assert_eq!(Some(d), t.ty.dtype()),
                ElementType::Ggml(ty) => assert!(ty == t.ty && t.ty.dtype().is_none()),
            }
        }
    }
}

#[test]
fn nested_arrays_keep_their_nesting() {
    let bytes = std::fs::read(fixtures().join("metadata.gguf")).unwrap();
    let layout = read(&bytes).unwrap();
    let nested = &layout
        .metadata
        .iter()
        .find(|(k, _)| k == "a.nested")
        .unwrap()
        .1;
    let arr = |v: &[i64]| MetaValue::Array(v.iter().map(|&i| MetaValue::Int(i)).collect());
    assert_eq!(
        *nested,
        MetaValue::Array(vec![arr(&[1, 2]), arr(&[3]), arr(&[4, 5, 6])])
    );
}

#[test]
fn every_value_dequantizes_as_gguf_py_does() {
    let mut covered = Vec::new();
    for (file, exp) in expected() {
        let Some(stem) = file.strip_suffix(".gguf") else {
            continue;
        };
        let Ok(want) = std::fs::read(fixtures().join(format!("{stem}.f32"))) else {
            continue;
        };
        let bytes = std::fs::read(fixtures().join(&file)).unwrap();
        let g = read_file(&bytes).unwrap();
        let mut at = 0;
        for (t, e) in g.tensors.iter().zip(exp["tensors"].as_array().unwrap()) {
            let raw = &bytes[t.start as usize..(t.start + t.len) as usize];
            let got = dequantize_to_vec(t.ty, raw).unwrap();
            assert_eq!(got.len() as u64, e["dequantized"].as_u64().unwrap());
            for (i, v) in got.iter().enumerate() {
                let w = f32::from_le_bytes(want[at..at + 4].try_into().unwrap());
                at += 4;
                assert!(
                    v.to_bits() == w.to_bits() || (v.is_nan() && w.is_nan()),
                    "{file} {} value {i}: {v:e} ({:#x}) != gguf-py {w:e} ({:#x})",
                    t.name,
                    v.to_bits(),
                    w.to_bits()
                );
            }
            covered.push(t.ty);
        }
        assert_eq!(at, want.len(), "{file}: values left over");
    }
    for ty in GgmlType::all().filter(|&t| can_dequantize(t)) {
        let untested = [
            GgmlType::Q8_1,
            GgmlType::Q8_K,
            GgmlType::F64,
            GgmlType::I8,
            GgmlType::I16,
        ]
        .into_iter()
        .chain([GgmlType::I32, GgmlType::I64]);
        assert!(
            covered.contains(&ty) || untested.clone().any(|u| u == ty),
            "{ty:?} has no fixture"
        );
    }
}

// ------------------------------------------------------------------ the malformed corpus

/// A hand-built GGUF file.
struct B(Vec<u8>);

impl B {
    fn new(version: u32, tensors: u64, kvs: u64) -> B {
        let mut b = B(b"GGUF".to_vec());
        b.u32(version).u64(tensors).u64(kvs);
        b
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn kv_u32(&mut self, key: &str, v: u32) -> &mut Self {
        self.str(key).u32(4).u32(v)
    }
    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> &mut Self {
        self.str(name).u32(dims.len() as u32);
        dims.iter().for_each(|&d| {
            self.u64(d);
        });
        self.u32(ty).u64(offset)
    }
    fn bytes(&self) -> Vec<u8> {
        self.0.clone()
    }
    /// Pads to the alignment and appends `n` data bytes.
    fn data(&mut self, align: usize, n: usize) -> Vec<u8> {
        let mut v = self.0.clone();
        v.resize(v.len().div_ceil(align) * align + n, 0);
        v
    }
}

fn err(bytes: &[u8]) -> GgufError {
    read(&bytes.to_vec()).unwrap_err()
}

#[test]
fn a_minimal_file_reads() {
    let f = B::new(3, 1, 1)
        .kv_u32("general.alignment", 16)
        .tensor("w", &[32, 2], 8, 0)
        .data(16, 68);
    let g = read_file(&f).unwrap();
    assert_eq!(
        (g.alignment, g.tensors[0].len, g.tensors[0].shape()),
        (16, 68, vec![2, 32])
    );
    let layout = read(&f).unwrap();
    assert_eq!(layout.entries[0].ty, ElementType::Ggml(GgmlType::Q8_0));
    assert_eq!(
        layout.metadata,
        vec![("general.alignment".into(), MetaValue::UInt(16))]
    );
    // A scalar (no dims) is one element.
    let f = B::new(2, 1, 0).tensor("s", &[], 0, 0).data(32, 4);
    assert_eq!(read_file(&f).unwrap().tensors[0].shape(), Vec::<u64>::new());
}

#[test]
fn bad_magic() {
    assert!(matches!(err(b"GGUX\x03\0\0\0"), GgufError::BadMagic { .. }));
    assert!(matches!(err(b"GG"), GgufError::BadMagic { .. }));
}

#[test]
fn version_1_and_unknown_versions() {
    assert!(matches!(
        err(&B::new(1, 0, 0).0),
        GgufError::UnsupportedVersion { version: 1 }
    ));
    assert!(matches!(
        err(&B::new(4, 0, 0).0),
        GgufError::UnsupportedVersion { version: 4 }
    ));
}

#[test]
fn big_endian() {
    let mut f = B::new(3, 0, 0).0;
    f[4..8].copy_from_slice(&3u32.to_be_bytes());
    assert!(matches!(err(&f), GgufError::BigEndian { version: 3 }));
}

#[test]
fn truncated_key_value() {
    let mut f = B::new(3, 0, 1).str("general.x").u32(4).bytes();
    f.extend_from_slice(&[1, 2]);
    assert!(matches!(err(&f), GgufError::Truncated { what: "u32", .. }));
    assert!(matches!(
        err(&f[..6]),
        GgufError::Truncated {
            what: "version",
            ..
        }
    ));
    assert!(matches!(
        err(&f[..10]),
        GgufError::Truncated {
            what: "tensor count",
            ..
        }
    ));
}

#[test]
fn string_longer_than_the_file() {
    let mut f = B::new(3, 0, 1).u64(1000).bytes();
    f.extend_from_slice(&[b'k'; 40]);
    assert!(matches!(
        err(&f),
        GgufError::StringTooLong { len: 1000, .. }
    ));
    let f = B::new(3, 0, 1).str("k").u32(8).u64(u64::MAX).bytes();
    assert!(matches!(err(&f), GgufError::StringTooLong { .. }));
}

#[test]
fn absurd_counts_fail_before_allocating() {
    assert!(matches!(
        err(&B::new(3, 1 << 60, 0).0),
        GgufError::TooManyTensors { .. }
    ));
    assert!(matches!(
        err(&B::new(3, 0, 1 << 60).0),
        GgufError::TooManyKeys { .. }
    ));
    let f = B::new(3, 0, 1).str("a").u32(9).u32(4).u64(1 << 60).bytes();
    assert!(matches!(err(&f), GgufError::ArrayTooLong { count, .. } if count == 1 << 60));
}

#[test]
fn unknown_value_type() {
    let f = B::new(3, 0, 1).str("a").u32(13).u32(0).bytes();
    assert!(matches!(
        err(&f),
        GgufError::UnknownValueType { id: 13, .. }
    ));
}

#[test]
fn arrays_nested_too_deep() {
    let mut b = B::new(3, 0, 1);
    b.str("deep").u32(9);
    for _ in 0..20 {
        b.u32(9).u64(1);
    }
    b.u32(0).u64(0);
    assert!(matches!(err(&b.0), GgufError::NestingTooDeep { .. }));
}

#[test]
fn duplicate_keys_and_names() {
    let f = B::new(3, 0, 2).kv_u32("k", 1).kv_u32("k", 2).bytes();
    assert!(matches!(err(&f), GgufError::DuplicateKey { .. }));
    let f = B::new(3, 2, 0)
        .tensor("w", &[8], 0, 0)
        .tensor("w", &[8], 0, 32)
        .data(32, 64);
    assert!(matches!(err(&f), GgufError::DuplicateTensor { tensor } if tensor == "w"));
}

#[test]
fn key_not_utf8() {
    let mut f = B::new(3, 0, 1).u64(2).bytes();
    f.extend_from_slice(&[0xff, 0xfe]);
    f.extend_from_slice(&[0, 0, 0, 0, 1]);
    assert!(matches!(
        err(&f),
        GgufError::InvalidUtf8 { what: "key", .. }
    ));
}

#[test]
fn bad_alignment() {
    for a in [0, 48] {
        let f = B::new(3, 0, 1).kv_u32("general.alignment", a).bytes();
        assert!(matches!(err(&f), GgufError::BadAlignment { alignment } if alignment == a));
    }
    let f = B::new(3, 0, 1)
        .str("general.alignment")
        .u32(10)
        .u64(32)
        .bytes();
    assert!(matches!(
        err(&f),
        GgufError::AlignmentType { ty: ValueType::U64 }
    ));
}

#[test]
fn too_many_dims() {
    let f = B::new(3, 1, 0)
        .tensor("w", &[1, 1, 1, 1, 1], 0, 0)
        .data(32, 4);
    assert!(matches!(err(&f), GgufError::TooManyDims { n_dims: 5, .. }));
}

#[test]
fn unknown_type_id() {
    for id in [4, 31, 1000] {
        let f = B::new(3, 1, 0).tensor("w", &[32], id, 0).data(32, 64);
        assert!(matches!(err(&f), GgufError::UnknownType { id: i, .. } if i == id));
    }
}

#[test]
fn first_dim_not_a_multiple_of_the_block() {
    let f = B::new(3, 1, 0).tensor("w", &[31, 2], 2, 0).data(32, 64);
    assert!(matches!(
        err(&f),
        GgufError::NotWholeBlocks {
            ne0: 31,
            block: 32,
            ..
        }
    ));
}

#[test]
fn sizes_that_overflow() {
    let f = B::new(3, 1, 0)
        .tensor("w", &[1 << 32, 1 << 32], 0, 0)
        .data(32, 0);
    assert!(matches!(err(&f), GgufError::SizeOverflow { .. }));
    let f = B::new(3, 1, 0).tensor("w", &[u64::MAX], 0, 0).data(32, 0);
    assert!(matches!(err(&f), GgufError::SizeOverflow { .. }));
}

#[test]
fn misaligned_offset() {
    let f = B::new(3, 1, 0).tensor("w", &[4], 0, 16).data(32, 64);
    assert!(matches!(
        err(&f),
        GgufError::Misaligned {
            offset: 16,
            alignment: 32,
            ..
        }
    ));
}

#[test]
fn offsets_out_of_the_file() {
    let f = B::new(3, 1, 0).tensor("w", &[4], 0, 1 << 40).data(32, 64);
    assert!(matches!(err(&f), GgufError::OutOfFile { .. }));
    let f = B::new(3, 1, 0)
        .tensor("w", &[4], 0, u64::MAX - 31)
        .data(32, 64);
    assert!(matches!(err(&f), GgufError::OutOfFile { .. }));
    // The data section ends one byte early.
    let f = B::new(3, 1, 0).tensor("w", &[16], 0, 0).data(32, 63);
    assert!(matches!(err(&f), GgufError::OutOfFile { .. }));
}

#[test]
fn overlapping_tensors() {
    let f = B::new(3, 2, 0)
        .tensor("a", &[16], 0, 0)
        .tensor("b", &[16], 0, 32)
        .data(32, 96);
    assert!(
        matches!(err(&f), GgufError::Overlap { ref first, ref second, .. } if first == "a" && second == "b")
    );
    // In any order, and empty tensors never overlap.
    let f = B::new(3, 3, 0)
        .tensor("b", &[8], 0, 64)
        .tensor("e", &[0], 0, 64)
        .tensor("a", &[8], 0, 0)
        .data(32, 96);
    assert!(read(&f).is_ok());
}

// ------------------------------------------------------------------ dequantization and stats

#[test]
fn dequantize_checks_its_arguments() {
    let mut out = [0f32; 32];
    assert_eq!(
        dequantize(GgmlType(4), &[0; 18], &mut out),
        Err(DequantError::UnknownType(4))
    );
    assert!(matches!(
        dequantize(GgmlType::Q4_0, &[0; 17], &mut out),
        Err(DequantError::PartialBlock { .. })
    ));
    assert!(matches!(
        dequantize(GgmlType::Q4_0, &[0; 36], &mut out),
        Err(DequantError::OutputLength {
            expected: 64,
            got: 32
        })
    ));
    assert_eq!(
        dequantize(GgmlType::Q1_0, &[0; 18], &mut [0.0; 128]),
        Err(DequantError::Unsupported("Q1_0"))
    );
    // Q8_K and Q8_1 (no gguf-py dequantizer): d · q.
    let mut b = vec![0u8; 292];
    b[..4].copy_from_slice(&0.5f32.to_le_bytes());
    b[4] = 0xFE;
    b[5] = 7;
    let v = dequantize_to_vec(GgmlType::Q8_K, &b).unwrap();
    assert_eq!((v[0], v[1], v[2]), (-1.0, 3.5, 0.0));
    let mut b = vec![0u8; 36];
    b[..2].copy_from_slice(&0x3800u16.to_le_bytes()); // 0.5
    b[4] = 0xFF;
    assert_eq!(dequantize_to_vec(GgmlType::Q8_1, &b).unwrap()[0], -0.5);
}

#[test]
fn half_precision_converts_exactly() {
    use super::dequant::f16_to_f32 as h;
    assert_eq!(h(0x3C00), 1.0);
    assert_eq!(h(0xC000), -2.0);
    assert_eq!(h(0x7BFF), 65504.0);
    assert_eq!(h(0x0001), 2f32.powi(-24));
    assert_eq!(h(0x8000).to_bits(), (-0.0f32).to_bits());
    assert_eq!(h(0x7C00), f32::INFINITY);
    assert!(h(0x7E00).is_nan());
    assert_eq!(h(0x03FF), 1023.0 * 2f32.powi(-24));
}

#[test]
fn block_parts_of_q4_0_blocks() {
    // Two Q4_0 blocks: d = 1 and d = 0.25; codes 0..16 twice, then all 8.
    let mut bytes = vec![0u8; 36];
    bytes[..2].copy_from_slice(&0x3C00u16.to_le_bytes());
    for j in 0..16 {
        bytes[2 + j] = (j as u8) | ((j as u8) << 4);
    }
    bytes[18..20].copy_from_slice(&0x3400u16.to_le_bytes());
    bytes[20..36].fill(0x88);
    assert_eq!(
        block_scales(GgmlType::Q4_0, &bytes).unwrap(),
        vec![1.0, 0.25]
    );
    let codes = quant_codes(GgmlType::Q4_0, &bytes).unwrap();
    assert_eq!(&codes[..4], &[0, 1, 2, 3]);
    assert_eq!(code_bits(GgmlType::IQ2_XXS), None);
}

#[test]
fn block_parts_cover_the_main_families_with_in_range_codes() {
    let mut rng = 12345u64;
    for ty in GgmlType::all().filter(|&t| code_bits(t).is_some()) {
        let n = ty.block_bytes().unwrap() as usize * 3;
        let bytes: Vec<u8> = (0..n)
            .map(|_| {
                rng = rng
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (rng >> 56) as u8
            })
            .collect();
        let bits = code_bits(ty).unwrap();
        let codes = quant_codes(ty, &bytes).unwrap();
        assert_eq!(
            codes.len() as u64,
            3 * u64::from(ty.block_elems().unwrap()),
            "{ty:?}"
        );
        assert!(codes.iter().all(|&c| u32::from(c) < 1 << bits), "{ty:?}");
    }
}
