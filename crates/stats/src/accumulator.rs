//! The per-tensor statistics accumulator.
//!
//! A tensor is seen as a stream of *lanes*: the element itself for 1/2/4/8-byte types, each f32 part
//! for C64, and each byte for packed sub-byte types (F4, F6). Byte group `k` is the `k`-th byte of
//! every lane, least significant first (LMC §3 byte grouping). A *block* is [`BLOCK_LANES`] lanes, i.e.
//! 64 KiB of every byte group's stream: the unit of the block-adaptive entropy estimate (LMC §4.1) and
//! of the LMC codec.
//!
//! Speed: within a block every lane costs one histogram increment per 16 bits (a 65 536-bin table of
//! `u32`, which stays in L2); when the block closes, that table is folded into the byte-group
//! histograms of the block (whose entropies give the estimate), the global byte-group histograms and
//! the histogram of each lane's top 16 bits, from which bit-set ratios, sign / exponent / mantissa
//! histograms (NeuZip Fig. 1) and — for types up to 16 bits — exact value statistics are derived at
//! the end. Blocks shorter than 4096 lanes (small tensors) count bytes directly instead, so a bias
//! vector does not pay for folding a 65 536-bin table.
//!
//! Merging: accumulators over consecutive ranges that start on block boundaries merge exactly, so a
//! worker pool can split a tensor with [`split_ranges`]; the result is the same for any split.

use crate::entropy::{bits_per_symbol, cost_bits};
use crate::moments::{MomentStream, Moments};
use crate::values::{decoder, value_histogram, ValueStats};
use bitlens_tensors::Dtype;
use std::ops::Range;

pub use crate::tensor_stats::{FloatStats, StatsError, TensorStats};

/// Lanes per block: 64 KiB of every byte group's stream.
pub const BLOCK_LANES: u64 = 65_536;

/// Blocks with fewer lanes than this count bytes directly (see the module doc).
const SMALL_BLOCK_LANES: u64 = 4096;

/// Streams one tensor's bytes (or a block-aligned range of them) into statistics.
#[derive(Debug, Clone)]
pub struct Accumulator {
    dtype: Dtype,
    lane: usize,
    total_lanes: u64,
    start: u64,
    end: u64,
    pos: u64,
    carry: [u8; 8],
    carry_len: usize,
    /// Histogram of each lane's top `min(8·lane, 16)` bits.
    top_hist: Vec<u64>,
    /// Global histogram per byte group.
    group_hist: Vec<[u64; 256]>,
    /// Current block: 16-bit half histograms (lanes ≥ 2, big blocks), lazily allocated.
    halves: Vec<Vec<u32>>,
    /// Current block: byte-group histograms (filled directly for small blocks and 1-byte lanes,
    /// by folding `halves` otherwise).
    block_groups: Vec<[u32; 256]>,
    block_len: u64,
    block_fill: u64,
    /// Entropy cost in bits of each closed block (all groups), summed in block order at the end so
    /// the total does not depend on how the tensor was split.
    block_costs: Vec<f64>,
    block_entropy: Vec<Vec<f32>>,
    /// Exact value moments are kept per lane (4- and 8-byte lanes only).
    wide_values: bool,
    /// Moments of the values, per block, merged in block order at the end so the result does
    /// not depend on window sizes or on how the tensor was split.
    moments: MomentStream,
}

impl Accumulator {
    /// An accumulator for a whole tensor of `byte_len` bytes.
    pub fn new(dtype: Dtype, byte_len: u64) -> Self {
        Self::for_range(dtype, byte_len, 0..byte_len).expect("the whole tensor is aligned")
    }

    /// An accumulator for the bytes `range` of a tensor of `byte_len` bytes. The range must start on
    /// a block boundary and end on one or at the end of the tensor (see [`split_ranges`]).
    pub fn for_range(dtype: Dtype, byte_len: u64, range: Range<u64>) -> Result<Self, StatsError> {
        let lane = dtype.lane_bytes();
        let block_bytes = BLOCK_LANES * lane as u64;
        let aligned = |b: u64| b.is_multiple_of(block_bytes) || b == byte_len;
        if range.start > range.end
            || range.end > byte_len
            || !aligned(range.start)
            || !aligned(range.end)
        {
            return Err(StatsError::MisalignedRange {
                start: range.start,
                end: range.end,
                block_bytes,
            });
        }
        let top_bits = (8 * lane).min(16);
        let mut acc = Accumulator {
            dtype,
            lane,
            total_lanes: byte_len / lane as u64,
            start: range.start / lane as u64,
            end: range.end / lane as u64,
            pos: range.start / lane as u64,
            carry: [0; 8],
            carry_len: 0,
            top_hist: vec![0; 1 << top_bits],
            group_hist: vec![[0; 256]; lane],
            halves: Vec::new(),
            block_groups: vec![[0; 256]; lane],
            block_len: 0,
            block_fill: 0,
            block_costs: Vec::new(),
            block_entropy: vec![Vec::new(); lane],
            wide_values: lane >= 4,
            moments: MomentStream::default(),
        };
        acc.open_block();
        Ok(acc)
    }

    /// Bytes of the range still to be fed.
    pub fn remaining_bytes(&self) -> u64 {
        (self.end - self.pos) * self.lane as u64 - self.carry_len as u64
    }

    /// Feeds the next bytes of the range; windows may have any size and need not end on elements.
    pub fn update(&mut self, mut bytes: &[u8]) -> Result<(), StatsError> {
        if bytes.len() as u64 > self.remaining_bytes() {
            let range_bytes = (self.end - self.start) * self.lane as u64;
            return Err(StatsError::TooMuchData {
                expected: range_bytes,
                got: range_bytes - self.remaining_bytes() + bytes.len() as u64,
            });
        }
        let lane = self.lane;
        if self.carry_len > 0 {
            let take = (lane - self.carry_len).min(bytes.len());
            self.carry[self.carry_len..self.carry_len + take].copy_from_slice(&bytes[..take]);
            self.carry_len += take;
            bytes = &bytes[take..];
            if self.carry_len == lane {
                let carry = self.carry;
                self.carry_len = 0;
                self.process(&carry[..lane]);
            }
        }
        let whole = bytes.len() / lane * lane;
        self.process(&bytes[..whole]);
        let rest = &bytes[whole..];
        self.carry[..rest.len()].copy_from_slice(rest);
        self.carry_len += rest.len();
        Ok(())
    }

    /// Appends the statistics of the range that directly follows this one.
    pub fn merge(mut self, next: Accumulator) -> Result<Accumulator, StatsError> {
        let lane = self.lane as u64;
        if self.dtype != next.dtype
            || self.total_lanes != next.total_lanes
            || self.pos != self.end
            || self.carry_len != 0
            || self.end != next.start
        {
            return Err(StatsError::NotContiguous {
                end: self.pos * lane + self.carry_len as u64,
                next_start: next.start * lane,
            });
        }
        for (a, b) in self.top_hist.iter_mut().zip(&next.top_hist) {
            *a += b;
        }
        for (ga, gb) in self.group_hist.iter_mut().zip(&next.group_hist) {
            for (a, b) in ga.iter_mut().zip(gb) {
                *a += b;
            }
        }
        for (ba, bb) in self.block_entropy.iter_mut().zip(next.block_entropy) {
            ba.extend(bb);
        }
        self.block_costs.extend(next.block_costs);
        self.moments.append(next.moments);
        // `next` carries the state of its unfinished part (if any) forward.
        self.end = next.end;
        self.pos = next.pos;
        self.carry = next.carry;
        self.carry_len = next.carry_len;
        self.halves = next.halves;
        self.block_groups = next.block_groups;
        self.block_len = next.block_len;
        self.block_fill = next.block_fill;
        Ok(self)
    }

    /// The statistics of the whole tensor. Fails unless every byte of it was fed.
    pub fn finish(self) -> Result<TensorStats, StatsError> {
        let lane = self.lane as u64;
        if self.start != 0 || self.pos != self.total_lanes || self.carry_len != 0 {
            return Err(StatsError::Incomplete {
                expected: self.total_lanes * lane,
                got: (self.pos - self.start) * lane + self.carry_len as u64,
            });
        }
        let lanes = self.total_lanes;
        let bytes = lanes * lane;
        let mut bit_set_counts = Vec::with_capacity(8 * self.lane);
        for g in &self.group_hist {
            for bit in 0..8 {
                let set: u64 = (0..256).filter(|v| v >> bit & 1 == 1).map(|v| g[v]).sum();
                bit_set_counts.push(set);
            }
        }
        let bit_set_ratio = bit_set_counts
            .iter()
            .map(|&c| {
                if lanes == 0 {
                    0.0
                } else {
                    c as f64 / lanes as f64
                }
            })
            .collect();
        let mut all_bytes = [0u64; 256];
        for g in &self.group_hist {
            for (a, b) in all_bytes.iter_mut().zip(g) {
                *a += b;
            }
        }
        let block_entropy_bits: f64 = self.block_costs.iter().sum();
        let predicted_bytes = (block_entropy_bits / 8.0).ceil() as u64;
        // The top-bits histogram's non-empty bins, found once for both kinds of statistics.
        let bins = nonzero_bins(&self.top_hist);
        let float = float_stats(self.dtype, &bins);
        let moments = self.wide_values.then(|| self.moments.total());
        Ok(TensorStats {
            dtype: self.dtype,
            bytes,
            lanes,
            bit_set_counts,
            bit_set_ratio,
            byte_entropy: bits_per_symbol(&all_bytes),
            byte_group_entropy: self.group_hist.iter().map(|g| bits_per_symbol(g)).collect(),
            byte_group_hist: self.group_hist.iter().map(|g| g.to_vec()).collect(),
            block_bytes: BLOCK_LANES,
            block_entropy: self.block_entropy.clone(),
            block_entropy_bits,
            predicted_bytes,
            predicted_ratio: if bytes == 0 {
                1.0
            } else {
                predicted_bytes as f64 / bytes as f64
            },
            exponent_entropy: float.as_ref().map(|f| f.exponent_entropy),
            float,
            values: value_stats(self.dtype, &bins, moments),
            element_type: None,
            dequantized: None,
            quant: None,
        })
    }

    fn open_block(&mut self) {
        self.block_fill = 0;
        self.block_len = (self.total_lanes - self.pos).min(BLOCK_LANES);
        if self.lane >= 2 && self.block_len >= SMALL_BLOCK_LANES && self.halves.is_empty() {
            self.halves = vec![vec![0u32; 1 << 16]; self.lane / 2];
        }
    }

    /// True when the current block is counted through the 16-bit half histograms.
    fn uses_halves(&self) -> bool {
        self.lane >= 2 && self.block_len >= SMALL_BLOCK_LANES
    }

    /// Counts whole lanes, closing blocks as they fill.
    fn process(&mut self, mut data: &[u8]) {
        let lane = self.lane;
        while !data.is_empty() {
            let n = ((self.block_len - self.block_fill) as usize).min(data.len() / lane);
            let (chunk, rest) = data.split_at(n * lane);
            self.count(chunk);
            if self.wide_values {
                self.add_moments(chunk);
            }
            self.block_fill += n as u64;
            self.pos += n as u64;
            if self.block_fill == self.block_len {
                self.close_block();
            }
            data = rest;
        }
    }

    fn count(&mut self, chunk: &[u8]) {
        if self.lane == 1 {
            count_bytes(&mut self.block_groups[0], chunk);
        } else if self.uses_halves() {
            count_halves(&mut self.halves, chunk, self.lane);
        } else {
            let lane = self.lane;
            let top_shift = 8 * lane - 16;
            for l in chunk.chunks_exact(lane) {
                let mut v = 0u64;
                for (k, &b) in l.iter().enumerate() {
                    self.block_groups[k][b as usize] += 1;
                    v |= u64::from(b) << (8 * k);
                }
                self.top_hist[(v >> top_shift) as usize] += 1;
            }
        }
    }

    /// Decodes lanes of a 4- or 8-byte type and adds them to the current block's moments.
    fn add_moments(&mut self, chunk: &[u8]) {
        match self.dtype {
            Dtype::F32 | Dtype::C64 => self.add_moments_as(chunk, |b| f32::from_le_bytes(b) as f64),
            Dtype::I32 => self.add_moments_as(chunk, |b| i32::from_le_bytes(b) as f64),
            Dtype::U32 => self.add_moments_as(chunk, |b| u32::from_le_bytes(b) as f64),
            Dtype::F64 => self.add_moments_as(chunk, f64::from_le_bytes),
            Dtype::I64 => self.add_moments_as(chunk, |b| i64::from_le_bytes(b) as f64),
            Dtype::U64 => self.add_moments_as(chunk, |b| u64::from_le_bytes(b) as f64),
            _ => unreachable!("moments are only kept for 4- and 8-byte lanes"),
        }
    }

    /// [`Self::add_moments`] for one lane type (monomorphized so decoding inlines).
    fn add_moments_as<const N: usize>(&mut self, chunk: &[u8], decode: impl Fn([u8; N]) -> f64) {
        self.moments.extend(
            chunk
                .chunks_exact(N)
                .map(|l| decode(l.try_into().expect("N bytes"))),
        );
    }

    fn close_block(&mut self) {
        if self.block_len == 0 {
            return;
        }
        if self.uses_halves() {
            let top = self.halves.len() - 1;
            for (k, h) in self.halves.iter_mut().enumerate() {
                let (lo, hi) = self.block_groups.split_at_mut(2 * k + 1);
                fold_half(h, &mut lo[2 * k], &mut hi[0]);
                if k == top {
                    for (t, &c) in self.top_hist.iter_mut().zip(h.iter()) {
                        *t += u64::from(c);
                    }
                }
                h.fill(0);
            }
        } else if self.lane == 1 {
            for (t, &c) in self.top_hist.iter_mut().zip(self.block_groups[0].iter()) {
                *t += u64::from(c);
            }
        }
        if self.wide_values {
            self.moments.close_block();
        }
        let n = self.block_len as f64;
        let mut block_cost = 0.0;
        for (k, g) in self.block_groups.iter_mut().enumerate() {
            let cost = cost_bits(g.as_slice());
            block_cost += cost;
            self.block_entropy[k].push((cost / n) as f32);
            for (a, &c) in self.group_hist[k].iter_mut().zip(g.iter()) {
                *a += u64::from(c);
            }
            *g = [0; 256];
        }
        self.block_costs.push(block_cost);
        self.open_block();
    }
}

/// The non-empty bins of a histogram of bit patterns, as (pattern, count) in pattern order: what
/// the statistics derived from it read ([`float_stats`], [`value_stats`]).
pub(crate) fn nonzero_bins(hist: &[u64]) -> Vec<(u32, u64)> {
    // Runs of 16 empty bins are skipped by one comparison: the histogram of a small tensor of a
    // wide type is 65 536 bins, nearly all empty.
    const RUN: usize = 16;
    let mut out = Vec::new();
    for (r, run) in hist.chunks(RUN).enumerate() {
        if run.iter().fold(0, |a, &c| a | c) == 0 {
            continue;
        }
        for (i, &c) in run.iter().enumerate().filter(|&(_, &c)| c > 0) {
            out.push(((r * RUN + i) as u32, c));
        }
    }
    out
}

/// Sign / exponent / mantissa histograms of a float `dtype` from the non-empty bins of its lanes'
/// top-bits histogram ([`nonzero_bins`]).
pub(crate) fn float_stats(dtype: Dtype, bins: &[(u32, u64)]) -> Option<FloatStats> {
    let lane = dtype.lane_bytes();
    let layout = dtype.float_layout()?;
    if matches!(dtype, Dtype::F6_E2M3 | Dtype::F6_E3M2) {
        return None; // packed across byte boundaries: fields are not visible per byte
    }
    let (e, s) = (layout.exponent_bits, layout.sign_bits);
    let mut sign_hist = vec![0u64; if s == 1 { 2 } else { 0 }];
    let mut exponent_hist = vec![0u64; 1 << e];
    let (values_per_bin, field_bits) = if dtype == Dtype::F4 {
        (2, 4)
    } else {
        (1, (8 * lane as u32).min(16))
    };
    let mant_bits_seen = field_bits - s - e;
    let mut mantissa_hist = vec![0u64; 1 << mant_bits_seen];
    for &(bits, c) in bins {
        let fields: &[u32] = if values_per_bin == 2 {
            &[bits & 0x0F, bits >> 4]
        } else {
            &[bits]
        };
        for &v in fields {
            if s == 1 {
                sign_hist[(v >> (field_bits - 1)) as usize & 1] += c;
            }
            exponent_hist[((v >> mant_bits_seen) & ((1 << e) - 1)) as usize] += c;
            mantissa_hist[(v & ((1 << mant_bits_seen) - 1)) as usize] += c;
        }
    }
    Some(FloatStats {
        exponent_bits: e,
        mantissa_bits: layout.mantissa_bits,
        mantissa_hist_bits: mant_bits_seen,
        sign_entropy: bits_per_symbol(&sign_hist),
        exponent_entropy: bits_per_symbol(&exponent_hist),
        mantissa_entropy: bits_per_symbol(&mantissa_hist),
        sign_hist,
        exponent_hist,
        mantissa_hist,
    })
}

/// Value statistics of `dtype` from the non-empty bins of its lanes' top-bits histogram
/// ([`nonzero_bins`]) and, for 4- and 8-byte lanes, their exact moments.
pub(crate) fn value_stats(
    dtype: Dtype,
    bins: &[(u32, u64)],
    moments: Option<Moments>,
) -> Option<ValueStats> {
    let decode = decoder(dtype);
    let values_per_bin = if dtype == Dtype::F4 { 2 } else { 1 };
    match (&moments, decode) {
        (None, Some(decode)) => {
            let m = Moments::from_histogram(bins, decode, values_per_bin);
            let hist = (m.finite > 0)
                .then(|| value_histogram(bins, decode, values_per_bin, m.min, m.max, true));
            Some(m.to_stats(hist))
        }
        (Some(m), decode) => {
            let hist = decode
                .filter(|_| m.finite > 0)
                .map(|decode| value_histogram(bins, decode, 1, m.min, m.max, false));
            Some(m.to_stats(hist))
        }
        (None, None) => None,
    }
}

/// Adds the bytes of `chunk` (at most one block) to `g`: byte `i` into histogram `i % 4` first, so
/// that runs of one byte value (a quantized tensor's blocks) do not wait on each other's
/// increments.
fn count_bytes(g: &mut [u32; 256], chunk: &[u8]) {
    let mut quads = [[0u32; 256]; 4];
    let mut q4 = chunk.chunks_exact(4);
    for q in q4.by_ref() {
        for (h, &b) in quads.iter_mut().zip(q) {
            h[usize::from(b)] += 1;
        }
    }
    for (h, &b) in quads.iter_mut().zip(q4.remainder()) {
        h[usize::from(b)] += 1;
    }
    for (i, c) in g.iter_mut().enumerate() {
        *c += quads[0][i] + quads[1][i] + quads[2][i] + quads[3][i];
    }
}

/// One increment per 16 bits of every lane into the block's half histograms.
fn count_halves(halves: &mut [Vec<u32>], chunk: &[u8], lane: usize) {
    match lane {
        2 => {
            let h = &mut halves[0][..1 << 16];
            for l in chunk.chunks_exact(2) {
                h[u16::from_le_bytes([l[0], l[1]]) as usize] += 1;
            }
        }
        _ => {
            for l in chunk.chunks_exact(lane) {
                for (k, h) in halves.iter_mut().enumerate() {
                    h[u16::from_le_bytes([l[2 * k], l[2 * k + 1]]) as usize] += 1;
                }
            }
        }
    }
}

/// Adds a 16-bit half histogram into the histograms of its low and high byte.
fn fold_half(h: &[u32], lo: &mut [u32; 256], hi: &mut [u32; 256]) {
    for (row_index, row) in h.chunks_exact(256).enumerate() {
        let mut row_sum = 0u32;
        for (a, &c) in lo.iter_mut().zip(row) {
            *a += c;
            row_sum += c;
        }
        hi[row_index] += row_sum;
    }
}

/// Splits a tensor of `byte_len` bytes into consecutive block-aligned byte ranges of about
/// `target_bytes` each (at least one block), for accumulating in parallel and merging in order.
pub fn split_ranges(dtype: Dtype, byte_len: u64, target_bytes: u64) -> Vec<Range<u64>> {
    let block_bytes = BLOCK_LANES * dtype.lane_bytes() as u64;
    let step = target_bytes.div_ceil(block_bytes).max(1) * block_bytes;
    let mut out = Vec::new();
    let mut start = 0;
    while start < byte_len {
        let end = (start + step).min(byte_len);
        out.push(start..end);
        start = end;
    }
    if out.is_empty() {
        out.push(0..0);
    }
    out
}
