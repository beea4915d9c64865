//! The hot loops of block decoding (LMC paper §4.2), compiled for the baseline and for
//! x86-64-v3 ([`crate::cpu`]).
//!
//! Each lane (stream `j` and its output quarter) is decoded in rounds of `K` table lookups
//! (`K · bits` ≤ 55), the four lanes interleaved so their dependency chains overlap. A round
//! loads 8 stream bytes at the lane's bit position, shifts off the bits already used and sets a
//! sentinel bit 63; after the lookups, the sentinel has moved down by exactly the bits consumed,
//! so the position advances by `leading_zeros` (no per-lookup bookkeeping). Rounds run in
//! batches whose count is computed up front so that no round reads past its stream or writes past
//! its quarter (a multi-symbol round stores 4 bytes per lookup, up to 3 past the symbols it
//! keeps). The four lanes stop together when the first nears its end; with the multi-symbol
//! table each lane then goes on alone in the same rounds (lanes drift: on AdamW moments 5 % of
//! the symbols were left when the first stopped). The caller decodes what is left of each lane
//! (under a round's room) one symbol at a time.

use super::decode::Lanes;
use super::lookup::MULTI_MAX;
use super::prefetch::Prefetch;
use super::TABLE_SIZE;

/// Rounds between two steps of the prefetch (each step requests a few cache lines).
const PREFETCH_ROUNDS: usize = 4;

/// Stream bytes a round may advance (⌈55 / 8⌉ bits, rounded up from any bit offset).
const ROUND_INPUT: usize = 7;

#[inline(always)]
fn load(streams: &[u8], bp: u64) -> u64 {
    let at = (bp >> 3) as usize;
    let v = u64::from_le_bytes(streams[at..at + 8].try_into().expect("8 bytes"));
    (v >> (bp & 7)) | 1 << 63
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
fn safe_rounds(lanes: &Lanes, state: &[(u64, usize); 4], room: usize, advance: usize) -> usize {
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
    let mut st: [(u64, usize); 4] =
        std::array::from_fn(|j| (8 * lanes.input[j] as u64, lanes.output[j]));
    loop {
        let n = safe_rounds(lanes, &st, MULTI_ROOM, MULTI_MAX * K);
        if n == 0 {
            return st;
        }
        let [(mut b0, mut p0), (mut b1, mut p1), (mut b2, mut p2), (mut b3, mut p3)] = st;
        for round in 0..n {
            if round % PREFETCH_ROUNDS == 0 {
                prefetch.step();
            }
            let mut x0 = load(streams, b0);
            let mut x1 = load(streams, b1);
            let mut x2 = load(streams, b2);
            let mut x3 = load(streams, b3);
            // Lanes are in order and every window ends inside its own quarter.
            let (a, rest) = out.split_at_mut(p1);
            let (b, rest) = rest.split_at_mut(p2 - p1);
            let (c, d) = rest.split_at_mut(p3 - p2);
            let w0 = window(&mut a[p0..]);
            let w1 = window(b);
            let w2 = window(c);
            let w3 = window(d);
            let (mut q0, mut q1, mut q2, mut q3) = (0usize, 0usize, 0usize, 0usize);
            for _ in 0..K {
                let e0 = multi[x0 as usize & MASK];
                let e1 = multi[x1 as usize & MASK];
                let e2 = multi[x2 as usize & MASK];
                let e3 = multi[x3 as usize & MASK];
                put(w0, q0, e0);
                put(w1, q1, e1);
                put(w2, q2, e2);
                put(w3, q3, e3);
                q0 += (e0 >> 30) as usize;
                q1 += (e1 >> 30) as usize;
                q2 += (e2 >> 30) as usize;
                q3 += (e3 >> 30) as usize;
                x0 >>= (e0 >> 24) & 63;
                x1 >>= (e1 >> 24) & 63;
                x2 >>= (e2 >> 24) & 63;
                x3 >>= (e3 >> 24) & 63;
            }
            p0 += q0;
            p1 += q1;
            p2 += q2;
            p3 += q3;
            b0 += x0.leading_zeros() as u64;
            b1 += x1.leading_zeros() as u64;
            b2 += x2.leading_zeros() as u64;
            b3 += x3.leading_zeros() as u64;
        }
        st = [(b0, p0), (b1, p1), (b2, p2), (b3, p3)];
    }
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

/// One round of a lane with the one-symbol table: `K` symbols into `out` (`K` bytes).
#[inline(always)]
fn single_round<const K: usize, const MASK: usize>(
    table: &[u16; TABLE_SIZE],
    x: &mut u64,
    out: &mut [u8],
) {
    let out: &mut [u8; K] = out.try_into().expect("the caller passes K bytes");
    for o in out.iter_mut() {
        let e = table[*x as usize & MASK];
        *o = (e >> 4) as u8;
        *x >>= e & 15;
    }
}

#[inline(always)]
fn single_lanes<const K: usize, const MASK: usize>(
    table: &[u16; TABLE_SIZE],
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    let mut st: [(u64, usize); 4] =
        std::array::from_fn(|j| (8 * lanes.input[j] as u64, lanes.output[j]));
    loop {
        let n = safe_rounds(lanes, &st, K, K);
        if n == 0 {
            return st;
        }
        let [(mut b0, mut p0), (mut b1, mut p1), (mut b2, mut p2), (mut b3, mut p3)] = st;
        for round in 0..n {
            if round % PREFETCH_ROUNDS == 0 {
                prefetch.step();
            }
            let mut x0 = load(streams, b0);
            let mut x1 = load(streams, b1);
            let mut x2 = load(streams, b2);
            let mut x3 = load(streams, b3);
            single_round::<K, MASK>(table, &mut x0, &mut out[p0..p0 + K]);
            single_round::<K, MASK>(table, &mut x1, &mut out[p1..p1 + K]);
            single_round::<K, MASK>(table, &mut x2, &mut out[p2..p2 + K]);
            single_round::<K, MASK>(table, &mut x3, &mut out[p3..p3 + K]);
            b0 += x0.leading_zeros() as u64;
            b1 += x1.leading_zeros() as u64;
            b2 += x2.leading_zeros() as u64;
            b3 += x3.leading_zeros() as u64;
            p0 += K;
            p1 += K;
            p2 += K;
            p3 += K;
        }
        st = [(b0, p0), (b1, p1), (b2, p2), (b3, p3)];
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
        multi_all::<5, 0x7ff>(multi, streams, lanes, out, prefetch)
    } else {
        multi_all::<4, 0xfff>(multi, streams, lanes, out, prefetch)
    }
}

/// The four lanes interleaved, then each lane alone as far as its rounds reach.
#[inline(always)]
fn multi_all<const K: usize, const MASK: usize>(
    multi: &[u32; TABLE_SIZE],
    streams: &[u8],
    lanes: &Lanes,
    out: &mut [u8],
    prefetch: &mut Prefetch,
) -> [(u64, usize); 4] {
    let mut st = multi_lanes::<K, MASK>(multi, streams, lanes, out, prefetch);
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
        single_lanes::<5, 0x7ff>(table, streams, lanes, out, prefetch)
    } else {
        single_lanes::<4, 0xfff>(table, streams, lanes, out, prefetch)
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
