//! Warming a worker's kernels up before its first task: a statistics worker computes the
//! statistics of a little synthetic data of the common element types ([`warm_up`]); the codec
//! worker compresses and decompresses a little synthetic bf16 and f32 data with LMC
//! ([`warm_up_codec`]).
//!
//! A browser compiles a wasm function with its baseline compiler first, and recompiles it with
//! its optimizing compiler only once it has run a while (V8's dynamic tiering), on a background
//! thread. A statistics pass over a quantized GGUF lasts well under a second on a fast machine,
//! so without this most of it ran baseline code, and the optimizing compiles competed with the
//! workers for the cores while they ran (a trace of the page on a Q4_0 GGUF: 314 ms of top-tier
//! compilation during a 400 ms pass). Warming up when the worker starts (the page starts its
//! workers when files are given, while their headers are read) moves those compiles ahead of
//! the pass. Measured in BENCHMARKS.md, "The statistics workers warmed up".

use bitlens_codecs::{plmc, Options, Width};
use bitlens_stats::entry::ElementAccumulator;
use bitlens_tensors::format::gguf::can_dequantize;
use bitlens_tensors::format::{ElementType, GgmlType};
use bitlens_tensors::Dtype;

/// Stored bytes of synthetic data per element type: enough calls of the hot loops that the
/// browser schedules their optimizing compile.
pub const WARM_BYTES: usize = 128 << 10;

/// Bytes per update call of the warm-up, as a task's windows come: each call of a hot loop
/// counts towards its tier-up.
const PIECE: usize = 16 << 10;

/// The element types warmed up: the float dtypes, and the block types of llama.cpp's common
/// files (Q4_0, Q8_0, and Q4_K with Q6_K, the pair a `Q4_K_M` file holds). Their passes share the
/// functions that cost most (the dequantized values' moments and histograms, the byte and scale
/// statistics); another type's own dequantization kernel is small and compiles in its first
/// task. Every type costs the worker's start its accumulators' tables: all 26 delayed the table
/// of a GGUF by ~90 ms on two cores.
pub fn warm_types() -> impl Iterator<Item = ElementType> {
    let dtypes = [Dtype::F32, Dtype::BF16, Dtype::F16].map(ElementType::Dtype);
    let blocks = [
        GgmlType::Q4_0,
        GgmlType::Q8_0,
        GgmlType::Q4_K,
        GgmlType::Q6_K,
    ];
    dtypes.into_iter().chain(
        blocks
            .into_iter()
            .filter(|&t| can_dequantize(t))
            .map(ElementType::Ggml),
    )
}

/// Synthetic stored bytes of type `ty`, about [`WARM_BYTES`] (whole elements or blocks): floats
/// near zero for the dtypes; for the block types, pseudo-random bytes with bit 6 of every byte
/// cleared, which keeps every f16, f32, E8M0 and E4M3 scale finite (their exponent's top bit is
/// bit 6 of a byte), so the kernels take their path for finite values, the one real files take.
pub fn synthetic(ty: ElementType) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    match ty {
        ElementType::Dtype(dtype) => {
            let width = dtype.lane_bytes().max(1);
            let mut out = Vec::with_capacity(WARM_BYTES);
            while out.len() + width <= WARM_BYTES {
                // Uniform in (-0.05, 0.05): the values of a weight matrix.
                let v = ((next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1;
                let bytes = v.to_bits().to_le_bytes();
                match width {
                    // The f32's high half: its bf16, and read as an f16 a finite value too
                    // (|v| < 1 keeps the f32's top exponent bit clear, and with it the f16's
                    // exponent below 31).
                    2 => out.extend_from_slice(&bytes[2..]),
                    _ => out.extend_from_slice(&bytes),
                }
            }
            out
        }
        ElementType::Ggml(t) => {
            let block = t.block_bytes().unwrap_or(1).max(1) as usize;
            let len = (WARM_BYTES / block).max(1) * block;
            (0..len).map(|_| (next() >> 32) as u8 & 0xBF).collect()
        }
    }
}

/// Computes the statistics of [`synthetic`] data of every [`warm_types`] type and drops them;
/// returns how many types ran. A type whose accumulator refuses it is skipped: warming up must
/// never keep a worker from starting.
pub fn warm_up() -> usize {
    warm_types()
        .filter(|&ty| {
            let bytes = synthetic(ty);
            ElementAccumulator::new(ty, bytes.len() as u64)
                .and_then(|mut acc| {
                    for piece in bytes.chunks(PIECE) {
                        acc.update(piece)?;
                    }
                    acc.finish()
                })
                .is_ok()
        })
        .count()
}

/// Bytes of synthetic data the codec worker compresses and decompresses per element type.
pub const CODEC_WARM_BYTES: usize = 1 << 20;

/// Compresses and decompresses [`CODEC_WARM_BYTES`] of synthetic bf16 and f32 data with LMC
/// (default options: the segments, blocks and kernels a compress job uses); returns whether
/// every round trip gave its input back.
pub fn warm_up_codec() -> bool {
    [(Dtype::BF16, Width::W2), (Dtype::F32, Width::W4)]
        .into_iter()
        .all(|(dtype, width)| {
            let piece = synthetic(ElementType::Dtype(dtype));
            let mut data = piece.repeat(CODEC_WARM_BYTES.div_ceil(piece.len()));
            data.truncate(CODEC_WARM_BYTES);
            let packed = plmc::encode(&data, width, &Options::default());
            plmc::decode(&packed, data.len()).is_ok_and(|back| back == data)
        })
}
