//! Seeded pseudo-random data for tests: Marsaglia's xorshift64 (shifts 13, 7, 17), the same
//! sequence for the same seed on every platform and build.

/// A xorshift64 generator: each call returns the next state. The state starts at `seed | 1`, so
/// no seed (not even 0) leaves it stuck at zero; seeds that differ only in bit 0 give the same
/// sequence.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    xorshift_from(seed | 1)
}

/// The same generator started at `state` as it is (which must not be 0: the sequence would stay
/// 0): the sequences the codecs' and lessons' unit tests were written against, before
/// [`xorshift`] set bit 0 of the seed.
pub fn xorshift_from(state: u64) -> impl FnMut() -> u64 {
    let mut x = state;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// `n` random bytes: the low byte of each of the first `n` values of [`xorshift`]`(seed)`.
/// Incompressible: every byte group and block of them has close to 8 bits of entropy per byte.
pub fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut next = xorshift(seed);
    (0..n).map(|_| next() as u8).collect()
}

/// `n` bytes of four skewed bits over four uniform ones, turned left by `turn`: each byte's high
/// nibble is the least of two draws (over 7 and 16 values) and its low nibble uniform before
/// the turn, from [`xorshift`]`(seed)`. What the LMC encoder codes as nibble pairs (block kind 6),
/// like the sign-rotated low mantissa byte of an XOR delta between training steps (`turn` 1).
pub fn turned_nibbles(seed: u64, n: usize, turn: u32) -> Vec<u8> {
    let mut next = xorshift(seed);
    (0..n)
        .map(|_| {
            let r = next();
            let high = ((r % 7) as u8).min((r >> 8) as u8 % 16);
            ((high << 4) | ((r >> 32) as u8 & 0x0F)).rotate_left(turn)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests' data depends on these sequences: they must never change.
    #[test]
    fn sequences_are_pinned() {
        let mut next = xorshift(0);
        assert_eq!(
            [next(), next(), next()],
            [0x4082_2041, 0x1000_4106_0c01_1441, 0x9b1e_842f_6e86_2629]
        );
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        assert_eq!(next(), 0x7f6c_280b_eaa8_e3e7);
        assert_eq!(
            bytes(1, 8),
            [0x41, 0x41, 0x29, 0x25, 0x65, 0x01, 0x71, 0x0d]
        );
        assert_eq!(bytes(7, 3), bytes(6, 3), "bit 0 of the seed is ignored");
        let mut next = xorshift_from(0x2545_f491_4f6c_dd1c);
        assert_eq!(next(), 0x7f6c_280b_aa2a_c3a6, "bit 0 of the state is kept");
        assert_eq!(turned_nibbles(5, 4, 0), [0x11, 0x1e, 0x6a, 0x0a]);
        assert_eq!(turned_nibbles(5, 4, 1), [0x22, 0x3c, 0xd4, 0x14]);
    }
}
