//! The dequantized-value statistics of a quantized tensor ([`QuantAccumulator`]: values straight
//! from the dequantizer into `DequantValues`) against the straightforward path: an `F32`
//! [`Accumulator`] fed the same values as bytes. Bit for bit, on the real blocks of the gguf-py
//! fixtures (their values as the kernels give them, which are gguf-py's `dequantize`,
//! tests/fixtures/gguf/*.f32, up to the sign of a NaN) and on
//! adversarial blocks of every block type (random codes; zero, negative zero, subnormal, largest,
//! infinite and NaN scales), across 65 536-value blocks and in windows of any size.

#![allow(clippy::unwrap_used)]

use bitlens_stats::{Accumulator, QuantAccumulator, QuantStats, QuantSummary, TensorStats};
use bitlens_tensors::format::gguf::{can_dequantize, dequantize_to_vec};
use bitlens_tensors::format::{self, Data, ElementType, GgmlType};
use bitlens_tensors::Dtype;

/// The `F32` accumulator's statistics of `values`.
fn straightforward(values: &[f32]) -> TensorStats {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut acc = Accumulator::new(Dtype::F32, bytes.len() as u64);
    acc.update(&bytes).unwrap();
    acc.finish().unwrap()
}

/// Checks `blocks` of `ty` in windows of `window` bytes against the straightforward path over
/// `values`.
fn check(ty: GgmlType, blocks: &[u8], values: &[f32], window: usize, what: &str) {
    let mut acc = QuantAccumulator::new(ty, blocks.len() as u64).unwrap();
    for w in blocks.chunks(window.max(1)) {
        acc.update(w).unwrap();
    }
    let stats = acc.finish().unwrap();
    check_quant(ty, blocks, stats.quant.as_ref(), what);
    let got = stats.dequantized.unwrap();
    let want = straightforward(values);
    // Debug strings: NaN-free fields compared bit for bit (f64 Debug prints the shortest string
    // that reads back to the same bits).
    assert_eq!(
        format!("{:?}", got.values),
        format!("{:?}", want.values),
        "{what}: values"
    );
    assert_eq!(got.float, want.float, "{what}: float");
    assert_eq!(got.exponent_entropy, want.exponent_entropy, "{what}");
}

/// Checks the scales and codes the accumulator reports (codes counted from the raw bytes, out of
/// dequantization or from the blocks taken apart, by type) against [`QuantStats::add`] over the
/// whole blocks at once. The scales' mean is a sum in another order: equal to 1e-12.
fn check_quant(ty: GgmlType, blocks: &[u8], got: Option<&QuantSummary>, what: &str) {
    let Some(mut want) = QuantStats::new(ty) else {
        assert!(got.is_none(), "{what}: no codes for a grid type");
        return;
    };
    want.add(blocks).unwrap();
    let want = QuantSummary::of(&want);
    let got = got.unwrap();
    assert_eq!(got.code_hist, want.code_hist, "{what}: codes");
    assert_eq!(got.code_entropy, want.code_entropy, "{what}: code entropy");
    assert_eq!(got.scale_hist, want.scale_hist, "{what}: scale histogram");
    assert_eq!(
        (got.blocks, got.scales, got.scale_min, got.scale_max),
        (want.blocks, want.scales, want.scale_min, want.scale_max),
        "{what}: scales"
    );
    assert_eq!(
        (got.scale_zero, got.scale_negative, got.scale_nonfinite),
        (want.scale_zero, want.scale_negative, want.scale_nonfinite),
        "{what}: odd scales"
    );
    match (got.scale_mean, want.scale_mean) {
        (Some(a), Some(b)) => assert!((a - b).abs() <= 1e-12 * b.abs().max(1e-30), "{what}"),
        (a, b) => assert_eq!(a, b, "{what}: scale mean"),
    }
}

#[test]
fn real_blocks_give_the_statistics_of_gguf_py_s_values() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/gguf");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let Ok(refs) = std::fs::read(path.with_extension("f32")) else {
            continue; // metadata.gguf, v2.gguf
        };
        if path.extension().is_none_or(|e| e != "gguf") {
            continue;
        }
        let refs: Vec<f32> = refs
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let file = std::fs::read(&path).unwrap();
        let layout = format::open(&file).unwrap();
        let mut at = 0;
        for e in &layout.entries {
            let n = e.shape.iter().product::<u64>() as usize;
            let values = &refs[at..at + n];
            at += n;
            let (ElementType::Ggml(ty), Data::Range { offset, len }) = (e.ty, &e.data) else {
                continue;
            };
            let blocks = &file[*offset as usize..(*offset + *len) as usize];
            // The values the fast path sees are the kernel's: gguf-py's bit for bit except the
            // sign of a NaN, which IEEE 754 leaves open for a product (the kernels' `x · ±1`
            // may compile to a sign flip) and which the sign histogram counts.
            let mine = dequantize_to_vec(ty, blocks).unwrap();
            for (i, (a, b)) in mine.iter().zip(values).enumerate() {
                assert!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    "{path:?} {} value {i}: {a} against gguf-py's {b}",
                    e.name
                );
            }
            for window in [1, 13, blocks.len()] {
                check(ty, blocks, &mine, window, &format!("{path:?} {}", e.name));
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "{checked} quantized fixture tensors");
}

#[test]
fn adversarial_blocks_of_every_type_across_value_blocks() {
    // f16 bit patterns: zero, -0, subnormals, the largest, ±Inf, NaN, ordinary.
    let specials: [u16; 9] = [
        0, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0x7C00, 0xFC00, 0x7E00, 0x2E66,
    ];
    let mut checked = 0;
    for ty in GgmlType::all().filter(|&t| can_dequantize(t)) {
        let (bb, be) = (
            ty.block_bytes().unwrap() as usize,
            ty.block_elems().unwrap() as usize,
        );
        if be == 1 {
            continue; // plain types: not block-quantized
        }
        // A little over two 65 536-value blocks.
        let n_blocks = (2 * 65_536 + 5 * be) / be;
        let mut bytes = bitlens_test_support::rng::bytes(2_800 + u64::from(ty.0), n_blocks * bb);
        for (i, b) in bytes.chunks_mut(bb).enumerate() {
            // Most blocks get an ordinary first f16 field, every 7th a special one.
            let h = if i % 7 == 0 {
                specials[(i / 7) % specials.len()]
            } else {
                0x2E66
            };
            b[..2].copy_from_slice(&h.to_le_bytes());
        }
        let values = dequantize_to_vec(ty, &bytes).unwrap();
        for window in [bb * 1000 + 3, 1 << 20] {
            check(
                ty,
                &bytes,
                &values,
                window,
                &format!("{ty:?} window {window}"),
            );
        }
        checked += 1;
    }
    assert!(checked >= 25, "{checked} block types");
}
