//! The quantization-aware delta of Inshrinkerator §6 and the entropy coding of level sequences.
//!
//! * **Cyclic delta**: for levels `b` (base, `Lb` levels) and `c` (current, `Lc` levels) the
//!   delta is `(c − b) mod M` with `M = max(Lb, Lc)`, the cyclic buffer sized to the larger
//!   level count as the paper does when the bin count changes; pruned and protected are levels 0
//!   and 1 ([`crate::levels`]), so they take part like any bin. `c = (b + d) mod M` inverts it
//!   exactly because both levels are below `M`.
//! * **Rearrangement** (Algorithms 5–6): the deltas are split by the base element's level and each
//!   group is run-length coded on its own, so a bucket with a high migration rate does not break
//!   the runs of the others. The groups' run-length bytes then share one Huffman section (a table
//!   per group cost more than it saved on small tensors: measured on the demo checkpoints). The
//!   decoder regroups from the base it already has: no extra storage.
//! * **Run-length coding with the negated-run trick**: a value is written alone and followed by its
//!   run length only when the run is longer than one. The paper negates values so that runs
//!   (positive) and values (≤ 0) share one integer stream; in our byte stream the sign is the top
//!   bit: a value is a byte `< 128`, a run length `r ≥ 2` is written right after its value as
//!   7-bit little-endian digits in bytes `≥ 128`.
//! * **Huffman**: the run-length bytes are cut into blocks of at most [`BLOCK`] bytes and each is
//!   coded with bitlens-codecs' canonical Huffman coder (a code table per block), or stored raw
//!   when that is not smaller.
//!
//! Section layout: `LEB128 R` (run-length bytes), then per block a kind byte (0 raw, 2 Huffman)
//! and its body ([`bitlens_codecs::huffman::encode_plain`]).
//!
//! **Wide levels**: run-length coding needs the top bit, so it only holds symbols below 128.
//! When the level count (for a delta, the larger of base's and current's) exceeds
//! [`RLE_LEVELS`] — a budget that needed more than 126 bins — the section holds the symbols
//! themselves as its bytes (no run lengths; rearranged deltas are the groups concatenated). The
//! level counts in the stream header say which form a section has, so no flag is needed.

use crate::stream::DecodeError;
use bitlens_codecs::huffman::{
    build_lengths, decode_plain, encode_plain, write_table, DecodeScratch, EncodeScratch,
    DEFAULT_CODE_LIMIT,
};

/// Largest level count whose sections are run-length coded; above it, symbols are coded as
/// plain bytes (see the module doc's "wide levels").
pub const RLE_LEVELS: u8 = 128;

/// Whether sections of `levels` levels are coded without run lengths.
pub fn is_wide(levels: u8) -> bool {
    levels > RLE_LEVELS
}

/// Largest run-length byte count coded under one Huffman table.
pub const BLOCK: usize = 1 << 20;
/// Blocks shorter than this are stored raw (a table costs tens of bytes).
const MIN_HUFFMAN: usize = 64;
const KIND_RAW: u8 = 0;
const KIND_HUFFMAN: u8 = 2;

/// `(cur − base) mod max(base_levels, cur_levels)` per element.
pub fn cyclic_delta(base: &[u8], base_levels: u8, cur: &[u8], cur_levels: u8) -> Vec<u8> {
    let m = u16::from(base_levels.max(cur_levels)).max(1);
    base.iter()
        .zip(cur)
        .map(|(&b, &c)| ((u16::from(c) + m - u16::from(b) % m) % m) as u8)
        .collect()
}

/// Inverts [`cyclic_delta`]; a result at or above `cur_levels` is an error (corrupt delta).
pub fn undo_delta(
    base: &[u8],
    base_levels: u8,
    delta: &[u8],
    cur_levels: u8,
) -> Result<Vec<u8>, DecodeError> {
    let m = u16::from(base_levels.max(cur_levels)).max(1);
    base.iter()
        .zip(delta)
        .enumerate()
        .map(|(i, (&b, &d))| {
            let c = ((u16::from(b) + u16::from(d)) % m) as u8;
            if c < cur_levels {
                Ok(c)
            } else {
                Err(DecodeError::BadLevel {
                    index: i as u64,
                    level: c,
                    levels: cur_levels,
                })
            }
        })
        .collect()
}

/// Splits `values` into groups by the level of the same element in `base` (group `g` holds the
/// values of elements whose base level is `g`, in element order).
pub fn rearrange(base: &[u8], values: &[u8]) -> Vec<Vec<u8>> {
    let mut groups: Vec<Vec<u8>> = vec![Vec::new(); 256];
    for (&b, &v) in base.iter().zip(values) {
        groups[usize::from(b)].push(v);
    }
    while groups.last().is_some_and(Vec::is_empty) {
        groups.pop();
    }
    groups
}

/// Inverts [`rearrange`] (groups must have the sizes `base` implies).
pub fn restore_order(base: &[u8], groups: &[Vec<u8>]) -> Vec<u8> {
    let mut next = vec![0usize; groups.len()];
    base.iter()
        .map(|&b| {
            let g = usize::from(b);
            let v = groups
                .get(g)
                .and_then(|s| s.get(next[g]))
                .copied()
                .unwrap_or(0);
            next[g] += 1;
            v
        })
        .collect()
}

/// Run-length codes `symbols` (each `< 128`) as described in the module doc.
pub fn rle_encode(symbols: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < symbols.len() {
        let s = symbols[i];
        let mut j = i + 1;
        while j < symbols.len() && symbols[j] == s {
            j += 1;
        }
        out.push(s & 0x7F);
        let mut r = (j - i) as u64;
        if r > 1 {
            while r > 0 {
                out.push(0x80 | (r & 0x7F) as u8);
                r >>= 7;
            }
        }
        i = j;
    }
}

/// Decodes exactly `n` symbols, each below `levels`, from run-length bytes starting at `*i`
/// (advanced past them; a run may not go past `n`). `offset` (the section's position) is only
/// used in errors.
pub fn rle_take(
    bytes: &[u8],
    i: &mut usize,
    n: usize,
    levels: u8,
    offset: u64,
) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(n.min((bytes.len() - *i).saturating_mul(64)));
    while out.len() < n {
        let Some(&s) = bytes.get(*i) else {
            return Err(DecodeError::LengthMismatch {
                what: "run-length symbols",
                expected: n as u64,
                actual: out.len() as u64,
            });
        };
        if s >= 0x80 {
            return Err(DecodeError::BadRun {
                offset,
                index: *i as u64,
                reason: "run length without a value",
            });
        }
        if s >= levels {
            return Err(DecodeError::BadLevel {
                index: out.len() as u64,
                level: s,
                levels,
            });
        }
        *i += 1;
        let mut r = 0u64;
        let mut shift = 0;
        while *i < bytes.len() && bytes[*i] >= 0x80 {
            if shift > 56 {
                return Err(DecodeError::BadRun {
                    offset,
                    index: *i as u64,
                    reason: "run length overflows",
                });
            }
            r |= u64::from(bytes[*i] & 0x7F) << shift;
            shift += 7;
            *i += 1;
        }
        let r = if shift == 0 { 1 } else { r };
        if r < 2 && shift > 0 {
            return Err(DecodeError::BadRun {
                offset,
                index: *i as u64,
                reason: "run length below 2",
            });
        }
        if r > (n - out.len()) as u64 {
            return Err(DecodeError::BadRun {
                offset,
                index: *i as u64,
                reason: "run goes past the element count",
            });
        }
        out.extend(std::iter::repeat_n(s, r as usize));
    }
    Ok(out)
}

/// Decodes exactly `n` symbols below `levels` from run-length bytes that hold nothing else.
pub fn rle_decode(bytes: &[u8], n: usize, levels: u8, offset: u64) -> Result<Vec<u8>, DecodeError> {
    let mut i = 0;
    let out = rle_take(bytes, &mut i, n, levels, offset)?;
    if i != bytes.len() {
        return Err(DecodeError::BadRun {
            offset,
            index: i as u64,
            reason: "bytes after the last symbol",
        });
    }
    Ok(out)
}

/// Appends the unsigned LEB128 form of `v`.
pub(crate) fn put_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(0x80 | (v & 0x7F) as u8);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads an unsigned LEB128 value at `*pos`, advancing it.
pub(crate) fn get_varint(
    data: &[u8],
    pos: &mut usize,
    field: &'static str,
) -> Result<u64, DecodeError> {
    let start = *pos;
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let Some(&b) = data.get(*pos) else {
            return Err(DecodeError::Truncated {
                what: field,
                offset: start as u64,
                needed: (*pos - start + 1) as u64,
                available: (data.len() - start) as u64,
            });
        };
        *pos += 1;
        v |= u64::from(b & 0x7F) << shift;
        if b < 0x80 {
            return Ok(v);
        }
    }
    Err(DecodeError::BadField {
        field,
        offset: start as u64,
        value: v,
    })
}

/// Appends a section coding `symbols` (each below `levels`): run-length (plain bytes when
/// [`is_wide`]), then Huffman per block.
pub fn encode_symbols(symbols: &[u8], levels: u8, out: &mut Vec<u8>) {
    if is_wide(levels) {
        encode_bytes(symbols, out);
        return;
    }
    let mut rle = Vec::new();
    rle_encode(symbols, &mut rle);
    encode_bytes(&rle, out);
}

/// Checks plain (wide) symbol bytes: exactly `n`, each below `levels`.
fn check_plain(bytes: Vec<u8>, n: usize, levels: u8) -> Result<Vec<u8>, DecodeError> {
    if bytes.len() != n {
        return Err(DecodeError::LengthMismatch {
            what: "plain level symbols",
            expected: n as u64,
            actual: bytes.len() as u64,
        });
    }
    if let Some(i) = bytes.iter().position(|&s| s >= levels) {
        return Err(DecodeError::BadLevel {
            index: i as u64,
            level: bytes[i],
            levels,
        });
    }
    Ok(bytes)
}

/// Appends a section holding run-length bytes `rle`: their count, then Huffman (or raw) blocks.
pub fn encode_bytes(rle: &[u8], out: &mut Vec<u8>) {
    put_varint(rle.len() as u64, out);
    let mut scratch = EncodeScratch::default();
    let mut lengths = [0u8; 256];
    for block in rle.chunks(BLOCK) {
        let start = out.len();
        if block.len() >= MIN_HUFFMAN {
            let mut freqs = [0u32; 256];
            for &b in block {
                freqs[usize::from(b)] += 1;
            }
            build_lengths(&freqs, DEFAULT_CODE_LIMIT, &mut lengths);
            let mut table = Vec::new();
            write_table(&lengths, &mut table);
            out.push(KIND_HUFFMAN);
            encode_plain(block, &lengths, &table, &mut scratch, out);
            if out.len() - start <= block.len() {
                continue;
            }
            out.truncate(start);
        }
        out.push(KIND_RAW);
        out.extend_from_slice(block);
    }
}

/// Decodes a section of [`encode_symbols`] starting at `*pos` into exactly `n` symbols below
/// `levels`, advancing `*pos`.
pub fn decode_symbols(
    data: &[u8],
    pos: &mut usize,
    n: usize,
    levels: u8,
) -> Result<Vec<u8>, DecodeError> {
    let section = *pos as u64;
    let rle = decode_bytes(data, pos)?;
    if is_wide(levels) {
        return check_plain(rle, n, levels);
    }
    rle_decode(&rle, n, levels, section)
}

/// Reads a section of [`encode_bytes`] at `*pos`, advancing it: the run-length bytes.
pub fn decode_bytes(data: &[u8], pos: &mut usize) -> Result<Vec<u8>, DecodeError> {
    let r = get_varint(data, pos, "run-length byte count")?;
    // A Huffman block codes at least 8 bytes per input byte; a raw one exactly one.
    let bound = (data.len() - *pos) as u64 * 8;
    if r > bound {
        return Err(DecodeError::TooLarge {
            what: "run-length section",
            declared: r,
            bound,
        });
    }
    let r = r as usize;
    let mut rle = vec![0u8; r];
    let mut scratch = DecodeScratch::default();
    let mut done = 0;
    while done < r {
        let len = (r - done).min(BLOCK);
        let kind_at = *pos;
        let Some(&kind) = data.get(kind_at) else {
            return Err(DecodeError::Truncated {
                what: "block kind",
                offset: kind_at as u64,
                needed: 1,
                available: 0,
            });
        };
        *pos += 1;
        let out = &mut rle[done..done + len];
        match kind {
            KIND_RAW => {
                let avail = data.len() - *pos;
                if avail < len {
                    return Err(DecodeError::Truncated {
                        what: "raw block",
                        offset: *pos as u64,
                        needed: len as u64,
                        available: avail as u64,
                    });
                }
                out.copy_from_slice(&data[*pos..*pos + len]);
                *pos += len;
            }
            KIND_HUFFMAN => {
                let used = decode_plain(
                    &data[*pos..],
                    out,
                    &mut scratch,
                    *pos as u64,
                    kind_at as u64,
                )
                .map_err(|source| DecodeError::Huffman {
                    offset: kind_at as u64,
                    source,
                })?;
                *pos += used;
            }
            other => {
                return Err(DecodeError::BadField {
                    field: "block kind",
                    offset: kind_at as u64,
                    value: u64::from(other),
                });
            }
        }
        done += len;
    }
    Ok(rle)
}

/// Appends the delta of `cur` (with `cur_levels` levels) against `base` (`base_levels`):
/// cyclic difference, then run-length coding of each base-level group on its own when
/// `rearranged` (runs never cross a group; the groups' bytes share one Huffman section), else of
/// all deltas in element order.
pub fn encode_delta(
    base: &[u8],
    base_levels: u8,
    cur: &[u8],
    cur_levels: u8,
    rearranged: bool,
    out: &mut Vec<u8>,
) {
    let d = cyclic_delta(base, base_levels, cur, cur_levels);
    let m = base_levels.max(cur_levels);
    if is_wide(m) {
        let plain: Vec<u8> = if rearranged {
            rearrange(base, &d).concat()
        } else {
            d
        };
        encode_bytes(&plain, out);
    } else if rearranged {
        let mut rle = Vec::new();
        for g in rearrange(base, &d) {
            rle_encode(&g, &mut rle);
        }
        encode_bytes(&rle, out);
    } else {
        encode_symbols(&d, m, out);
    }
}

/// Decodes a delta of [`encode_delta`] at `*pos` against `base` into the current levels.
pub fn decode_delta(
    data: &[u8],
    pos: &mut usize,
    base: &[u8],
    base_levels: u8,
    cur_levels: u8,
    rearranged: bool,
) -> Result<Vec<u8>, DecodeError> {
    let m = base_levels.max(cur_levels);
    let d = if is_wide(m) {
        let plain = check_plain(decode_bytes(data, pos)?, base.len(), m)?;
        if rearranged {
            let mut groups: Vec<Vec<u8>> = vec![Vec::new(); 256];
            let mut sizes = [0usize; 256];
            for &b in base {
                sizes[usize::from(b)] += 1;
            }
            let mut rest = plain.as_slice();
            for (g, &n) in groups.iter_mut().zip(&sizes) {
                let (head, tail) = rest.split_at(n);
                *g = head.to_vec();
                rest = tail;
            }
            restore_order(base, &groups)
        } else {
            plain
        }
    } else if rearranged {
        let mut sizes = vec![0usize; 256];
        for &b in base {
            sizes[usize::from(b)] += 1;
        }
        let section = *pos as u64;
        let rle = decode_bytes(data, pos)?;
        let mut i = 0;
        let mut groups = Vec::with_capacity(256);
        for &n in &sizes {
            groups.push(rle_take(&rle, &mut i, n, m, section)?);
        }
        if i != rle.len() {
            return Err(DecodeError::BadRun {
                offset: section,
                index: i as u64,
                reason: "bytes after the last group",
            });
        }
        restore_order(base, &groups)
    } else {
        decode_symbols(data, pos, base.len(), m)?
    };
    undo_delta(base, base_levels, &d, cur_levels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Cluster-index deltas round-trip exactly, across bin-count changes, with and without
        /// rearrangement, through run-length and Huffman coding.
        #[test]
        fn delta_round_trips(
            lb in prop_oneof![2u8..40, 100u8..=255], lc in prop_oneof![2u8..40, 100u8..=255],
            pairs in prop::collection::vec((any::<u8>(), any::<u8>(), any::<bool>()), 0..3000),
            rearranged in any::<bool>(),
        ) {
            let base: Vec<u8> = pairs.iter().map(|p| p.0 % lb).collect();
            // Mostly unchanged levels, as between consecutive checkpoints.
            let cur: Vec<u8> = pairs.iter().map(|p| if p.2 { p.1 % lc } else { p.0 % lb % lc }).collect();
            let d = cyclic_delta(&base, lb, &cur, lc);
            prop_assert_eq!(&undo_delta(&base, lb, &d, lc).unwrap(), &cur);
            let mut out = Vec::new();
            encode_delta(&base, lb, &cur, lc, rearranged, &mut out);
            let mut pos = 0;
            prop_assert_eq!(decode_delta(&out, &mut pos, &base, lb, lc, rearranged).unwrap(), cur);
            prop_assert_eq!(pos, out.len());
        }

        /// Run-length + Huffman sections round-trip any symbols below 128, plain (wide) ones any
        /// symbols below 255.
        #[test]
        fn symbols_round_trip(sym in prop::collection::vec(0u8..5, 0..5000), hi in 5u8..=255) {
            let s: Vec<u8> = sym.iter().map(|&x| if x == 4 { hi - 1 } else { x }).collect();
            let mut out = Vec::new();
            encode_symbols(&s, hi, &mut out);
            let mut pos = 0;
            prop_assert_eq!(decode_symbols(&out, &mut pos, s.len(), hi).unwrap(), s);
        }
    }

    #[test]
    fn runs_only_when_longer_than_one() {
        let mut out = Vec::new();
        rle_encode(&[3, 3, 3, 1, 2, 2], &mut out);
        assert_eq!(out, vec![3, 0x80 | 3, 1, 2, 0x80 | 2]);
        assert!(rle_decode(&[0x82], 2, 4, 0).is_err());
        assert!(rle_decode(&[1, 0x81], 1, 4, 0).is_err());
        assert!(rle_decode(&[1, 0x85], 3, 4, 0).is_err());
        assert!(rle_decode(&[5], 1, 4, 0).is_err());
    }
}
