//! `bg4-lz4`: a file stored as the Hugging Face hub stores it in its Xet storage, chunk by
//! chunk, from the published source of `huggingface/xet-core`:
//!
//! 1. **Chunks** ([`chunker`]): gearhash content-defined chunking, 64 KiB target, 8 KiB minimum,
//!    128 KiB maximum (`xet_data/src/deduplication/chunking.rs`).
//! 2. **Xorbs**: chunks go into xorbs of at most 64 MiB and 8192 chunks; a chunk that would pass
//!    either limit starts a new xorb (`xet_data/src/deduplication/file_deduplication.rs`,
//!    constants in `xet_core_structures/src/xorb_object/constants.rs`).
//! 3. **Scheme** ([`predictor`]): the default policy `auto` tests the first chunk of every run of
//!    32 chunks of a file in a xorb (`compression_scheme_retest_interval`, default 32) and uses
//!    its verdict — BG4-LZ4 or LZ4 — for the whole run
//!    (`xet_core_structures/src/xorb_object/xorb_object_format.rs`,
//!    `SerializedXorbObject::from_xorb_with_compression`; `xet_runtime/src/config/groups/xorb.rs`).
//! 4. **Per chunk** ([`chunk`]): compressed with that scheme ([`bg4`] grouping, then one LZ4
//!    frame), or stored as it is when that is not shorter; an 8-byte header each.
//!
//! [`compress_into`] writes the chunks one after another (headers and payloads, as in a xorb);
//! [`decompress_into`] reads them back. What this leaves out, and says so: the xorb footer and the
//! shard metadata (chunk hashes and offsets, about 50 bytes per 64 KiB chunk, 0.08 %), and
//! deduplication of repeated chunks — it measures the compression, as the peers beside it do.

pub mod bg4;
pub mod chunk;
pub mod chunker;
pub mod predictor;

pub use chunk::Scheme;

/// The most bytes in one xorb.
pub const MAX_XORB_BYTES: usize = 64 * 1024 * 1024;
/// The most chunks in one xorb.
pub const MAX_XORB_CHUNKS: usize = 8 * 1024;
/// How many chunks share one scheme decision (the first of them is tested).
pub const RETEST_INTERVAL: usize = 32;

/// Why a `bg4-lz4` stream could not be read (or, for I/O, written).
#[derive(Debug, thiserror::Error)]
pub enum Bg4Lz4Error {
    /// A chunk header of another version than 0.
    #[error("bg4-lz4: chunk header version {0}, only 0 is known")]
    Version(u8),
    /// A scheme byte that names no stored scheme.
    #[error("bg4-lz4: unknown compression scheme {0}")]
    Scheme(u8),
    /// Lengths out of the format's bounds, or a stored chunk whose lengths disagree.
    #[error("bg4-lz4: chunk lengths out of bounds (compressed {compressed}, uncompressed {uncompressed})")]
    Length {
        /// The payload length in the header.
        compressed: usize,
        /// The chunk length in the header.
        uncompressed: usize,
    },
    /// The stream ends inside a chunk.
    #[error("bg4-lz4: the stream ends inside a chunk at byte {0}")]
    Truncated(usize),
    /// An LZ4 frame that does not decode to exactly its chunk.
    #[error("bg4-lz4: bad LZ4 frame: {0}")]
    Lz4(String),
    /// The LZ4 frame writer failed.
    #[error("bg4-lz4: {0}")]
    Io(#[from] std::io::Error),
}

/// How many chunks a stream stored with each scheme.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// Chunks stored as they are.
    pub none: usize,
    /// Chunks stored as LZ4.
    pub lz4: usize,
    /// Chunks stored as BG4-LZ4.
    pub bg4_lz4: usize,
}

impl Tally {
    /// Counts one stored chunk.
    fn add(&mut self, s: Scheme) {
        match s {
            Scheme::None => self.none += 1,
            Scheme::Lz4 => self.lz4 += 1,
            Scheme::Bg4Lz4 => self.bg4_lz4 += 1,
        }
    }
}

/// The scheme of each chunk before the "not shorter" fallback: `auto`'s verdict on the first
/// chunk of each run of [`RETEST_INTERVAL`] chunks of a xorb, xorbs cut as the hub cuts them.
/// `ends` are the chunks' end offsets in `data`.
pub fn schemes(data: &[u8], ends: &[usize]) -> Vec<Scheme> {
    let (mut xorb_bytes, mut xorb_chunks) = (0usize, 0usize);
    let mut current = Scheme::Lz4;
    let mut start = 0;
    let mut out = Vec::with_capacity(ends.len());
    for &end in ends {
        let c = &data[start..end];
        if xorb_bytes + c.len() > MAX_XORB_BYTES || xorb_chunks + 1 > MAX_XORB_CHUNKS {
            (xorb_bytes, xorb_chunks) = (0, 0);
        }
        if xorb_chunks % RETEST_INTERVAL == 0 {
            current = if predictor::bg4_recommended(c) {
                Scheme::Bg4Lz4
            } else {
                Scheme::Lz4
            };
        }
        out.push(current);
        xorb_bytes += c.len();
        xorb_chunks += 1;
        start = end;
    }
    out
}

/// Writes `data` into `out` (cleared first) as the hub stores it: its chunks, each with its
/// header. Returns how many chunks took each scheme.
pub fn compress_into(data: &[u8], out: &mut Vec<u8>) -> Result<Tally, Bg4Lz4Error> {
    out.clear();
    let ends = chunker::boundaries(data);
    let mut scratch = Vec::new();
    let mut tally = Tally::default();
    let mut start = 0;
    for (&end, scheme) in ends.iter().zip(schemes(data, &ends)) {
        tally.add(chunk::write(&data[start..end], scheme, out, &mut scratch)?);
        start = end;
    }
    Ok(tally)
}

/// Restores the bytes of a stream written by [`compress_into`] into `out` (cleared first). Any
/// input is safe: a bad stream is an error, never a panic, and `out` grows by at most the chunks'
/// declared lengths (at most 128 KiB per 8-byte header: 16 384 times the stream's size).
pub fn decompress_into(stream: &[u8], out: &mut Vec<u8>) -> Result<(), Bg4Lz4Error> {
    out.clear();
    let mut scratch = Vec::new();
    let mut pos = 0;
    while pos < stream.len() {
        let head = stream
            .get(pos..pos + chunk::HEADER_LEN)
            .ok_or(Bg4Lz4Error::Truncated(pos))?;
        let mut bytes = [0u8; chunk::HEADER_LEN];
        bytes.copy_from_slice(head);
        let header = chunk::Header::parse(bytes)?;
        let body = pos + chunk::HEADER_LEN;
        let payload = stream
            .get(body..body + header.compressed)
            .ok_or(Bg4Lz4Error::Truncated(pos))?;
        let at = out.len();
        out.resize(at + header.uncompressed, 0);
        chunk::read(header, payload, &mut out[at..], &mut scratch)?;
        pos = body + header.compressed;
    }
    Ok(())
}
