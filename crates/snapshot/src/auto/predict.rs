//! The statistics predictions of `--codec auto` (see the module above): what LMC (paper 000 §4.1,
//! made exact for the code it builds), NeuZip (paper 003 §2.2: rANS exponents, raw sign and
//! mantissa) and BitSnap (paper 001 §3.3: bitmask and changed values) would store for a sample,
//! from its byte-group histograms.

use super::{BITSNAP_HEADER_BYTES, LMC_STREAM_BYTES, NEUZIP_HEADER_BYTES};
use crate::format::{FRAME_BYTES, LMC_FRAME_BYTES};
use bitlens_codecs::byte_group::{self, Transform};
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::{huffman, lmc, rans, rle, Width};

thread_local! {
    /// The byte-grouped sample, reused from tensor to tensor (fresh pages cost more than
    /// grouping them).
    static GROUPED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Values per rANS block of NeuZip's exponents.
pub(super) const RANS_BLOCK_VALUES: u64 = 65_536;

/// The LMC cost model of one byte grouping of a sample: per group, bits per byte and table
/// bytes per block.
#[derive(Clone)]
pub(super) struct GroupCosts {
    pub(super) width: Width,
    /// `(bits per byte, bytes per block)` of each group.
    pub(super) groups: Vec<(f64, f64)>,
    /// The histogram of the most significant group: after the sign rotation, the exponent
    /// field of bf16 / f32 values, the exponent and the top 3 mantissa bits of f16 values.
    pub(super) top: [u32; 256],
}

impl GroupCosts {
    /// The costs of `data` grouped by `width` after `transform` (`byte_group::split`, into a
    /// buffer reused by the thread).
    pub(super) fn of(data: &[u8], width: Width, transform: Transform) -> GroupCosts {
        let w = width.bytes();
        let e = byte_group::group_len(data.len(), w);
        let mut top = [0u32; 256];
        let groups = GROUPED.with_borrow_mut(|grouped| {
            grouped.resize(data.len(), 0);
            byte_group::split(data, w, transform, grouped);
            (0..w)
                .map(|k| {
                    let group = &grouped[k * e..(k + 1) * e];
                    let h = huffman::histogram(group);
                    top = h;
                    group_cost(group, &h)
                })
                .collect()
        });
        GroupCosts { width, groups, top }
    }

    /// Predicted bytes of `len` bytes like the sample, LMC-coded in frames of
    /// [`LMC_FRAME_BYTES`].
    pub(super) fn lmc_bytes(&self, len: u64) -> f64 {
        let w = self.width.bytes() as u64;
        let frames = len.div_ceil(LMC_FRAME_BYTES as u64).max(1);
        let frame = len.min(LMC_FRAME_BYTES as u64);
        let block = 1u64 << lmc::default_block_log2(self.width);
        let blocks = ((frame / w).div_ceil(block) * frames) as f64;
        let per_group = (len / w) as f64;
        let groups: f64 = self
            .groups
            .iter()
            .map(|&(bits, table)| per_group * bits / 8.0 + blocks * table)
            .sum();
        groups + frames as f64 * LMC_STREAM_BYTES + (len % w) as f64
    }
}

/// `(bits per byte, bytes per block)` of one byte group (`bytes`, with histogram `h`) as LMC
/// codes it: a run block for one value, raw when the order-0 entropy is within 1/64 of 8 bits,
/// else its Huffman code — or, when the most frequent byte covers at least
/// `rle::RUN_TRY_SHARE` of the group (sparse deltas), the Huffman code over bytes and run
/// symbols with their extra bits, if cheaper (the encoder's own choice, `rle::run_histogram`).
pub(super) fn group_cost(bytes: &[u8], h: &[u32; 256]) -> (f64, f64) {
    let n: u32 = h.iter().sum();
    let used = h.iter().filter(|&&c| c > 0).count();
    if used <= 1 {
        return (0.0, 2.0);
    }
    if bitlens_stats::entropy::bits_per_symbol(h) > 8.0 * (1.0 - 1.0 / 64.0) {
        return (8.0, 1.0);
    }
    let mut lengths = [0u8; huffman::MAX_SYMBOLS];
    huffman::build_lengths(h, huffman::DEFAULT_CODE_LIMIT, &mut lengths[..256]);
    let mut bits = huffman::code_cost_bits(h, &lengths[..256]) as f64;
    let (top, &count) = h
        .iter()
        .enumerate()
        .max_by_key(|&(_, c)| *c)
        .unwrap_or((0, &0));
    if f64::from(count) >= rle::RUN_TRY_SHARE * f64::from(n) {
        let mut freqs = [0u32; huffman::MAX_SYMBOLS];
        let (nrun, extra) = rle::run_histogram(bytes, top as u8, &mut freqs);
        let symbols = 256 + nrun;
        huffman::build_lengths(
            &freqs[..symbols],
            huffman::DEFAULT_CODE_LIMIT,
            &mut lengths[..symbols],
        );
        let runs = (huffman::code_cost_bits(&freqs[..symbols], &lengths[..symbols]) + extra) as f64;
        bits = bits.min(runs);
    }
    let bits = bits / f64::from(n);
    if bits >= 8.0 {
        (8.0, 1.0)
    } else {
        (bits, 17.0 + used as f64 / 3.0)
    }
}

/// NeuZip lossless from the exponent histogram of a sample.
pub(super) struct NeuzipModel {
    pub(super) format: FloatFormat,
    /// Bits per exponent under the rANS table of the sample's histogram.
    pub(super) exponent_bits: f64,
    /// Distinct exponents (each a 3-byte table entry per rANS block).
    pub(super) present: usize,
}

impl NeuzipModel {
    /// The model of values whose sign-rotated, byte-grouped top group has histogram `top`
    /// ([`GroupCosts::top`]): its bytes shifted right by `8 − exponent bits` are the exponents.
    pub(super) fn of(top: &[u32; 256], format: FloatFormat) -> NeuzipModel {
        let shift = 8 - format.exponent_bits();
        let mut hist = [0u32; 256];
        for (b, &c) in top.iter().enumerate() {
            hist[b >> shift] += c;
        }
        let n: u32 = hist.iter().sum();
        let exponent_bits = rans::FreqTable::from_histogram(&hist)
            .map_or(0.0, |t| t.cost_bits(&hist) / f64::from(n.max(1)));
        NeuzipModel {
            format,
            exponent_bits,
            present: hist.iter().filter(|&&c| c > 0).count(),
        }
    }

    /// Predicted bytes of `len` bytes of values like the sample.
    pub(super) fn bytes(&self, len: u64) -> f64 {
        let w = self.format.width() as u64;
        let frames = len.div_ceil(FRAME_BYTES as u64).max(1);
        let n = len / w;
        let fields = (n * (1 + u64::from(self.format.mantissa_bits()))).div_ceil(8);
        let blocks = n.div_ceil(RANS_BLOCK_VALUES) as f64;
        frames as f64 * NEUZIP_HEADER_BYTES
            + (len % w) as f64
            + fields as f64
            + blocks * (2.0 + 3.0 * self.present as f64 + 32.0)
            + n as f64 * self.exponent_bits / 8.0
    }
}

/// BitSnap's bitmask delta from the changed elements of a sample.
pub(super) struct BitsnapModel {
    pub(super) width: Width,
    /// Fraction of the sample's elements that changed.
    pub(super) changed: f64,
    /// LMC costs of the changed elements' new values.
    pub(super) values: GroupCosts,
    /// LMC costs of all new values (dense mode).
    pub(super) all: GroupCosts,
}

impl BitsnapModel {
    /// The model of `new` against `base` (`changed`: a buffer for the changed values; `all`:
    /// the LMC costs of `new`, which the caller has).
    pub(super) fn of(
        new: &[u8],
        base: &[u8],
        width: Width,
        changed: &mut Vec<u8>,
        all: GroupCosts,
    ) -> BitsnapModel {
        let w = width.bytes();
        changed.clear();
        let mut count = 0usize;
        for (a, b) in new.chunks_exact(w).zip(base.chunks_exact(w)) {
            if a != b {
                changed.extend_from_slice(a);
                count += 1;
            }
        }
        BitsnapModel {
            width,
            changed: count as f64 / (new.len() / w).max(1) as f64,
            values: GroupCosts::of(changed, width, Transform::SignRotate),
            all,
        }
    }

    /// Predicted bytes of `len` bytes changed like the sample.
    pub(super) fn bytes(&self, len: u64) -> f64 {
        let w = self.width.bytes() as u64;
        let frames = len.div_ceil(FRAME_BYTES as u64).max(1) as f64;
        let n = len / w;
        let mask = n.div_ceil(8);
        let changed = (self.changed * n as f64).round() as u64;
        let fixed = frames * BITSNAP_HEADER_BYTES + (len % w) as f64;
        if mask + changed * w >= n * w {
            fixed + self.all.lmc_bytes(n * w)
        } else {
            fixed + (mask + 8) as f64 + self.values.lmc_bytes(changed * w)
        }
    }
}
