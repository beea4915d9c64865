//! `bg4-lz4` (the hub's Xet chunks, `bitlens_peers::xet`): arbitrary bytes decode to a typed error
//! or to chunks within the format's bounds (never a panic, hang or oversized allocation), and
//! arbitrary bytes stored by the encoder come back exactly.
#![no_main]

use bitlens_peers::xet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    if xet::decompress_into(data, &mut out).is_ok() {
        // Each 8-byte header restores at most one maximum chunk.
        assert!(out.len() <= data.len() / xet::chunk::HEADER_LEN * xet::chunker::MAX_CHUNK);
        // What decodes re-encodes and decodes to itself.
        let mut again = Vec::new();
        xet::compress_into(&out, &mut again).unwrap();
        let mut back = Vec::new();
        xet::decompress_into(&again, &mut back).unwrap();
        assert_eq!(back, out);
    }
    let mut packed = Vec::new();
    xet::compress_into(data, &mut packed).unwrap();
    xet::decompress_into(&packed, &mut out).unwrap();
    assert_eq!(out, data);
});
