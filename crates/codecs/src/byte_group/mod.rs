//! Byte grouping, LMC paper §4 ("Byte-Grouping and RLE", Figure 8).
//!
//! An element stream of width `w` ∈ {1, 2, 4, 8} bytes is rearranged into `w` group streams:
//! group `k` holds byte `k` (least significant first, so group 0 is the low byte) of every
//! element. Grouping is a permutation of the input bytes laid out in one buffer of the same
//! length:
//!
//! ```text
//! [ group 0 (n/w bytes) | group 1 | ... | group w-1 | tail (n % w bytes, copied verbatim) ]
//! ```
//!
//! A trailing partial element (`n % w != 0`) is never grouped; its bytes end the buffer in their
//! original order, so any length round-trips.
//!
//! ## Sign rotation (an addition to the paper)
//! With [`Transform::SignRotate`] every whole element is first rotated left by one bit (as a
//! little-endian `w`-byte integer), moving the IEEE sign bit to bit 0. For bf16 and fp32 the
//! top byte then holds the complete 8-bit exponent instead of sign + 7 exponent bits, which lowers
//! the summed order-0 entropy of the groups (bf16 0.6653 → 0.6602 of the input size; measured in
//! BENCHMARKS.md, "History of the LMC format choices"). The same trick is used by ZipNN. The
//! rotation is fused into the split/merge loops, so it costs nothing extra.

/// Per-element bit transform applied before grouping (and undone after merging).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transform {
    /// Bytes are grouped as they are.
    None,
    /// Each whole element is rotated left by one bit before grouping (sign bit → bit 0).
    /// Ignored for width 1.
    #[default]
    SignRotate,
}

impl Transform {
    /// The byte stored in the PLMC header for this transform.
    pub fn to_byte(self) -> u8 {
        match self {
            Transform::None => 0,
            Transform::SignRotate => 1,
        }
    }

    /// Parses a PLMC header transform byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            0 => Some(Transform::None),
            1 => Some(Transform::SignRotate),
            _ => None,
        }
    }
}

/// Length of each group stream for `len` input bytes of width `width` (the number of whole
/// elements).
pub fn group_len(len: usize, width: usize) -> usize {
    len / width.max(1)
}

// ---------------------------------------------------------------------------------------------
// Kernels. Each takes the whole elements only: `w` group slices of `n` bytes and `n · w` element
// bytes. Two builds of each width: a portable one (64-bit SWAR for width 2, since the x86-64
// baseline's SSE2 has no byte shuffle LLVM will use; plain loops otherwise) and one that LLVM
// vectorizes, run through `crate::cpu` with AVX2 (measured single-thread, bf16 width 2: merge
// 0.22 → 0.045 ns per element, split 0.23 → 0.09; fp32 width 4: merge 0.82 → 0.15, split
// 0.95 → 0.18).

/// Rotates each of the four 16-bit lanes of `x` left by one bit.
#[inline(always)]
fn rotl16x4(x: u64) -> u64 {
    ((x << 1) & 0xFFFE_FFFE_FFFE_FFFE) | ((x >> 15) & 0x0001_0001_0001_0001)
}

/// Rotates each of the four 16-bit lanes of `x` right by one bit.
#[inline(always)]
fn rotr16x4(x: u64) -> u64 {
    ((x >> 1) & 0x7FFF_7FFF_7FFF_7FFF) | ((x << 15) & 0x8000_8000_8000_8000)
}

/// Gathers bytes 0, 2, 4, 6 of `x` into the low 32 bits.
#[inline(always)]
fn pack_even(x: u64) -> u64 {
    let x = x & 0x00FF_00FF_00FF_00FF;
    let x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    (x | (x >> 16)) & 0xFFFF_FFFF
}

/// Spreads the low 4 bytes of `x` to bytes 0, 2, 4, 6.
#[inline(always)]
fn spread_even(x: u64) -> u64 {
    let x = x & 0xFFFF_FFFF;
    let x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    (x | (x << 8)) & 0x00FF_00FF_00FF_00FF
}

/// Width 2 with 64-bit SWAR: eight elements per step.
#[inline(always)]
fn split2_swar<const ROT: bool>(src: &[u8], g0: &mut [u8], g1: &mut [u8]) {
    let (c_src, r_src) = src.as_chunks::<16>();
    let (c0, r0) = g0.as_chunks_mut::<8>();
    let (c1, r1) = g1.as_chunks_mut::<8>();
    for ((c, a), b) in c_src.iter().zip(c0.iter_mut()).zip(c1.iter_mut()) {
        let mut x0 = u64::from_le_bytes(c[..8].try_into().expect("8 of 16 bytes"));
        let mut x1 = u64::from_le_bytes(c[8..].try_into().expect("8 of 16 bytes"));
        if ROT {
            x0 = rotl16x4(x0);
            x1 = rotl16x4(x1);
        }
        *a = (pack_even(x0) | (pack_even(x1) << 32)).to_le_bytes();
        *b = (pack_even(x0 >> 8) | (pack_even(x1 >> 8) << 32)).to_le_bytes();
    }
    for ((c, a), b) in r_src.chunks_exact(2).zip(r0.iter_mut()).zip(r1.iter_mut()) {
        let mut v = u16::from_le_bytes([c[0], c[1]]);
        if ROT {
            v = v.rotate_left(1);
        }
        *a = v as u8;
        *b = (v >> 8) as u8;
    }
}

/// Inverse of [`split2_swar`].
#[inline(always)]
fn merge2_swar<const ROT: bool>(g0: &[u8], g1: &[u8], dst: &mut [u8]) {
    let (c_dst, r_dst) = dst.as_chunks_mut::<16>();
    let (c0, r0) = g0.as_chunks::<8>();
    let (c1, r1) = g1.as_chunks::<8>();
    for ((c, a), b) in c_dst.iter_mut().zip(c0.iter()).zip(c1.iter()) {
        let lo = u64::from_le_bytes(*a);
        let hi = u64::from_le_bytes(*b);
        let mut x0 = spread_even(lo) | (spread_even(hi) << 8);
        let mut x1 = spread_even(lo >> 32) | (spread_even(hi >> 32) << 8);
        if ROT {
            x0 = rotr16x4(x0);
            x1 = rotr16x4(x1);
        }
        c[..8].copy_from_slice(&x0.to_le_bytes());
        c[8..].copy_from_slice(&x1.to_le_bytes());
    }
    for ((c, &a), &b) in r_dst.chunks_exact_mut(2).zip(r0.iter()).zip(r1.iter()) {
        let mut v = u16::from_le_bytes([a, b]);
        if ROT {
            v = v.rotate_right(1);
        }
        c.copy_from_slice(&v.to_le_bytes());
    }
}

/// Plain loops over 16 elements at a time, written so that LLVM vectorizes them: bytes are
/// gathered into local arrays first, then whole elements are built, rotated and scattered.
macro_rules! lane_kernels {
    ($split:ident, $merge:ident, $t:ty, $w:literal) => {
        #[inline(always)]
        fn $split<const ROT: bool>(src: &[u8], g: [&mut [u8]; $w]) {
            let (chunks, rest) = src.as_chunks::<{ 16 * $w }>();
            for (i, c) in chunks.iter().enumerate() {
                let mut outs = [[0u8; 16]; $w];
                for e in 0..16 {
                    let mut v = <$t>::from_le_bytes(c[e * $w..e * $w + $w].try_into().unwrap());
                    if ROT {
                        v = v.rotate_left(1);
                    }
                    let b = v.to_le_bytes();
                    for k in 0..$w {
                        outs[k][e] = b[k];
                    }
                }
                for k in 0..$w {
                    g[k][i * 16..i * 16 + 16].copy_from_slice(&outs[k]);
                }
            }
            let done = chunks.len() * 16;
            for (e, c) in rest.chunks_exact($w).enumerate() {
                let mut v = <$t>::from_le_bytes(c.try_into().unwrap());
                if ROT {
                    v = v.rotate_left(1);
                }
                for (k, b) in v.to_le_bytes().into_iter().enumerate() {
                    g[k][done + e] = b;
                }
            }
        }

        #[inline(always)]
        fn $merge<const ROT: bool>(g: [&[u8]; $w], dst: &mut [u8]) {
            let (chunks, rest) = dst.as_chunks_mut::<{ 16 * $w }>();
            for (i, c) in chunks.iter_mut().enumerate() {
                let mut ins = [[0u8; 16]; $w];
                for k in 0..$w {
                    ins[k].copy_from_slice(&g[k][i * 16..i * 16 + 16]);
                }
                let mut vals = [0 as $t; 16];
                for e in 0..16 {
                    let mut v: $t = 0;
                    for k in 0..$w {
                        v |= (ins[k][e] as $t) << (8 * k);
                    }
                    vals[e] = if ROT { v.rotate_right(1) } else { v };
                }
                for e in 0..16 {
                    c[e * $w..e * $w + $w].copy_from_slice(&vals[e].to_le_bytes());
                }
            }
            let done = chunks.len() * 16;
            for (e, c) in rest.chunks_exact_mut($w).enumerate() {
                let mut v: $t = 0;
                for k in 0..$w {
                    v |= (g[k][done + e] as $t) << (8 * k);
                }
                if ROT {
                    v = v.rotate_right(1);
                }
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
    };
}

lane_kernels!(split2_vec, merge2_vec, u16, 2);
lane_kernels!(split4_vec, merge4_vec, u32, 4);
lane_kernels!(split8_vec, merge8_vec, u64, 8);

/// Splits whole elements into `groups` (`groups.len()` = width 2, 4 or 8).
#[inline(always)]
fn split_kernel<const VEC: bool>(src: &[u8], rot: bool, groups: &mut [&mut [u8]]) {
    match (groups, rot) {
        ([a, b], false) if !VEC => split2_base::<false>(src, a, b),
        ([a, b], true) if !VEC => split2_base::<true>(src, a, b),
        ([a, b], false) => split2_vec::<false>(src, [a, b]),
        ([a, b], true) => split2_vec::<true>(src, [a, b]),
        ([a, b, c, d], false) => split4::<false>(src, [a, b, c, d]),
        ([a, b, c, d], true) => split4::<true>(src, [a, b, c, d]),
        ([a, b, c, d, e, f, g, h], false) => split8_vec::<false>(src, [a, b, c, d, e, f, g, h]),
        ([a, b, c, d, e, f, g, h], true) => split8_vec::<true>(src, [a, b, c, d, e, f, g, h]),
        (g, _) => unreachable!("byte groups of width {}", g.len()),
    }
}

/// The baseline's kernels: WebAssembly SIMD byte shuffles where they exist ([`simd128`]), else
/// 64-bit SWAR for width 2 and, for width 4, the lane loops (left scalar there; the AVX2 build
/// takes the vectorized loops of every width: [`split_kernel`] / [`merge_kernel`] with `VEC`).
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
use simd128::{merge2 as merge2_base, merge4, split2 as split2_base, split4};
#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
use {
    merge2_swar as merge2_base, merge4_vec as merge4, split2_swar as split2_base,
    split4_vec as split4,
};

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;

/// Merges whole elements from `groups` (`groups.len()` = width 2, 4 or 8).
#[inline(always)]
fn merge_kernel<const VEC: bool>(groups: &[&[u8]], rot: bool, dst: &mut [u8]) {
    match (groups, rot) {
        (&[a, b], false) if !VEC => merge2_base::<false>(a, b, dst),
        (&[a, b], true) if !VEC => merge2_base::<true>(a, b, dst),
        (&[a, b], false) => merge2_vec::<false>([a, b], dst),
        (&[a, b], true) => merge2_vec::<true>([a, b], dst),
        (&[a, b, c, d], false) => merge4::<false>([a, b, c, d], dst),
        (&[a, b, c, d], true) => merge4::<true>([a, b, c, d], dst),
        (&[a, b, c, d, e, f, g, h], false) => merge8_vec::<false>([a, b, c, d, e, f, g, h], dst),
        (&[a, b, c, d, e, f, g, h], true) => merge8_vec::<true>([a, b, c, d, e, f, g, h], dst),
        (g, _) => unreachable!("byte groups of width {}", g.len()),
    }
}

crate::cpu::dispatch! {
    /// [`split_kernel`]: the baseline's kernels (WebAssembly SIMD in the page, SWAR and scalar
    /// loops elsewhere) or the vectorized loops with AVX2.
    fn split_dispatch(src: &[u8], rot: bool, groups: &mut [&mut [u8]]) -> ()
        = [split_kernel::<false>] / split_v3[split_kernel::<true>];
}

crate::cpu::dispatch! {
    /// [`merge_kernel`]: the baseline's kernels (WebAssembly SIMD in the page, SWAR and scalar
    /// loops elsewhere) or the vectorized loops with AVX2.
    fn merge_dispatch(groups: &[&[u8]], rot: bool, dst: &mut [u8]) -> ()
        = [merge_kernel::<false>] / merge_v3[merge_kernel::<true>];
}

/// Splits `src` (elements of `width` bytes) into byte groups written to `dst`, applying
/// `transform` to every whole element first.
///
/// `dst` must have the same length as `src`; the layout is described in the module docs.
///
/// # Panics
/// If `dst.len() != src.len()` or `width` is not 1, 2, 4 or 8 (programming errors).
pub fn split(src: &[u8], width: usize, transform: Transform, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "byte_group::split: buffers differ in length"
    );
    assert!(
        matches!(width, 1 | 2 | 4 | 8),
        "byte_group::split: unsupported width {width}"
    );
    let n = group_len(src.len(), width);
    let (groups, tail) = dst.split_at_mut(n * width);
    let (elems, src_tail) = src.split_at(n * width);
    tail.copy_from_slice(src_tail);
    let mut parts: [&mut [u8]; 8] = Default::default();
    for (p, g) in parts.iter_mut().zip(groups.chunks_exact_mut(n.max(1))) {
        *p = g;
    }
    split_groups(elems, transform, &mut parts[..width]);
}

/// Splits whole elements into separate group slices, the inverse of [`merge_groups`]:
/// `groups[k]` receives byte `k` of every element of `src` (after `transform`). Lets the encoder
/// put a group straight where it is stored (a raw block in its output) and the others in its
/// scratch buffer, in one pass.
///
/// # Panics
/// If there are not 1, 2, 4 or 8 groups, or a group's length is not `src.len() / groups.len()`
/// (programming errors).
pub(crate) fn split_groups(src: &[u8], transform: Transform, groups: &mut [&mut [u8]]) {
    let w = groups.len();
    check_groups("split_groups", src.len(), groups.iter().map(|g| g.len()));
    if w == 1 {
        groups[0].copy_from_slice(src);
        return;
    }
    split_dispatch(src, transform == Transform::SignRotate, groups);
}

/// Inverse of [`split`]: merges the group layout in `src` back into elements in `dst`, undoing
/// `transform`.
///
/// # Panics
/// If `dst.len() != src.len()` or `width` is not 1, 2, 4 or 8 (programming errors).
pub fn merge(src: &[u8], width: usize, transform: Transform, dst: &mut [u8]) {
    assert_eq!(
        src.len(),
        dst.len(),
        "byte_group::merge: buffers differ in length"
    );
    assert!(
        matches!(width, 1 | 2 | 4 | 8),
        "byte_group::merge: unsupported width {width}"
    );
    let n = group_len(src.len(), width);
    let (groups, src_tail) = src.split_at(n * width);
    let (elems, tail) = dst.split_at_mut(n * width);
    tail.copy_from_slice(src_tail);
    let mut parts: [&[u8]; 8] = [&[]; 8];
    for (p, g) in parts.iter_mut().zip(groups.chunks_exact(n.max(1))) {
        *p = g;
    }
    merge_groups(&parts[..width], transform, elems);
}

/// Merges whole elements from separate group slices: `groups[k]` holds byte `k` of every element
/// (after `transform`), all groups `dst.len() / groups.len()` bytes long. Lets a decoder merge
/// groups that live in different buffers (a decoded block beside a raw block still in the input)
/// without gathering them first.
///
/// # Panics
/// If there are not 1, 2, 4 or 8 groups, or a group's length is not `dst.len() / groups.len()`
/// (programming errors).
pub(crate) fn merge_groups(groups: &[&[u8]], transform: Transform, dst: &mut [u8]) {
    let w = groups.len();
    check_groups("merge_groups", dst.len(), groups.iter().map(|g| g.len()));
    if w == 1 {
        dst.copy_from_slice(groups[0]);
        return;
    }
    merge_dispatch(groups, transform == Transform::SignRotate, dst);
}

/// Checks the group slices of [`split_groups`] / [`merge_groups`] (named `what`): 1, 2, 4 or 8
/// of them, each `elems / count` bytes long, for `elems` bytes of whole elements.
fn check_groups(what: &str, elems: usize, lens: impl ExactSizeIterator<Item = usize>) {
    let w = lens.len();
    assert!(
        matches!(w, 1 | 2 | 4 | 8),
        "byte_group::{what}: unsupported width {w}"
    );
    let n = elems / w;
    assert!(
        elems.is_multiple_of(w) && lens.into_iter().all(|l| l == n),
        "byte_group::{what}: group lengths do not match the elements"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_low_byte_first_with_tail() {
        let src = [0x01, 0x02, 0x11, 0x12, 0x21, 0x22, 0x99];
        let mut dst = [0u8; 7];
        split(&src, 2, Transform::None, &mut dst);
        assert_eq!(dst, [0x01, 0x11, 0x21, 0x02, 0x12, 0x22, 0x99]);
        let mut back = [0u8; 7];
        merge(&dst, 2, Transform::None, &mut back);
        assert_eq!(back, src);
    }

    #[test]
    fn sign_rotate_puts_bf16_exponent_in_high_byte() {
        // bf16 -1.0 = 0xBF80: sign 1, exponent 0x7F, mantissa 0.
        let src = 0xBF80u16.to_le_bytes();
        let mut dst = [0u8; 2];
        split(&src, 2, Transform::SignRotate, &mut dst);
        assert_eq!(dst[1], 0x7F, "high group is the exponent");
        assert_eq!(dst[0], 0x01, "low group holds mantissa << 1 | sign");
        let mut back = [0u8; 2];
        merge(&dst, 2, Transform::SignRotate, &mut back);
        assert_eq!(back, src);
    }

    #[test]
    fn portable_and_vector_kernels_agree() {
        let src: Vec<u8> = (0..8 * 203u32).map(|i| (i * 37 + 11) as u8).collect();
        for w in [2usize, 4, 8] {
            let n = src.len() / w;
            let elems = &src[..n * w];
            for rot in [false, true] {
                let mut a = vec![0u8; n * w];
                let mut b = vec![0u8; n * w];
                {
                    let mut pa: Vec<&mut [u8]> = a.chunks_exact_mut(n).collect();
                    split_kernel::<false>(elems, rot, &mut pa);
                    let mut pb: Vec<&mut [u8]> = b.chunks_exact_mut(n).collect();
                    split_kernel::<true>(elems, rot, &mut pb);
                }
                assert_eq!(a, b, "split width {w} rot {rot}");
                let groups: Vec<&[u8]> = a.chunks_exact(n).collect();
                let mut m0 = vec![0u8; n * w];
                let mut m1 = vec![0u8; n * w];
                merge_kernel::<false>(&groups, rot, &mut m0);
                merge_kernel::<true>(&groups, rot, &mut m1);
                assert_eq!(m0, elems, "merge width {w} rot {rot}");
                assert_eq!(m1, elems, "vector merge width {w} rot {rot}");
            }
        }
    }

    #[test]
    fn all_widths_round_trip() {
        let src: Vec<u8> = (0..203u32).map(|i| (i * 37 + 11) as u8).collect();
        for w in [1, 2, 4, 8] {
            for t in [Transform::None, Transform::SignRotate] {
                let mut g = vec![0u8; src.len()];
                let mut back = vec![0u8; src.len()];
                split(&src, w, t, &mut g);
                merge(&g, w, t, &mut back);
                assert_eq!(back, src, "width {w} {t:?}");
                // The tail is verbatim.
                let tail = src.len() % w;
                assert_eq!(g[src.len() - tail..], src[src.len() - tail..]);
                // Separate group slices get the same bytes as the packed layout.
                let n = src.len() / w;
                let mut separate = vec![vec![0xAAu8; n]; w];
                let mut parts: Vec<&mut [u8]> =
                    separate.iter_mut().map(|s| s.as_mut_slice()).collect();
                split_groups(&src[..n * w], t, &mut parts);
                assert_eq!(separate.concat(), g[..n * w], "width {w} {t:?}");
            }
        }
    }
}
