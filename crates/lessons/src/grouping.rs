//! Lesson `grouping` — where the entropy lives (LMC paper 000 §3 "bit-level analysis" and §4
//! "byte grouping"): the share of elements with each bit set (the sign and exponent bits are
//! nearly constant, the mantissa bits near ½), and two layouts of the same bytes: interleaved
//! (as stored) and byte groups (all low bytes, then the next …, [`bitlens_codecs::byte_group`]). For each
//! layout: its order-0 entropy, whole and per 64 KiB block ([`Stream`]), and the sizes real
//! encoders reach on it ([`sizes`]: LMC through [`bitlens_codecs::encode`], the peers the caller passes).

use bitlens_codecs::byte_group::{self, Transform};
use bitlens_codecs::lmc::Width;
use bitlens_codecs::Options;
use bitlens_stats::entropy::cost_bits;

/// The block the per-block entropies are taken over (the paper's 64 KiB).
pub const BLOCK_BYTES: usize = 64 << 10;

/// The share of whole elements of `data` (little-endian, `width` bytes) with each bit set, bit 0
/// (the lowest mantissa bit) first; `8 · width` entries (all 0 without elements).
pub fn bit_set_ratios(data: &[u8], width: Width) -> Vec<f64> {
    let w = width.bytes();
    let mut counts = vec![0u64; 8 * w];
    for el in data.chunks_exact(w) {
        for (byte, &b) in el.iter().enumerate() {
            for bit in 0..8 {
                counts[8 * byte + bit] += u64::from(b >> bit & 1);
            }
        }
    }
    let n = (data.len() / w).max(1) as f64;
    counts.into_iter().map(|c| c as f64 / n).collect()
}

/// The order-0 entropy of one byte stream, whole and per [`BLOCK_BYTES`] block.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stream {
    /// Its length in bytes.
    pub bytes: usize,
    /// Entropy of the whole stream's byte histogram, in bits (Σ c · log2(n / c)).
    pub entropy_bits: f64,
    /// Entropy of each block's own histogram, in bits per byte, in order.
    pub block_bits_per_byte: Vec<f64>,
    /// Σ of the blocks' entropies in bits (the bound for a code per block).
    pub block_entropy_bits: f64,
}

impl Stream {
    /// The entropies of `bytes`.
    pub fn of(bytes: &[u8]) -> Stream {
        let bits = |b: &[u8]| {
            let mut hist = [0u32; 256];
            for &x in b {
                hist[usize::from(x)] += 1;
            }
            cost_bits(&hist)
        };
        let blocks: Vec<(usize, f64)> = bytes
            .chunks(BLOCK_BYTES)
            .map(|b| (b.len(), bits(b)))
            .collect();
        Stream {
            bytes: bytes.len(),
            entropy_bits: bits(bytes),
            block_bits_per_byte: blocks.iter().map(|&(n, e)| e / n as f64).collect(),
            block_entropy_bits: blocks.iter().map(|&(_, e)| e).sum(),
        }
    }

    /// Entropy of the whole stream in bits per byte (0 when empty).
    pub fn bits_per_byte(&self) -> f64 {
        self.entropy_bits / self.bytes.max(1) as f64
    }
}

/// The entropies of both layouts of a tensor's bytes.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Layouts {
    /// The bytes as stored, one stream.
    pub interleaved: Stream,
    /// Byte group `k` (byte `k` of every element, lowest first), after the transform.
    pub groups: Vec<Stream>,
}

impl Layouts {
    /// Σ of the groups' whole-stream entropies, in bits (the bound for one code per group).
    pub fn grouped_entropy_bits(&self) -> f64 {
        self.groups.iter().map(|g| g.entropy_bits).sum()
    }

    /// Σ of the groups' per-block entropies, in bits (the bound for a code per block of each
    /// group, as LMC codes them).
    pub fn grouped_block_entropy_bits(&self) -> f64 {
        self.groups.iter().map(|g| g.block_entropy_bits).sum()
    }
}

/// `data` laid out in byte groups as LMC groups them (`transform`, then byte `k` of every
/// element into group `k`; a partial last element stays at the end).
pub fn grouped(data: &[u8], width: Width, transform: Transform) -> Vec<u8> {
    let mut out = vec![0u8; data.len()];
    byte_group::split(data, width.bytes(), transform, &mut out);
    out
}

/// The entropies of `data` interleaved and in byte groups (`transform` applied first).
pub fn layouts(data: &[u8], width: Width, transform: Transform) -> Layouts {
    let g = grouped(data, width, transform);
    let n = byte_group::group_len(data.len(), width.bytes());
    Layouts {
        interleaved: Stream::of(data),
        groups: g[..n * width.bytes()]
            .chunks(n.max(1))
            .map(Stream::of)
            .collect(),
    }
}

/// A peer encoder: its name and a function giving the bytes it writes for its input.
pub type Peer<'a> = (&'a str, &'a dyn Fn(&[u8]) -> usize);

/// The bytes one codec wrote for each layout.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CodecSizes {
    /// The codec (`lmc`, or a peer's name).
    pub codec: String,
    /// Bytes written for the interleaved bytes.
    pub interleaved: usize,
    /// Bytes written for the byte groups.
    pub grouped: usize,
}

/// Real encodes of both layouts of `data`: LMC first — a PLMC stream ([`bitlens_codecs::encode`], as
/// `bitlens compress` writes it) of the bytes as 1-byte elements (no grouping) and of the
/// elements of `width` (LMC's own grouping with `transform`) — then every peer on the
/// interleaved bytes and on [`grouped`] bytes.
pub fn sizes(data: &[u8], width: Width, transform: Transform, peers: &[Peer]) -> Vec<CodecSizes> {
    let opts = |transform| Options {
        transform,
        ..Options::default()
    };
    let lmc = CodecSizes {
        codec: "lmc".into(),
        interleaved: bitlens_codecs::encode(data, Width::W1, &opts(Transform::None)).len(),
        grouped: bitlens_codecs::encode(data, width, &opts(transform)).len(),
    };
    let g = grouped(data, width, transform);
    std::iter::once(lmc)
        .chain(peers.iter().map(|(name, f)| CodecSizes {
            codec: (*name).to_owned(),
            interleaved: f(data),
            grouped: f(&g),
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf16(values: &[f32]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|v| ((v.to_bits() >> 16) as u16).to_le_bytes())
            .collect()
    }

    #[test]
    fn bit_ratios_count_each_bit() {
        // 1.0 = 0x3f80, -2.0 = 0xc000.
        let data = bf16(&[1.0, -2.0, 1.0, 1.0]);
        let r = bit_set_ratios(&data, Width::W2);
        assert_eq!(r.len(), 16);
        assert_eq!(r[15], 0.25, "sign");
        assert_eq!(r[14], 0.25, "exponent top bit (only -2.0)");
        assert_eq!(r[7], 0.75, "exponent low bit (only the 1.0s)");
        assert_eq!(r[0], 0.0);
        let by_hand: Vec<f64> = (0..16)
            .map(|b| {
                data.chunks(2)
                    .filter(|e| u16::from_le_bytes([e[0], e[1]]) >> b & 1 == 1)
                    .count() as f64
                    / 4.0
            })
            .collect();
        assert_eq!(r, by_hand);
    }

    #[test]
    fn entropy_of_known_streams() {
        let s = Stream::of(&[7u8; 1000]);
        assert_eq!(s.entropy_bits, 0.0);
        let two: Vec<u8> = (0..1000).map(|i| (i % 2) as u8).collect();
        assert!((Stream::of(&two).bits_per_byte() - 1.0).abs() < 1e-12);
        // Blocks: a constant block and a uniform one.
        let mut data = vec![0u8; BLOCK_BYTES];
        data.extend((0..BLOCK_BYTES).map(|i| i as u8));
        let s = Stream::of(&data);
        assert_eq!(s.block_bits_per_byte.len(), 2);
        assert_eq!(s.block_bits_per_byte[0], 0.0);
        assert!((s.block_bits_per_byte[1] - 8.0).abs() < 1e-9);
        assert!((s.block_entropy_bits - 8.0 * BLOCK_BYTES as f64).abs() < 1e-6);
        assert!(
            s.entropy_bits > s.block_entropy_bits,
            "one table pays for mixing the blocks"
        );
    }

    #[test]
    fn groups_are_byte_k_of_every_element() {
        let data = bf16(&[1.0, -2.0, 0.5]);
        let l = layouts(&data, Width::W2, Transform::None);
        assert_eq!(l.groups.len(), 2);
        assert_eq!(l.groups[0], Stream::of(&[data[0], data[2], data[4]]));
        assert_eq!(l.groups[1], Stream::of(&[data[1], data[3], data[5]]));
        assert_eq!(l.interleaved, Stream::of(&data));
    }

    /// On real bf16 weights the exponent bits are predictable and the low mantissa bits are not;
    /// grouping lowers the order-0 entropy and every encoder's size, and LMC's sizes are real
    /// streams that decode back.
    #[test]
    fn real_weights_compress_better_grouped() {
        let Some(data) = crate::real_bf16_megabyte() else {
            return;
        };
        let r = bit_set_ratios(&data, Width::W2);
        for (bit, ratio) in r.iter().enumerate().take(4) {
            assert!((ratio - 0.5).abs() < 0.1, "mantissa bit {bit}: {ratio}");
        }
        assert!(
            r[13] > 0.95,
            "exponent bit 6 is nearly always set: {}",
            r[13]
        );
        assert!(
            r[14] < 0.05,
            "exponent bit 7 is nearly never set: {}",
            r[14]
        );
        let l = layouts(&data, Width::W2, Transform::SignRotate);
        assert!(l.grouped_entropy_bits() < l.interleaved.entropy_bits);
        assert!(l.grouped_block_entropy_bits() <= l.grouped_entropy_bits() + 1e-6);
        let zstd = |d: &[u8]| zstd::bulk::compress(d, 3).unwrap().len();
        let s = sizes(&data, Width::W2, Transform::SignRotate, &[("zstd", &zstd)]);
        assert_eq!(s[0].codec, "lmc");
        assert_eq!(s[1].codec, "zstd");
        for c in &s {
            assert!(c.grouped < c.interleaved, "{c:?}");
        }
        // LMC's grouped size is the stream `encode` writes, and it decodes back.
        let stream = bitlens_codecs::encode(&data, Width::W2, &Options::default());
        assert_eq!(s[0].grouped, stream.len());
        assert_eq!(bitlens_codecs::decode(&stream, data.len()).unwrap(), data);
        // …and LMC on the groups beats the bound of one order-0 code over the interleaved bytes.
        assert!((s[0].grouped as f64) < l.interleaved.entropy_bits / 8.0);
        assert_eq!(
            s[1].grouped,
            zstd(&grouped(&data, Width::W2, Transform::SignRotate))
        );
    }
}
