//! Flat codes whose symbols are evenly spaced, encoded by arithmetic (the mirror of
//! [`super::decode_stride`]; LMC paper §4.2's canonical codes, the kernel an implementation
//! choice).
//!
//! With every code `l` bits long, eight symbols take exactly `l` bytes of a stream, so a round
//! needs no bit buffer: on x86-64-v3 the four quarters' next eight bytes sit side by side in one
//! 256-bit register; each byte becomes its symbol's index `(b − first) >> shift`, bit-reversed
//! (two byte shuffles over its nibbles), the eight fields are gathered into the low `8 · l` bits by
//! three mask-and-shift halvings, and each quarter's word is stored at its stream's next `l`
//! bytes. In WebAssembly with SIMD (the page's workers) two quarters share a register. The
//! bytes left in a quarter are coded one at a time. The streams are those the table coders
//! ([`super::encode_kernels`]) write, byte for byte.

use super::encode_kernels::code_bytes;
use super::prefetch::Prefetch;
use super::stride::Stride;

/// Codes the quarters of `block` (every byte a symbol of the flat code `stride`, whose codes are
/// `codes`) into `buf` (stream j at `j * cap`) and returns the stream sizes, or `None` where the
/// CPU has no AVX2 or WebAssembly SIMD (the caller's table coders then run).
pub(super) fn encode_flat_stride(
    stride: Stride,
    block: &[u8],
    codes: &[u32; 256],
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> Option<[usize; 4]> {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_v3() {
        // SAFETY: `has_v3` detected AVX2, all `avx2::code_quarters` requires.
        #[allow(unsafe_code)]
        return Some(unsafe { avx2::code_quarters(stride, block, codes, buf, cap, prefetch) });
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        Some(simd128::code_quarters(
            stride, block, codes, buf, cap, prefetch,
        ))
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        let _ = (stride, block, codes, buf, cap, prefetch);
        None
    }
}

/// Codes the quarters of `block` with a flat `len`-bit code: rounds of 8 bytes of each quarter
/// side by side, `code` turning the four quarters' next 8 bytes (one quarter per word) into their
/// `8 · len` code bits each, stored at stream j's next `len` bytes (`buf` at `j * cap`); then
/// each quarter's last bytes one at a time with `codes`. Returns the stream sizes. Inlined into
/// each SIMD build, whose `code` is its arithmetic.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_feature = "simd128")),
    allow(dead_code)
)]
#[inline(always)]
fn stride_rounds(
    len: u32,
    block: &[u8],
    codes: &[u32; 256],
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
    code: impl Fn([u64; 4]) -> [u64; 4],
) -> [usize; 4] {
    let qs = super::quarters(block.len());
    let starts = [0, qs[0], qs[0] + qs[1], qs[0] + qs[1] + qs[2]];
    let rounds = qs.iter().map(|&q| q / 8).min().unwrap_or(0);
    let step = len as usize;
    let (ip, op) = (block.as_ptr(), buf.as_mut_ptr());
    for r in 0..rounds {
        if r % 8 == 0 {
            prefetch.step();
        }
        // SAFETY: every quarter holds `rounds · 8` bytes or more, so the 8 bytes at
        // `start + 8r` are inside `block`; each stream's `cap` bytes hold its codes, at least
        // `8 · len` bits for each of these rounds' 8 bytes, plus 8 bytes of room, so the 8-byte
        // store at `j · cap + len · r` stays inside stream j's part of `buf`.
        #[allow(unsafe_code)]
        let x = starts.map(|s| unsafe { ip.add(s + 8 * r).cast::<u64>().read_unaligned() });
        for (j, w) in code(x).into_iter().enumerate() {
            // SAFETY: see above.
            #[allow(unsafe_code)]
            unsafe {
                op.add(j * cap + step * r)
                    .cast::<u64>()
                    .write_unaligned(w.to_le())
            };
        }
    }
    std::array::from_fn(|j| {
        let rest = &block[starts[j] + 8 * rounds..starts[j] + qs[j]];
        let out = &mut buf[j * cap..(j + 1) * cap];
        code_bytes(rest, codes, out, step * rounds, 0, 0)
    })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::prefetch::Prefetch;
    use super::super::stride::spread_masks;
    use super::Stride;
    use std::arch::x86_64::*;

    /// [`super::encode_flat_stride`] on AVX2.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn code_quarters(
        stride: Stride,
        block: &[u8],
        codes: &[u32; 256],
        buf: &mut [u8],
        cap: usize,
        prefetch: &mut Prefetch,
    ) -> [usize; 4] {
        let Stride {
            len: l,
            first,
            shift,
        } = stride;
        // The index's reversed bits, from its low and high nibble.
        let (low, high) = stride.nibble_tables(false);
        // SAFETY: 16 readable bytes each.
        let (low, high) = unsafe {
            (
                _mm256_broadcastsi128_si256(_mm_loadu_si128(low.as_ptr().cast())),
                _mm256_broadcastsi128_si256(_mm_loadu_si128(high.as_ptr().cast())),
            )
        };
        let splat = |m: u64| _mm256_set1_epi64x(m as i64);
        let count = |n: u32| _mm_cvtsi32_si128(n as i32);
        let index = _mm256_set1_epi8(((1u32 << l) - 1) as u8 as i8);
        let nibble = _mm256_set1_epi8(0x0f);
        let first = _mm256_set1_epi8(first as i8);
        let (by_shift, by_l, by_2l, by_4l) = (count(shift), count(l), count(2 * l), count(4 * l));
        let [eighth, quarter, half] = spread_masks(l).map(splat);
        let code = |[x0, x1, x2, x3]: [u64; 4]| {
            let x = _mm256_set_epi64x(x3 as i64, x2 as i64, x1 as i64, x0 as i64);
            // Each byte's index `(b − first) >> shift`, bit-reversed into the low `l` bits.
            let k = _mm256_and_si256(_mm256_srl_epi16(_mm256_sub_epi8(x, first), by_shift), index);
            let lo = _mm256_and_si256(k, nibble);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(k), nibble);
            let v = _mm256_or_si256(_mm256_shuffle_epi8(low, lo), _mm256_shuffle_epi8(high, hi));
            // Fields gathered: byte pairs into 2l bits, then 4l, then 8l.
            let v = _mm256_or_si256(
                _mm256_and_si256(v, eighth),
                _mm256_sll_epi64(_mm256_and_si256(_mm256_srli_epi64::<8>(v), eighth), by_l),
            );
            let v = _mm256_or_si256(
                _mm256_and_si256(v, quarter),
                _mm256_sll_epi64(_mm256_and_si256(_mm256_srli_epi64::<16>(v), quarter), by_2l),
            );
            let v = _mm256_or_si256(
                _mm256_and_si256(v, half),
                _mm256_sll_epi64(_mm256_and_si256(_mm256_srli_epi64::<32>(v), half), by_4l),
            );
            let (a, b) = (_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
            [
                _mm_cvtsi128_si64(a) as u64,
                _mm_extract_epi64::<1>(a) as u64,
                _mm_cvtsi128_si64(b) as u64,
                _mm_extract_epi64::<1>(b) as u64,
            ]
        };
        super::stride_rounds(l, block, codes, buf, cap, prefetch, code)
    }
}

/// The same rounds in WebAssembly's 128-bit SIMD (the page's workers): quarters 0–1 and 2–3
/// in two registers.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128 {
    use super::super::prefetch::Prefetch;
    use super::super::stride::{spread_masks, two_by_two};
    use super::Stride;
    use std::arch::wasm32::*;

    /// [`super::encode_flat_stride`] in WebAssembly SIMD.
    pub(super) fn code_quarters(
        stride: Stride,
        block: &[u8],
        codes: &[u32; 256],
        buf: &mut [u8],
        cap: usize,
        prefetch: &mut Prefetch,
    ) -> [usize; 4] {
        let Stride {
            len: l,
            first,
            shift,
        } = stride;
        let (low, high) = stride.nibble_tables(false);
        let table = |t: [u8; 16]| {
            u8x16(
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12],
                t[13], t[14], t[15],
            )
        };
        let (low, high) = (table(low), table(high));
        let index = u8x16_splat(((1u32 << l) - 1) as u8);
        let nibble = u8x16_splat(0x0f);
        let first = u8x16_splat(first);
        let [eighth, quarter, half] = spread_masks(l).map(|m| u64x2_splat(m));
        // Two quarters' next 8 bytes, one per 64-bit half, into their codes' 8·l low bits.
        let code = |x: v128| {
            let k = v128_and(u16x8_shr(i8x16_sub(x, first), shift), index);
            let lo = v128_and(k, nibble);
            let hi = v128_and(u16x8_shr(k, 4), nibble);
            let v = v128_or(u8x16_swizzle(low, lo), u8x16_swizzle(high, hi));
            let v = v128_or(
                v128_and(v, eighth),
                u64x2_shl(v128_and(u64x2_shr(v, 8), eighth), l),
            );
            let v = v128_or(
                v128_and(v, quarter),
                u64x2_shl(v128_and(u64x2_shr(v, 16), quarter), 2 * l),
            );
            v128_or(
                v128_and(v, half),
                u64x2_shl(v128_and(u64x2_shr(v, 32), half), 4 * l),
            )
        };
        super::stride_rounds(l, block, codes, buf, cap, prefetch, |x| two_by_two(x, code))
    }
}

#[cfg(test)]
mod tests {
    use super::super::encode_kernels::{encode_lanes_dispatch, WINDOW};
    use super::super::lengths::encode_codes;
    use super::super::lookup::flat_stride_codes;
    use super::super::quarters;
    use super::*;

    /// The computed rounds write the table coder's streams, byte for byte, for every length,
    /// spacing and first symbol, and block sizes around a round (on CPUs without AVX2 the
    /// caller's table coders run instead: nothing to compare).
    #[test]
    fn computed_rounds_write_the_table_coders_streams() {
        let mut next = crate::xorshift(0x0c0d_e5ee_dfee_d123);
        for (l, shift, first, symbols, lengths) in flat_stride_codes() {
            let mut codes = [0u32; 256];
            encode_codes(&lengths, &mut codes);
            for n in [0, 7, 31, 32, 33, 100, 4_099, 65_536] {
                let block: Vec<u8> = (0..n)
                    .map(|_| symbols[(next() % symbols.len() as u64) as usize])
                    .collect();
                let cap = quarters(n)[3] * l as usize / 8 + 16 + WINDOW + 8;
                let (mut a, mut b) = (vec![0u8; 4 * cap], vec![0u8; 4 * cap]);
                let none = &mut Prefetch::default();
                let sa = encode_lanes_dispatch(true, &block, &codes, &mut a, cap, none);
                let stride = Stride {
                    len: l,
                    first,
                    shift,
                };
                let Some(sb) = encode_flat_stride(stride, &block, &codes, &mut b, cap, none) else {
                    return;
                };
                let what = format!("{l} bits, shift {shift}, first {first}, {n} bytes");
                assert_eq!(sa, sb, "{what}");
                for j in 0..4 {
                    assert_eq!(
                        a[j * cap..j * cap + sa[j]],
                        b[j * cap..j * cap + sb[j]],
                        "{what}, stream {j}"
                    );
                }
            }
        }
    }
}
