//! The hub's content-defined chunker (xet-core `xet_data/src/deduplication/chunking.rs`,
//! `Chunker::new` and `Chunker::next_boundary`, constants in
//! `xet_core_structures/src/xorb_object/constants.rs`).
//!
//! A gear hash (`gearhash::Hasher::default()`, the crate the hub uses, with its default table:
//! `h = (h << 1) + table[byte]`) rolls over the bytes; a chunk ends after the byte where
//! `h & mask == 0`, with `mask = (TARGET − 1) << leading_zeros(TARGET − 1)` = `0xFFFF << 48` for
//! the 64 KiB target (the high bits, which depend on the last 64 bytes). Each chunk is at least
//! [`MIN_CHUNK`] = TARGET / 8 bytes and at most [`MAX_CHUNK`] = TARGET · 2 bytes:
//! - the first `MIN_CHUNK − 64 − 1` bytes of a chunk are skipped, not hashed (the hash starts
//!   from 0 at each chunk; its 64-byte window makes the skipped bytes irrelevant);
//! - a match before `MIN_CHUNK` bytes is passed over and the scan goes on from it;
//! - with no match, the chunk is cut at `MAX_CHUNK` bytes;
//! - the last chunk is whatever is left at the end of the input (any size, never empty).

/// The target chunk size: 64 KiB.
pub const TARGET_CHUNK: usize = 64 * 1024;
/// The smallest chunk but the last: TARGET / 8.
pub const MIN_CHUNK: usize = TARGET_CHUNK / 8;
/// The largest chunk: TARGET · 2.
pub const MAX_CHUNK: usize = TARGET_CHUNK * 2;
/// The gear hash's window: bytes further back no longer affect the hash.
const HASH_WINDOW: usize = 64;

/// The boundary mask: the target's low bits moved to the top of the hash.
pub fn mask() -> u64 {
    let m = (TARGET_CHUNK - 1) as u64;
    m << m.leading_zeros()
}

/// The length of the chunk that starts `data` (the whole of `data` if no boundary is found in it).
fn next_chunk_len(data: &[u8], hasher: &mut gearhash::Hasher<'static>, mask: u64) -> usize {
    let n = data.len();
    let mut cur = (MIN_CHUNK - HASH_WINDOW - 1).min(n);
    let read_end = n.min(cur + MAX_CHUNK);
    let mut cut = false;
    while let Some(m) = hasher.next_match(&data[cur..read_end], mask) {
        cur += m;
        if cur >= MIN_CHUNK {
            cut = true;
            break;
        }
    }
    if !cut {
        cur = read_end;
    }
    if cur >= MAX_CHUNK {
        cur = MAX_CHUNK;
        cut = true;
    }
    hasher.set_hash(0);
    if cut {
        cur
    } else {
        n
    }
}

/// The end offset of every chunk of `data`, in order (the last is `data.len()`; none for empty
/// input).
pub fn boundaries(data: &[u8]) -> Vec<usize> {
    let mask = mask();
    let mut hasher = gearhash::Hasher::default();
    let mut ends = Vec::with_capacity(data.len() / TARGET_CHUNK + 1);
    let mut pos = 0;
    while pos < data.len() {
        pos += next_chunk_len(&data[pos..], &mut hasher, mask);
        ends.push(pos);
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_the_hubs() {
        assert_eq!(mask(), 0xFFFF_0000_0000_0000);
        assert_eq!((MIN_CHUNK, MAX_CHUNK), (8192, 131_072));
    }

    #[test]
    fn small_and_constant_inputs() {
        assert!(boundaries(&[]).is_empty());
        assert_eq!(boundaries(&[5; 63]), [63]);
        // A constant input never matches: every chunk is cut at the maximum.
        let ends = boundaries(&[59; 1_000_000]);
        let mut want: Vec<usize> = (1..=7).map(|k| k * MAX_CHUNK).collect();
        want.push(1_000_000);
        assert_eq!(ends, want);
    }
}
