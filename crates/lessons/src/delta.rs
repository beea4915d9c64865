//! Lesson `delta` — two checkpoints of the same tensor (BitSnap paper 001 §3 "bitmask-based
//! sparse delta", and the XOR deltas of the LMC paper 000 §4): which bits flip at each position
//! between them and the share of elements that changed ([`flips`]); then the BitSnap bitmask
//! delta ([`bitlens_codecs::bitsnap::encode_delta`]) against the XOR of the two coded with LMC
//! ([`bitlens_codecs::encode`]) as the changed fraction varies ([`point`], [`curve`]).
//!
//! To vary the changed fraction on real values, point `percent` builds a tensor from the pair:
//! element `i` takes the second checkpoint's value when `⌊(i+1)·percent/100⌋ > ⌊i·percent/100⌋`
//! (evenly spread, exactly `⌊n·percent/100⌋` positions), the first's otherwise ([`mix`]); its
//! changed fraction is then about `percent` % of the pair's own. The bitmask pays while
//! `n/8 + c·w < n·w` bytes (`c` changed of `n` elements of `w` bytes): below a changed fraction
//! of `1 − 1/(8w)` ([`break_even`], 93.75 % for 2-byte elements); past it the encoder stores the
//! values densely.

use crate::LessonError;
use bitlens_codecs::bitsnap;
use bitlens_codecs::lmc::Width;
use bitlens_codecs::Options;

/// Bit flips between two versions of a tensor.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Flips {
    /// Whole elements compared.
    pub elements: usize,
    /// Elements whose bytes differ.
    pub changed: usize,
    /// `changed / elements` (0 without elements).
    pub changed_fraction: f64,
    /// Elements whose bit `b` flipped, bit 0 (the lowest mantissa bit) first; `8 · w` entries.
    pub flip_counts: Vec<u64>,
}

fn same_length(base: &[u8], new: &[u8]) -> Result<(), LessonError> {
    if base.len() == new.len() {
        Ok(())
    } else {
        Err(LessonError::LengthMismatch {
            base: base.len(),
            new: new.len(),
        })
    }
}

/// The bits that flip between `base` and `new` (little-endian elements of `width` bytes).
pub fn flips(base: &[u8], new: &[u8], width: Width) -> Result<Flips, LessonError> {
    same_length(base, new)?;
    let w = width.bytes();
    let mut flip_counts = vec![0u64; 8 * w];
    let mut changed = 0;
    for (a, b) in base.chunks_exact(w).zip(new.chunks_exact(w)) {
        if a == b {
            continue;
        }
        changed += 1;
        for (byte, (x, y)) in a.iter().zip(b).enumerate() {
            let d = x ^ y;
            for bit in 0..8 {
                flip_counts[8 * byte + bit] += u64::from(d >> bit & 1);
            }
        }
    }
    let elements = base.len() / w;
    Ok(Flips {
        elements,
        changed,
        changed_fraction: changed as f64 / elements.max(1) as f64,
        flip_counts,
    })
}

/// The changed fraction past which the bitmask delta costs more than the values stored densely:
/// `1 − 1/(8w)` (0.9375 for 2-byte elements, 0.96875 for 4-byte ones).
pub fn break_even(width: Width) -> f64 {
    1.0 - 1.0 / (8.0 * width.bytes() as f64)
}

/// Whether element `i` takes the second checkpoint's value at `percent` (see the module docs).
pub fn takes_new(i: usize, percent: u32) -> bool {
    let p = percent as usize;
    (i + 1) * p / 100 > i * p / 100
}

/// The tensor of point `percent`: element `i` from `new` when [`takes_new`], else from `base`
/// (a partial last element from `base`).
pub fn mix(base: &[u8], new: &[u8], width: Width, percent: u32) -> Result<Vec<u8>, LessonError> {
    same_length(base, new)?;
    if percent > 100 {
        return Err(LessonError::Percent(percent));
    }
    let w = width.bytes();
    let mut out = base.to_vec();
    for (i, (o, n)) in out.chunks_exact_mut(w).zip(new.chunks_exact(w)).enumerate() {
        if takes_new(i, percent) {
            o.copy_from_slice(n);
        }
    }
    Ok(out)
}

/// One point of the curve: the sizes of the real encodes of [`mix`]`(base, new, percent)`
/// against `base`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DeltaPoint {
    /// Share of positions taking the second checkpoint's value, in %.
    pub percent: u32,
    /// Elements that differ from the base.
    pub changed: usize,
    /// `changed / elements`.
    pub changed_fraction: f64,
    /// BitSnap as the paper has it: bitmask + the changed values as they are
    /// (`encode_delta(…, false)`), bytes.
    pub bitmask_bytes: usize,
    /// BitSnap as bitlens snapshots store it: the values coded with LMC
    /// (`encode_delta(…, true)`, `bitlens compress --codec bitsnap --base`), bytes.
    pub bitsnap_bytes: usize,
    /// The XOR with the base coded with LMC (a PLMC stream, `bitlens compress --base`), bytes.
    pub xor_lmc_bytes: usize,
    /// The encoder stored the values densely (no bitmask): past the break-even.
    pub dense: bool,
    /// Bytes of the tensor.
    pub raw_bytes: usize,
}

/// Byte 6 of a BitSnap delta stream: 1 when the values are stored densely (after the 4-byte
/// magic, the version and the width).
const DENSE_FLAG_AT: usize = 6;

/// Point `percent` (0..=100) of the curve of `base` → `new`.
pub fn point(
    base: &[u8],
    new: &[u8],
    width: Width,
    percent: u32,
) -> Result<DeltaPoint, LessonError> {
    let mixed = mix(base, new, width, percent)?;
    let f = flips(base, &mixed, width)?;
    let bitmask = bitsnap::encode_delta(&mixed, base, width, false);
    let bitsnap_bytes = bitsnap::encode_delta(&mixed, base, width, true).len();
    let xor: Vec<u8> = mixed.iter().zip(base).map(|(a, b)| a ^ b).collect();
    Ok(DeltaPoint {
        percent,
        changed: f.changed,
        changed_fraction: f.changed_fraction,
        bitmask_bytes: bitmask.len(),
        bitsnap_bytes,
        xor_lmc_bytes: bitlens_codecs::encode(&xor, width, &Options::default()).len(),
        dense: bitmask.get(DENSE_FLAG_AT) == Some(&1),
        raw_bytes: base.len(),
    })
}

/// Points at `0, step, 2·step, …, 100` % (`step` clamped to 1..=100).
pub fn curve(
    base: &[u8],
    new: &[u8],
    width: Width,
    step: u32,
) -> Result<Vec<DeltaPoint>, LessonError> {
    let step = step.clamp(1, 100) as usize;
    (0..=100u32)
        .step_by(step)
        .chain((100 % step != 0).then_some(100))
        .map(|p| point(base, new, width, p))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flips_count_bits_and_changed_elements() {
        let base = [0x00u8, 0x3f, 0x80, 0x3f, 0x00, 0x40];
        let new = [0x01u8, 0x3f, 0x80, 0x3f, 0x00, 0xc0];
        let f = flips(&base, &new, Width::W2).unwrap();
        assert_eq!((f.elements, f.changed), (3, 2));
        assert!((f.changed_fraction - 2.0 / 3.0).abs() < 1e-12);
        let mut want = vec![0u64; 16];
        want[0] = 1;
        want[15] = 1;
        assert_eq!(f.flip_counts, want);
        assert_eq!(
            flips(&base, &new[..4], Width::W2),
            Err(LessonError::LengthMismatch { base: 6, new: 4 })
        );
    }

    #[test]
    fn mix_takes_exactly_the_share_asked() {
        let n = 1000;
        let base = vec![0u8; 2 * n];
        let new = vec![1u8; 2 * n];
        for p in [0, 1, 25, 50, 93, 100] {
            let m = mix(&base, &new, Width::W2, p).unwrap();
            let taken = m.chunks(2).filter(|e| e == &[1, 1]).count();
            assert_eq!(taken, n * p as usize / 100, "{p} %");
            assert_eq!((0..n).filter(|&i| takes_new(i, p)).count(), taken);
        }
        assert_eq!(
            mix(&base, &new, Width::W2, 101),
            Err(LessonError::Percent(101))
        );
    }

    #[test]
    fn break_even_of_the_bitmask() {
        assert_eq!(break_even(Width::W2), 0.9375);
        assert_eq!(break_even(Width::W4), 0.96875);
        // Every element differs: the encoder's switch to dense values is at the break-even.
        let n = 1600;
        let base = vec![0u8; 2 * n];
        let new: Vec<u8> = (0..2 * n).map(|i| (i % 251) as u8 | 1).collect();
        for p in [93, 94] {
            let pt = point(&base, &new, Width::W2, p).unwrap();
            assert_eq!(pt.changed, n * p as usize / 100);
            assert_eq!(pt.dense, pt.changed_fraction >= 0.9375, "{p} %");
            let header = 4 + 4 + 8 + 1;
            let sparse = n / 8 + 8 + 2 * pt.changed;
            let body = if pt.dense { 2 * n } else { sparse };
            assert_eq!(pt.bitmask_bytes, header + body, "{p} %");
        }
    }

    /// Real weights and a real-looking update: the curve's sizes are the encoders' streams, and
    /// they decode back to the mixed tensor.
    #[test]
    fn curve_points_are_real_encodes() {
        let Some(base) = crate::real_bf16_megabyte() else {
            return;
        };
        // Every third element moved by one unit in the last place (a small update).
        let mut new = base.clone();
        for (i, e) in new.chunks_exact_mut(2).enumerate() {
            if i % 3 == 0 {
                e[0] ^= 1;
            }
        }
        let c = curve(&base, &new, Width::W2, 25).unwrap();
        assert_eq!(
            c.iter().map(|p| p.percent).collect::<Vec<_>>(),
            [0, 25, 50, 75, 100]
        );
        assert!(c.windows(2).all(|w| w[0].changed <= w[1].changed));
        let pair = flips(&base, &new, Width::W2).unwrap();
        assert_eq!(c[4].changed, pair.changed);
        assert_eq!(pair.flip_counts[0] as usize, pair.changed);
        for p in &c {
            let mixed = mix(&base, &new, Width::W2, p.percent).unwrap();
            let stream = bitsnap::encode_delta(&mixed, &base, Width::W2, true);
            assert_eq!(p.bitsnap_bytes, stream.len());
            assert_eq!(bitsnap::decode_delta(&stream, &base).unwrap(), mixed);
            let xor: Vec<u8> = mixed.iter().zip(&base).map(|(a, b)| a ^ b).collect();
            let x = bitlens_codecs::encode(&xor, Width::W2, &Options::default());
            assert_eq!(p.xor_lmc_bytes, x.len());
            assert_eq!(bitlens_codecs::decode(&x, xor.len()).unwrap(), xor);
            assert!(!p.dense);
        }
        // A third of the elements changed: the bitmask stays far under the raw size.
        assert!(c[4].bitmask_bytes < base.len() * 3 / 4);
    }
}
