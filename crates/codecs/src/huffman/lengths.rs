//! Code lengths and canonical codes, LMC paper §4.2: length-limited Huffman code lengths from
//! symbol counts (Moffat–Katajainen, then a Kraft-sum repair), and the canonical, bit-reversed
//! codes those lengths define (RFC 1951 §3.2.2 order).

use super::MAX_CODE_LEN;

/// Computes length-limited Huffman code lengths for `freqs` into `lengths` (same length).
///
/// Symbols with zero frequency get length 0, except that when fewer than two symbols are used a
/// zero-frequency partner is added so the code is complete. `freqs` must have ≥ 2 entries and
/// their sum must fit in `u32`; `limit` must be in `1..=MAX_CODE_LEN` and large enough
/// (`2^limit ≥` number of used symbols).
pub fn build_lengths(freqs: &[u32], limit: u32, lengths: &mut [u8]) {
    debug_assert_eq!(freqs.len(), lengths.len());
    debug_assert!(freqs.len() >= 2);
    lengths.iter_mut().for_each(|l| *l = 0);
    let mut syms = used_symbols(freqs);
    if syms.len() < 2 {
        // Complete the code with a partner that never occurs.
        let used = syms.first().map(|&(_, s)| s as usize);
        let partner = if used == Some(0) { 1 } else { 0 };
        syms.push((0, partner as u16));
        if let Some(u) = used {
            lengths[u] = 1;
        } else {
            lengths[1] = 1;
        }
        lengths[partner] = 1;
        return;
    }
    let mut a: Vec<u32> = syms.iter().map(|&(f, _)| f).collect();
    moffat_katajainen(&mut a);
    // a[i] is now the length of syms[i].
    let max = a.iter().copied().max().unwrap_or(0);
    if max > limit {
        limit_lengths(&mut a, limit);
    }
    for (i, &(_, s)) in syms.iter().enumerate() {
        lengths[s as usize] = a[i] as u8;
    }
    debug_assert_eq!(
        a.iter().map(|&l| 1u64 << (MAX_CODE_LEN - l)).sum::<u64>(),
        1 << MAX_CODE_LEN,
        "code must be complete"
    );
}

/// (freq, symbol) of the used symbols of `freqs`, ascending by frequency then symbol.
fn used_symbols(freqs: &[u32]) -> Vec<(u32, u16)> {
    // Sorted as one `u64` key each, frequency above symbol: the same order as sorting the pairs,
    // with one comparison per step (a third of the time of a block's code lengths, by `perf`).
    let mut keys: Vec<u64> = freqs
        .iter()
        .enumerate()
        .filter(|&(_, &f)| f > 0)
        .map(|(s, &f)| u64::from(f) << 16 | s as u64)
        .collect();
    keys.sort_unstable();
    keys.iter().map(|&k| ((k >> 16) as u32, k as u16)).collect()
}

/// The optimal Huffman code lengths of `freqs` with no length limit (what [`build_lengths`] gives
/// before limiting; 0 for unused symbols, 1 for a lone used symbol). For the lessons, which show
/// what the limit costs (through [`crate::lesson_exports`]).
#[cfg(feature = "lesson-exports")]
pub fn unlimited_lengths(freqs: &[u32]) -> Vec<u32> {
    let syms = used_symbols(freqs);
    let mut lengths = vec![0u32; freqs.len()];
    if syms.len() < 2 {
        syms.iter().for_each(|&(_, s)| lengths[s as usize] = 1);
        return lengths;
    }
    let mut a: Vec<u32> = syms.iter().map(|&(f, _)| f).collect();
    moffat_katajainen(&mut a);
    for (&l, &(_, s)) in a.iter().zip(&syms) {
        lengths[s as usize] = l;
    }
    lengths
}

/// In-place minimum-redundancy code lengths (Moffat & Katajainen 1995). `a` holds frequencies in
/// non-decreasing order (n ≥ 2) and is overwritten with code lengths (non-increasing).
fn moffat_katajainen(a: &mut [u32]) {
    let n = a.len();
    a[0] += a[1];
    let mut root = 0usize;
    let mut leaf = 2usize;
    for next in 1..n - 1 {
        if leaf >= n || a[root] < a[leaf] {
            a[next] = a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] = a[leaf];
            leaf += 1;
        }
        if leaf >= n || (root < next && a[root] < a[leaf]) {
            a[next] += a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] += a[leaf];
            leaf += 1;
        }
    }
    a[n - 2] = 0;
    for next in (0..n.saturating_sub(2)).rev() {
        a[next] = a[a[next] as usize] + 1;
    }
    let mut avail: i64 = 1;
    let mut used: i64 = 0;
    let mut depth: u32 = 0;
    let mut root = n as isize - 2;
    let mut next = n as isize - 1;
    while avail > 0 {
        while root >= 0 && a[root as usize] == depth {
            used += 1;
            root -= 1;
        }
        while avail > used {
            a[next as usize] = depth;
            next -= 1;
            avail -= 1;
        }
        avail = 2 * used;
        depth += 1;
        used = 0;
    }
}

/// Clamps lengths (of symbols in ascending frequency order) to `limit` and repairs the Kraft sum
/// to exactly 1.
fn limit_lengths(a: &mut [u32], limit: u32) {
    let full: u64 = 1 << limit;
    for l in a.iter_mut() {
        *l = (*l).min(limit);
    }
    let mut total: u64 = a.iter().map(|&l| 1u64 << (limit - l)).sum();
    // Over-subscribed: lengthen the deepest non-limit symbols, least frequent first.
    while total > full {
        let mut changed = false;
        for target in (1..limit).rev() {
            if let Some(i) = a.iter().position(|&l| l == target) {
                a[i] += 1;
                total -= 1 << (limit - target - 1);
                changed = true;
                break;
            }
        }
        if !changed {
            break; // cannot happen when 2^limit >= number of symbols
        }
    }
    // Under-subscribed: shorten the most frequent symbols that still fit.
    'outer: while total < full {
        for i in (0..a.len()).rev() {
            let l = a[i];
            if l > 1 && (1u64 << (limit - l)) <= full - total {
                a[i] -= 1;
                total += 1 << (limit - l);
                continue 'outer;
            }
        }
        break;
    }
}

/// Canonical codes for `lengths`, bit-reversed for LSB-first output, packed as
/// `reversed_code << 4 | length` (0 for unused symbols).
pub fn encode_codes(lengths: &[u8], codes: &mut [u32]) {
    let mut count = [0u32; MAX_CODE_LEN as usize + 1];
    for &l in lengths {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; MAX_CODE_LEN as usize + 2];
    let mut code = 0u32;
    for bits in 1..=MAX_CODE_LEN as usize {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    for (s, &l) in lengths.iter().enumerate() {
        if l == 0 {
            codes[s] = 0;
            continue;
        }
        let c = next[l as usize];
        next[l as usize] += 1;
        let rev = c.reverse_bits() >> (32 - l as u32);
        codes[s] = (rev << 4) | l as u32;
    }
}

/// Total cost in bits of coding symbols with `freqs` under `lengths`.
pub fn code_cost_bits(freqs: &[u32], lengths: &[u8]) -> u64 {
    freqs
        .iter()
        .zip(lengths)
        .map(|(&f, &l)| f as u64 * l as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kraft(lengths: &[u8], limit: u32) -> u64 {
        lengths
            .iter()
            .filter(|&&l| l > 0)
            .map(|&l| 1u64 << (limit - l as u32))
            .sum()
    }

    #[test]
    fn lengths_are_complete_and_limited() {
        // Fibonacci frequencies force a deep tree.
        let mut f = vec![0u32; 256];
        let (mut a, mut b) = (1u32, 1u32);
        for x in f.iter_mut().take(30) {
            *x = a;
            let c = a + b;
            a = b;
            b = c;
        }
        for limit in [11, 12] {
            let mut l = vec![0u8; 256];
            build_lengths(&f, limit, &mut l);
            assert!(l.iter().all(|&x| x as u32 <= limit));
            assert_eq!(kraft(&l, 12), 1 << 12);
            assert!(l[..30].iter().all(|&x| x > 0));
            assert!(l[30..].iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn single_symbol_gets_a_partner() {
        let mut f = vec![0u32; 256];
        f[7] = 100;
        let mut l = vec![0u8; 256];
        build_lengths(&f, 11, &mut l);
        assert_eq!(l[7], 1);
        assert_eq!(l[0], 1);
        assert_eq!(kraft(&l, 12), 1 << 12);
    }
}
