//! Arbitrary bytes as a PyTorch checkpoint (zip or legacy; bytes that start with neither get
//! torch's three legacy header pickles in front, so the fuzzer reaches the object pickle): the
//! reader must return a typed error or a layout whose every tensor lies inside the file — never
//! panic, hang or over-allocate.
#![no_main]

use bitlens_tensors::format::{pytorch, Data, ElementType};
use libfuzzer_sys::fuzz_target;

/// Magic number, protocol version 1001 and `{'protocol_version': 1001, 'little_endian': True}`.
const LEGACY_PREFIX: &[u8] = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02M\xe9\x03.\x80\x02}(\x8c\x10protocol_versionM\xe9\x03\x8c\x0dlittle_endian\x88u.";

fuzz_target!(|data: &[u8]| {
    let file = if data.starts_with(b"PK") || data.starts_with(LEGACY_PREFIX) {
        data.to_vec()
    } else {
        [LEGACY_PREFIX, data].concat()
    };
    let Ok(layout) = pytorch::read(&file) else {
        return;
    };
    let size = file.len() as u64;
    for e in &layout.entries {
        let ElementType::Dtype(dt) = e.ty else {
            panic!("torch tensors have dtypes")
        };
        let esize = u64::from(dt.bits() / 8);
        match &e.data {
            Data::Range { offset, len } => {
                assert!(offset + len <= size);
                assert_eq!(*len, e.shape.iter().product::<u64>() * esize);
            }
            Data::Strided {
                offset,
                len,
                storage_offset,
                strides,
            } => {
                assert!(offset + len <= size);
                let last: u64 = storage_offset
                    + e.shape
                        .iter()
                        .zip(strides)
                        .map(|(d, s)| (d - 1) * s)
                        .sum::<u64>();
                assert!((last + 1) * esize <= *len);
            }
            Data::Deflated { .. } => panic!("torch storages are stored"),
        }
    }
});
