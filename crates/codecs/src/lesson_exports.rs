//! The codec internals the teaching lessons read, and nothing else (crate `bitlens-lessons`):
//! its `huffman` module explains one block as the LMC encoder codes it (paper 000 §4.2), its
//! `rans` module traces the rANS coder symbol by symbol (NeuZip, paper 003 §2.2). Everything
//! else a lesson uses is this crate's public API.
//!
//! Why a cargo feature (`lesson-exports`, as ruzstd exposes its internals to its fuzzer with
//! `fuzz_exports`) rather than an always-present `#[doc(hidden)]` module: these items exist in a
//! build only when a crate asks for them in its Cargo.toml — only `bitlens-lessons` does — so the
//! CLI, the snapshot container and the fuzz targets cannot come to depend on them, and what exists
//! only for the lessons ([`huffman::unlimited_lengths`]) is compiled only then.
//!
//! Every item is the codec's own function or type — a re-export, or a one-line call where the
//! item lives in a public module — never a copy, so a lesson shows exactly what the encoder and
//! decoder do. None of it is a stable API: it changes whenever the encoders do.

/// Canonical Huffman (LMC §4.2): how a block body is built and sized.
pub mod huffman {
    pub use crate::huffman::bitio::{get_leb128, put_leb128};
    pub use crate::huffman::lengths::{encode_codes, unlimited_lengths};
    pub use crate::huffman::table::read_table;

    /// The lengths of the four quarters a block of `n` bytes is cut into (one bit stream each).
    pub fn quarters(n: usize) -> [usize; 4] {
        crate::huffman::quarters(n)
    }
}

/// The LMC encoder's choices (LMC §4.2).
pub mod lmc {
    /// The code lengths the LMC encoder gives a plain Huffman leaf with histogram `hist` under
    /// code-length limit `limit`, and their cost in bits (the encoder's own choice between the
    /// optimal code and the one limited to 11 bits).
    pub fn leaf_lengths(hist: &[u32; 256], limit: u32) -> ([u8; 256], u64) {
        crate::lmc::leaf_lengths(hist, limit)
    }

    /// The nibble pairs of a kind-6 block of `block` turned by `turn` (the bytes its Huffman code
    /// codes); its stored lows are the rest.
    pub fn nibble_pairs(block: &[u8], turn: u8) -> Vec<u8> {
        let (mut pairs, mut lows) = (Vec::new(), Vec::new());
        crate::lmc::nibble_split(block, turn, &mut pairs, &mut lows);
        pairs
    }
}

/// The rANS coder's lanes (NeuZip §2.2): the encoder's loop with a hook per symbol and the block
/// it writes with a given table, the block header reader, and the decoder's step of one lane.
pub mod rans {
    pub use crate::rans::lanes::{
        encode_lanes, encode_with_table, lanes_finished, read_block, step, Block, DecodeTable,
        EncodeStep, Slots, SLOTS,
    };
}

/// The fields of a float (the exponents NeuZip codes with rANS, §2.2; the rounding of its lossy
/// mode, §2.3).
pub mod float {
    use crate::float::FloatFormat;

    /// The exponent bias of `format` (127 for fp32 and bf16, 15 for fp16).
    pub fn exponent_bias(format: FloatFormat) -> i32 {
        format.bias()
    }

    /// The biased exponent field of one little-endian element of `format`.
    pub fn exponent_field(format: FloatFormat, element: &[u8]) -> u32 {
        format.split(format.read(element)).1
    }
}
