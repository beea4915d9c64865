//! bitlens lessons: what the page's teaching lessons (`#learn/…`) compute, on the bytes of real
//! tensors, with the codecs' own functions — never a copy of them — so every figure a lesson shows
//! is what the codec does.
//!
//! | module | lesson | what it teaches | paper |
//! | --- | --- | --- | --- |
//! | [`anatomy`] | `float` | the sign, exponent and mantissa fields of fp32, bf16, fp16 and fp8, rounding into a format, flipping a bit | LMC (000) §2–3, NeuZip (003) §2.1 |
//! | [`huffman`] | `huffman` | one block of a byte group coded by the LMC encoder: histogram, length-limited canonical code, tree, runs, every output byte accounted for; one table against a table per block | LMC (000) §4.1–4.2 |
//! | [`rans`] | `ans` | the rANS coder step by step on a tensor's exponents, beside the Shannon bound and a Huffman code | NeuZip (003) §2.2 |
//! | [`grouping`] | `grouping` | where the entropy of a float tensor lives: bit set ratios, order-0 entropy interleaved and per byte group, real encoder sizes | LMC (000) §3–4 |
//! | [`delta`] | `delta` | two checkpoints of a tensor: bit flips per position, BitSnap's bitmask delta against XOR + LMC as the changed fraction varies | BitSnap (001) §3, LMC (000) §4 |
//! | [`lossy`] | `lossy` | every lossy setting encoded, decoded back and its error measured beside the paper's bound | NeuZip (003) §2.3, BitSnap (001) §3.4 |
//! | [`bins`] | `lossy` (Inshrinkerator view) | non-uniform bins against uniform ones on one tensor | Inshrinkerator (002) §4.4, Table 7 |
//!
//! Every order-0 entropy here is [`bitlens_stats::entropy`]'s. The Huffman and rANS lessons read
//! the encoders' internals through `bitlens_codecs::lesson_exports` (its feature
//! `lesson-exports`); the rest use the codecs' public API. Results are serde types: the wasm
//! layer returns them to the page as JSON, and the lossy survey rides in a worker message.

pub mod anatomy;
#[cfg(feature = "bins")]
pub mod bins;
pub mod delta;
pub mod error;
pub mod grouping;
pub mod huffman;
pub mod lossy;
pub mod rans;

pub use error::LessonError;

/// The unit tests' pseudo-random data: xorshift64 from the seed as it is (`seed` must not be 0),
/// the sequences they were written against in the codecs crate they came from.
#[cfg(test)]
pub(crate) use bitlens_test_support::rng::xorshift_from as xorshift;

/// The first MiB of MiniLM's bf16 weights, after the int64 position ids (one PLMC segment), for
/// the lessons' tests; `None` (the test is skipped) where `scripts/fetch-weights.sh` has not run.
#[cfg(test)]
pub(crate) fn real_bf16_megabyte() -> Option<Vec<u8>> {
    use bitlens_test_support::{safetensors, weights};
    let path = weights::path_or_skip("minilm-bf16.safetensors")?;
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = safetensors::data_start(&file) + 4096;
    Some(file[start..start + (1 << 20)].to_vec())
}
