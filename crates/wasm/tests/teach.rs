//! The teaching lessons' API run as WebAssembly (in node, by `wasm-bindgen-test-runner`): every
//! result is the core crates' result as JSON, a flipped bit gives the value the IEEE bit layout
//! gives, the Huffman blocks' sizes add up to the real LMC and PLMC streams of the tensor, and
//! the rANS trace is the coder's block and decodes back to its input, and the lossy survey is the
//! core's, every setting within its bound.
#![cfg(target_arch = "wasm32")]
// clippy does not see #[wasm_bindgen_test] functions as tests: let them unwrap as tests do.
#![allow(clippy::unwrap_used)]

use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::lmc::{self, Params, Width};
use bitlens_codecs::{plmc, rans};
use bitlens_lessons::anatomy::{self, Format, Overflow};
use bitlens_lessons::rans::{exponents, trace};
use bitlens_lessons::{huffman, lossy};
use bitlens_test_support::rng::xorshift;
use bitlens_wasm::teach::{
    teach_block_bytes, teach_decompose, teach_encode, teach_encode_all, teach_exponents,
    teach_flip, teach_huffman_block, teach_huffman_tables, teach_lossy_survey, teach_rans_trace,
};
use serde_json::Value;
use wasm_bindgen_test::wasm_bindgen_test;

fn json(s: String) -> Value {
    serde_json::from_str(&s).unwrap()
}

/// The JSON text is the core result's (compared as text: it must be exact, and serde_json
/// parses floats back only to within an ulp).
fn same<T: serde::Serialize>(got: String, want: &T) {
    assert_eq!(got, serde_json::to_string(want).unwrap());
}

/// A JSON array of bytes.
fn byte_list(v: &Value) -> Vec<u8> {
    let list = v.as_array().unwrap();
    list.iter().map(|b| b.as_u64().unwrap() as u8).collect()
}

/// `n` bf16 elements shaped like weights: a narrow exponent range, noisy mantissas.
fn bf16_tensor(n: usize) -> Vec<u8> {
    let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
    (0..n)
        .flat_map(|_| {
            let r = next();
            let bits = (0x3C00u16 + ((r >> 40) as u16 & 0x03FF)) | (((r & 1) as u16) << 15);
            bits.to_le_bytes()
        })
        .collect()
}

#[wasm_bindgen_test]
fn float_anatomy_is_the_core_result() {
    for (name, f) in [
        ("f32", Format::F32),
        ("bf16", Format::Bf16),
        ("f16", Format::F16),
        ("e4m3", Format::E4m3),
        ("F8_E5M2", Format::E5m2),
    ] {
        for bits in [0, 1, 0x3C, 0x3F80, 0x7F80_0000, 0xFFFF_FFFF] {
            same(
                teach_decompose(name, bits).unwrap(),
                &anatomy::decompose(bits, f),
            );
        }
        for v in [0.1, -3.5, 1e-40, 1e6, f64::INFINITY] {
            for sat in [false, true] {
                let o = if sat {
                    Overflow::Saturating
                } else {
                    Overflow::NonSaturating
                };
                same(
                    teach_encode(name, v, sat).unwrap(),
                    &anatomy::encode(v, f, o),
                );
            }
        }
        same(
            teach_flip(name, 0x3C, 2).unwrap(),
            &anatomy::flip_bit(0x3C, 2, f).unwrap(),
        );
        assert!(teach_flip(name, 0, f.bits()).is_err());
    }
    let all = json(teach_encode_all(448.5, false).unwrap());
    assert_eq!(all.as_array().unwrap().len(), 5);
    assert_eq!(
        all[3]["decomposed"]["value"], 448.0,
        "e4m3 rounds 448.5 down"
    );
    assert!(teach_decompose("f64", 0).is_err());
}

#[wasm_bindgen_test]
fn a_flipped_bit_gives_the_value_of_the_ieee_layout() {
    // bf16 is the top half of an f32, and f32 is the machine's own. The JSON is the core
    // result's, and the core's value is exactly the f32's.
    for bits in [0x3F80u32, 0x4049, 0xC2F7, 0x0001, 0x7F7F] {
        for bit in 0..16 {
            let core = anatomy::flip_bit(bits, bit, Format::Bf16).unwrap();
            same(teach_flip("bf16", bits, bit).unwrap(), &core);
            let want = f32::from_bits((bits ^ (1 << bit)) << 16);
            if want.is_nan() {
                assert!(core.after.value.is_nan());
            } else {
                assert_eq!(core.after.value, f64::from(want));
            }
        }
    }
    // JSON has no NaN or ∞ (the value is null): the class says which.
    let v = json(teach_flip("bf16", 0x3F80, 14).unwrap());
    assert_eq!(v["after"]["class"], "infinity");
    assert!(v["after"]["value"].is_null());
    let v = json(teach_flip("f32", 1.5f32.to_bits(), 23).unwrap());
    assert_eq!(v["after"]["value"], 0.75);
    assert_eq!(v["field"], "exponent");
    // f16 1.0 = 0x3C00; its top exponent bit flipped: 0x7C00 = +∞.
    let v = json(teach_flip("f16", 0x3C00, 14).unwrap());
    assert_eq!(v["after"]["class"], "infinity");
}

#[wasm_bindgen_test]
fn huffman_blocks_add_up_to_the_tensors_lmc_and_plmc_streams() {
    let data = bf16_tensor(300_000);
    let params = Params::new(Width::W2);
    let b = params.block_bytes();
    assert_eq!(teach_block_bytes("BF16").unwrap(), b as f64);
    assert_eq!(teach_block_bytes("F32").unwrap(), 65536.0);
    let e = data.len() / 2;
    let mut blocks = 0;
    let mut total = 1; // the layout byte
    let mut per_group = [0usize; 2];
    for r in (0..e).step_by(b) {
        let len = b.min(e - r);
        for (g, sum) in per_group.iter_mut().enumerate() {
            let v = json(teach_huffman_block(&data, "BF16", g, r as f64, len as f64, 12).unwrap());
            let coded = v["encoder"]["coded_bytes"].as_u64().unwrap() as usize;
            assert_eq!(
                v["encoder"]["explained_bytes"].as_u64().unwrap() as usize,
                coded
            );
            assert_eq!(v["len"].as_u64().unwrap() as usize, len);
            total += coded;
            *sum += coded;
            blocks += 1;
        }
    }
    assert_eq!(blocks, 6);
    let stream = lmc::encode(&data, &params);
    assert_eq!(total, stream.len(), "the blocks are the whole LMC stream");
    // One segment: the PLMC stream is a 24-byte header, one 8-byte table entry and this stream.
    let p = plmc::encode(&data, Width::W2, &plmc::Options::default());
    assert_eq!(p.len(), 24 + 8 + stream.len());
    assert!(p.ends_with(&stream));
    // The table comparison counts the same encoder bytes per group.
    for (g, &sum) in per_group.iter().enumerate() {
        let c = json(teach_huffman_tables(&data, "BF16", g, 0).unwrap());
        assert_eq!(c["encoder_bytes"].as_u64().unwrap() as usize, sum);
        assert_eq!(c["block_bytes"].as_u64().unwrap() as usize, b);
    }
    // The same block explained by the core crate directly.
    let group = huffman::group_bytes(&data, Width::W2, params.transform, 1).unwrap();
    same(
        teach_huffman_block(&data, "BF16", 1, 0.0, 65536.0, 5).unwrap(),
        &huffman::explain_block(&group[..65536], 12, 5).unwrap(),
    );
}

#[wasm_bindgen_test]
fn bad_huffman_requests_are_errors() {
    let data = bf16_tensor(1000);
    assert!(teach_huffman_block(&data, "BF16", 2, 0.0, 10.0, 4).is_err());
    assert!(teach_huffman_block(&data, "BF16", 0, 990.0, 20.0, 4).is_err());
    assert!(teach_huffman_block(&data, "BF16", 0, 0.0, 0.0, 4).is_err());
    assert!(teach_huffman_block(&data, "BF16", 0, -1.0, 10.0, 4).is_err());
    assert!(teach_huffman_block(&data, "XX", 0, 0.0, 10.0, 4).is_err());
    assert!(teach_huffman_tables(&data, "BF16", 0, 3).is_err());
    // 1-byte types have one group.
    assert!(teach_huffman_block(&data, "U8", 0, 0.0, 2000.0, 4).is_ok());
    assert!(teach_huffman_block(&data, "U8", 1, 0.0, 10.0, 4).is_err());
}

#[wasm_bindgen_test]
fn the_rans_trace_is_the_coders_block_and_decodes_back() {
    let data = bf16_tensor(5000);
    let exps = teach_exponents(&data, "BF16", 1000).unwrap();
    assert_eq!(exps, exponents(&data, FloatFormat::Bf16, 1000));
    assert_eq!(exps.len(), 1000);
    let t = json(teach_rans_trace(&exps).unwrap());
    let mut block = Vec::new();
    rans::encode_block(&exps, &mut block);
    assert_eq!(byte_list(&t["bytes"]), block);
    let decoded = byte_list(&t["decoded"]);
    assert_eq!(decoded, exps);
    assert_eq!(t["encode"].as_array().unwrap().len(), 1000);
    same(teach_rans_trace(&exps).unwrap(), &trace(&exps).unwrap());
    assert!(teach_rans_trace(&[]).is_err());
    assert!(teach_exponents(&data, "I32", 10).is_err());
}

/// The lossy survey is the core's (as JSON text), holds every offered setting, and each
/// measured maximum is within its bound; a dtype without a float format is refused.
#[wasm_bindgen_test]
fn lossy_survey_is_the_core_result_within_its_bounds() {
    let data = bf16_tensor(5000);
    let got = teach_lossy_survey(&data, "BF16").unwrap();
    let want = lossy::survey(&data, FloatFormat::Bf16).unwrap();
    same(got.clone(), &want);
    let v = json(got);
    assert_eq!(v["neuzip"].as_array().unwrap().len(), 15);
    assert_eq!(v["bitsnap"].as_array().unwrap().len(), 5);
    for m in want.all() {
        assert!(m.measured_max() <= m.bound, "{:?}", m.setting);
    }
    assert!(teach_lossy_survey(&data, "I32").is_err());
}
