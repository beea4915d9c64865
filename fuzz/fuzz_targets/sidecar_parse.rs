//! Arbitrary bytes as a sidecar (`<file>.bitlens.json`, `bitlens_report::sidecar`): a typed
//! error, or a sidecar of one file with a well-formed hash that writes back to itself and lists
//! its own tensors. Then the same bytes as a checkpoint file: its header region (the bytes a
//! fingerprint hashes) lies inside the file, and fingerprinting it never panics.
#![no_main]

use bitlens_report::sidecar::{Fingerprint, Sidecar};
use bitlens_tensors::format::header_region;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = Sidecar::parse(data) {
        assert_eq!(s.report.files.len(), 1);
        assert_eq!(s.fingerprint.header_sha256.len(), 64);
        let json = serde_json::to_vec(&s).expect("a parsed sidecar serializes");
        assert_eq!(Sidecar::parse(&json).ok().as_ref(), Some(&s));
        let own = s.file_report().expect("one file");
        assert!(s.stats_for(own).is_ok());
    }
    if let Ok(region) = header_region(&data) {
        assert!(region.end() <= data.len() as u64);
    }
    let _ = Fingerprint::read(&data);
});
