//! Reading a Huffman block body, LMC paper §4.2: the code-length table and stream sizes, then
//! the four streams, for plain blocks and for blocks with run symbols ([`crate::rle`]).
//!
//! After the table is read, a block whose codes are short (mean length under the code's own
//! distribution at most half the table bits, e.g. exponent bytes at ~2.6 bits) gets a
//! *multi-symbol* table: each of its `2^bits` entries (11 bits when the longest code allows, else
//! 12) holds the up to three symbols whose codes fit wholly in those bits, their count and the
//! bits they use. Other blocks (near-random bytes at ~8 bits) get the one-symbol table
//! (`length | byte << 8`; `symbol << 4 | length` for blocks with runs), except a *flat* code,
//! every code of one length `l` ≤ 7 bits (near-uniform bytes over `2^l` values, such as the
//! low bytes of Adam's second moment, whose sign bit is always 0): its `2^l`-entry table is read
//! at fixed bit positions, eight independent lookups per load. The four streams are
//! decoded as interleaved lanes by `decode_kernels`; each lane's last symbols are decoded here
//! one at a time.

use super::bitio::{get_leb128, BitIn};
use super::decode_kernels::{self, Lanes};
use super::decode_stride;
use super::lookup::{
    build_decode_table, build_multi_table, flat_length, flat_stride, length_counts, Lookup,
    BYTE_SHIFT, SYMBOL_SHIFT,
};
use super::prefetch::Prefetch;
use super::table::read_table;
use super::{quarters, MAX_CODE_LEN, MAX_RUN_SYMBOLS, MAX_SYMBOLS, TABLE_SIZE};
use crate::error::DecodeError;

/// Reusable decoder state (the 8 KiB single-symbol and 16 KiB multi-symbol lookup tables).
pub struct DecodeScratch {
    table: Box<[u16; TABLE_SIZE]>,
    multi: Box<[u32; TABLE_SIZE]>,
    lengths: [u8; MAX_SYMBOLS],
    /// Lines to request while a block decodes (see [`Prefetch`]): the decoder points it at the
    /// row's raw group in the payload and at the row's output, which merging reads and writes
    /// next.
    pub prefetch: Prefetch,
}

impl Default for DecodeScratch {
    fn default() -> Self {
        DecodeScratch {
            table: Box::new([0u16; TABLE_SIZE]),
            multi: Box::new([0u32; TABLE_SIZE]),
            lengths: [0u8; MAX_SYMBOLS],
            prefetch: Prefetch::default(),
        }
    }
}

/// Parses table and stream sizes of a Huffman block body starting at `data[0]`, checks that the
/// code is complete and builds the lookup table; returns (header bytes consumed, stream sizes,
/// table bits, lookup). Byte codes (`nsym` = 256) whose mean length under their own distribution
/// is at most half the table bits get the multi-symbol table.
fn read_header(
    data: &[u8],
    nsym: usize,
    scratch: &mut DecodeScratch,
    block_off: u64,
) -> Result<(usize, [usize; 4], u32, Lookup), DecodeError> {
    let lengths = &mut scratch.lengths[..nsym];
    let table_bytes = read_table(data, lengths).map_err(|reason| {
        if reason == "code table runs past the end of the block" {
            DecodeError::Truncated {
                offset: block_off,
                needed: data.len() as u64 + 1,
                available: data.len() as u64,
            }
        } else {
            DecodeError::InvalidCodeTable {
                block: block_off,
                reason,
            }
        }
    })?;
    let invalid = |reason| DecodeError::InvalidCodeTable {
        block: block_off,
        reason,
    };
    let counts = length_counts(lengths);
    // Kraft sum and mean length (under 2^-length), both scaled by 2^12.
    let (mut kraft, mut mean) = (0u64, 0u64);
    for (l, &c) in counts.iter().enumerate().skip(1) {
        kraft += (c as u64) << (MAX_CODE_LEN as usize - l);
        mean += (c as u64 * l as u64) << (MAX_CODE_LEN as usize - l);
    }
    match kraft.cmp(&(1 << MAX_CODE_LEN)) {
        std::cmp::Ordering::Greater => return Err(invalid("over-subscribed code lengths")),
        std::cmp::Ordering::Less => return Err(invalid("incomplete code lengths")),
        std::cmp::Ordering::Equal => {}
    }
    let bits = if counts[MAX_CODE_LEN as usize] == 0 {
        11
    } else {
        MAX_CODE_LEN
    };
    let flat = flat_length(&counts).filter(|_| nsym == 256);
    let (bits, lookup) = if let Some(l) = flat {
        // Only the `2^l` entries a flat code's bits can index are built and read.
        build_decode_table(lengths, l, BYTE_SHIFT, &mut scratch.table[..]).map_err(invalid)?;
        match flat_stride(lengths, l) {
            Some(stride) => (l, Lookup::FlatStride(stride)),
            None => (l, Lookup::Flat(l)),
        }
    } else if nsym == 256 && 2 * mean <= (bits as u64) << MAX_CODE_LEN {
        build_multi_table(lengths, &counts, bits, &mut scratch.multi);
        (bits, Lookup::Multi)
    } else {
        // Plain blocks' byte codes get `length | byte << 8` entries (see [`BYTE_SHIFT`]); run
        // blocks' symbols go past a byte.
        let shift = if nsym == 256 {
            BYTE_SHIFT
        } else {
            SYMBOL_SHIFT
        };
        build_decode_table(lengths, bits, shift, &mut scratch.table[..]).map_err(invalid)?;
        (bits, Lookup::Single)
    };
    let mut pos = table_bytes;
    let mut sizes = [0usize; 4];
    for s in sizes.iter_mut() {
        *s = get_leb128(data, &mut pos).ok_or(DecodeError::Truncated {
            offset: block_off,
            needed: pos as u64 + 1,
            available: data.len() as u64,
        })? as usize;
    }
    Ok((pos, sizes, bits, lookup))
}

fn split_streams(
    data: &[u8],
    pos: usize,
    sizes: [usize; 4],
    data_off: u64,
) -> Result<([&[u8]; 4], usize), DecodeError> {
    let total: u64 = sizes.iter().map(|&s| s as u64).sum();
    let avail = (data.len() - pos) as u64;
    if total > avail {
        return Err(DecodeError::Truncated {
            offset: data_off + pos as u64,
            needed: total,
            available: avail,
        });
    }
    let mut p = pos;
    let mut s: [&[u8]; 4] = [&[]; 4];
    for j in 0..4 {
        s[j] = &data[p..p + sizes[j]];
        p += sizes[j];
    }
    Ok((s, p))
}

fn check_end(r: &BitIn, j: usize, block_off: u64) -> Result<(), DecodeError> {
    let len_bits = r.buf.len() as u64 * 8;
    let used = r.consumed();
    if used > len_bits {
        return Err(DecodeError::CorruptBitstream {
            block: block_off,
            stream: j as u8,
            reason: "bit stream overrun",
        });
    }
    if len_bits - used >= 8 {
        return Err(DecodeError::CorruptBitstream {
            block: block_off,
            stream: j as u8,
            reason: "bit stream has unused bytes",
        });
    }
    Ok(())
}

/// Decodes a plain Huffman block body from the start of `data` into `out` (the block's exact
/// length). `data_off` is the absolute offset of `data[0]`; `block_off` that of the kind byte.
/// Returns the bytes consumed.
pub fn decode_plain(
    data: &[u8],
    out: &mut [u8],
    scratch: &mut DecodeScratch,
    data_off: u64,
    block_off: u64,
) -> Result<usize, DecodeError> {
    let (pos, sizes, bits, lookup) = read_header(data, 256, scratch, block_off)?;
    let total: usize = sizes.iter().sum();
    if total > data.len() - pos {
        return Err(DecodeError::Truncated {
            offset: data_off + pos as u64,
            needed: total as u64,
            available: (data.len() - pos) as u64,
        });
    }
    let streams = &data[pos..pos + total];
    let lanes = Lanes::new(sizes, out.len());
    let done = match lookup {
        Lookup::Multi => decode_kernels::decode_multi(
            bits,
            &scratch.multi,
            streams,
            &lanes,
            out,
            &mut scratch.prefetch,
        ),
        Lookup::Single => decode_kernels::decode_single(
            bits,
            &scratch.table,
            streams,
            &lanes,
            out,
            &mut scratch.prefetch,
        ),
        Lookup::Flat(l) => decode_kernels::decode_flat(
            l,
            &scratch.table,
            streams,
            &lanes,
            out,
            &mut scratch.prefetch,
        ),
        Lookup::FlatStride(stride) => decode_stride::decode_flat_stride(
            stride,
            &scratch.table,
            streams,
            &lanes,
            out,
            &mut scratch.prefetch,
        ),
    };
    for j in 0..4 {
        let (bp, p) = done[j];
        let stream = &streams[lanes.input[j]..lanes.input[j + 1]];
        let mut r = BitIn::at(stream, bp - 8 * lanes.input[j] as u64);
        let o = &mut out[p..lanes.output[j + 1]];
        match lookup {
            Lookup::Multi => {
                let lengths = &scratch.lengths;
                for x in o.iter_mut() {
                    r.refill_if(bits);
                    let sym = scratch.multi[r.index(bits)] as u8;
                    r.skip(lengths[sym as usize] as u32);
                    *x = sym;
                }
            }
            Lookup::Single | Lookup::Flat(_) | Lookup::FlatStride(_) => {
                for x in o.iter_mut() {
                    r.refill_if(bits);
                    let e = scratch.table[r.index(bits)];
                    r.skip((e & 15) as u32);
                    *x = (e >> BYTE_SHIFT) as u8;
                }
            }
        }
        check_end(&r, j, block_off)?;
    }
    Ok(pos + total)
}

/// Decodes a Huffman-with-runs block body (starting at `run_value`) into `out`. Returns the
/// bytes consumed.
pub fn decode_runs(
    data: &[u8],
    out: &mut [u8],
    scratch: &mut DecodeScratch,
    data_off: u64,
    block_off: u64,
) -> Result<usize, DecodeError> {
    if data.len() < 2 {
        return Err(DecodeError::Truncated {
            offset: data_off,
            needed: 2,
            available: data.len() as u64,
        });
    }
    let run_value = data[0];
    let nrun = data[1] as usize;
    if nrun == 0 || nrun > MAX_RUN_SYMBOLS {
        return Err(DecodeError::InvalidCodeTable {
            block: block_off,
            reason: "run symbol count out of range 1..=21",
        });
    }
    let (pos, sizes, bits, _) = read_header(&data[2..], 256 + nrun, scratch, block_off)?;
    let (streams, end) = split_streams(data, pos + 2, sizes, data_off)?;
    let mask = (1usize << bits) - 1;
    let table: &[u16; TABLE_SIZE] = &scratch.table;
    let qs = quarters(out.len());
    let mut start = 0;
    for j in 0..4 {
        let o = &mut out[start..start + qs[j]];
        start += qs[j];
        let mut r = BitIn::new(streams[j]);
        let mut p = 0;
        while p < o.len() {
            if r.nbits < 32 {
                r.refill();
            }
            let e = table[(r.bits as usize) & mask & (TABLE_SIZE - 1)];
            let l = (e & 15) as u32;
            r.bits >>= l;
            r.nbits -= l;
            let sym = (e >> 4) as usize;
            if sym < 256 {
                o[p] = sym as u8;
                p += 1;
            } else {
                let k = (sym - 256) as u32;
                let len = (1usize << k) + r.take(k) as usize;
                if len > o.len() - p {
                    return Err(DecodeError::CorruptBitstream {
                        block: block_off,
                        stream: j as u8,
                        reason: "run crosses the end of its quarter",
                    });
                }
                o[p..p + len].fill(run_value);
                p += len;
            }
        }
        check_end(&r, j, block_off)?;
    }
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::super::decode_kernels::MULTI_ROOM;
    use super::super::encode::{encode_plain, EncodeScratch};
    use super::super::histogram::histogram;
    use super::super::lengths::build_lengths;
    use super::super::lookup::flat_stride_codes;
    use super::super::stride::Stride;
    use super::super::table::write_table;
    use super::*;

    /// The body of a plain Huffman block coding `block` with `lengths`.
    fn plain_body(block: &[u8], lengths: &[u8; 256]) -> Vec<u8> {
        let mut table = Vec::new();
        write_table(lengths, &mut table);
        let mut body = Vec::new();
        encode_plain(
            block,
            lengths,
            &table,
            &mut EncodeScratch::default(),
            &mut body,
        );
        body
    }

    /// A block whose quarters code at very different lengths (two bytes in the first, sixteen in
    /// the last): its lanes drift apart, and when the first nears its end the four-lane rounds
    /// stop. Every lane must still be decoded in rounds up to its own end (less than a round's
    /// room of output or 8 bytes of stream left for the one-symbol loop), and the block must
    /// decode to itself.
    #[test]
    fn lanes_left_behind_still_decode_in_rounds() {
        let mut next = crate::xorshift(0x2545_f491_4f6c_dd1d);
        // Under Miri (the test command runs this test there) a tenth of the symbols still drift.
        let n = if cfg!(miri) { 6_001 } else { 60_001 };
        let block: Vec<u8> = (0..n)
            .map(|i| {
                let r = next();
                let spread = [2, 4, 8, 16][4 * i / n];
                // Mostly byte 0, else one of `spread` others.
                if r.is_multiple_of(4) {
                    1 + (r >> 8) as u8 % spread
                } else {
                    0
                }
            })
            .collect();
        let mut lengths = [0u8; 256];
        build_lengths(&histogram(&block), MAX_CODE_LEN, &mut lengths);
        let body = plain_body(&block, &lengths);

        let mut scratch = DecodeScratch::default();
        let (pos, sizes, bits, lookup) = read_header(&body, 256, &mut scratch, 0).unwrap();
        assert_eq!(lookup, Lookup::Multi);
        let lanes = Lanes::new(sizes, n);
        let mut out = vec![0u8; n];
        let done = decode_kernels::decode_multi(
            bits,
            &scratch.multi,
            &body[pos..],
            &lanes,
            &mut out,
            &mut Prefetch::default(),
        );
        for (j, &(bp, p)) in done.iter().enumerate() {
            let (in_left, out_left) = (
                lanes.input[j + 1] - (bp / 8) as usize,
                lanes.output[j + 1] - p,
            );
            assert!(
                in_left < 8 || out_left < MULTI_ROOM,
                "lane {j}: {in_left} stream bytes and {out_left} output bytes left"
            );
        }
        let mut back = vec![0u8; n];
        let used = decode_plain(&body, &mut back, &mut scratch, 0, 0).unwrap();
        assert_eq!(used, body.len());
        assert_eq!(back, block);
    }

    /// A code of one length is read with the flat table of exactly that many bits: its symbols
    /// computed when they are evenly spaced by a power of two (every length, spacing and first
    /// symbol that fit in a byte), looked up when they are not; both decode every symbol, on
    /// every build of the kernels (the test command runs this file again on the portable one).
    #[test]
    fn flat_codes_get_the_flat_lookup() {
        let mut next = crate::xorshift(0x0f1a_7c0d_e5ee_d5ee);
        let mut check = |l: u32, symbols: &[u8], expected: Lookup| {
            // Sizes around a round's 8 symbols per lane, and a block's 64 KiB.
            for n in [0, 5, 31, 33, 5_003, 65_536] {
                let block: Vec<u8> = (0..n)
                    .map(|_| symbols[(next() % symbols.len() as u64) as usize])
                    .collect();
                let mut lengths = [0u8; 256];
                for &s in symbols {
                    lengths[s as usize] = l as u8;
                }
                let body = plain_body(&block, &lengths);
                let mut scratch = DecodeScratch::default();
                let (_, _, bits, lookup) = read_header(&body, 256, &mut scratch, 0).unwrap();
                assert_eq!((bits, lookup), (l, expected), "{symbols:?}");
                let mut back = vec![0u8; n];
                let used = decode_plain(&body, &mut back, &mut scratch, 0, 0).unwrap();
                assert_eq!(used, body.len());
                assert_eq!(back, block, "{l} bits, {expected:?}, {n} bytes");
            }
        };
        for (len, shift, first, symbols, _) in flat_stride_codes() {
            check(
                len,
                &symbols,
                Lookup::FlatStride(Stride { len, first, shift }),
            );
            // One symbol off the spacing: looked up.
            let mut uneven = symbols.clone();
            let last = uneven.len() - 1;
            if len > 1 && uneven[last] > uneven[last - 1] + 1 {
                uneven[last] -= 1;
                check(len, &uneven, Lookup::Flat(len));
            }
        }
    }
}
