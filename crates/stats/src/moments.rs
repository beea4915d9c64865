//! Exact streaming moments of values ([`Moments`]: counts of zeros / NaN / ±Inf, min, max, mean
//! and M2 for the standard deviation, merged with Chan's parallel update) and the order the
//! accumulators feed them in ([`MomentStream`]: batches within blocks, blocks in order), so that
//! a tensor's moments depend on its values only, never on windows, splits or the loop's
//! compilation.

use crate::values::{ValueHistogram, ValueStats};

/// Streaming moments of values: counts, min, max and (n, mean, M2) for Chan's parallel variance.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Moments {
    pub count: u64,
    pub finite: u64,
    pub zeros: u64,
    pub nan: u64,
    pub pos_inf: u64,
    pub neg_inf: u64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub m2: f64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            count: 0,
            finite: 0,
            zeros: 0,
            nan: 0,
            pos_inf: 0,
            neg_inf: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
        }
    }
}

impl Moments {
    /// Adds `weight` copies of `v`.
    fn add_weighted(&mut self, v: f64, weight: u64) {
        self.count += weight;
        if v.is_nan() {
            self.nan += weight;
        } else if v == f64::INFINITY {
            self.pos_inf += weight;
        } else if v == f64::NEG_INFINITY {
            self.neg_inf += weight;
        } else {
            if v == 0.0 {
                self.zeros += weight;
            }
            self.min = self.min.min(v);
            self.max = self.max.max(v);
            let chunk = Moments {
                finite: weight,
                mean: v,
                ..Moments::default()
            };
            self.merge_variance(&chunk);
            self.finite += weight;
        }
    }

    /// Adds a batch of values (two passes over the batch, in L1, for an accurate variance; a third
    /// only when a value is not finite).
    ///
    /// Value `i` goes to accumulator `i % 4` of each pass, in order ([`first_pass`],
    /// [`second_pass`]): the four run as vectors in registers, and the result does not depend on
    /// how the loop is compiled nor on the value type the batch is read from.
    pub fn add_batch<T: Value>(&mut self, values: &[T]) {
        let mut chunk = Moments {
            count: values.len() as u64,
            ..Moments::default()
        };
        // Most batches are all finite: the first pass runs with 1/len and no selects, and is only
        // run again (with the selects for the non-finite values) when its sums say otherwise: a
        // NaN or ±Inf makes its partial sum NaN or ±Inf for good, while finite values' sums of
        // v/len stay finite. Either way each sum is the one of the finite values, in order.
        let optimistic = first_pass::<T, true>(values, 1.0 / values.len().max(1) as f64);
        let all = optimistic.mean.iter().all(|m| m.is_finite());
        let finite = if all {
            values.len()
        } else {
            count_finite(values)
        };
        if finite > 0 {
            // Σ v·(1/n) cannot overflow even when every value is near f64::MAX. Non-finite values
            // contribute nothing.
            let first = if all {
                optimistic
            } else {
                first_pass::<T, false>(values, 1.0 / finite as f64)
            };
            let mean = (first.mean[0] + first.mean[1]) + (first.mean[2] + first.mean[3]);
            let m2_4 = if all {
                second_pass::<T, true>(values, mean)
            } else {
                second_pass::<T, false>(values, mean)
            };
            chunk.finite = finite as u64;
            chunk.mean = mean;
            chunk.m2 = (m2_4[0] + m2_4[1]) + (m2_4[2] + m2_4[3]);
            chunk.min = first.min.iter().fold(f64::INFINITY, |a, &b| a.min(b));
            chunk.max = first.max.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            chunk.zeros = first.zeros;
        }
        if finite < values.len() {
            for v in values.iter().map(|v| v.get()).filter(|v| !v.is_finite()) {
                if v.is_nan() {
                    chunk.nan += 1;
                } else if v > 0.0 {
                    chunk.pos_inf += 1;
                } else {
                    chunk.neg_inf += 1;
                }
            }
        }
        self.merge(&chunk);
    }

    /// Folds another partial result into this one.
    pub fn merge(&mut self, other: &Moments) {
        self.count += other.count;
        self.zeros += other.zeros;
        self.nan += other.nan;
        self.pos_inf += other.pos_inf;
        self.neg_inf += other.neg_inf;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.merge_variance(other);
        self.finite += other.finite;
    }

    /// Chan et al.'s update of (n, mean, M2); `self.finite` is updated by the caller. The mean is
    /// a convex combination, so it never overflows; M2 may become +Inf for values whose variance
    /// exceeds the f64 range, never NaN.
    fn merge_variance(&mut self, other: &Moments) {
        let (na, nb) = (self.finite as f64, other.finite as f64);
        if nb == 0.0 {
            return;
        }
        if na == 0.0 {
            self.mean = other.mean;
            self.m2 = other.m2;
            return;
        }
        let n = na + nb;
        let delta = other.mean - self.mean;
        self.mean = self.mean * (na / n) + other.mean * (nb / n);
        self.m2 += other.m2 + delta * delta * (na / n) * nb;
    }

    /// Exact moments of a histogram of bit patterns, given by its non-empty bins (pattern, count).
    pub fn from_histogram(
        bins: &[(u32, u64)],
        decode: fn(u64) -> f64,
        values_per_bin: u32,
    ) -> Self {
        let mut m = Moments::default();
        for &(bits, c) in bins {
            let bits = u64::from(bits);
            if values_per_bin == 2 {
                // F4: a byte holds two values, low nibble first.
                m.add_weighted(decode(bits & 0x0F), c);
                m.add_weighted(decode(bits >> 4), c);
            } else {
                m.add_weighted(decode(bits), c);
            }
        }
        m
    }

    /// The public result, with an optional histogram.
    pub fn to_stats(&self, histogram: Option<ValueHistogram>) -> ValueStats {
        let some = |v: f64| (self.finite > 0).then_some(v);
        ValueStats {
            count: self.count,
            finite: self.finite,
            zeros: self.zeros,
            nan: self.nan,
            pos_inf: self.pos_inf,
            neg_inf: self.neg_inf,
            min: some(self.min),
            max: some(self.max),
            mean: some(self.mean),
            std: some((self.m2 / self.finite.max(1) as f64).max(0.0).sqrt()),
            histogram,
        }
    }
}

/// Values added to a [`MomentStream`]'s current batch before it is folded into its block.
pub(crate) const MOMENT_BATCH: usize = 512;

/// The exact moments of a stream of values as the accumulators keep them: per block of values
/// (the caller says where blocks end), each block in batches of [`MOMENT_BATCH`] counted from its
/// start ([`Moments::add_batch`]), the blocks merged in order at the end ([`MomentStream::total`]).
/// The result depends on the values and the block boundaries only, never on how they were fed.
#[derive(Debug, Clone)]
pub(crate) struct MomentStream {
    /// Moments of each closed block, in block order.
    blocks: Vec<Moments>,
    /// Moments of the current block's full batches.
    cur: Moments,
    /// Values of the current batch (fewer than one batch).
    pending: Box<[f64; MOMENT_BATCH]>,
    pending_len: usize,
}

impl Default for MomentStream {
    fn default() -> Self {
        MomentStream {
            blocks: Vec::new(),
            cur: Moments::default(),
            pending: Box::new([0.0; MOMENT_BATCH]),
            pending_len: 0,
        }
    }
}

impl MomentStream {
    /// Adds the next values of the current block.
    #[inline]
    pub fn extend(&mut self, values: impl Iterator<Item = f64>) {
        let mut values = values;
        loop {
            let room = &mut self.pending[self.pending_len..];
            let mut filled = 0;
            for (slot, v) in room.iter_mut().zip(values.by_ref()) {
                *slot = v;
                filled += 1;
            }
            self.pending_len += filled;
            if self.pending_len < MOMENT_BATCH {
                break;
            }
            self.cur.add_batch(&self.pending[..]);
            self.pending_len = 0;
        }
    }

    /// Adds the next values of the current block from a slice: whole batches straight from it,
    /// the rest through the batch buffer (the same batches as [`MomentStream::extend`]).
    #[inline]
    pub fn extend_slice<T: Value>(&mut self, mut values: &[T]) {
        while !values.is_empty() {
            if self.pending_len == 0 && values.len() >= MOMENT_BATCH {
                let (batch, rest) = values.split_at(MOMENT_BATCH);
                self.cur.add_batch(batch);
                values = rest;
                continue;
            }
            let n = (MOMENT_BATCH - self.pending_len).min(values.len());
            let (head, rest) = values.split_at(n);
            for (slot, v) in self.pending[self.pending_len..].iter_mut().zip(head) {
                *slot = v.get();
            }
            self.pending_len += n;
            values = rest;
            if self.pending_len == MOMENT_BATCH {
                self.cur.add_batch(&self.pending[..]);
                self.pending_len = 0;
            }
        }
    }

    /// Closes the current block.
    pub fn close_block(&mut self) {
        self.cur.add_batch(&self.pending[..self.pending_len]);
        self.pending_len = 0;
        self.blocks.push(std::mem::take(&mut self.cur));
    }

    /// Appends the stream of the values that directly follow (its closed blocks, then its
    /// unfinished block as this one's current block).
    pub fn append(&mut self, next: MomentStream) {
        self.blocks.extend(next.blocks);
        self.cur = next.cur;
        self.pending = next.pending;
        self.pending_len = next.pending_len;
    }

    /// The moments of every closed block, merged in block order.
    pub fn total(&self) -> Moments {
        self.blocks.iter().fold(Moments::default(), |mut acc, m| {
            acc.merge(m);
            acc
        })
    }
}

/// A value type moments are read from, converted to `f64` exactly.
pub(crate) trait Value: Copy + PartialOrd + std::ops::Neg<Output = Self> {
    /// +∞ of the type.
    const INFINITY: Self;
    /// The value as `f64`.
    fn get(self) -> f64;
    /// Whether the value is neither NaN nor ±∞.
    fn finite(self) -> bool;
}

impl Value for f64 {
    const INFINITY: f64 = f64::INFINITY;
    #[inline(always)]
    fn get(self) -> f64 {
        self
    }
    #[inline(always)]
    fn finite(self) -> bool {
        self.is_finite()
    }
}

impl Value for f32 {
    const INFINITY: f32 = f32::INFINITY;
    #[inline(always)]
    fn get(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn finite(self) -> bool {
        self.is_finite()
    }
}

/// The finite values among `values`.
fn count_finite<T: Value>(values: &[T]) -> usize {
    values.iter().filter(|v| v.finite()).count()
}

/// The first pass of [`Moments::add_batch`] in four interleaved accumulators, and the zeros.
struct FirstPass {
    mean: [f64; 4],
    min: [f64; 4],
    max: [f64; 4],
    zeros: u64,
}

/// Runs `step(k, v)` on each value `v` of `values` with `k = i % 4`, four at a time.
#[inline(always)]
fn in_fours<T: Value>(values: &[T], mut step: impl FnMut(usize, f64)) {
    let mut quads = values.chunks_exact(4);
    for q in quads.by_ref() {
        for (k, v) in q.iter().enumerate() {
            step(k, v.get());
        }
    }
    for (k, v) in quads.remainder().iter().enumerate() {
        step(k, v.get());
    }
}

/// Σ v·inv, min and max of the finite values, value `i` into accumulator `i % 4`, and the
/// zeros. With `ALL_FINITE` every value is taken as finite (no selects): the sums are right when
/// all are.
///
/// Min and max are kept as the values are typed (four `f32` lanes are one register where four
/// `f64` lanes are two), the max as the least of the negated values; promoting to `f64` keeps
/// order and equality, so the result is the `f64` selects' bit for bit, ±0 included. Kept in
/// `f64` selects, wasm32 left them scalar: 40 % of a quantized tensor's value statistics in the
/// page, which now run ~1.6× faster there (natively within the noise).
#[inline]
fn first_pass<T: Value, const ALL_FINITE: bool>(values: &[T], inv: f64) -> FirstPass {
    let mut mean = [0.0; 4];
    // Zeros counted in f64 (exact: a batch is far below 2^53 values) so that the count
    // vectorizes with the sums.
    let mut zeros = [0f64; 4];
    // The least value and the least negated value of each lane, as the values are typed.
    let (mut min, mut neg_max) = ([T::INFINITY; 4], [T::INFINITY; 4]);
    let ok = |v: T| ALL_FINITE || v.finite();
    let lo = |v: T| if ok(v) { v } else { T::INFINITY };
    let neg = |v: T| if ok(v) { -v } else { T::INFINITY };
    let mut sums = |k: usize, v: T| {
        let x = v.get();
        zeros[k] += if x == 0.0 { 1.0 } else { 0.0 };
        mean[k] += if ok(v) { x * inv } else { 0.0 };
    };
    let mut quads = values.chunks_exact(4);
    for q in quads.by_ref() {
        let q: [T; 4] = std::array::from_fn(|k| q[k]);
        for (k, &v) in q.iter().enumerate() {
            sums(k, v);
        }
        keep_least(&mut min, q.map(lo));
        keep_least(&mut neg_max, q.map(neg));
    }
    for (k, &v) in quads.remainder().iter().enumerate() {
        sums(k, v);
        min[k] = least(min[k], lo(v));
        neg_max[k] = least(neg_max[k], neg(v));
    }
    FirstPass {
        mean,
        min: min.map(T::get),
        max: neg_max.map(|m| -m.get()),
        zeros: zeros.iter().sum::<f64>() as u64,
    }
}

/// [`least`] of each lane of `acc` and of `x`, into `acc`.
#[inline(always)]
fn keep_least<T: Value>(acc: &mut [T; 4], x: [T; 4]) {
    for k in 0..4 {
        acc[k] = least(acc[k], x[k]);
    }
}

/// `x` when it is below `acc`, else `acc`: the first of equal values is kept (of `-0` and `+0`,
/// whichever came first), and a NaN `x` never replaces `acc`.
#[inline(always)]
fn least<T: Value>(acc: T, x: T) -> T {
    if x < acc {
        x
    } else {
        acc
    }
}

/// Σ (v − mean)² of the finite values, value `i` into accumulator `i % 4` (`ALL_FINITE` as in
/// [`first_pass`]).
#[inline]
fn second_pass<T: Value, const ALL_FINITE: bool>(values: &[T], mean: f64) -> [f64; 4] {
    let mut m2 = [0.0f64; 4];
    in_fours(values, |k, v| {
        let d = if ALL_FINITE || v.is_finite() {
            v - mean
        } else {
            0.0
        };
        m2[k] += d * d;
    });
    m2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Batches with every kind of value: ordinary, ±0, subnormal, huge, ±Inf, NaN, and lengths
    /// that are not multiples of four.
    fn odd_batches() -> Vec<Vec<f64>> {
        let bytes = bitlens_test_support::rng::bytes(4242, 8 * 4096);
        let random: Vec<f64> = bytes
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
            .collect();
        let specials = [
            0.0,
            -0.0,
            f64::MIN_POSITIVE / 4.0,
            1e300,
            -1e300,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1.5,
        ];
        let mut out: Vec<Vec<f64>> = random.chunks(509).map(<[f64]>::to_vec).collect();
        out.push(specials.to_vec());
        out.push(
            specials
                .iter()
                .map(|&v| if v.is_finite() { v } else { 2.0 })
                .collect(),
        );
        out.push(vec![f64::MAX; 512]);
        out.push(Vec::new());
        // Zeros of both signs in one lane, in both orders, in whole quads and in the remainder:
        // which zero is the least or greatest depends on which came first.
        out.push(vec![-0.0, 1.0, -1.0, 2.0, 0.0, 1.0, -1.0, 2.0, -0.0]);
        out.push(vec![0.0, -1.0, 1.0, -2.0, -0.0, -1.0, 1.0, -2.0, 0.0, -0.0]);
        out.push(vec![
            0.0, -0.0, 0.0, -0.0, -0.0, 0.0, -0.0, 0.0, 0.0, -0.0, -0.0,
        ]);
        out.push(vec![
            -0.0,
            f64::NAN,
            0.0,
            f64::INFINITY,
            0.0,
            -0.0,
            -0.0,
            0.0,
            f64::NAN,
        ]);
        out
    }

    /// [`Moments::add_batch`] as it was written before the passes were unrolled: one value at a
    /// time, the finite values counted first.
    fn reference_batch(values: &[f64]) -> Moments {
        let mut chunk = Moments {
            count: values.len() as u64,
            ..Moments::default()
        };
        let finite = values.iter().filter(|v| v.is_finite()).count();
        if finite > 0 {
            let inv = 1.0 / finite as f64;
            let (mut mean4, mut min4, mut max4) =
                ([0.0; 4], [f64::INFINITY; 4], [f64::NEG_INFINITY; 4]);
            let mut zeros = 0;
            for (i, &v) in values.iter().enumerate() {
                let (k, ok) = (i & 3, v.is_finite());
                mean4[k] += if ok { v * inv } else { 0.0 };
                let lo = if ok { v } else { f64::INFINITY };
                let hi = if ok { v } else { f64::NEG_INFINITY };
                min4[k] = if lo < min4[k] { lo } else { min4[k] };
                max4[k] = if hi > max4[k] { hi } else { max4[k] };
                zeros += u64::from(v == 0.0);
            }
            let mean = (mean4[0] + mean4[1]) + (mean4[2] + mean4[3]);
            let mut m2 = [0.0; 4];
            for (i, &v) in values.iter().enumerate() {
                let d = if v.is_finite() { v - mean } else { 0.0 };
                m2[i & 3] += d * d;
            }
            chunk.finite = finite as u64;
            chunk.mean = mean;
            chunk.m2 = (m2[0] + m2[1]) + (m2[2] + m2[3]);
            chunk.min = min4.iter().fold(f64::INFINITY, |a, &b| a.min(b));
            chunk.max = max4.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            chunk.zeros = zeros;
        }
        for &v in values.iter().filter(|v| !v.is_finite()) {
            if v.is_nan() {
                chunk.nan += 1;
            } else if v > 0.0 {
                chunk.pos_inf += 1;
            } else {
                chunk.neg_inf += 1;
            }
        }
        chunk
    }

    #[test]
    fn batches_are_the_one_value_at_a_time_reference_bit_for_bit() {
        for batch in odd_batches() {
            let (mut fast, mut slow) = (Moments::default(), Moments::default());
            fast.add_batch(&batch);
            slow.merge(&reference_batch(&batch));
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{batch:?}");
            // Read from f32s, the same batch gives the same moments.
            if batch.iter().all(|&v| v as f32 as f64 == v || v.is_nan()) {
                let f: Vec<f32> = batch.iter().map(|&v| v as f32).collect();
                let mut from_f32 = Moments::default();
                from_f32.add_batch(&f);
                assert_eq!(format!("{from_f32:?}"), format!("{slow:?}"));
            }
        }
    }

    #[test]
    fn batch_and_weighted_moments_agree_and_merge() {
        let values = [1.0, 2.0, 3.0, 4.0, f64::NAN, f64::INFINITY, 0.0, -2.5];
        let mut a = Moments::default();
        a.add_batch(&values[..3]);
        let mut b = Moments::default();
        b.add_batch(&values[3..]);
        a.merge(&b);
        let mut w = Moments::default();
        for v in values {
            w.add_weighted(v, 1);
        }
        let finite = [1.0, 2.0, 3.0, 4.0, 0.0, -2.5];
        let mean = finite.iter().sum::<f64>() / 6.0;
        let var = finite.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / 6.0;
        for m in [&a, &w] {
            let s = m.to_stats(None);
            assert_eq!(
                (s.count, s.finite, s.nan, s.pos_inf, s.zeros),
                (8, 6, 1, 1, 1)
            );
            assert!((s.mean.unwrap() - mean).abs() < 1e-12);
            assert!((s.std.unwrap() - var.sqrt()).abs() < 1e-12);
            assert_eq!((s.min, s.max), (Some(-2.5), Some(4.0)));
        }
    }
}
