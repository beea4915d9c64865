//! Arbitrary bytes as a safetensors file: the header parser must return a typed error or a header
//! that satisfies every validation rule — never panic, hang or over-allocate.
#![no_main]

use bitlens_tensors::{read_header, Header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The same bytes as a whole file, and as the prefix of a file that is larger than what was read.
    for file_size in [data.len() as u64, data.len() as u64 + 1 + u64::from(data.first().copied().unwrap_or(0))] {
        if let Ok(h) = Header::parse(data, file_size) {
            let mut expected = 0;
            for t in &h.tensors {
                assert_eq!(t.data_offsets.0, expected);
                expected = t.data_offsets.1;
                assert_eq!(t.elements() * u64::from(t.dtype.bits()), 8 * t.byte_len());
            }
            assert_eq!(h.data_start() + expected, file_size);
        }
    }
    let via_source = read_header(&data.to_vec());
    assert_eq!(via_source.is_ok(), Header::parse(data, data.len() as u64).is_ok());
});
