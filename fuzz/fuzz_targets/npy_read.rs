//! Arbitrary bytes as a `.npy`: the reader returns a typed error or one entry whose bytes lie in
//! the file and match its shape and element type — never a panic, a hang or an allocation beyond
//! the header's bounded size.
#![no_main]

use bitlens_tensors::format::{npy, Data, ElementType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = npy::literal::parse(&String::from_utf8_lossy(data));
    let src = data.to_vec();
    let Ok(layout) = npy::read(&src) else { return };
    let [entry] = layout.entries.as_slice() else {
        panic!("one entry")
    };
    let ElementType::Dtype(dtype) = entry.ty else {
        panic!("a plain dtype")
    };
    let elements: u64 = entry.shape.iter().product();
    let (offset, len) = match &entry.data {
        Data::Range { offset, len } | Data::Strided { offset, len, .. } => (*offset, *len),
        Data::Deflated { .. } => panic!("a .npy is not deflated"),
    };
    assert_eq!(len, elements * u64::from(dtype.bits() / 8));
    assert!(offset + len <= src.len() as u64);
});
