//! Arbitrary bytes as a zip: opening, locating every member's data and inflating it must return
//! a typed error or bytes that obey the archive's own declarations — never panic, hang, or
//! allocate beyond what the input's size justifies (inflated sizes are capped by the ratio limit).
#![no_main]

use bitlens_tensors::format::zip::{Archive, MAX_RATIO};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = data.to_vec();
    let Ok(archive) = Archive::open(&src) else {
        return;
    };
    let (cd_offset, cd_size) = archive.central_directory();
    assert!(cd_offset + cd_size <= src.len() as u64);
    for m in archive.members() {
        assert!(m.header_offset < m.slot_end && m.slot_end <= cd_offset);
        assert!(m.size <= m.compressed.saturating_mul(MAX_RATIO) + 1024);
        let Ok(data_offset) = archive.data_offset(&src, m) else {
            continue;
        };
        assert!(data_offset + m.compressed <= m.slot_end);
        let prefix = m.size.min(100);
        if let Ok(bytes) = archive.read_range(&src, m, 0..prefix) {
            assert_eq!(bytes.len() as u64, prefix);
        }
        if let Ok(bytes) = archive.read_range(&src, m, 0..m.size) {
            assert_eq!(bytes.len() as u64, m.size);
        }
    }
});
