//! The grid-codebook types (gguf-py `quants.py`: `IQ2_XXS`, `IQ2_XS`, `IQ2_S`, `IQ3_XXS`,
//! `IQ3_S`, `IQ1_S`, `IQ1_M`): each code picks a row of 8 (or 4) values from a fixed grid
//! (`tables.rs`), a sign table or sign bits flip them, and a 4-bit (3-bit) sub-block scale
//! multiplies them.

use super::tables::{
    IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS,
};
use super::{f16_to_f32, for_blocks, half, u16_at, u32_at};

/// `db · grid · ±1`, the sign taken from bit `e` of `signs`. The product by ±1 is exact, so it
/// is a flip of the sign bit (the same value for every non-NaN product), which runs as a vector
/// where a select on random sign bits would not.
#[inline(always)]
fn signed(db: f32, grid: u8, signs: u8, e: usize) -> f32 {
    let flip = u32::from((signs >> e) & 1) << 31;
    f32::from_bits((db * f32::from(grid)).to_bits() ^ flip)
}

/// The sub-block scale of IQ2_XS and IQ2_S: `d · (0.5 + s) · 0.25`.
#[inline(always)]
fn iq2_scale(d: f32, scales: &[u8], i: usize) -> f32 {
    d * (0.5 + f32::from((scales[i / 2] >> (4 * (i % 2))) & 0x0F)) * 0.25
}

pub(super) fn iq2_xxs(src: &[u8], out: &mut [f32]) {
    for_blocks::<66, 256>(src, out, |b, o| {
        let d = half(b, 0);
        for (k, o) in o.chunks_exact_mut(32).enumerate() {
            let aux0 = u32_at(b, 2 + 8 * k);
            let aux1 = u32_at(b, 6 + 8 * k);
            let db = d * (0.5 + (aux1 >> 28) as f32) * 0.25;
            for (l, o) in o.chunks_exact_mut(8).enumerate() {
                let grid = &IQ2XXS_GRID[((aux0 >> (8 * l)) & 0xFF) as usize];
                let signs = KSIGNS[((aux1 >> (7 * l)) & 0x7F) as usize];
                for (e, o) in o.iter_mut().enumerate() {
                    *o = signed(db, grid[e], signs, e);
                }
            }
        }
    });
}

pub(super) fn iq2_xs(src: &[u8], out: &mut [f32]) {
    for_blocks::<74, 256>(src, out, |b, o| {
        let d = half(b, 0);
        for (i, o) in o.chunks_exact_mut(16).enumerate() {
            let db = iq2_scale(d, &b[66..74], i);
            for (h, o) in o.chunks_exact_mut(8).enumerate() {
                let q = u16_at(b, 2 + 2 * (2 * i + h));
                let grid = &IQ2XS_GRID[usize::from(q & 511)];
                let signs = KSIGNS[usize::from(q >> 9)];
                for (e, o) in o.iter_mut().enumerate() {
                    *o = signed(db, grid[e], signs, e);
                }
            }
        }
    });
}

pub(super) fn iq2_s(src: &[u8], out: &mut [f32]) {
    for_blocks::<82, 256>(src, out, |b, o| {
        let d = half(b, 0);
        let (qs, signs, qh) = (&b[2..34], &b[34..66], &b[66..74]);
        for (i, o) in o.chunks_exact_mut(16).enumerate() {
            let db = iq2_scale(d, &b[74..82], i);
            for (h, o) in o.chunks_exact_mut(8).enumerate() {
                let m = 2 * i + h;
                let high = usize::from((qh[m / 4] >> (2 * (m % 4))) & 3);
                let grid = &IQ2S_GRID[usize::from(qs[m]) | (high << 8)];
                for (e, o) in o.iter_mut().enumerate() {
                    *o = signed(db, grid[e], signs[m], e);
                }
            }
        }
    });
}

pub(super) fn iq3_xxs(src: &[u8], out: &mut [f32]) {
    for_blocks::<98, 256>(src, out, |b, o| {
        let d = half(b, 0);
        for (k, o) in o.chunks_exact_mut(32).enumerate() {
            let aux = u32_at(b, 66 + 4 * k);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
            for (l, o) in o.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS[((aux >> (7 * l)) & 0x7F) as usize];
                for (e, o) in o.iter_mut().enumerate() {
                    let p = 8 * l + e;
                    let grid = &IQ3XXS_GRID[usize::from(b[2 + 8 * k + p / 4])];
                    *o = signed(db, grid[p % 4], signs, e);
                }
            }
        }
    });
}

pub(super) fn iq3_s(src: &[u8], out: &mut [f32]) {
    for_blocks::<110, 256>(src, out, |b, o| {
        let d = half(b, 0);
        let (qs, qh, signs, scales) = (&b[2..66], &b[66..74], &b[74..106], &b[106..110]);
        for (k, o) in o.chunks_exact_mut(32).enumerate() {
            let db = d * f32::from(1 + 2 * ((scales[k / 2] >> (4 * (k % 2))) & 0x0F));
            for (l, o) in o.chunks_exact_mut(8).enumerate() {
                for (e, o) in o.iter_mut().enumerate() {
                    let p = 8 * l + e;
                    let m = 8 * k + p / 4;
                    let high = usize::from((qh[m / 8] >> (m % 8)) & 1);
                    let grid = &IQ3S_GRID[usize::from(qs[m]) | (high << 8)];
                    *o = signed(db, grid[p % 4], signs[4 * k + l], e);
                }
            }
        }
    });
}

/// IQ1's `± 0.125` offset added to the grid value.
const DELTA: f32 = 0.125;

pub(super) fn iq1_s(src: &[u8], out: &mut [f32]) {
    for_blocks::<50, 256>(src, out, |b, o| {
        let d = half(b, 0);
        for (k, o) in o.chunks_exact_mut(32).enumerate() {
            let qh = u16_at(b, 34 + 2 * k);
            let dl = d * f32::from(2 * ((qh >> 12) & 7) + 1);
            let delta = if qh & 0x8000 == 0 { DELTA } else { -DELTA };
            for (l, o) in o.chunks_exact_mut(8).enumerate() {
                let idx = usize::from(b[2 + 4 * k + l]) | (usize::from((qh >> (3 * l)) & 7) << 8);
                for (o, &g) in o.iter_mut().zip(&IQ1S_GRID[idx]) {
                    *o = dl * (f32::from(g) + delta);
                }
            }
        }
    });
}

pub(super) fn iq1_m(src: &[u8], out: &mut [f32]) {
    for_blocks::<56, 256>(src, out, |b, o| {
        let sc = [u16_at(b, 48), u16_at(b, 50), u16_at(b, 52), u16_at(b, 54)];
        // The f16 super-scale is the top nibbles of the four scale words.
        let d = f16_to_f32(
            (sc[0] >> 12) | ((sc[1] & 0xF000) >> 8) | ((sc[2] & 0xF000) >> 4) | (sc[3] & 0xF000),
        );
        for (m, o) in o.chunks_exact_mut(8).enumerate() {
            let i = m / 2;
            let dl = d * f32::from(2 * ((sc[i / 4] >> (3 * (i % 4))) & 7) + 1);
            let qh = b[32 + m / 2] >> (4 * (m % 2));
            let idx = usize::from(b[m]) | (usize::from(qh & 7) << 8);
            let delta = if qh & 8 == 0 { DELTA } else { -DELTA };
            for (o, &g) in o.iter_mut().zip(&IQ1S_GRID[idx]) {
                *o = dl * (f32::from(g) + delta);
            }
        }
    });
}
