//! The decoder's lookup tables of a block's code (LMC paper §4.2 decoding; the table shapes are an
//! implementation choice): the one-symbol table (`symbol << 4 | length` per slot, or
//! `length | byte << 8` for the byte codes of plain blocks; building it also
//! checks that the code is complete) and, for short codes, the multi-symbol table that yields up
//! to [`MULTI_MAX`] symbols per lookup.

use super::stride::Stride;
use super::{MAX_CODE_LEN, MAX_SYMBOLS, TABLE_SIZE};

/// Where a one-symbol table entry keeps its symbol: `symbol << SYMBOL_SHIFT | length`.
pub(super) const SYMBOL_SHIFT: u32 = 4;
/// The same for byte codes: `length | byte << BYTE_SHIFT`. The length is all of the entry's low
/// 6 bits, so the decoder shifts its bit buffer by the entry itself (`shrx` takes its count
/// modulo 64): one instruction less per symbol than masking `length` out of the low 4 bits.
pub(super) const BYTE_SHIFT: u32 = 8;

/// Builds a decoding table (`symbol << symbol_shift | length`, indexed by the next `table_bits`
/// bits) for `lengths`, checking that the code is complete and within `table_bits`;
/// `symbol_shift` is [`SYMBOL_SHIFT`], or [`BYTE_SHIFT`] for at most 256 symbols.
#[inline]
pub(super) fn build_decode_table(
    lengths: &[u8],
    table_bits: u32,
    symbol_shift: u32,
    table: &mut [u16],
) -> Result<(), &'static str> {
    let mut kraft: u64 = 0;
    for &l in lengths {
        if l as u32 > table_bits {
            return Err("code length over the limit");
        }
        if l > 0 {
            kraft += 1 << (table_bits - l as u32);
        }
    }
    let size = 1usize << table_bits;
    if kraft > size as u64 {
        return Err("over-subscribed code lengths");
    }
    if kraft < size as u64 {
        return Err("incomplete code lengths");
    }
    let mut codes = [0u32; MAX_SYMBOLS];
    reversed_codes(lengths, &mut codes[..lengths.len()]);
    for (s, &c) in codes[..lengths.len()].iter().enumerate() {
        let l = c & 15;
        if l == 0 {
            continue;
        }
        let entry = ((s as u16) << symbol_shift) | l as u16;
        let mut j = (c >> 4) as usize;
        while j < size {
            table[j] = entry;
            j += 1 << l;
        }
    }
    Ok(())
}

/// Most symbols one multi-symbol table entry decodes.
pub(super) const MULTI_MAX: usize = 3;

/// `REVERSED_12[v]`: the 12 low bits of `v` in reverse order (x86-64 has no bit-reverse
/// instruction; this makes the multi-symbol table build ~4× faster).
static REVERSED_12: [u16; TABLE_SIZE] = {
    let mut t = [0u16; TABLE_SIZE];
    let mut v = 0;
    while v < TABLE_SIZE {
        t[v] = ((v as u32).reverse_bits() >> (32 - MAX_CODE_LEN)) as u16;
        v += 1;
    }
    t
};

/// How many of `lengths` have each length 1..=[`MAX_CODE_LEN`] (lengths above count as the
/// limit; `[0]` is 0). Four partial counts, so that runs of one length do not wait on each
/// other's increments.
#[inline]
pub(super) fn length_counts(lengths: &[u8]) -> [u32; MAX_CODE_LEN as usize + 1] {
    let mut part = [[0u32; 16]; 4];
    let mut quads = lengths.chunks_exact(4);
    for q in &mut quads {
        for (p, &l) in part.iter_mut().zip(q) {
            p[l as usize & 15] += 1;
        }
    }
    for &l in quads.remainder() {
        part[0][l as usize & 15] += 1;
    }
    let mut counts = [0u32; MAX_CODE_LEN as usize + 1];
    for (l, c) in counts.iter_mut().enumerate().skip(1) {
        *c = part.iter().map(|p| p[l]).sum();
    }
    for p in &part {
        counts[MAX_CODE_LEN as usize] += p[MAX_CODE_LEN as usize + 1..].iter().sum::<u32>();
    }
    counts
}

/// `encode_codes` for the decoder's tables (the same `reversed_code << 4 | length` values,
/// lengths ≤ [`MAX_CODE_LEN`]), with the bits reversed by [`REVERSED_12`] instead of
/// `reverse_bits` (which x86-64 lacks: ~15 instructions a symbol).
#[inline]
pub(super) fn reversed_codes(lengths: &[u8], codes: &mut [u32]) {
    let count = length_counts(lengths);
    let mut next = [0u32; MAX_CODE_LEN as usize + 1];
    let mut code = 0u32;
    for bits in 1..=MAX_CODE_LEN as usize {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    for (c, &l) in codes.iter_mut().zip(lengths) {
        let l = (l as u32).min(MAX_CODE_LEN);
        let v = next[l as usize];
        next[l as usize] += 1;
        let rev = REVERSED_12[v as usize & (TABLE_SIZE - 1)] as u32 >> (MAX_CODE_LEN - l);
        *c = if l == 0 { 0 } else { rev << 4 | l };
    }
}

/// Builds the multi-symbol table of a byte code (`lengths`: 256 entries, a complete code of at
/// most `bits` bits whose lengths are counted in `counts`), indexed by the next `bits` bits.
/// Entry `i` holds the up to [`MULTI_MAX`] symbols whose codes lie wholly inside the bits `i`:
/// bytes 0..=2 the symbols, bits 24..=29 the bits they use, bits 30..=31 their count (so the
/// decoder stores the entry as it is and shifts by `entry >> 24`, whose count bits a 64-bit
/// shift ignores).
///
/// Every slot is written exactly once. Slots are enumerated by the symbol sequence they start
/// with: for each first symbol `a` and each second symbol `b` that fits after it, the slots
/// of each fitting third symbol `c` (every `2^(la+lb+lc)`-th slot); then the slots of `ab` whose
/// remaining `r` bits begin a code longer than `r` (in canonical order those are the `r`-bit
/// prefixes from `prefixes[r]` on, the space that codes of length ≤ `r` leave over), which keep
/// two symbols; likewise for the slots of `a` that hold only `a`.
#[inline]
pub(super) fn build_multi_table(
    lengths: &[u8],
    counts: &[u32; MAX_CODE_LEN as usize + 1],
    bits: u32,
    multi: &mut [u32; TABLE_SIZE],
) {
    let mut codes = [0u32; 256];
    reversed_codes(&lengths[..256], &mut codes);
    // Used symbols as (reversed code, length, symbol), in canonical order (length, symbol).
    let mut start = [0usize; MAX_CODE_LEN as usize + 2];
    for l in 1..=MAX_CODE_LEN as usize {
        start[l + 1] = start[l] + counts[l] as usize;
    }
    let mut used = [(0u32, 0u32, 0u32); 256];
    for (sym, &c) in codes.iter().enumerate() {
        let l = (c & 15) as usize;
        if l > 0 {
            used[start[l]] = (c >> 4, l as u32, sym as u32);
            start[l] += 1;
        }
    }
    let used = &used[..start[MAX_CODE_LEN as usize]];
    // prefixes[r]: how many r-bit (MSB-first) prefixes codes of length ≤ r cover.
    let mut prefixes = [0u32; MAX_CODE_LEN as usize + 1];
    for r in 1..=bits as usize {
        prefixes[r] = 2 * prefixes[r - 1] + counts[r];
    }
    let size = 1usize << bits;
    // Slots `prefix | x << u` whose next code does not fit the remaining bits.
    let fill_long = |multi: &mut [u32; TABLE_SIZE], prefix: u32, u: u32, entry: u32| {
        let r = bits - u;
        if r == 0 {
            multi[prefix as usize] = entry;
            return;
        }
        for v in prefixes[r as usize]..1 << r {
            let rev = (REVERSED_12[v as usize] >> (MAX_CODE_LEN - r)) as u32;
            multi[(prefix | rev << u) as usize & (TABLE_SIZE - 1)] = entry;
        }
    };
    for &(ca, la, sa) in used {
        let ea = sa;
        for &(cb, lb, sb) in used {
            let u2 = la + lb;
            if u2 > bits {
                break;
            }
            let c2 = ca | cb << la;
            let eab = ea | sb << 8;
            for &(cc, lc, sc) in used {
                let u3 = u2 + lc;
                if u3 > bits {
                    break;
                }
                let entry = eab | sc << 16 | 3 << 30 | u3 << 24;
                let at = (c2 | cc << u2) as usize;
                for chunk in multi[..size].chunks_exact_mut(1 << u3) {
                    chunk[at] = entry;
                }
            }
            fill_long(multi, c2, u2, eab | 2 << 30 | u2 << 24);
        }
        fill_long(multi, ca, la, ea | 1 << 30 | la << 24);
    }
}

/// A flat stride code of the tests: (length, log2 of the spacing, first symbol, the symbols, the
/// code lengths).
#[cfg(test)]
pub(super) type FlatStrideCode = (u32, u32, u8, Vec<u8>, [u8; 256]);

/// Every flat code of evenly spaced symbols the tests cover, as (length, log2 of the spacing,
/// first symbol, the symbols, the code lengths): each length 1–7, each spacing that fits a byte,
/// and first symbols 0, 1 and the largest that fits.
#[cfg(test)]
pub(super) fn flat_stride_codes() -> Vec<FlatStrideCode> {
    let mut all = Vec::new();
    for l in 1..=7u32 {
        for shift in 0..=8 - l {
            let span = ((1u32 << l) - 1) << shift;
            for first in [0, 1.min(255 - span), 255 - span] {
                let symbols: Vec<u8> = (0..1u32 << l)
                    .map(|k| (first + (k << shift)) as u8)
                    .collect();
                let mut lengths = [0u8; 256];
                for &s in &symbols {
                    lengths[s as usize] = l as u8;
                }
                all.push((l, shift, first as u8, symbols, lengths));
            }
        }
    }
    all
}

/// How a block's codes are looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lookup {
    /// One symbol per lookup (`length | byte << 8` entries; `symbol << 4 | length` for run
    /// blocks).
    Single,
    /// Up to [`MULTI_MAX`] symbols per lookup ([`build_multi_table`] entries).
    Multi,
    /// Every code has the same length (the field, at most [`FLAT_MAX_LEN`] bits): the
    /// one-symbol table built for exactly that many bits, read at fixed bit positions.
    Flat(u32),
    /// A flat code ([`Lookup::Flat`]) whose symbols are evenly spaced by a power of two: the
    /// `k`-th is `first + (k << shift)`, computed rather than looked up where the CPU allows
    /// (`decode_stride`; the table is built as for [`Lookup::Flat`], for the other CPUs and a
    /// lane's last symbols).
    FlatStride(Stride),
}

/// For a flat code of `len` bits (every used symbol of `lengths` that long), the code as a
/// [`Stride`] when its symbols are evenly spaced by a power of two (the even bytes that the
/// rotated sign bit, always 0, leaves to Adam's second moment: 0, 2, …, 254).
pub(super) fn flat_stride(lengths: &[u8], len: u32) -> Option<Stride> {
    let mut used = (0u8..=255).filter(|&b| lengths.get(b as usize).is_some_and(|&l| l > 0));
    let first = used.next()?;
    let second = used.next()?;
    let step = second - first;
    if !step.is_power_of_two() {
        return None;
    }
    let mut last = second;
    for b in used {
        if b - last != step {
            return None;
        }
        last = b;
    }
    Some(Stride {
        len,
        first,
        shift: step.trailing_zeros(),
    })
}

/// The longest code length a flat code ([`Lookup::Flat`]) may have: a flat 8-bit code is a
/// permutation of the bytes, which a Raw block stores for less.
pub(crate) const FLAT_MAX_LEN: u32 = 7;

/// The length of every code when `counts` (codes per length, of a complete code) describe a
/// flat code: `2^l` codes of length `l` ≤ [`FLAT_MAX_LEN`] and no others.
pub(super) fn flat_length(counts: &[u32]) -> Option<u32> {
    (1..=FLAT_MAX_LEN).find(|&l| counts.get(l as usize) == Some(&(1 << l)))
}

#[cfg(test)]
mod tests {
    use super::super::lengths::encode_codes;
    use super::*;

    /// The decoder's codes are the encoder's, for codes of every length up to the limit.
    #[test]
    fn reversed_codes_match_encode_codes() {
        let mut next = crate::xorshift(0x1234_5678_9abc_def1);
        for limit in [9u32, 11, 12] {
            for _ in 0..50 {
                let mut freqs = [0u32; 256];
                for f in freqs.iter_mut() {
                    let r = next();
                    *f = if r.is_multiple_of(3) {
                        0
                    } else {
                        (r >> 8) as u32 >> (r % 24)
                    };
                }
                let mut lengths = [0u8; 256];
                super::super::lengths::build_lengths(&freqs, limit, &mut lengths);
                let (mut a, mut b) = ([0u32; 256], [0u32; 256]);
                encode_codes(&lengths, &mut a);
                reversed_codes(&lengths, &mut b);
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn over_subscribed_table_is_rejected() {
        let mut l = vec![0u8; 256];
        l[..3].fill(1);
        let mut t = vec![0u16; TABLE_SIZE];
        assert_eq!(
            build_decode_table(&l, 12, SYMBOL_SHIFT, &mut t),
            Err("over-subscribed code lengths")
        );
        l[2] = 0;
        l[1] = 2;
        assert_eq!(
            build_decode_table(&l, 12, SYMBOL_SHIFT, &mut t),
            Err("incomplete code lengths")
        );
    }
}
