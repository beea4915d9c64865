//! NeuZip: arbitrary bytes decode to a typed error or a result of the requested length (never a
//! panic, hang or oversized allocation), and arbitrary floats round-trip losslessly.
#![no_main]

use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::neuzip::{self, Settings};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    // Decode garbage with a plausible expected length taken from the input itself, and with the
    // length its header declares (capped; every tail length), so mutations get past the length
    // check into the exponent and field decoding.
    let expected = usize::from(selector) * 37 % 9000;
    if let Ok(out) = neuzip::decode(rest, expected) {
        assert_eq!(out.len(), expected);
    }
    if let Ok(h) = neuzip::read_header(rest) {
        let w = h.settings.format().width();
        let n = (h.values as usize).min(1 << 16) * w;
        for tail in 0..w {
            if let Ok(out) = neuzip::decode(rest, n + tail) {
                assert_eq!(out.len(), n + tail);
            }
        }
    }
    // Round trip: lossless is exact; lossy keeps the length.
    let format = [FloatFormat::Bf16, FloatFormat::F16, FloatFormat::F32][usize::from(selector % 3)];
    let packed = neuzip::encode(rest, &Settings::lossless(format));
    assert_eq!(neuzip::decode(&packed, rest.len()).unwrap(), rest);
    let k = [0, 1, 3][usize::from(selector / 3 % 3)];
    let lossy = Settings::lossy(format, k, 32 << (selector % 5)).unwrap();
    let packed = neuzip::encode(rest, &lossy);
    assert_eq!(neuzip::decode(&packed, rest.len()).unwrap().len(), rest.len());
});
