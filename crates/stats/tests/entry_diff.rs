//! `entry::entry_diff` against independent computations: lockstep windows of deflated `.npz`
//! members and PyTorch views give the flip statistics of the whole materialised tensors, and the
//! dequantized differences of GGUF tensors match those computed from gguf-py's `dequantize` output
//! (the `.f32` references of tests/fixtures/gguf).

#![allow(clippy::unwrap_used)]

use bitlens_stats::entry::entry_diff;
use bitlens_stats::FlipAccumulator;
use bitlens_tensors::format::bytes::{self, BytesError};
use bitlens_tensors::format::{self, Data, ElementType, Entry};

fn fixture(path: &str) -> Vec<u8> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/");
    std::fs::read(format!("{root}{path}")).unwrap()
}

/// The whole tensor's bytes in element order.
fn materialise(file: &[u8], e: &Entry) -> Vec<u8> {
    let mut out = Vec::new();
    bytes::for_each_window::<_, BytesError>(&file, e, 1 << 20, |w| {
        out.extend_from_slice(w);
        Ok(())
    })
    .unwrap();
    out
}

/// Both files' tensors pairwise, diffed in windows of several sizes, against one `update` of the
/// whole materialised tensors; returns how many pairs changed.
fn check_pairs(a_name: &str, b_name: &str, kind: fn(&Data) -> bool) -> (usize, usize) {
    let (fa, fb) = (fixture(a_name), fixture(b_name));
    let (la, lb) = (format::open(&fa).unwrap(), format::open(&fb).unwrap());
    let (mut of_kind, mut changed) = (0, 0);
    for (ea, eb) in la.entries.iter().zip(&lb.entries) {
        assert_eq!(ea.name, eb.name);
        let ElementType::Dtype(dtype) = ea.ty else {
            panic!("plain dtypes only")
        };
        of_kind += usize::from(kind(&ea.data) && kind(&eb.data));
        let (ba, bb) = (materialise(&fa, ea), materialise(&fb, eb));
        let mut whole = FlipAccumulator::new(dtype, ba.len() as u64);
        whole.update(&ba, &bb).unwrap();
        let want = whole.finish().unwrap();
        for window in [1, 7, 64, 4096, 1 << 20] {
            let mut seen = 0;
            let got = entry_diff((&fa, ea), (&fb, eb), window, |n| seen += n).unwrap();
            assert_eq!(got.flips, want, "{}: window {window}", ea.name);
            assert_eq!(got.dequantized, None);
            assert_eq!(seen, 2 * ba.len() as u64);
        }
        changed += usize::from(want.changed_lanes > 0);
    }
    (of_kind, changed)
}

#[test]
fn deflated_npz_members_are_diffed_in_lockstep_windows() {
    let deflated = |d: &Data| matches!(d, Data::Deflated { .. });
    let (n, changed) = check_pairs(
        "numpy/minilm_compressed.npz",
        "numpy/minilm_compressed_b.npz",
        deflated,
    );
    assert!(n >= 13, "{n} deflated pairs");
    assert!(changed >= 13, "{changed} changed pairs");
}

#[test]
fn torch_views_are_diffed_in_lockstep_windows() {
    let strided = |d: &Data| matches!(d, Data::Strided { .. });
    let (n, changed) = check_pairs("torch/views.pt", "torch/views_b.pt", strided);
    assert_eq!(n, 2, "transposed and column are views");
    assert!(changed >= 3, "{changed} changed pairs");
    // A view against a plain range of the same bytes: the legacy file stores `base` as a range.
    let (n, changed) = check_pairs("torch/views_b.pt", "torch/views_b.pt", strided);
    assert_eq!((n, changed), (2, 0));
}

#[test]
fn tensors_of_different_lengths_are_refused() {
    let file = fixture("torch/views.pt");
    let layout = format::open(&file).unwrap();
    let get = |n: &str| layout.entries.iter().find(|e| e.name == n).unwrap();
    let r = entry_diff((&file, get("base")), (&file, get("column")), 64, |_| {});
    assert!(r.is_err());
}

/// The reference differences of two equal-length runs of gguf-py's dequantized values.
struct Reference {
    changed: u64,
    nonfinite: u64,
    max_abs: f64,
    mean_abs: f64,
    rel_l2: Option<f64>,
}

fn reference(a: &[f32], b: &[f32]) -> Reference {
    let (mut changed, mut nonfinite, mut max_abs, mut sum_abs, mut sq_d, mut sq_a) =
        (0u64, 0u64, 0f64, 0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        // Changed: unequal values, except the same NaN bit pattern on both sides.
        changed += u64::from(x != y && x.to_bits() != y.to_bits());
        if !x.is_finite() || !y.is_finite() {
            nonfinite += 1;
            continue;
        }
        let d = (f64::from(y) - f64::from(x)).abs();
        max_abs = max_abs.max(d);
        sum_abs += d;
        sq_d += d * d;
        sq_a += f64::from(x) * f64::from(x);
    }
    let finite = (a.len() as u64 - nonfinite).max(1) as f64;
    Reference {
        changed,
        nonfinite,
        max_abs,
        mean_abs: sum_abs / finite,
        rel_l2: (sq_a > 0.0).then(|| (sq_d / sq_a).sqrt()),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-30)
}

#[test]
fn dequantized_differences_match_gguf_py_dequantize() {
    let expected: serde_json::Value =
        serde_json::from_slice(&fixture("gguf/expected.json")).unwrap();
    let mut checked = 0;
    for (name, want) in expected.as_object().unwrap() {
        let stem = name.trim_end_matches(".gguf");
        let Ok(refs) = std::fs::read(format!(
            "{}/../../tests/fixtures/gguf/{stem}.f32",
            env!("CARGO_MANIFEST_DIR")
        )) else {
            continue; // metadata.gguf, v2.gguf
        };
        let refs: Vec<f32> = refs
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let file = fixture(&format!("gguf/{name}"));
        let layout = format::open(&file).unwrap();
        let mut at = 0usize; // first reference value of the tensor
        for (e, w) in layout
            .entries
            .iter()
            .zip(want["tensors"].as_array().unwrap())
        {
            let n = w["dequantized"].as_u64().unwrap() as usize;
            let ElementType::Ggml(ty) = e.ty else {
                at += n; // F32 / F16 / BF16: plain dtypes, compared as such
                continue;
            };
            let Data::Range { offset, len } = e.data else {
                panic!("{name}: GGUF tensors are ranges")
            };
            let (bb, be) = (
                u64::from(ty.block_bytes().unwrap()),
                ty.block_elems().unwrap() as usize,
            );
            let blocks = len / bb;
            if blocks < 2 {
                at += n;
                continue;
            }
            // A: the first half of the tensor's blocks; B: the next as many blocks.
            let half = blocks / 2;
            let side = |start: u64| Entry {
                name: e.name.clone(),
                ty: e.ty,
                shape: vec![half * be as u64],
                data: Data::Range {
                    offset: offset + start * bb,
                    len: half * bb,
                },
            };
            let (ea, eb) = (side(0), side(half));
            let k = half as usize * be;
            let want = reference(&refs[at..at + k], &refs[at + k..at + 2 * k]);
            for window in [1, bb as usize * 3 + 5, 1 << 20] {
                let got = entry_diff((&file, &ea), (&file, &eb), window, |_| {})
                    .unwrap()
                    .dequantized
                    .unwrap_or_else(|| panic!("{name}: {} dequantizes", e.name));
                let ctx = format!("{name} {} window {window}", e.name);
                assert_eq!(got.values, k as u64, "{ctx}");
                assert_eq!(got.changed, want.changed, "{ctx}");
                assert_eq!(got.nonfinite, want.nonfinite, "{ctx}");
                assert!(close(got.max_abs_diff, want.max_abs), "{ctx}");
                assert!(close(got.mean_abs_diff, want.mean_abs), "{ctx}");
                match (got.relative_l2, want.rel_l2) {
                    (Some(g), Some(w)) => assert!(close(g, w), "{ctx}: {g} vs {w}"),
                    (g, w) => assert_eq!(g, w, "{ctx}"),
                }
            }
            checked += 1;
            at += n;
        }
        assert_eq!(
            at,
            refs.len(),
            "{name}: every reference value accounted for"
        );
    }
    assert!(checked >= 25, "checked {checked} tensors");
}

#[test]
fn a_quantized_tensor_against_itself_changes_nothing() {
    let file = fixture("gguf/q4_k.gguf");
    let layout = format::open(&file).unwrap();
    for e in &layout.entries {
        let d = entry_diff((&file, e), (&file, e), 1000, |_| {}).unwrap();
        assert_eq!(d.flips.changed_lanes, 0);
        let v = d.dequantized.unwrap();
        assert_eq!((v.changed, v.max_abs_diff), (0, 0.0));
        assert!(v.relative_l2.is_none_or(|r| r == 0.0));
    }
}
