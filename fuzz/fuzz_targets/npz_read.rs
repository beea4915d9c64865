//! Arbitrary bytes as an `.npz`: the reader returns a typed error or entries whose bytes lie in
//! the file (stored) or inflate, bounded by their declared size (deflated) — never a panic, a hang
//! or an allocation beyond the input's size and the ratio limit.
#![no_main]

use bitlens_tensors::format::npz::{self, for_each_inflated};
use bitlens_tensors::format::zip::ZipError;
use bitlens_tensors::format::Data;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let src = data.to_vec();
    let Ok(layout) = npz::read(&src) else { return };
    for e in &layout.entries {
        match &e.data {
            Data::Range { offset, len } | Data::Strided { offset, len, .. } => {
                assert!(offset + len <= src.len() as u64)
            }
            Data::Deflated {
                offset,
                compressed,
                skip,
                len,
            } => {
                let mut seen = 0u64;
                let r = for_each_inflated::<_, ZipError>(
                    &src,
                    *offset,
                    *compressed,
                    *skip,
                    *len,
                    4096,
                    |w| {
                        assert!(w.len() <= 4096);
                        seen += w.len() as u64;
                        Ok(())
                    },
                );
                if r.is_ok() {
                    assert_eq!(seen, *len);
                }
            }
        }
    }
});
