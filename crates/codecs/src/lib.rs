//! bitlens codecs: entropy coders, byte transforms and one module per paper codec.
//!
//! LMC / PLMC ("Lossless Compression for LLM Tensor Incremental Snapshots", paper 000, §4), built
//! from [`byte_group`] (§4 byte grouping), [`huffman`] (§4.2 block-adaptive canonical Huffman),
//! [`rle`] (§4 / §4.2 runs), [`lmc`] (§4.2 the codec) and [`plmc`] (§4.3 the parallel, segmented
//! stream); NeuZip ([`neuzip`], paper 003, with the [`rans`] coder) and BitSnap ([`bitsnap`],
//! paper 001), which take floats apart through [`float`]. Decoders return [`DecodeError`] and
//! never panic; encoders take settings that are valid by construction ([`SettingsError`] says why
//! one was refused) and never fail.
//!
//! This crate holds only code whose output format must stay stable. Its public API is what the
//! other crates call (snapshot, inshrink, the CLI, the wasm layer, the fuzz targets) and the
//! stream format's constants; the rest is `pub(crate)`. The teaching lessons that explain it live
//! in `bitlens-lessons`, which reads the few internals it shows through `lesson_exports` (feature
//! `lesson-exports`).
//!
//! ```
//! use bitlens_codecs::{decode, encode, Options, Width};
//! let data: Vec<u8> = (0..10_000u32).flat_map(|i| ((i % 300) as u16).to_le_bytes()).collect();
//! let packed = encode(&data, Width::W2, &Options::default());
//! assert!(packed.len() < data.len());
//! assert_eq!(decode(&packed, data.len()).unwrap(), data);
//! ```

pub mod bitsnap;
pub mod byte_group;
mod cpu;
mod cursor;
pub mod error;
pub mod float;
pub mod huffman;
#[cfg(feature = "lesson-exports")]
pub mod lesson_exports;
pub mod lmc;
pub mod neuzip;
pub mod plmc;
pub mod rans;
pub mod rle;

/// The unit tests' pseudo-random data: xorshift64 from the seed as it is (`seed` must not be 0).
#[cfg(test)]
pub(crate) use bitlens_test_support::rng::xorshift_from as xorshift;

pub use byte_group::Transform;
pub use error::{DecodeError, SettingsError};
pub use lmc::{Params, Width};
pub use plmc::{
    decode, decode_into, encode, encode_into, Options, StreamDecoder, StreamEncoder, StreamInfo,
};
