//! PLMC / LMC decoders on arbitrary bytes (must return, never panic, hang or over-allocate), and
//! arbitrary input round-tripping through encode/decode.
#![no_main]

use bitlens_codecs::{lmc, plmc, Options, Params, Transform, Width};
use libfuzzer_sys::fuzz_target;

const WIDTHS: [Width; 4] = [Width::W1, Width::W2, Width::W4, Width::W8];
/// Largest output the target lets a decoder produce.
const CAP: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // 1. The PLMC decoder on the raw input. The expected length is the one the header declares
    //    (so the fuzzer can get past the length check into the payload), capped.
    let declared = data
        .get(8..16)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .unwrap_or(data.len() as u64);
    let expected = declared.min(CAP) as usize;
    if let Ok(out) = plmc::decode(data, expected) {
        assert_eq!(out.len(), expected);
        // A stream that decodes is canonical enough to decode the same way single-threaded.
        let mut again = vec![0u8; expected];
        plmc::decode_into_with_threads(data, &mut again, Some(1)).unwrap();
        assert_eq!(again, out);
    }

    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };

    // 2. A bare LMC stream (block level, no PLMC header to get right): parameters from the
    //    control byte, output length from the next two bytes.
    if rest.len() >= 2 {
        let len = u16::from_le_bytes([rest[0], rest[1]]) as usize;
        let params = Params {
            width: WIDTHS[(ctl & 3) as usize],
            transform: if ctl & 4 != 0 { Transform::SignRotate } else { Transform::None },
            block_log2: 12,
            code_limit: 12,
        };
        let mut out = vec![0u8; len];
        let _ = lmc::decode_into(&rest[2..], &params, &mut out);
    }

    // 3. Round trip of the input itself under options chosen by the control byte.
    let opts = Options {
        segment_bytes: [7, 100, 4096, 1 << 20][((ctl >> 3) & 3) as usize],
        block_bytes: Some(4096 << ((ctl >> 5) & 1)),
        transform: if ctl & 0x40 != 0 { Transform::None } else { Transform::SignRotate },
        code_limit: 11 + (ctl >> 7),
        threads: Some(1),
    };
    let width = WIDTHS[(ctl & 3) as usize];
    let packed = plmc::encode(rest, width, &opts);
    let back = plmc::decode(&packed, rest.len()).expect("own stream must decode");
    assert!(back == rest, "round trip differs");
});
