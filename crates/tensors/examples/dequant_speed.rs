//! Dequantization speed of every block type on one core, as a statistics pass would run it:
//! windows of whole blocks (1 MiB of output at a time, the buffer reused) over 256 MiB of f32
//! output, and for the types whose codes come out with the values, the same with the codes.
//!
//!     cargo run --release -p bitlens-tensors --example dequant_speed
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::gguf::{
    can_dequantize, can_dequantize_with_codes, dequantize, dequantize_with_codes,
};
use bitlens_tensors::format::GgmlType;
use std::time::Instant;

/// Output produced per measured pass.
const OUTPUT_BYTES: usize = 256 << 20;
/// Output values per window.
const WINDOW_VALUES: usize = 1 << 18;

fn main() {
    let block_types = GgmlType::all().filter(|&t| can_dequantize(t) && t.block_elems() > Some(1));
    for ty in block_types {
        let (elems, bytes) = (
            ty.block_elems().unwrap() as usize,
            ty.block_bytes().unwrap() as usize,
        );
        let values = OUTPUT_BYTES / 4;
        let blocks = values / elems;
        // Pseudo-random blocks with ordinary f16 scales (the quants' bytes are arbitrary).
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut input: Vec<u8> = (0..blocks * bytes)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for b in input.chunks_exact_mut(bytes) {
            b[..2].copy_from_slice(&0x2E66u16.to_le_bytes());
        }
        let window_bytes = WINDOW_VALUES / elems * bytes;
        let mut out = vec![0f32; WINDOW_VALUES];
        let mut codes = vec![0u8; WINDOW_VALUES];
        for with_codes in [false, true] {
            if with_codes && !can_dequantize_with_codes(ty) {
                continue;
            }
            let mut best = f64::INFINITY;
            let mut check = 0f64;
            for _ in 0..5 {
                let t = Instant::now();
                for w in input.chunks(window_bytes) {
                    let n = w.len() / bytes * elems;
                    if with_codes {
                        dequantize_with_codes(ty, w, &mut out[..n], &mut codes[..n]).unwrap();
                    } else {
                        dequantize(ty, w, &mut out[..n]).unwrap();
                    }
                    check += f64::from(std::hint::black_box(&out[..n])[n - 1]);
                }
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
            "{}{}: {} MiB of f32 output in {:.1} ms: {:.2} GB/s of f32, {:.2} G values/s (best of 5; checksum {check:.3})",
            ty.name().unwrap(),
            if with_codes { " with codes" } else { "" },
            OUTPUT_BYTES >> 20,
            best * 1e3,
            OUTPUT_BYTES as f64 / best / 1e9,
            values as f64 / best / 1e9,
        );
        }
    }
}
