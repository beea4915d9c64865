//! Arbitrary bytes as an Inshrinkerator snapshot (container version 4) or as its annex alone:
//! parsing the annex, restoring the levels (full streams; a delta without its base) and writing
//! the restored file must give a typed error or bytes the checksums vouch for — never panic, hang
//! or over-allocate.
#![no_main]

use bitlens_snapshot::inshrink::{decode_all, decode_levels, Annex};
use bitlens_snapshot::SnapshotReader;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(annex) = Annex::parse(data) {
        assert_eq!(Annex::parse(&annex.to_bytes()), Ok(annex));
    }
    let Ok(reader) = SnapshotReader::open(data.to_vec()) else { return };
    let _ = Annex::of(&reader);
    let Ok(levels) = decode_levels(&reader, None) else { return };
    let mut produced = 0u64;
    let result = decode_all(&reader, &levels, &mut |bytes| {
        produced += bytes.len() as u64;
        Ok(())
    });
    if result.is_ok() {
        assert_eq!(produced, reader.original_size());
    }
});
