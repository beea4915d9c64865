//! Flat codes whose symbols are evenly spaced, decoded by arithmetic instead of a table (LMC
//! paper §4.2's canonical codes; the kernel is an implementation choice).
//!
//! A flat code gives every used byte the same length `l` ≤ 7 ([`super::lookup::Lookup::Flat`]).
//! Canonical codes of one length count up in symbol order, so the `k`-th used symbol's code is
//! `k`, written bit-reversed. When the used symbols are `first + (k << shift)` — the low bytes of
//! Adam's second moment are the 128 even bytes, its sign bit (rotated to bit 0) always 0 — a
//! symbol is `first + (reverse(field) << shift)`, with no lookup. On x86-64-v3 the four lanes'
//! rounds run side by side in one 256-bit register: a round's eight `l`-bit fields are spread to
//! one per byte by three mask-and-shift halvings, each byte's nibbles are reversed, shifted and
//! placed by two byte shuffles, and `first` is added; 32 symbols per round in about 40
//! instructions, where the table rounds ([`super::decode_kernels`]) take about 48 for 8. In
//! WebAssembly with SIMD (the page's workers) the same rounds run two lanes to a register.
//! Elsewhere the table rounds run.

#[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
use super::decode_kernels;
use super::decode_kernels::Lanes;
#[cfg_attr(
    not(any(target_arch = "x86_64", target_feature = "simd128")),
    allow(unused_imports)
)]
use super::decode_kernels::{load_unchecked, safe_rounds, FLAT_ROUND, PREFETCH_ROUNDS};
use super::prefetch::Prefetch;
use super::stride::Stride;
use super::TABLE_SIZE;

/// Runs the rounds of the flat code `stride`, `table` its one-symbol table built for exactly
/// `stride.len` bits; returns each lane's (bit position, output position), as
/// [`super::decode_kernels::decode_flat`] does and with the same bytes.
pub(super) fn decode_flat_stride(
    stride: Stride,
    table: &[u16; TABLE_SIZE],
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::has_v3() {
        let code = StrideCode::new(stride);
        // SAFETY: `has_v3` detected AVX2, all `avx2::lanes` requires.
        #[allow(unsafe_code)]
        return unsafe { avx2::lanes(&code, streams, lanes, out, prefetch) };
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        let _ = table;
        simd128::lanes(&StrideCode::new(stride), streams, lanes, out, prefetch)
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    {
        decode_kernels::decode_flat(stride.len, table, streams, lanes, out, prefetch)
    }
}

/// The constants of a flat stride code's rounds.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_feature = "simd128")),
    allow(dead_code)
)]
struct StrideCode {
    /// The code length `l`.
    len: u32,
    /// For each low nibble `n` of a field: its bits reversed into the byte's high nibble, then
    /// moved right by `8 − l` and left by `shift` (the symbol's part from those bits).
    low: [u8; 16],
    /// The same for the field's high nibble, reversed into the byte's low nibble.
    high: [u8; 16],
    /// The smallest symbol.
    first: u8,
}

#[cfg_attr(
    not(any(target_arch = "x86_64", target_feature = "simd128")),
    allow(dead_code)
)]
impl StrideCode {
    fn new(stride: Stride) -> StrideCode {
        let (low, high) = stride.nibble_tables(true);
        StrideCode {
            len: stride.len,
            low,
            high,
            first: stride.first,
        }
    }
}

/// The four lanes in rounds of [`FLAT_ROUND`] symbols each, side by side, while every lane has
/// room for one more: `symbols` turns the four lanes' loads (one lane per word) into their 8
/// symbols each; returns each lane's (bit position, output position). Inlined into each SIMD
/// build, whose `symbols` is its arithmetic.
#[cfg_attr(
    not(any(target_arch = "x86_64", target_feature = "simd128")),
    allow(dead_code)
)]
#[inline(always)]
fn stride_rounds(
    len: u32,
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
    symbols: impl Fn([u64; 4]) -> [u64; 4],
) -> [(u64, usize); 4] {
    let mut st: [(u64, usize); 4] =
        std::array::from_fn(|j| (8 * lanes.input[j] as u64, lanes.output[j]));
    let step = u64::from(len) * FLAT_ROUND as u64;
    loop {
        let n = safe_rounds(lanes, &st, FLAT_ROUND, FLAT_ROUND);
        if n == 0 {
            return st;
        }
        let (mut bp, mut p) = (st.map(|(b, _)| b), st.map(|(_, p)| p));
        let (sp, op) = (streams.as_ptr(), out.as_mut_ptr());
        for round in 0..n {
            if round % PREFETCH_ROUNDS == 0 {
                prefetch.step();
            }
            // SAFETY: `safe_rounds` chose `n` so that in each of these rounds every lane reads
            // the 8 bytes at `bp / 8` ≤ its stream's end − 8 (a round moves `bp` by `8 · len` ≤
            // 56 bits) and writes the 8 bytes at its position `p` ≤ its quarter's end − 8 (a
            // round moves `p` by 8): inside `streams` and `out`.
            #[allow(unsafe_code)]
            let x = bp.map(|b| unsafe { load_unchecked(sp, b) });
            for (j, y) in symbols(x).into_iter().enumerate() {
                // SAFETY: see above.
                #[allow(unsafe_code)]
                unsafe {
                    op.add(p[j]).cast::<u64>().write_unaligned(y.to_le())
                };
                bp[j] += step;
                p[j] += FLAT_ROUND;
            }
        }
        st = std::array::from_fn(|j| (bp[j], p[j]));
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::super::decode_kernels::Lanes;
    use super::super::prefetch::Prefetch;
    use super::StrideCode;
    use std::arch::x86_64::*;

    /// The four lanes in rounds of [`FLAT_ROUND`] symbols each, side by side, while every lane
    /// has room for one more; returns each lane's (bit position, output position).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn lanes(
        code: &StrideCode,
        streams: &[u8],
        lanes: &Lanes,
        out: &mut [u8],
        prefetch: &mut Prefetch,
    ) -> [(u64, usize); 4] {
        let l = code.len;
        let count = |n: u32| _mm_cvtsi32_si128(n as i32);
        let splat = |m: u64| _mm256_set1_epi64x(m as i64);
        let [eighth, quarter, half] = super::super::stride::spread_masks(l).map(splat);
        let (by_4l, by_2l, by_l) = (count(4 * l), count(2 * l), count(l));
        // SAFETY: 16 readable bytes each.
        let (low, high) = unsafe {
            (
                _mm256_broadcastsi128_si256(_mm_loadu_si128(code.low.as_ptr().cast())),
                _mm256_broadcastsi128_si256(_mm_loadu_si128(code.high.as_ptr().cast())),
            )
        };
        let nibble = _mm256_set1_epi8(0x0f);
        let first = _mm256_set1_epi8(code.first as i8);
        let symbols = |[x0, x1, x2, x3]: [u64; 4]| {
            let x = _mm256_set_epi64x(x3 as i64, x2 as i64, x1 as i64, x0 as i64);
            // Fields 4–7 up by 32 − 4l, then 2–3 (and 6–7) by 16 − 2l, then every odd one by
            // 8 − l: field i in byte i (the load's sentinel bit 63 is masked off).
            let v = _mm256_or_si256(
                _mm256_and_si256(x, half),
                _mm256_slli_epi64::<32>(_mm256_and_si256(_mm256_srl_epi64(x, by_4l), half)),
            );
            let v = _mm256_or_si256(
                _mm256_and_si256(v, quarter),
                _mm256_slli_epi64::<16>(_mm256_and_si256(_mm256_srl_epi64(v, by_2l), quarter)),
            );
            let v = _mm256_or_si256(
                _mm256_and_si256(v, eighth),
                _mm256_slli_epi64::<8>(_mm256_and_si256(_mm256_srl_epi64(v, by_l), eighth)),
            );
            // Each byte's nibbles reversed, placed, and the first symbol added.
            let lo = _mm256_and_si256(v, nibble);
            let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(v), nibble);
            let sym = _mm256_add_epi8(
                _mm256_or_si256(_mm256_shuffle_epi8(low, lo), _mm256_shuffle_epi8(high, hi)),
                first,
            );
            let (a, b) = (
                _mm256_castsi256_si128(sym),
                _mm256_extracti128_si256::<1>(sym),
            );
            [
                _mm_cvtsi128_si64(a) as u64,
                _mm_extract_epi64::<1>(a) as u64,
                _mm_cvtsi128_si64(b) as u64,
                _mm_extract_epi64::<1>(b) as u64,
            ]
        };
        super::stride_rounds(l, streams, lanes, out, prefetch, symbols)
    }
}

/// The same rounds in WebAssembly's 128-bit SIMD (the page's workers): lanes 0–1 and 2–3 in
/// two registers.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128 {
    use super::super::decode_kernels::Lanes;
    use super::super::prefetch::Prefetch;
    use super::StrideCode;
    use std::arch::wasm32::*;

    /// The four lanes in rounds of [`FLAT_ROUND`] symbols each, two by two, while every lane
    /// has room for one more; returns each lane's (bit position, output position).
    pub(super) fn lanes(
        code: &StrideCode,
        streams: &[u8],
        lanes: &Lanes,
        out: &mut [u8],
        prefetch: &mut Prefetch,
    ) -> [(u64, usize); 4] {
        let l = code.len;
        let [eighth, quarter, half] = super::super::stride::spread_masks(l).map(|m| u64x2_splat(m));
        let table = |t: &[u8; 16]| {
            u8x16(
                t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12],
                t[13], t[14], t[15],
            )
        };
        let (low, high) = (table(&code.low), table(&code.high));
        let nibble = u8x16_splat(0x0f);
        let first = u8x16_splat(code.first);
        // The symbols of two lanes' loads, one lane per 64-bit half.
        let symbols = |x: v128| {
            let v = v128_or(
                v128_and(x, half),
                u64x2_shl(v128_and(u64x2_shr(x, 4 * l), half), 32),
            );
            let v = v128_or(
                v128_and(v, quarter),
                u64x2_shl(v128_and(u64x2_shr(v, 2 * l), quarter), 16),
            );
            let v = v128_or(
                v128_and(v, eighth),
                u64x2_shl(v128_and(u64x2_shr(v, l), eighth), 8),
            );
            let lo = v128_and(v, nibble);
            let hi = v128_and(u16x8_shr(v, 4), nibble);
            u8x16_add(
                v128_or(u8x16_swizzle(low, lo), u8x16_swizzle(high, hi)),
                first,
            )
        };
        super::stride_rounds(l, streams, lanes, out, prefetch, |x| {
            super::super::stride::two_by_two(x, symbols)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::decode_kernels;
    use super::super::lookup::{build_decode_table, flat_stride_codes, BYTE_SHIFT};
    use super::*;

    /// The computed rounds give the table rounds' bytes and end where they end, for every
    /// length, spacing and first symbol, on random streams and quarter sizes (some shorter than
    /// a load): every field of a flat code is a code, so any stream decodes.
    #[test]
    fn computed_rounds_match_the_table_rounds() {
        let mut next = crate::xorshift(0x005e_ed0f_f1a7_57e9);
        let mut table = [0u16; TABLE_SIZE];
        for (l, shift, first, _, lengths) in flat_stride_codes() {
            build_decode_table(&lengths, l, BYTE_SHIFT, &mut table).unwrap();
            for _ in 0..20 {
                let (lanes, streams) = Lanes::random(&mut next, 900, 1500);
                let mut by_table = vec![0u8; lanes.output[4]];
                let mut computed = by_table.clone();
                let none = &mut Prefetch::default();
                let a =
                    decode_kernels::decode_flat(l, &table, &streams, &lanes, &mut by_table, none);
                let b = decode_flat_stride(
                    Stride {
                        len: l,
                        first,
                        shift,
                    },
                    &table,
                    &streams,
                    &lanes,
                    &mut computed,
                    none,
                );
                assert_eq!(a, b, "{l} bits, shift {shift}, first {first}");
                assert_eq!(by_table, computed, "{l} bits, shift {shift}, first {first}");
            }
        }
    }
}
