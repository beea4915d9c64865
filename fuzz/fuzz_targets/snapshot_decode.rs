//! Arbitrary bytes as a bitlens snapshot: opening and decoding must give a typed error or the
//! original bytes (which the checksums vouch for) — never panic, hang or over-allocate.
#![no_main]

use bitlens_snapshot::SnapshotReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(reader) = SnapshotReader::open(data.to_vec()) else { return };
    let mut produced = 0u64;
    let result = reader.decode_all(None, &mut |bytes| {
        produced += bytes.len() as u64;
        Ok(())
    });
    if result.is_ok() {
        assert_eq!(produced, reader.original_size());
    }
});
