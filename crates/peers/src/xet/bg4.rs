//! BG4, the hub's byte grouping by 4 (xet-core
//! `xet_core_structures/src/xorb_object/byte_grouping/bg4.rs`, `bg4_split_together` and
//! `bg4_regroup_together`).
//!
//! Byte `i` of the input goes to group `i % 4`; the four groups are written one after another,
//! group 0 first. With `n = 4·q + r` bytes, group `g` holds `q + 1` bytes when `g < r` and `q`
//! bytes otherwise: the `r` trailing bytes go to groups 0, 1, 2 in order, so the first groups
//! are the longer ones. Eleven bytes `0..=10` become `[0 4 8 | 1 5 9 | 2 6 10 | 3 7]`.

/// The length of group `g` (0..4) of `n` grouped bytes.
pub fn group_len(n: usize, g: usize) -> usize {
    n / 4 + usize::from(g < n % 4)
}

/// Writes the four groups of `data` into `out` (same length), group 0 first.
///
/// # Panics
/// If `out` is not as long as `data` (a caller's bug, never the data's).
pub fn split(data: &[u8], out: &mut [u8]) {
    assert_eq!(data.len(), out.len(), "bg4 split: output length");
    let n = data.len();
    let (g0, rest) = out.split_at_mut(group_len(n, 0));
    let (g1, rest) = rest.split_at_mut(group_len(n, 1));
    let (g2, g3) = rest.split_at_mut(group_len(n, 2));
    let mut quads = data.chunks_exact(4);
    for (i, q) in (&mut quads).enumerate() {
        g0[i] = q[0];
        g1[i] = q[1];
        g2[i] = q[2];
        g3[i] = q[3];
    }
    let q = n / 4;
    for (g, &b) in [g0, g1, g2].into_iter().zip(quads.remainder()) {
        g[q] = b;
    }
}

/// Interleaves the four groups in `groups` back into `out` (same length): the inverse of
/// [`split`].
///
/// # Panics
/// If `out` is not as long as `groups`.
pub fn regroup(groups: &[u8], out: &mut [u8]) {
    assert_eq!(groups.len(), out.len(), "bg4 regroup: output length");
    let n = groups.len();
    let (g0, rest) = groups.split_at(group_len(n, 0));
    let (g1, rest) = rest.split_at(group_len(n, 1));
    let (g2, g3) = rest.split_at(group_len(n, 2));
    let mut quads = out.chunks_exact_mut(4);
    for ((((q, &a), &b), &c), &d) in (&mut quads).zip(g0).zip(g1).zip(g2).zip(g3) {
        q.copy_from_slice(&[a, b, c, d]);
    }
    let q = n / 4;
    for (o, g) in quads.into_remainder().iter_mut().zip([g0, g1, g2]) {
        *o = g[q];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout written out by hand from the published description.
    #[test]
    fn eleven_bytes_group_as_published() {
        let data: Vec<u8> = (0..=10).collect();
        let mut out = vec![0; 11];
        split(&data, &mut out);
        assert_eq!(out, [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7]);
        let mut back = vec![0; 11];
        regroup(&out, &mut back);
        assert_eq!(back, data);
    }

    /// Each remainder 0..3 puts its trailing bytes in the first groups.
    #[test]
    fn short_inputs_fill_the_first_groups_first() {
        let cases: [(&[u8], &[u8]); 6] = [
            (&[], &[]),
            (&[7], &[7]),
            (&[1, 2], &[1, 2]),
            (&[1, 2, 3], &[1, 2, 3]),
            (&[1, 2, 3, 4, 5], &[1, 5, 2, 3, 4]),
            (&[1, 2, 3, 4, 5, 6, 7], &[1, 5, 2, 6, 3, 7, 4]),
        ];
        for (data, grouped) in cases {
            let mut out = vec![0; data.len()];
            split(data, &mut out);
            assert_eq!(out, grouped, "{data:?}");
        }
        assert_eq!(
            (0..4).map(|g| group_len(7, g)).collect::<Vec<_>>(),
            [2, 2, 2, 1]
        );
    }
}
