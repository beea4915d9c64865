//! The hot loops of block encoding (LMC paper §4.2), compiled for the baseline and for x86-64-v3
//! ([`crate::cpu`]): each quarter is coded into its own stream, one or two symbols per table
//! lookup, several lookups per flush of the bit buffer.

use super::prefetch::Prefetch;
use super::quarters;

/// Encodes the four quarters of `block` into `buf` (stream j at `j * cap`), `K` symbols per
/// flush (K · max code length ≤ 55, so a flush never has 8 whole bytes and needs no branch).
/// Unlike decoding, encoding has no long dependency chain to hide (code lookups depend only on
/// the input), so the quarters are coded one after the other: one lane's state fits in
/// registers, where four interleaved lanes spilled (measured: 14.7 → 7 instructions per symbol).
/// Returns the stream sizes.
#[inline(always)]
fn encode_lanes<const K: usize>(
    block: &[u8],
    codes: &[u32; 256],
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    // Code bits and lengths in separate tables: two loads instead of a load, a shift and a mask.
    let bits_of: [u64; 256] = std::array::from_fn(|s| (codes[s] >> 4) as u64);
    let len_of: [u8; 256] = std::array::from_fn(|s| (codes[s] & 15) as u8);
    code_quarters::<K>(
        block,
        buf,
        cap,
        #[inline(always)]
        |c, bits, nb| {
            for &b in c {
                *bits |= bits_of[b as usize] << *nb;
                *nb += len_of[b as usize] as u32;
            }
        },
        codes,
        prefetch,
    )
}

/// Bytes a [`code_quarters`] window spans (a power of two above 64 flushes of ≤ 7 bytes).
pub(super) const WINDOW: usize = 512;
/// Flushes per [`code_quarters`] window.
const WINDOW_FLUSHES: usize = 64;

/// Codes the quarters of `block` into `buf` (stream j at `j * cap`; `cap` leaves room for
/// the longest codes plus [`WINDOW`] + 8 bytes) and returns the stream sizes.
#[inline(always)]
fn code_quarters<const B: usize>(
    block: &[u8],
    buf: &mut [u8],
    cap: usize,
    step: impl Fn(&[u8; B], &mut u64, &mut u32),
    codes: &[u32; 256],
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    let qs = quarters(block.len());
    let mut sizes = [0usize; 4];
    let mut start = 0;
    for (j, size) in sizes.iter_mut().enumerate() {
        let part = &block[start..start + qs[j]];
        start += qs[j];
        *size = code_stream(
            part,
            &mut buf[j * cap..(j + 1) * cap],
            &step,
            codes,
            prefetch,
        );
    }
    sizes
}

/// Codes `part` into `out` and returns the stream's size: `step` adds the codes of `B` bytes
/// (at most 56 bits) to the bit buffer, which is then flushed. The flushes run in windows of 64
/// whose 8-byte stores go to a fixed-size slice at a masked offset, so the loop carries no bounds
/// check; the leftover bytes are coded one by one with `codes`.
#[inline(always)]
fn code_stream<const B: usize>(
    part: &[u8],
    out: &mut [u8],
    step: &impl Fn(&[u8; B], &mut u64, &mut u32),
    codes: &[u32; 256],
    prefetch: &mut Prefetch,
) -> usize {
    let (mut pos, mut bits, mut nb) = (0usize, 0u64, 0u32);
    let (chunks, rest) = part.as_chunks::<B>();
    for group in chunks.chunks(WINDOW_FLUSHES) {
        prefetch.step();
        let w: &mut [u8; WINDOW + 8] = (&mut out[pos..pos + WINDOW + 8])
            .try_into()
            .expect("WINDOW + 8 bytes");
        let mut at = 0usize;
        for c in group {
            step(c, &mut bits, &mut nb);
            // `at` ≤ 63 · 7 < WINDOW, so the mask changes nothing but proves the bound.
            let i = at & (WINDOW - 1);
            w[i..i + 8].copy_from_slice(&bits.to_le_bytes());
            at += (nb >> 3) as usize;
            bits >>= nb & 56;
            nb &= 7;
        }
        pos += at;
    }
    code_bytes(rest, codes, out, pos, bits, nb)
}

/// Codes `rest` one byte at a time into `out` after the `nb` bits of `bits` at byte `pos`, and
/// returns the stream's size (its last byte's unused bits zero).
#[inline(always)]
pub(super) fn code_bytes(
    rest: &[u8],
    codes: &[u32; 256],
    out: &mut [u8],
    mut pos: usize,
    mut bits: u64,
    mut nb: u32,
) -> usize {
    for &b in rest {
        bits |= u64::from(codes[b as usize] >> 4) << nb;
        nb += codes[b as usize] & 15;
        flush(out, &mut pos, &mut bits, &mut nb);
    }
    out[pos..pos + 8].copy_from_slice(&bits.to_le_bytes());
    pos + (nb > 0) as usize
}

#[inline(always)]
fn encode_lanes_impl(
    k5: bool,
    block: &[u8],
    codes: &[u32; 256],
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    if k5 {
        encode_lanes::<5>(block, codes, buf, cap, prefetch)
    } else {
        encode_lanes::<4>(block, codes, buf, cap, prefetch)
    }
}

crate::cpu::dispatch! {
    /// [`encode_lanes`] with 5 (`k5`, codes ≤ 11 bits) or 4 symbols per flush.
    pub(super) fn encode_lanes_dispatch(
        k5: bool,
        block: &[u8],
        codes: &[u32; 256],
        buf: &mut [u8],
        cap: usize,
        prefetch: &mut Prefetch,
    ) -> [usize; 4] = encode_lanes_impl / encode_lanes_v3;
}

/// The codes and lengths of byte pairs `a, b` at index `a | b << 8` (see
/// [`encode_pairs`]): in two tables, so that the coding loop uses each entry
/// straight from memory (a shift and an add with a memory operand) instead of unpacking it.
pub(super) struct PairTable {
    /// Both codes, a's bits first.
    pub(super) bits: Box<[u64; 1 << 16]>,
    /// Their total length.
    pub(super) lens: Box<[u32; 1 << 16]>,
}

/// The pair table in `slot` (768 KiB, allocated on first use).
pub(super) fn pair_table(slot: &mut Option<PairTable>) -> &mut PairTable {
    slot.get_or_insert_with(|| PairTable {
        bits: vec![0u64; 1 << 16]
            .into_boxed_slice()
            .try_into()
            .expect("length is 2^16"),
        lens: vec![0u32; 1 << 16]
            .into_boxed_slice()
            .try_into()
            .expect("length is 2^16"),
    })
}

/// Fills the pair-table entries of every pair of used symbols (see
/// [`encode_pairs`]); entries of unused symbols are left as they are: a block only
/// ever looks up pairs of its own symbols.
pub(super) fn fill_pairs(codes: &[u32; 256], pairs: &mut PairTable) {
    let mut used = [(0u32, 0u32, 0usize); 256];
    let mut n = 0;
    for (s, &c) in codes.iter().enumerate() {
        if c & 15 != 0 {
            used[n] = (c >> 4, c & 15, s);
            n += 1;
        }
    }
    let used = &used[..n];
    for &(cb, lb, b) in used {
        let bits = &mut pairs.bits[b << 8..(b + 1) << 8];
        let lens = &mut pairs.lens[b << 8..(b + 1) << 8];
        for &(ca, la, a) in used {
            bits[a] = u64::from(ca | cb << la);
            lens[a] = la + lb;
        }
    }
}

/// Like [`encode_lanes`], two symbols per table lookup: the [`PairTable`] holds the codes of the
/// byte pair `a, b` (a's bits first) and their total length.
/// `K` pairs per flush (`K` · 2 · max code length ≤ 56); `B` = 2 · `K` bytes per flush.
/// On bf16 exponent blocks this takes the coding loop from ~9 to ~5.3 instructions per symbol.
#[inline(always)]
fn encode_pairs<const K: usize, const B: usize>(
    block: &[u8],
    codes: &[u32; 256],
    pairs: &PairTable,
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    debug_assert_eq!(B, 2 * K);
    code_quarters::<B>(
        block,
        buf,
        cap,
        #[inline(always)]
        |c, bits, nb| {
            for k in 0..K {
                let i =
                    u16::from_le_bytes(*c[2 * k..].first_chunk().expect("k < K = B / 2")) as usize;
                *bits |= pairs.bits[i] << *nb;
                *nb += pairs.lens[i];
            }
        },
        codes,
        prefetch,
    )
}

#[inline(always)]
fn encode_pairs_impl(
    k3: bool,
    block: &[u8],
    codes: &[u32; 256],
    pairs: &PairTable,
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    if k3 {
        encode_pairs::<3, 6>(block, codes, pairs, buf, cap, prefetch)
    } else {
        encode_pairs::<2, 4>(block, codes, pairs, buf, cap, prefetch)
    }
}

crate::cpu::dispatch! {
    /// [`encode_pairs`] with 3 (`k3`, codes ≤ 9 bits) or 2 pairs per flush.
    pub(super) fn encode_pairs_dispatch(
        k3: bool,
        block: &[u8],
        codes: &[u32; 256],
        pairs: &PairTable,
        buf: &mut [u8],
        cap: usize,
        prefetch: &mut Prefetch,
    ) -> [usize; 4] = encode_pairs_impl / encode_pairs_v3;
}

/// Stores the bit buffer at `pos`, advances past its whole bytes and keeps the rest (`nb` ≤ 63
/// on entry, so at most 7 whole bytes).
#[inline(always)]
fn flush(buf: &mut [u8], pos: &mut usize, bits: &mut u64, nb: &mut u32) {
    buf[*pos..*pos + 8].copy_from_slice(&bits.to_le_bytes());
    *pos += (*nb >> 3) as usize;
    *bits >>= *nb & 56;
    *nb &= 7;
}

#[cfg(test)]
mod tests {
    use super::super::lengths::{build_lengths, encode_codes};
    use super::super::MAX_CODE_LEN;
    use super::*;

    /// The pair loop writes the same streams as the one-symbol loop, for short codes (3 pairs
    /// per flush) and long ones (2), odd quarter lengths, and a pair table left over from a
    /// block with other symbols.
    #[test]
    fn pair_coding_matches_symbol_coding() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut pairs = None;
        let mut flushes = [false; 2];
        for (alphabet, skew, n) in [(8u64, 1u32, 4099usize), (40, 9, 20_001), (12, 3, 7)] {
            // Geometric-ish frequencies over `alphabet` symbols spread across the byte range.
            let block: Vec<u8> = (0..n)
                .map(|_| {
                    let r = next();
                    let k = (r % alphabet).min((r >> 32).trailing_zeros() as u64 * skew as u64);
                    (k * 37 % 256) as u8
                })
                .collect();
            let mut freqs = [0u32; 256];
            for &b in &block {
                freqs[b as usize] += 1;
            }
            let mut lengths = [0u8; 256];
            build_lengths(&freqs, MAX_CODE_LEN, &mut lengths);
            let mut codes = [0u32; 256];
            encode_codes(&lengths, &mut codes);
            let max_len = *lengths.iter().max().unwrap() as usize;
            flushes[(max_len <= 9) as usize] = true;
            let qs = quarters(n);
            let cap = qs[3] * max_len / 8 + 16 + WINDOW + 8;
            let (mut a, mut b) = (vec![0u8; 4 * cap], vec![0u8; 4 * cap]);
            let table = pair_table(&mut pairs);
            fill_pairs(&codes, table);
            let none = &mut Prefetch::default();
            let sa = encode_lanes_dispatch(max_len <= 11, &block, &codes, &mut a, cap, none);
            let sb = encode_pairs_dispatch(max_len <= 9, &block, &codes, table, &mut b, cap, none);
            assert_eq!(sa, sb, "alphabet {alphabet}");
            for j in 0..4 {
                assert_eq!(a[j * cap..j * cap + sa[j]], b[j * cap..j * cap + sb[j]]);
            }
        }
        assert_eq!(flushes, [true, true], "both pair loops ran");
    }
}
