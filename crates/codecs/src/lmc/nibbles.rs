//! The nibble pairs of LMC block kind 6 (a bitlens extension of the LMC paper's §4.2 block
//! kinds): each byte turned right by `r` bits, the high nibbles of each two such bytes
//! Huffman-coded as one byte and the low nibbles stored as they are.
//!
//! A block of `n` bytes, turned (`c = b.rotate_right(r)`), has `h = n / 2` pairs and `n - h`
//! bytes of lows: bytes `c[i]` and `c[h + i]` become the pair `(c[i] >> 4) | (c[h + i] & 0xF0)`
//! and the lows `(c[i] & 0x0F) | (c[h + i] << 4)`; when `n` is odd, its last byte (turned) is the
//! last of the lows, whole. Pairing a byte of the first half with one of the second (not
//! neighbours) lets the decoder write each half in one pass of byte-wise vector operations.
//!
//! This is for bytes of which four bits are near uniform and carry nothing a code could use,
//! such as the low mantissa byte of an XOR delta between training steps. Sign rotation puts the
//! sign's bit at the bottom of that byte, beside the mantissa's least bits, so the turn `r = 1`
//! brings it to the top with the mantissa's highest (on the bf16 delta of the benchmark set:
//! 7.316 bits of entropy, 7.3165 for those four bits' plus 4). Coding the pairs decodes one
//! symbol per two bytes where coding the bytes decodes one per byte, at the same size: a
//! 256-symbol code over 7 bits of entropy is even closer to it than one over 7.3 bits.

/// Calls `f::<R>(args)` for the turn `R` = `r` (0..=7; larger counts as 7): one copy of `f` per
/// turn, as a byte turned by a constant compiles to vector shifts and masks and one turned by a
/// count known only at run time does not (the page's compress of the XOR deltas ran at 0.6–0.7 of
/// this).
macro_rules! by_turn {
    ($r:expr, $f:ident($($arg:expr),*)) => {
        match $r {
            0 => $f::<0>($($arg),*),
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            6 => $f::<6>($($arg),*),
            _ => $f::<7>($($arg),*),
        }
    };
}

/// The longest turn: a byte turns by `0..=MAX_TURN` bits.
pub(crate) const MAX_TURN: u8 = 7;

/// Writes the pairs of `block` turned by `r` into `pairs` (replacing what it held) and appends
/// its lows to `lows`.
pub(crate) fn split(block: &[u8], r: u8, pairs: &mut Vec<u8>, lows: &mut Vec<u8>) {
    let half = block.len() / 2;
    pairs.clear();
    pairs.resize(half, 0);
    let at = lows.len();
    lows.resize(at + block.len() - half, 0);
    let lows = &mut lows[at..];
    by_turn!(r, split_turned(block, pairs, lows));
}

/// [`split`] for the turn `R`, into `pairs` and `lows` of their final lengths.
fn split_turned<const R: u32>(block: &[u8], pairs: &mut [u8], lows: &mut [u8]) {
    let (first, second) = block.split_at(pairs.len());
    for ((p, &a), &b) in pairs.iter_mut().zip(first).zip(second) {
        *p = (a.rotate_right(R) >> 4) | (b.rotate_right(R) & 0xF0);
    }
    for ((l, &a), &b) in lows.iter_mut().zip(first).zip(second) {
        *l = (a.rotate_right(R) & 0x0F) | (b.rotate_right(R) << 4);
    }
    if let (Some(l), Some(&b)) = (lows.get_mut(pairs.len()), second.get(pairs.len())) {
        *l = b.rotate_right(R);
    }
}

/// Writes into `out` the bytes whose pairs are `pairs` and whose lows are `lows`, turned by `r`
/// (`r` ≤ [`MAX_TURN`]); the lengths must be `2 · pairs.len() + k` for `out` and
/// `pairs.len() + k` for `lows`, `k` ≤ 1.
pub(crate) fn join(pairs: &[u8], lows: &[u8], r: u8, out: &mut [u8]) {
    debug_assert!(out.len() == pairs.len() + lows.len() && lows.len() - pairs.len() <= 1);
    by_turn!(r, join_turned(pairs, lows, out));
}

/// [`join`] for the turn `R`: each half of `out` is one pass of byte-wise operations.
fn join_turned<const R: u32>(pairs: &[u8], lows: &[u8], out: &mut [u8]) {
    let (first, second) = out.split_at_mut(pairs.len());
    for ((o, &p), &l) in first.iter_mut().zip(pairs).zip(lows) {
        *o = ((p << 4) | (l & 0x0F)).rotate_left(R);
    }
    for ((o, &p), &l) in second.iter_mut().zip(pairs).zip(lows) {
        *o = ((p & 0xF0) | (l >> 4)).rotate_left(R);
    }
    if let (Some(o), Some(&l)) = (second.get_mut(pairs.len()), lows.get(pairs.len())) {
        *o = l.rotate_left(R);
    }
}

/// The turn that leaves the bytes with histogram `hist` the least information in their high
/// nibbles, and the bits per byte kind 6 would then cost by order-0 entropy (those nibbles'
/// entropy plus the 4 bits stored): the encoder's estimate, before it builds any pairs.
pub(crate) fn best_turn(hist: &[u32; 256]) -> (u8, f64) {
    (0..=MAX_TURN)
        .map(|r| (r, high_nibble_bits(hist, r)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("eight turns")
}

/// The entropy of the high nibbles of the bytes with histogram `hist` turned right by `r`, plus
/// the 4 bits of their low nibbles.
fn high_nibble_bits(hist: &[u32; 256], r: u8) -> f64 {
    let mut high = [0u32; 16];
    for (i, &c) in hist.iter().enumerate() {
        high[usize::from((i as u8).rotate_right(u32::from(r)) >> 4)] += c;
    }
    let total: u64 = high.iter().map(|&c| u64::from(c)).sum();
    if total == 0 {
        return 4.0;
    }
    let t = total as f64;
    let entropy: f64 = high
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / t;
            -p * p.log2()
        })
        .sum();
    entropy + 4.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_then_join_gives_the_bytes_back_at_every_length() {
        let mut random = crate::xorshift(0x0dd_b17e5);
        for n in (0..70).chain([4095, 4096, 65_537]) {
            let block: Vec<u8> = (0..n).map(|_| (random() >> 24) as u8).collect();
            for r in 0..=MAX_TURN {
                let (mut pairs, mut lows) = (Vec::new(), Vec::new());
                split(&block, r, &mut pairs, &mut lows);
                assert_eq!(pairs.len(), n / 2);
                assert_eq!(lows.len(), n - n / 2);
                let mut out = vec![0u8; n];
                join(&pairs, &lows, r, &mut out);
                assert_eq!(out, block, "{n} bytes, turn {r}");
            }
        }
    }

    #[test]
    fn pairs_hold_the_high_nibbles_and_lows_the_low_ones() {
        let (mut pairs, mut lows) = (Vec::new(), vec![0xEE]);
        split(&[0x12, 0x34, 0x56, 0x78, 0x9A], 0, &mut pairs, &mut lows);
        assert_eq!(pairs, [0x51, 0x73]);
        assert_eq!(
            lows,
            [0xEE, 0x62, 0x84, 0x9A],
            "appended after what was there"
        );
        // Turned right by 1: 0x09, 0x1A, 0x2B.
        pairs.clear();
        lows.clear();
        split(&[0x12, 0x34, 0x56], 1, &mut pairs, &mut lows);
        assert_eq!((pairs, lows), (vec![0x10], vec![0xA9, 0x2B]));
    }

    #[test]
    fn the_estimate_is_the_high_nibbles_entropy_plus_four_bits_at_the_best_turn() {
        let mut uniform = [0u32; 256];
        uniform.iter_mut().for_each(|c| *c = 3);
        assert!((best_turn(&uniform).1 - 8.0).abs() < 1e-12);
        let mut one_high = [0u32; 256];
        one_high[0x70..0x80].iter_mut().for_each(|c| *c = 5);
        assert_eq!(best_turn(&one_high), (0, 4.0));
        // Bit 0 always set, bits 1..=4 uniform, bits 5..=7 clear: turning right by 1 leaves
        // three known bits in the high nibble and only the fourth bit uniform there.
        let mut low_bit = [0u32; 256];
        (0..16).for_each(|v| low_bit[(v << 1) | 1] = 7);
        let (r, bits) = best_turn(&low_bit);
        assert_eq!(r, 1);
        assert!((bits - 4.0).abs() < 1e-12, "{bits}");
        assert_eq!(best_turn(&[0; 256]), (0, 4.0));
    }
}
