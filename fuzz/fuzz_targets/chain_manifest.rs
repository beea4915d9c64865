//! Arbitrary bytes as a checkpoint chain's `chain.json`: a typed error, or a manifest whose names
//! are plain file names and whose every delta walks back to a key through earlier steps.
#![no_main]

use bitlens_snapshot::chain::{FileKind, Manifest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Manifest::parse(data) {
        assert!(!m.steps.is_empty());
        for (i, step) in m.steps.iter().enumerate() {
            assert!(!step.name.contains(['/', '\\']) && step.name != "..");
            for f in &step.files {
                assert!(!f.name.contains(['/', '\\']) && f.name != "..");
                let links = m.links(i, &f.name);
                assert_eq!(links.last().map(|l| l.0), Some(i));
                assert_eq!(links.first().map(|l| l.1.kind), Some(FileKind::Key));
                assert!(links.windows(2).all(|w| w[0].0 < w[1].0));
            }
        }
        // What parses re-serializes to the same manifest.
        assert_eq!(Manifest::parse(m.to_json().as_bytes()).ok(), Some(m));
    }
});
