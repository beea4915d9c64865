//! Peer codecs that bitlens is measured against, in one implementation for the native CLI
//! (`bitlens bench --codecs bg4-lz4`) and the page's codec comparison (the wasm workers).
//!
//! - [`xet`]: `bg4-lz4`, how the Hugging Face hub stores a file in its Xet storage —
//!   content-defined chunks of about 64 KiB, each stored as it is, as LZ4, or byte-grouped by 4
//!   then LZ4, after the published source of `huggingface/xet-core` (each module cites its file).
//!   The hub's own scheme is what a hub sets LMC beside, so it is reproduced to the byte layout.
#![forbid(unsafe_code)]

pub mod xet;

pub use xet::{compress_into, decompress_into, Bg4Lz4Error, Tally};
