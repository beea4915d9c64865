//! bitlens codecs: entropy coders, byte transforms and one module per paper codec.
//!
//! LMC / PLMC ("Lossless Compression for LLM Tensor Incremental Snapshots", paper 000, §4), built
//! from [`byte_group`] (§4 byte grouping), [`huffman`] (§4.2 block-adaptive canonical Huffman),
//! [`rle`] (§4 / §4.2 runs), [`lmc`] (§4.2 the codec) and [`plmc`] (§4.3 the parallel, segmented
//! stream); NeuZip ([`neuzip`], paper 003, with the [`rans`] coder) and BitSnap ([`bitsnap`],
//! paper 001), which take floats apart through [`float`]; [`lesson`] computes what the teaching
//! lessons show (byte grouping, deltas, the lossy codecs' error against their bound). Decoders
//! return [`DecodeError`] and never panic; encoders take settings that are valid by construction ([`SettingsError`] says
//! why one was refused) and never fail.
//!
//! ```
//! use bitlens_codecs::{decode, encode, Options, Width};
//! let data: Vec<u8> = (0..10_000u32).flat_map(|i| ((i % 300) as u16).to_le_bytes()).collect();
//! let packed = encode(&data, Width::W2, &Options::default());
//! assert!(packed.len() < data.len());
//! assert_eq!(decode(&packed, data.len()).unwrap(), data);
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod anatomy;
pub mod bitsnap;
pub mod byte_group;
mod cpu;
mod cursor;
pub mod error;
pub mod float;
pub mod huffman;
pub mod lesson;
pub mod lmc;
pub mod neuzip;
pub mod plmc;
pub mod rans;
pub mod rle;

/// A xorshift64 generator for the unit tests' pseudo-random data (`seed` must not be 0).
#[cfg(test)]
pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

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

pub use byte_group::Transform;
pub use error::{DecodeError, SettingsError};
pub use lmc::{Params, Width};
pub use plmc::{
    decode, decode_into, encode, encode_into, Options, StreamDecoder, StreamEncoder, StreamInfo,
};
