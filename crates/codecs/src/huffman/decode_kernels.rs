//! The hot loops of block decoding (LMC paper §4.2), compiled for the baseline and for
//! x86-64-v3 ([`crate::cpu`]).
//!
//! Each lane (stream `j` and its output quarter) is decoded in rounds of `K` table lookups
//! (`K · bits` ≤ 55), the four lanes interleaved so their dependency chains overlap. A round
//! loads 8 stream bytes at the lane's bit position, shifts off the bits already used and sets a
//! sentinel bit 63; after the lookups, the sentinel has moved down by exactly the bits consumed,
//! so the position advances by `leading_zeros` (no per-lookup bookkeeping). Rounds run in
//! batches whose count is computed up front so that no round reads past its stream or writes
//! past its quarter (a multi-symbol round stores 4 bytes per lookup, up to 3 past the symbols
//! it keeps).
//!
//! Inside a batch the loads and stores are unchecked (the crate's one `unsafe` hot loop). The
//! batch's bounds hold whatever the table holds (a round reads at most 8 bytes further on, a
//! multi-symbol entry moves its lane at most 3 bytes), and without the checks and the
//! per-round windows the four lanes' state stays in registers: fp16 decompression +7–10 %
//! (BENCHMARKS.md, issue 16).
//!
//! A flat code (every code `l` ≤ 7 bits long) needs no sentinel: its rounds read eight symbols
//! at the fixed positions `0, l, …, 7l` of one load and move the lane by `8l` bits, so the eight
//! lookups are independent rather than a chain of shifts (the low bytes of Adam's second moment
//! decode at about twice the speed of the one-symbol rounds; BENCHMARKS.md, issue 28).
//!
//! The four lanes stop together when the first nears its end; with the multi-symbol table each
//! lane then goes on alone in the same rounds (lanes drift: on AdamW moments 5 % of the symbols
//! were left when the first stopped). The caller decodes what is left of each lane (under a
//! round's room) one symbol at a time.

use super::lookup::{BYTE_SHIFT, MULTI_MAX};
use super::prefetch::Prefetch;
use super::{quarters, TABLE_SIZE};

/// Where the four streams of a block start in its stream bytes, and the quarters they decode
/// to in its output (`input[4]`, `output[4]`: the ends).
pub(super) struct Lanes {
    pub(super) input: [usize; 5],
    pub(super) output: [usize; 5],
}

impl Lanes {
    /// Lanes of random sizes (streams below `input` bytes, quarters below `output`) and random
    /// stream bytes, for the kernels' tests.
    #[cfg(test)]
    pub(super) fn random(
        next: &mut impl FnMut() -> u64,
        input: u64,
        output: u64,
    ) -> (Lanes, Vec<u8>) {
        let mut l = Lanes {
            input: [0; 5],
            output: [0; 5],
        };
        for j in 0..4 {
            l.input[j + 1] = l.input[j] + (next() % input) as usize;
            l.output[j + 1] = l.output[j] + (next() % output) as usize;
        }
        let streams = (0..l.input[4]).map(|_| next() as u8).collect();
        (l, streams)
    }

    /// The lanes of a block of `n` bytes whose four streams have `sizes` bytes.
    pub(super) fn new(sizes: [usize; 4], n: usize) -> Lanes {
        let q = quarters(n);
        let mut l = Lanes {
            input: [0; 5],
            output: [0; 5],
        };
        for j in 0..4 {
            l.input[j + 1] = l.input[j] + sizes[j];
            l.output[j + 1] = l.output[j] + q[j];
        }
        l
    }
}

/// Rounds between two steps of the prefetch (each step requests a few cache lines).
pub(super) const PREFETCH_ROUNDS: usize = 4;

/// Stream bytes a round may advance: a round moves its bit position by the leading zeros of
/// its sentinel-marked word, at most 64 bits, whatever the table holds (a valid table's codes
/// take at most `K · bits` ≤ 55 bits a round). The batches below rely on this bound alone.
const ROUND_INPUT: usize = 8;

#[inline(always)]
fn load(streams: &[u8], bp: u64) -> u64 {
    let at = (bp >> 3) as usize;
    let v = u64::from_le_bytes(streams[at..at + 8].try_into().expect("8 bytes"));
    (v >> (bp & 7)) | 1 << 63
}

/// [`load`] without the bounds check, for the batches of rounds whose reads [`safe_rounds`]
/// checked up front.
///
/// # Safety
/// The 8 bytes at `base + bp / 8` must lie in one live allocation.
#[allow(unsafe_code)]
#[inline(always)]
pub(super) unsafe fn load_unchecked(base: *const u8, bp: u64) -> u64 {
    // SAFETY: the caller guarantees that these 8 bytes are readable.
    let v = unsafe { base.add((bp >> 3) as usize).cast::<u64>().read_unaligned() };
    (u64::from_le(v) >> (bp & 7)) | 1 << 63
}

/// Bytes a multi-symbol round may write past its lane's position: K ≤ 5 lookups, each
/// storing a whole 4-byte entry at most 3 bytes after the previous one (3·4 + 4).
pub(super) const MULTI_ROOM: usize = 16;

/// The first [`MULTI_ROOM`] bytes of `out`.
#[inline(always)]
fn window(out: &mut [u8]) -> &mut [u8; MULTI_ROOM] {
    (&mut out[..MULTI_ROOM])
        .try_into()
        .expect("MULTI_ROOM bytes")
}

/// Stores the symbols of multi-symbol entry `e` at `q` of the round's window (`q` ≤ 12).
#[inline(always)]
fn put(w: &mut [u8; MULTI_ROOM], q: usize, e: u32) {
    let q = q.min(MULTI_ROOM - 4);
    w[q..q + 4].copy_from_slice(&e.to_le_bytes());
}

/// Rounds every lane can still run without leaving its stream or quarter.
#[inline(always)]
pub(super) fn safe_rounds(
    lanes: &Lanes,
    state: &[(u64, usize); 4],
    room: usize,
    advance: usize,
) -> usize {
    let mut n = usize::MAX;
    for (j, &(bp, p)) in state.iter().enumerate() {
        let at = (bp >> 3) as usize;
        let (in_end, out_end) = (lanes.input[j + 1], lanes.output[j + 1]);
        if at + 8 > in_end || p + room > out_end {
            return 0;
        }
        n = n
            .min((in_end - at - 8) / ROUND_INPUT + 1)
            .min((out_end - p - room) / advance + 1);
    }
    n
}

#[inline(always)]
fn multi_lanes<const K: usize, const MASK: usize>(
    multi: &[u32; TABLE_SIZE],
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    const { assert!(MULTI_MAX * (K - 1) + 4 <= MULTI_ROOM) };
    let mut st: [(u64, usize); 4] =
        std::array::from_fn(|j| (8 * lanes.input[j] as u64, lanes.output[j]));
    loop {
        let n = safe_rounds(lanes, &st, MULTI_ROOM, MULTI_MAX * K);
        if n == 0 {
            break;
        }
        let [(mut b0, p0), (mut b1, p1), (mut b2, p2), (mut b3, p3)] = st;
        let (sp, op) = (streams.as_ptr(), out.as_mut_ptr());
        // The lanes' output positions as pointers, each bumped by its entries' symbol counts
        // (fewer live registers than a window and an offset per lane, so fewer spills).
        #[allow(unsafe_code)]
        let (w, base) = (
            // SAFETY: every `p` ≤ `out.len()` (`safe_rounds` returned `n` > 0).
            unsafe { [op.add(p0), op.add(p1), op.add(p2), op.add(p3)] },
            op as usize,
        );
        let [mut w0, mut w1, mut w2, mut w3] = w;
        for round in 0..n {
            if round % PREFETCH_ROUNDS == 0 {
                prefetch.step();
            }
            // SAFETY: `safe_rounds` chose `n` so that in each of these rounds every lane reads
            // the 8 bytes at `bp / 8` ≤ its stream's end − 8 (a round moves `bp` by at most
            // `ROUND_INPUT` bytes) and writes 4-byte entries at most `3 · (K − 1)` bytes past
            // its position, which is ≤ its quarter's end − `MULTI_ROOM` (an entry moves it by
            // `e >> 30` ≤ `MULTI_MAX`, and `3 · (K − 1) + 4` ≤ `MULTI_ROOM` for `K` ≤ 5):
            // all inside `streams` and `out`, whatever the table holds.
            #[allow(unsafe_code)]
            unsafe {
                let mut x0 = load_unchecked(sp, b0);
                let mut x1 = load_unchecked(sp, b1);
                let mut x2 = load_unchecked(sp, b2);
                let mut x3 = load_unchecked(sp, b3);
                for _ in 0..K {
                    let e0 = multi[x0 as usize & MASK];
                    let e1 = multi[x1 as usize & MASK];
                    let e2 = multi[x2 as usize & MASK];
                    let e3 = multi[x3 as usize & MASK];
                    w0.cast::<u32>().write_unaligned(e0.to_le());
                    w1.cast::<u32>().write_unaligned(e1.to_le());
                    w2.cast::<u32>().write_unaligned(e2.to_le());
                    w3.cast::<u32>().write_unaligned(e3.to_le());
                    w0 = w0.add((e0 >> 30) as usize);
                    w1 = w1.add((e1 >> 30) as usize);
                    w2 = w2.add((e2 >> 30) as usize);
                    w3 = w3.add((e3 >> 30) as usize);
                    x0 >>= (e0 >> 24) & 63;
                    x1 >>= (e1 >> 24) & 63;
                    x2 >>= (e2 >> 24) & 63;
                    x3 >>= (e3 >> 24) & 63;
                }
                b0 += x0.leading_zeros() as u64;
                b1 += x1.leading_zeros() as u64;
                b2 += x2.leading_zeros() as u64;
                b3 += x3.leading_zeros() as u64;
            }
        }
        let [p0, p1, p2, p3] = [w0, w1, w2, w3].map(|w| w as usize - base);
        st = [(b0, p0), (b1, p1), (b2, p2), (b3, p3)];
    }
    // Then each lane alone, as far as its own rounds reach.
    for (j, s) in st.iter_mut().enumerate() {
        *s = multi_one::<K, MASK>(
            multi,
            streams,
            lanes.input[j + 1],
            out,
            lanes.output[j + 1],
            *s,
        );
    }
    st
}

/// One lane alone, from `(bp, p)` on, in the same rounds as [`multi_lanes`], while its own
/// stream (which ends at `in_end`) and quarter (`out[..out_end]`) have room: the four lanes
/// stop together as soon as the first nears its end, when the others may have hundreds of
/// symbols left, which would otherwise be decoded one at a time.
#[inline(always)]
fn multi_one<const K: usize, const MASK: usize>(
    multi: &[u32; TABLE_SIZE],
    streams: &[u8],
    in_end: usize,
    out: &mut [u8],
    out_end: usize,
    (mut bp, mut p): (u64, usize),
) -> (u64, usize) {
    loop {
        let at = (bp >> 3) as usize;
        if at + 8 > in_end || p + MULTI_ROOM > out_end {
            return (bp, p);
        }
        let n = ((in_end - at - 8) / ROUND_INPUT + 1)
            .min((out_end - p - MULTI_ROOM) / (MULTI_MAX * K) + 1);
        for _ in 0..n {
            let mut x = load(streams, bp);
            let w = window(&mut out[p..out_end]);
            let mut q = 0usize;
            for _ in 0..K {
                let e = multi[x as usize & MASK];
                put(w, q, e);
                q += (e >> 30) as usize;
                x >>= (e >> 24) & 63;
            }
            p += q;
            bp += x.leading_zeros() as u64;
        }
    }
}

/// One round of one lane that decodes a fixed number of bytes from one load ([`Single`],
/// [`Flat`]); [`byte_lanes`] runs four lanes of them interleaved.
trait ByteRound {
    /// Bytes a round writes.
    const BYTES: usize;

    /// Decodes the round of the lane at bit position `bp` into the [`Self::BYTES`] bytes at `w`;
    /// returns the lane's next bit position.
    ///
    /// # Safety
    /// The 8 bytes at `sp + bp / 8` must be readable and the [`Self::BYTES`] bytes at `w`
    /// writable.
    #[allow(unsafe_code)]
    unsafe fn round(&self, sp: *const u8, bp: u64, w: *mut u8) -> u64;
}

/// Rounds of `K` lookups in the one-symbol table (`length | byte << BYTE_SHIFT` entries), each
/// shifting the loaded word by the length it found.
struct Single<'t, const K: usize, const MASK: usize>(&'t [u16; TABLE_SIZE]);

impl<const K: usize, const MASK: usize> ByteRound for Single<'_, K, MASK> {
    const BYTES: usize = K;

    #[allow(unsafe_code)]
    #[inline(always)]
    unsafe fn round(&self, sp: *const u8, bp: u64, w: *mut u8) -> u64 {
        // SAFETY: the caller's contract.
        let mut x = unsafe { load_unchecked(sp, bp) };
        for i in 0..K {
            // `length | byte << BYTE_SHIFT`: the shift takes the length from the low 6 bits.
            let e = self.0[x as usize & MASK];
            // SAFETY: `i` < `K`, within the caller's `K` writable bytes.
            unsafe { w.add(i).write((e >> BYTE_SHIFT) as u8) };
            x = x.wrapping_shr(e as u32);
        }
        bp + x.leading_zeros() as u64
    }
}

/// Symbols a flat-code round decodes per lane: `8 · l` ≤ 56 bits of one load for `l` ≤ 7.
pub(super) const FLAT_ROUND: usize = 8;

/// Rounds of a flat `L`-bit code: [`FLAT_ROUND`] symbols, each looked up at a fixed bit
/// position of one load, so the lookups do not wait on one another.
struct Flat<'t, const L: u32>(&'t [u16; TABLE_SIZE]);

impl<const L: u32> ByteRound for Flat<'_, L> {
    const BYTES: usize = FLAT_ROUND;

    #[allow(unsafe_code)]
    #[inline(always)]
    unsafe fn round(&self, sp: *const u8, bp: u64, w: *mut u8) -> u64 {
        const { assert!(L as usize * FLAT_ROUND <= 56) };
        // SAFETY: the caller's contract.
        let x = unsafe { load_unchecked(sp, bp) };
        let mask = (1u64 << L) - 1;
        let mut symbols = 0u64;
        for i in 0..FLAT_ROUND {
            let e = self.0[((x >> (L as usize * i)) & mask) as usize];
            symbols |= u64::from(e >> BYTE_SHIFT) << (8 * i);
        }
        // SAFETY: the caller's `FLAT_ROUND` = 8 writable bytes.
        unsafe { w.cast::<u64>().write_unaligned(symbols.to_le()) };
        bp + u64::from(L) * FLAT_ROUND as u64
    }
}

/// The four lanes in rounds of `R`, interleaved, while every lane has room for one more.
#[inline(always)]
fn byte_lanes<R: ByteRound>(
    r: &R,
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    let mut st: [(u64, usize); 4] =
        std::array::from_fn(|j| (8 * lanes.input[j] as u64, lanes.output[j]));
    loop {
        let n = safe_rounds(lanes, &st, R::BYTES, R::BYTES);
        if n == 0 {
            return st;
        }
        let [(mut b0, mut p0), (mut b1, mut p1), (mut b2, mut p2), (mut b3, mut p3)] = st;
        let (sp, op) = (streams.as_ptr(), out.as_mut_ptr());
        for round in 0..n {
            if round % PREFETCH_ROUNDS == 0 {
                prefetch.step();
            }
            // SAFETY: `safe_rounds` chose `n` so that in each of these rounds every lane reads
            // the 8 bytes at `bp / 8` ≤ its stream's end − 8 (a round moves `bp` by at most
            // `ROUND_INPUT` bytes) and writes the `R::BYTES` bytes at its position `p` ≤ its
            // quarter's end − `R::BYTES` (a round moves `p` by `R::BYTES`): inside `streams`
            // and `out`.
            #[allow(unsafe_code)]
            unsafe {
                b0 = r.round(sp, b0, op.add(p0));
                b1 = r.round(sp, b1, op.add(p1));
                b2 = r.round(sp, b2, op.add(p2));
                b3 = r.round(sp, b3, op.add(p3));
            }
            p0 += R::BYTES;
            p1 += R::BYTES;
            p2 += R::BYTES;
            p3 += R::BYTES;
        }
        st = [(b0, p0), (b1, p1), (b2, p2), (b3, p3)];
    }
}

#[inline(always)]
fn decode_flat_impl(
    len: u32,
    table: &[u16; TABLE_SIZE],
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    match len {
        1 => byte_lanes(&Flat::<1>(table), streams, lanes, out, prefetch),
        2 => byte_lanes(&Flat::<2>(table), streams, lanes, out, prefetch),
        3 => byte_lanes(&Flat::<3>(table), streams, lanes, out, prefetch),
        4 => byte_lanes(&Flat::<4>(table), streams, lanes, out, prefetch),
        5 => byte_lanes(&Flat::<5>(table), streams, lanes, out, prefetch),
        6 => byte_lanes(&Flat::<6>(table), streams, lanes, out, prefetch),
        _ => byte_lanes(&Flat::<7>(table), streams, lanes, out, prefetch),
    }
}

#[inline(always)]
fn decode_multi_impl(
    bits: u32,
    multi: &[u32; TABLE_SIZE],
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    if bits <= 11 {
        multi_lanes::<5, 0x7ff>(multi, streams, lanes, out, prefetch)
    } else {
        multi_lanes::<4, 0xfff>(multi, streams, lanes, out, prefetch)
    }
}

#[inline(always)]
fn decode_single_impl(
    bits: u32,
    table: &[u16; TABLE_SIZE],
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    if bits <= 11 {
        byte_lanes(&Single::<5, 0x7ff>(table), streams, lanes, out, prefetch)
    } else {
        byte_lanes(&Single::<4, 0xfff>(table), streams, lanes, out, prefetch)
    }
}

crate::cpu::dispatch! {
    /// Runs the multi-symbol rounds; returns each lane's (bit position, output position).
    pub(super) fn decode_multi(
        bits: u32,
        multi: &[u32; TABLE_SIZE],
        streams: &[u8],
        lanes: &Lanes,
        out: &mut [u8],
        prefetch: &mut Prefetch,
    ) -> [(u64, usize); 4] = decode_multi_impl / decode_multi_v3;
}

crate::cpu::dispatch! {
    /// Runs the one-symbol rounds; returns each lane's (bit position, output position).
    pub(super) fn decode_single(
        bits: u32,
        table: &[u16; TABLE_SIZE],
        streams: &[u8],
        lanes: &Lanes,
        out: &mut [u8],
        prefetch: &mut Prefetch,
    ) -> [(u64, usize); 4] = decode_single_impl / decode_single_v3;
}

crate::cpu::dispatch! {
    /// Runs the rounds of a flat code of `len` (1–7) bits, with its table built for exactly
    /// `len` bits; returns each lane's (bit position, output position).
    pub(super) fn decode_flat(
        len: u32,
        table: &[u16; TABLE_SIZE],
        streams: &[u8],
        lanes: &Lanes,
        out: &mut [u8],
        prefetch: &mut Prefetch,
    ) -> [(u64, usize); 4] = decode_flat_impl / decode_flat_v3;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unchecked batches stay inside their lanes whatever the tables and streams hold: with
    /// random table entries (lengths up to 63 or 15, counts 1 to 3: entries no valid code makes)
    /// and random streams and quarter sizes (some shorter than a load), every lane ends inside
    /// its stream and quarter, and the safe per-lane rounds after the batches (which panic on
    /// any position past their slices) accept where the batches stopped. The fuzz targets run
    /// the same code under AddressSanitizer.
    #[test]
    fn batches_stay_in_their_lanes_with_any_table() {
        let mut next = crate::xorshift(0x0bad_c0de_dead_beef);
        let mut multi = [0u32; TABLE_SIZE];
        let mut single = [0u16; TABLE_SIZE];
        // Miri (the test command's check of the unchecked loads and stores) interprets every
        // step: a few tables there, 200 natively.
        for _ in 0..if cfg!(miri) { 3 } else { 200 } {
            // Every entry moves its lane on (at least one symbol; with no progress a round
            // would repeat forever), as every entry of a table built from a complete code does.
            for e in multi.iter_mut() {
                *e = (next() as u32).max(1 << 30);
            }
            for e in single.iter_mut() {
                *e = next() as u16 | 1;
            }
            let (lanes, streams) = Lanes::random(&mut next, 300, 600);
            let mut out = vec![0u8; lanes.output[4]];
            for bits in [11, 12] {
                let none = &mut Prefetch::default();
                let m = decode_multi(bits, &multi, &streams, &lanes, &mut out, none);
                let s = decode_single(bits, &single, &streams, &lanes, &mut out, none);
                let f = decode_flat(bits - 5, &single, &streams, &lanes, &mut out, none);
                for (j, &(bp, p)) in m.iter().chain(&s).chain(&f).enumerate() {
                    let j = j % 4;
                    assert!(bp >= 8 * lanes.input[j] as u64 && bp / 8 <= lanes.input[j + 1] as u64);
                    assert!(p >= lanes.output[j] && p <= lanes.output[j + 1]);
                }
            }
        }
    }

    /// Real LMC streams of every kind of block (skewed and flat Huffman blocks with the multi- and
    /// one-symbol lookups, run blocks, raw blocks; 1-, 2- and 4-byte lanes) decode to themselves
    /// through the unchecked kernels: small enough for Miri, which the test command runs on it.
    #[test]
    fn small_streams_of_every_block_kind_round_trip() {
        use crate::{decode, encode, Options, Width};
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let n = if cfg!(miri) { 4096 } else { 65_536 };
        let inputs: Vec<Vec<u8>> = vec![
            (0..n).map(|_| (next() % 3) as u8).collect(),
            (0..n).map(|_| (next() % 200) as u8).collect(),
            (0..n)
                .map(|_| {
                    if next().is_multiple_of(16) {
                        next() as u8
                    } else {
                        0
                    }
                })
                .collect(),
            (0..n).map(|_| next() as u8).collect(),
            // Flat codes: 7 bits over even values, 3 bits.
            (0..n).map(|_| (next() % 128) as u8 * 2).collect(),
            (0..n).map(|_| (next() % 8) as u8).collect(),
            vec![7u8; n],
        ];
        for data in &inputs {
            for width in [Width::W1, Width::W2, Width::W4] {
                let packed = encode(data, width, &Options::default());
                assert_eq!(decode(&packed, data.len()).unwrap(), *data, "{width:?}");
            }
        }
    }
}
