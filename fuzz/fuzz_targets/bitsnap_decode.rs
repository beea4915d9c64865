//! BitSnap: arbitrary bytes as a delta or a quantized stream give a typed error or a result of the
//! requested length (the cluster table reader a table of 1..=16 clusters); arbitrary base/new
//! pairs round-trip exactly through the delta codec.
#![no_main]

use bitlens_codecs::bitsnap::{decode_delta, decode_quant, encode_delta, encode_quant, quant_table, Clusters};
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::Width;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let expected = usize::from(selector) * 29 % 7000;
    let base = vec![7u8; expected];
    if let Ok(out) = decode_delta(rest, &base) {
        assert_eq!(out.len(), expected);
    }
    if let Ok(out) = decode_quant(rest, expected) {
        assert_eq!(out.len(), expected);
    }
    if let Ok(table) = quant_table(rest) {
        assert!((1..=16).contains(&table.len()));
    }
    let half = rest.len() / 2;
    let (new, old) = (&rest[..half], &rest[half..2 * half]);
    let width = [Width::W1, Width::W2, Width::W4, Width::W8][usize::from(selector % 4)];
    let packed = encode_delta(new, old, width, selector & 4 != 0);
    assert_eq!(decode_delta(&packed, old).unwrap(), new);
    let format = [FloatFormat::Bf16, FloatFormat::F16, FloatFormat::F32][usize::from(selector % 3)];
    let packed = encode_quant(rest, format, Clusters::new(1 + usize::from(selector % 16)).unwrap());
    assert_eq!(decode_quant(&packed, rest.len()).unwrap().len(), rest.len());
});
