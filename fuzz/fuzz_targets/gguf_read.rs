//! Arbitrary bytes as a GGUF file: the reader must return a typed error or a layout whose every
//! tensor lies inside the file, aligned, without overlaps — never panic, hang or over-allocate —
//! and the dequantizer and the quant statistics must take whatever blocks it finds.
#![no_main]

use bitlens_stats::{QuantAccumulator, QuantStats};
use bitlens_tensors::format::gguf::{self, dequantize};
use libfuzzer_sys::fuzz_target;

/// Bytes of each tensor dequantized (whole blocks), to keep every input fast.
const MAX_BYTES: u64 = 1 << 16;

fuzz_target!(|data: &[u8]| {
    let Ok(file) = gguf::read_file(&data) else {
        return;
    };
    let size = data.len() as u64;
    assert!(matches!(file.version, 2 | 3));
    assert!(file.alignment.is_power_of_two());
    let mut ranges = Vec::new();
    for t in &file.tensors {
        assert!(t.start + t.len <= size);
        assert_eq!(t.offset % u64::from(file.alignment), 0);
        assert_eq!(t.ty.bytes_for(t.elements()), Some(t.len));
        if t.len > 0 {
            ranges.push((t.start, t.start + t.len));
        }
        let block = u64::from(t.ty.block_bytes().unwrap_or(1));
        let take = t.len.min(MAX_BYTES / block * block);
        let bytes = &data[t.start as usize..(t.start + take) as usize];
        let mut out = vec![0f32; (take / block) as usize * t.ty.block_elems().unwrap_or(1) as usize];
        let done = dequantize(t.ty, bytes, &mut out);
        assert_eq!(done.is_ok(), gguf::can_dequantize(t.ty));
        if let Some(mut stats) = QuantStats::new(t.ty) {
            stats.add(bytes).unwrap();
            assert!(stats.code_entropy() <= f64::from(stats.code_bits()) + 1e-9);
        }
        // The statistics pass, fed in two windows: codes from the raw bytes, out of
        // dequantization or from the blocks taken apart, whichever the type uses.
        if let Ok(mut acc) = QuantAccumulator::new(t.ty, take) {
            let (head, tail) = bytes.split_at(bytes.len() / 3);
            acc.update(head).unwrap();
            acc.update(tail).unwrap();
            let stats = acc.finish().unwrap();
            if let Some(q) = stats.quant {
                assert_eq!(q.code_hist.iter().sum::<u64>(), out.len() as u64);
            }
        }
    }
    ranges.sort_unstable();
    assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0));
    let n = file.tensors.len();
    assert_eq!(file.into_layout().entries.len(), n);
});
