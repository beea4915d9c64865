//! Canonical, length-limited Huffman coding of one block, LMC paper §4.2 ("a new Huffman codebook
//! for each block ... encoded in the compressed stream, similar to RFC 1951").
//!
//! ## Alphabet
//! Plain blocks code bytes (symbols 0..=255). Blocks with runs ([`crate::rle`]) add `nrun`
//! run symbols `256 + k` (`k < nrun`), each followed by `k` raw extra bits (see [`crate::rle`]).
//!
//! ## Code lengths
//! Optimal lengths come from the in-place Moffat–Katajainen algorithm; if the longest exceeds
//! the limit they are clamped and the Kraft sum is repaired (lengthen the least frequent,
//! deepest symbols; then shorten the most frequent ones while the code stays prefix-free).
//! Every code written is *complete* (Kraft sum exactly 1; a lone symbol gets a zero-frequency
//! partner), and the decoder rejects any table that is not: with a complete code every table
//! slot is a valid symbol, so the fast loops never meet an invalid entry.
//! The format allows lengths up to [`MAX_CODE_LEN`] = 12; the encoder's limit is a parameter
//! (default [`DEFAULT_CODE_LIMIT`] = 12, chosen by measurement, see [`crate::lmc`]).
//!
//! Codes are canonical (RFC 1951 §3.2.2 order: shorter first, then by symbol), written
//! bit-reversed so that the decoder can index its table with the low bits of an LSB-first
//! bit buffer: the code's first (most significant) bit is the first bit written.
//!
//! All bit fields here are LSB-first: a field of `k` bits holding `v` puts bit 0 of `v` into the
//! lowest free bit of the current byte, and a new byte starts when 8 bits are used. Extra bits
//! (of CL symbols 13..=15 and of run symbols) follow their code immediately.
//!
//! ## Block body layout (after the kind byte, and after `run_value`, `nrun` for run blocks)
//! ```text
//! code-length table, bit-packed LSB-first, zero-padded to a byte boundary:
//!     16 × 3 bits   lengths (0..=7) of the code-length code (CL) for CL symbols 0..=15, in
//!                   symbol order; the CL code is canonical like the main code and must be
//!                   complete
//!     CL-coded sequence of the nsym code lengths (nsym = 256 + nrun), symbol 0 first:
//!         CL 0..=12  the length itself
//!         CL 13      repeat the previous length 3..=6 times   (2 extra bits, + 3)
//!         CL 14      3..=10 zero lengths                      (3 extra bits, + 3)
//!         CL 15      11..=138 zero lengths                    (7 extra bits, + 11)
//! 4 × LEB128 u32    byte sizes s0, s1, s2, s3 of the four bit streams
//! s0 + s1 + s2 + s3 bytes: the four streams, back to back
//! ```
//! A table is rejected ([`DecodeError::InvalidCodeTable`]) if the CL code or the main code is
//! not complete (over- or under-subscribed), if CL 13 comes first, or if a run of lengths goes
//! past `nsym`. Lengths above 12 cannot be expressed.
//! The block's `n` bytes are cut into quarters `[q, q, q, n - 3q]` with `q = n / 4`; stream `j`
//! codes quarter `j` (runs never cross a quarter boundary). Each stream is LSB-first: a code's
//! bits go to the lowest free bits of the current byte; the last byte is zero-padded. A stream
//! must decode to exactly its quarter and end inside its last byte, else
//! [`DecodeError::CorruptBitstream`].
//!
//! ## Speed (not part of the format)
//! **Decoding.** After the table is read, a block whose codes are short (mean length under the
//! code's own distribution at most half the table bits, e.g. exponent bytes at ~2.6 bits) gets a
//! *multi-symbol* table: each of its `2^bits` entries (11 bits when the longest code allows, else
//! 12) holds the up to three symbols whose codes fit wholly in those bits, their count and the
//! bits they use, so one lookup yields ~2.9 symbols on bf16 exponents. Other blocks (near-random
//! bytes at ~8 bits) get the one-symbol table (`symbol << 4 | length`). The four streams are
//! decoded as interleaved lanes in rounds of 4 or 5 lookups: a round loads 8 stream bytes at the
//! lane's bit position and sets a sentinel bit 63, so that after the lookups `leading_zeros`
//! gives the bits consumed (no per-lookup bookkeeping); the number of rounds that cannot leave a
//! stream or a quarter is computed up front, so the loop body carries one bounds check per lane
//! and round. Each lane's last symbols are decoded one at a time. The loops are compiled for the
//! baseline and for x86-64-v3 (`crate::cpu`).
//!
//! **Encoding** codes the quarters one after the other (one lane's state fits in registers;
//! interleaved lanes spilled), with separate code and length tables and a branch-free flush.
//! Blocks with few distinct bytes are coded two symbols per lookup from a pair table
//! (`encode_pairs`). Flushes run in windows of 64 into a fixed-size slice at a masked offset,
//! which leaves the loop without bounds checks and with no `unsafe`.
//!
//! Measured single-thread on the bf16 MiniLM weights (examples/lmc_speed, whole LMC including
//! grouping and histograms, thread CPU time; see BENCHMARKS.md for the runs beside ZipNN): decode
//! 1.4 GB/s with the previous one-symbol lockstep loop → 3.8 GB/s; encode 0.9 → 1.4 GB/s.

use crate::error::DecodeError;

/// Longest code length the format allows.
pub const MAX_CODE_LEN: u32 = 12;
/// The encoder's default code-length limit (see the measurement in [`crate::lmc`]).
pub const DEFAULT_CODE_LIMIT: u32 = 12;
/// Most run symbols a block may declare (`k` ≤ 20: runs up to 2^21 − 1 bytes).
pub const MAX_RUN_SYMBOLS: usize = 21;
/// Size of the largest alphabet (bytes + run symbols).
pub const MAX_SYMBOLS: usize = 256 + MAX_RUN_SYMBOLS;

const CL_SYMBOLS: usize = 16;
const CL_LIMIT: u32 = 7;
const TABLE_SIZE: usize = 1 << MAX_CODE_LEN;

/// Byte histogram of `data` (eight sub-histograms, one per byte lane of a 64-bit word, so runs
/// of equal bytes do not serialize on one counter).
pub fn histogram(data: &[u8]) -> [u32; 256] {
    let mut h = [[0u32; 256]; 8];
    let (chunks, rest) = data.as_chunks::<8>();
    for c in chunks {
        for k in 0..8 {
            h[k][c[k] as usize] += 1;
        }
    }
    for &b in rest {
        h[0][b as usize] += 1;
    }
    let mut out = [0u32; 256];
    for (i, o) in out.iter_mut().enumerate() {
        *o = h.iter().map(|t| t[i]).sum();
    }
    out
}

/// The byte histograms of four parts of a block in one pass: the parts are read in lockstep,
/// so that consecutive counter updates go to different tables (as the eight lanes of
/// [`histogram`] do) while only eight sub-tables are zeroed and summed, not 32.
pub fn histograms4(parts: [&[u8]; 4]) -> [[u32; 256]; 4] {
    let mut h = Histograms4::new();
    h.add(parts);
    h.finish()
}

/// Byte histograms of four parts of a block, filled in one or more lockstep passes (see
/// [`histograms4`]). [`Histograms4::add_runs`] lets the LMC encoder count a sample of a block
/// first (to decide whether to code it at all) and the rest afterwards, so that no byte is
/// counted twice.
pub struct Histograms4 {
    /// Two sub-tables per part; consecutive bytes of a part alternate between them.
    t: [[[u32; 256]; 2]; 4],
}

impl Default for Histograms4 {
    fn default() -> Self {
        Self::new()
    }
}

impl Histograms4 {
    /// Empty histograms.
    pub fn new() -> Self {
        Histograms4 {
            t: [[[0; 256]; 2]; 4],
        }
    }

    /// Counts every byte of the four parts (of any lengths).
    pub fn add(&mut self, parts: [&[u8]; 4]) {
        let m = parts.iter().map(|p| p.len()).min().unwrap_or(0) / 8;
        let chunks: [&[[u8; 8]]; 4] = std::array::from_fn(|k| &parts[k].as_chunks::<8>().0[..m]);
        self.count_chunks(chunks, 0..m);
        for (k, part) in parts.iter().enumerate() {
            for &b in &part[m * 8..] {
                self.t[k][0][b as usize] += 1;
            }
        }
    }

    /// Counts bytes `lo..hi` of every `stride`-byte run of each part (run `r` is bytes
    /// `r · stride..(r + 1) · stride`), for as many whole runs as the shortest part has.
    ///
    /// # Panics
    /// If `lo`, `hi` or `stride` is not a multiple of 8, `stride` is 0, or `lo > hi` or
    /// `hi > stride` (programming errors).
    pub fn add_runs(&mut self, parts: [&[u8]; 4], stride: usize, lo: usize, hi: usize) {
        assert!(
            [lo, hi, stride].iter().all(|x| x.is_multiple_of(8))
                && stride > 0
                && lo <= hi
                && hi <= stride,
            "Histograms4::add_runs: bad run bounds {lo}..{hi} of {stride}"
        );
        let runs = parts.iter().map(|p| p.len()).min().unwrap_or(0) / stride;
        let chunks: [&[[u8; 8]]; 4] =
            std::array::from_fn(|k| &parts[k].as_chunks::<8>().0[..runs * stride / 8]);
        let (per_run, lo, hi) = (stride / 8, lo / 8, hi / 8);
        for r in 0..runs {
            self.count_chunks(chunks, r * per_run + lo..r * per_run + hi);
        }
    }

    /// Counts the 8-byte words `range` of each part.
    #[inline(always)]
    fn count_chunks(&mut self, chunks: [&[[u8; 8]]; 4], range: std::ops::Range<usize>) {
        for c in range {
            self.count([chunks[0][c], chunks[1][c], chunks[2][c], chunks[3][c]]);
        }
    }

    /// Counts one 8-byte word of each part.
    #[inline(always)]
    fn count(&mut self, words: [[u8; 8]; 4]) {
        for j in 0..8 {
            for (k, w) in words.iter().enumerate() {
                self.t[k][j & 1][w[j] as usize] += 1;
            }
        }
    }

    /// The histogram of everything counted so far, over all four parts.
    pub fn total(&self) -> [u32; 256] {
        std::array::from_fn(|i| self.t.iter().flatten().map(|t| t[i]).sum())
    }

    /// The histogram of each part.
    pub fn finish(&self) -> [[u32; 256]; 4] {
        std::array::from_fn(|k| std::array::from_fn(|i| self.t[k][0][i] + self.t[k][1][i]))
    }
}

/// Computes length-limited Huffman code lengths for `freqs` into `lengths` (same length).
///
/// Symbols with zero frequency get length 0, except that when fewer than two symbols are used a
/// zero-frequency partner is added so the code is complete. `freqs` must have ≥ 2 entries and
/// their sum must fit in `u32`; `limit` must be in `1..=MAX_CODE_LEN` and large enough
/// (`2^limit ≥` number of used symbols).
pub fn build_lengths(freqs: &[u32], limit: u32, lengths: &mut [u8]) {
    debug_assert_eq!(freqs.len(), lengths.len());
    debug_assert!(freqs.len() >= 2);
    lengths.iter_mut().for_each(|l| *l = 0);
    // (freq, symbol) of used symbols, ascending by frequency then symbol.
    let mut syms: Vec<(u32, u16)> = freqs
        .iter()
        .enumerate()
        .filter(|&(_, &f)| f > 0)
        .map(|(s, &f)| (f, s as u16))
        .collect();
    if syms.len() < 2 {
        // Complete the code with a partner that never occurs.
        let used = syms.first().map(|&(_, s)| s as usize);
        let partner = if used == Some(0) { 1 } else { 0 };
        syms.push((0, partner as u16));
        if let Some(u) = used {
            lengths[u] = 1;
        } else {
            lengths[1] = 1;
        }
        lengths[partner] = 1;
        return;
    }
    syms.sort_unstable();
    let mut a: Vec<u32> = syms.iter().map(|&(f, _)| f).collect();
    moffat_katajainen(&mut a);
    // a[i] is now the length of syms[i].
    let max = a.iter().copied().max().unwrap_or(0);
    if max > limit {
        limit_lengths(&mut a, limit);
    }
    for (i, &(_, s)) in syms.iter().enumerate() {
        lengths[s as usize] = a[i] as u8;
    }
    debug_assert_eq!(
        a.iter().map(|&l| 1u64 << (MAX_CODE_LEN - l)).sum::<u64>(),
        1 << MAX_CODE_LEN,
        "code must be complete"
    );
}

/// In-place minimum-redundancy code lengths (Moffat & Katajainen 1995). `a` holds frequencies in
/// non-decreasing order (n ≥ 2) and is overwritten with code lengths (non-increasing).
fn moffat_katajainen(a: &mut [u32]) {
    let n = a.len();
    a[0] += a[1];
    let mut root = 0usize;
    let mut leaf = 2usize;
    for next in 1..n - 1 {
        if leaf >= n || a[root] < a[leaf] {
            a[next] = a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] = a[leaf];
            leaf += 1;
        }
        if leaf >= n || (root < next && a[root] < a[leaf]) {
            a[next] += a[root];
            a[root] = next as u32;
            root += 1;
        } else {
            a[next] += a[leaf];
            leaf += 1;
        }
    }
    a[n - 2] = 0;
    for next in (0..n.saturating_sub(2)).rev() {
        a[next] = a[a[next] as usize] + 1;
    }
    let mut avail: i64 = 1;
    let mut used: i64 = 0;
    let mut depth: u32 = 0;
    let mut root = n as isize - 2;
    let mut next = n as isize - 1;
    while avail > 0 {
        while root >= 0 && a[root as usize] == depth {
            used += 1;
            root -= 1;
        }
        while avail > used {
            a[next as usize] = depth;
            next -= 1;
            avail -= 1;
        }
        avail = 2 * used;
        depth += 1;
        used = 0;
    }
}

/// Clamps lengths (of symbols in ascending frequency order) to `limit` and repairs the Kraft sum
/// to exactly 1.
fn limit_lengths(a: &mut [u32], limit: u32) {
    let full: u64 = 1 << limit;
    for l in a.iter_mut() {
        *l = (*l).min(limit);
    }
    let mut total: u64 = a.iter().map(|&l| 1u64 << (limit - l)).sum();
    // Over-subscribed: lengthen the deepest non-limit symbols, least frequent first.
    while total > full {
        let mut changed = false;
        for target in (1..limit).rev() {
            if let Some(i) = a.iter().position(|&l| l == target) {
                a[i] += 1;
                total -= 1 << (limit - target - 1);
                changed = true;
                break;
            }
        }
        if !changed {
            break; // cannot happen when 2^limit >= number of symbols
        }
    }
    // Under-subscribed: shorten the most frequent symbols that still fit.
    'outer: while total < full {
        for i in (0..a.len()).rev() {
            let l = a[i];
            if l > 1 && (1u64 << (limit - l)) <= full - total {
                a[i] -= 1;
                total += 1 << (limit - l);
                continue 'outer;
            }
        }
        break;
    }
}

/// Canonical codes for `lengths`, bit-reversed for LSB-first output, packed as
/// `reversed_code << 4 | length` (0 for unused symbols).
pub fn encode_codes(lengths: &[u8], codes: &mut [u32]) {
    let mut count = [0u32; MAX_CODE_LEN as usize + 1];
    for &l in lengths {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; MAX_CODE_LEN as usize + 2];
    let mut code = 0u32;
    for bits in 1..=MAX_CODE_LEN as usize {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    for (s, &l) in lengths.iter().enumerate() {
        if l == 0 {
            codes[s] = 0;
            continue;
        }
        let c = next[l as usize];
        next[l as usize] += 1;
        let rev = c.reverse_bits() >> (32 - l as u32);
        codes[s] = (rev << 4) | l as u32;
    }
}

/// Builds a decoding table (`symbol << 4 | length`, indexed by the next `table_bits` bits) for
/// `lengths`, checking that the code is complete and within `table_bits`.
fn build_decode_table(
    lengths: &[u8],
    table_bits: u32,
    table: &mut [u16],
) -> Result<(), &'static str> {
    let mut kraft: u64 = 0;
    for &l in lengths {
        if l as u32 > table_bits {
            return Err("code length over the limit");
        }
        if l > 0 {
            kraft += 1 << (table_bits - l as u32);
        }
    }
    let size = 1usize << table_bits;
    if kraft > size as u64 {
        return Err("over-subscribed code lengths");
    }
    if kraft < size as u64 {
        return Err("incomplete code lengths");
    }
    let mut codes = [0u32; MAX_SYMBOLS];
    encode_codes(lengths, &mut codes[..lengths.len()]);
    for (s, &c) in codes[..lengths.len()].iter().enumerate() {
        let l = c & 15;
        if l == 0 {
            continue;
        }
        let entry = ((s as u16) << 4) | l as u16;
        let mut j = (c >> 4) as usize;
        while j < size {
            table[j] = entry;
            j += 1 << l;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Bit I/O

/// LSB-first bit writer into a pre-sized buffer (8 spare bytes at the end are required).
struct BitOut<'a> {
    buf: &'a mut [u8],
    pos: usize,
    bits: u64,
    nbits: u32,
}

impl<'a> BitOut<'a> {
    fn new(buf: &'a mut [u8]) -> Self {
        BitOut {
            buf,
            pos: 0,
            bits: 0,
            nbits: 0,
        }
    }
    /// Appends a packed code (`code << 4 | len`). Caller keeps `nbits` ≤ 64 between flushes.
    #[inline(always)]
    fn put(&mut self, c: u32) {
        self.bits |= ((c >> 4) as u64) << self.nbits;
        self.nbits += c & 15;
    }
    #[inline(always)]
    fn put_bits(&mut self, v: u32, n: u32) {
        self.bits |= (v as u64) << self.nbits;
        self.nbits += n;
    }
    #[inline(always)]
    fn flush(&mut self) {
        self.buf[self.pos..self.pos + 8].copy_from_slice(&self.bits.to_le_bytes());
        let bytes = self.nbits >> 3;
        self.pos += bytes as usize;
        self.bits = if bytes == 8 {
            0
        } else {
            self.bits >> (bytes * 8)
        };
        self.nbits &= 7;
    }
    /// Flushes and returns the stream length in bytes.
    fn finish(mut self) -> usize {
        self.flush();
        self.pos + (self.nbits > 0) as usize
    }
}

/// LSB-first bit reader over one stream; reads past the end see zero bits (the caller checks
/// [`BitIn::consumed`] against the stream length afterwards). `Copy`, so hot loops can keep each
/// lane in locals (registers) instead of behind a reference.
#[derive(Clone, Copy)]
struct BitIn<'a> {
    buf: &'a [u8],
    pos: usize,
    bits: u64,
    nbits: u32,
}

impl<'a> BitIn<'a> {
    fn new(buf: &'a [u8]) -> Self {
        BitIn {
            buf,
            pos: 0,
            bits: 0,
            nbits: 0,
        }
    }
    #[inline(always)]
    fn can_refill_fast(&self) -> bool {
        self.pos + 8 <= self.buf.len()
    }
    /// Refill with an 8-byte load; requires [`BitIn::can_refill_fast`]. Leaves ≥ 56 bits.
    #[inline(always)]
    fn refill_fast(&mut self) {
        let v = u64::from_le_bytes(self.buf[self.pos..self.pos + 8].try_into().unwrap());
        self.bits |= v << self.nbits;
        self.pos += ((63 - self.nbits) >> 3) as usize;
        self.nbits |= 56;
    }
    /// Refill near (or past) the end of the stream, padding with zero bytes. Leaves ≥ 56 bits.
    fn refill_slow(&mut self) {
        let mut tmp = [0u8; 8];
        let start = self.pos.min(self.buf.len());
        let avail = &self.buf[start..];
        let k = avail.len().min(8);
        tmp[..k].copy_from_slice(&avail[..k]);
        let v = u64::from_le_bytes(tmp);
        self.bits |= v << self.nbits;
        self.pos += ((63 - self.nbits) >> 3) as usize;
        self.nbits |= 56;
    }
    #[inline(always)]
    fn refill(&mut self) {
        if self.can_refill_fast() {
            self.refill_fast()
        } else {
            self.refill_slow()
        }
    }
    /// A reader positioned `bit` bits into `buf`, with ≥ 56 bits loaded.
    fn at(buf: &'a [u8], bit: u64) -> Self {
        let mut r = BitIn {
            buf,
            pos: (bit / 8) as usize,
            bits: 0,
            nbits: 0,
        };
        r.refill();
        r.skip((bit % 8) as u32);
        r
    }
    /// Refills when fewer than `need` bits are loaded.
    #[inline(always)]
    fn refill_if(&mut self, need: u32) {
        if self.nbits < need {
            self.refill();
        }
    }
    /// The next `bits` bits, as a table index.
    #[inline(always)]
    fn index(&self, bits: u32) -> usize {
        (self.bits as usize) & ((1 << bits) - 1) & (TABLE_SIZE - 1)
    }
    /// Drops `n` loaded bits.
    #[inline(always)]
    fn skip(&mut self, n: u32) {
        self.bits >>= n;
        self.nbits -= n;
    }
    #[inline(always)]
    fn take(&mut self, n: u32) -> u32 {
        let v = (self.bits & ((1u64 << n) - 1)) as u32;
        self.bits >>= n;
        self.nbits -= n;
        v
    }
    /// Bits consumed so far (may exceed the stream if it was corrupt).
    fn consumed(&self) -> u64 {
        self.pos as u64 * 8 - self.nbits as u64
    }
}

/// Reads bits for the code-length table with explicit bounds.
struct TableIn<'a> {
    buf: &'a [u8],
    bitpos: usize,
}

impl TableIn<'_> {
    fn peek(&self, n: u32) -> u32 {
        let byte = self.bitpos >> 3;
        let mut tmp = [0u8; 4];
        let avail = self.buf.get(byte..).unwrap_or(&[]);
        let k = avail.len().min(4);
        tmp[..k].copy_from_slice(&avail[..k]);
        let v = u32::from_le_bytes(tmp) >> (self.bitpos & 7);
        v & ((1u32 << n) - 1)
    }
    fn read(&mut self, n: u32) -> Result<u32, &'static str> {
        let v = self.peek(n);
        self.bitpos += n as usize;
        if self.bitpos > self.buf.len() * 8 {
            return Err("code table runs past the end of the block");
        }
        Ok(v)
    }
}

// ---------------------------------------------------------------------------------------------
// Code-length table serialization

fn cl_tokens(lengths: &[u8], out: &mut Vec<(u8, u8)>) {
    out.clear();
    let n = lengths.len();
    let mut i = 0;
    while i < n {
        let l = lengths[i];
        let mut run = 1;
        while i + run < n && lengths[i + run] == l {
            run += 1;
        }
        if l == 0 {
            let mut rem = run;
            while rem > 0 {
                if rem >= 11 {
                    let r = rem.min(138);
                    out.push((15, (r - 11) as u8));
                    rem -= r;
                } else if rem >= 3 {
                    out.push((14, (rem - 3) as u8));
                    rem = 0;
                } else {
                    out.push((0, 0));
                    rem -= 1;
                }
            }
        } else {
            out.push((l, 0));
            let mut rem = run - 1;
            while rem >= 3 {
                let r = rem.min(6);
                out.push((13, (r - 3) as u8));
                rem -= r;
            }
            for _ in 0..rem {
                out.push((l, 0));
            }
        }
        i += run;
    }
}

fn cl_extra_bits(sym: u8) -> u32 {
    match sym {
        13 => 2,
        14 => 3,
        15 => 7,
        _ => 0,
    }
}

/// Serializes code `lengths` (≤ [`MAX_CODE_LEN`]) as described in the module docs, appending
/// whole bytes to `out`.
pub fn write_table(lengths: &[u8], out: &mut Vec<u8>) {
    let mut toks = Vec::with_capacity(lengths.len());
    cl_tokens(lengths, &mut toks);
    let mut freq = [0u32; CL_SYMBOLS];
    for &(s, _) in &toks {
        freq[s as usize] += 1;
    }
    let mut cl_len = [0u8; CL_SYMBOLS];
    build_lengths(&freq, CL_LIMIT, &mut cl_len);
    let mut cl_codes = [0u32; CL_SYMBOLS];
    encode_codes(&cl_len, &mut cl_codes);
    let bits_needed: usize = 48
        + toks
            .iter()
            .map(|&(s, _)| (cl_len[s as usize] as u32 + cl_extra_bits(s)) as usize)
            .sum::<usize>();
    let mut buf = vec![0u8; bits_needed.div_ceil(8) + 16];
    let mut w = BitOut::new(&mut buf);
    for &l in &cl_len {
        w.put_bits(l as u32, 3);
        w.flush();
    }
    for &(s, e) in &toks {
        w.put(cl_codes[s as usize]);
        w.put_bits(e as u32, cl_extra_bits(s));
        w.flush();
    }
    let n = w.finish();
    out.extend_from_slice(&buf[..n]);
}

/// Parses a code-length table for `lengths.len()` symbols from the start of `data`. Returns the
/// number of bytes it occupies.
pub fn read_table(data: &[u8], lengths: &mut [u8]) -> Result<usize, &'static str> {
    let mut r = TableIn {
        buf: data,
        bitpos: 0,
    };
    let mut cl_len = [0u8; CL_SYMBOLS];
    for l in cl_len.iter_mut() {
        *l = r.read(3)? as u8;
    }
    let mut cl_table = [0u16; 1 << CL_LIMIT];
    build_decode_table(&cl_len, CL_LIMIT, &mut cl_table).map_err(|_| "invalid code-length code")?;
    let n = lengths.len();
    let mut i = 0;
    while i < n {
        let e = cl_table[r.peek(CL_LIMIT) as usize];
        r.read((e & 15) as u32)?;
        let sym = (e >> 4) as u8;
        let (val, count) = match sym {
            0..=12 => (sym, 1),
            13 => {
                if i == 0 {
                    return Err("repeat code with no previous length");
                }
                (lengths[i - 1], 3 + r.read(2)? as usize)
            }
            14 => (0, 3 + r.read(3)? as usize),
            _ => (0, 11 + r.read(7)? as usize),
        };
        if i + count > n {
            return Err("code-length run past the end of the alphabet");
        }
        lengths[i..i + count].iter_mut().for_each(|l| *l = val);
        i += count;
    }
    Ok(r.bitpos.div_ceil(8))
}

// ---------------------------------------------------------------------------------------------
// Block encoding

fn quarters(n: usize) -> [usize; 4] {
    let q = n / 4;
    [q, q, q, n - 3 * q]
}

fn put_leb128(v: u32, out: &mut Vec<u8>) {
    let mut v = v;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn get_leb128(data: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v: u64 = 0;
    for i in 0..5 {
        let b = *data.get(*pos)?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return u32::try_from(v).ok();
        }
    }
    None
}

/// Reusable scratch space of the block encoder.
#[derive(Default)]
pub struct EncodeScratch {
    streams: [Vec<u8>; 4],
    plain: Vec<u8>,
    pairs: Option<PairTable>,
    /// Lines of the next block row to request while coding (see [`Prefetch`]).
    pub prefetch: Prefetch,
}

/// Cache lines of input to request while a block is coded (`crate::cpu::prefetch`): the
/// encoder points it at the next block row, and the coding loop requests `per_group` lines
/// every 64 flushes, spreading the row's memory reads over the coding of the current one.
/// Measured (bf16, one thread, `lmc_speed --loop compress`, alternating): 1647–1667 →
/// 1765–1838 MB/s; the row otherwise comes from memory when it is grouped (~9 GB/s here). The
/// decoder points it at the row's raw group in the payload and at the row's output, which the
/// merge reads and writes after the Huffman decode: `--loop decompress` 3313–3587 → 3762–3830
/// MB/s (f32 +3 %, f16 +3 %).
#[derive(Debug, Default, Clone, Copy)]
pub struct Prefetch {
    /// Up to two address ranges `[next, end)` still to request.
    ranges: [(usize, usize); 2],
    per_group: usize,
}

impl Prefetch {
    /// Requests the lines of `bytes`, `per_group` at a time.
    pub fn new(bytes: &[u8], per_group: usize) -> Prefetch {
        let next = bytes.as_ptr() as usize;
        Prefetch {
            ranges: [(next, next + bytes.len()), (0, 0)],
            per_group,
        }
    }

    /// Also requests the lines of the `len` bytes at `addr` (e.g. an output area), alongside.
    pub fn and(mut self, addr: usize, len: usize) -> Prefetch {
        self.ranges[1] = (addr, addr + len);
        self
    }

    /// Requests the next lines of each range, if any are left.
    #[inline(always)]
    fn step(&mut self) {
        for r in &mut self.ranges {
            for _ in 0..self.per_group {
                if r.0 >= r.1 {
                    break;
                }
                crate::cpu::prefetch(r.0);
                r.0 += 64;
            }
        }
    }
}

/// The codes and lengths of byte pairs `a, b` at index `a | b << 8` (see [`encode_pairs`]): in
/// two tables, so that the coding loop uses each entry straight from memory (a shift and an add
/// with a memory operand) instead of unpacking it.
struct PairTable {
    /// Both codes, a's bits first.
    bits: Box<[u64; 1 << 16]>,
    /// Their total length.
    lens: Box<[u32; 1 << 16]>,
}

/// The pair table in `slot` (768 KiB, allocated on first use).
fn pair_table(slot: &mut Option<PairTable>) -> &mut PairTable {
    slot.get_or_insert_with(|| PairTable {
        bits: vec![0u64; 1 << 16]
            .into_boxed_slice()
            .try_into()
            .expect("length is 2^16"),
        lens: vec![0u32; 1 << 16]
            .into_boxed_slice()
            .try_into()
            .expect("length is 2^16"),
    })
}

/// Total cost in bits of coding symbols with `freqs` under `lengths`.
pub fn code_cost_bits(freqs: &[u32], lengths: &[u8]) -> u64 {
    freqs
        .iter()
        .zip(lengths)
        .map(|(&f, &l)| f as u64 * l as u64)
        .sum()
}

/// Appends the body of a plain Huffman block (table, sizes, four streams) coding `block` with
/// `lengths` (256 entries, a complete code covering every byte in `block`); `table` is
/// [`write_table`]`(lengths)`.
pub fn encode_plain(
    block: &[u8],
    lengths: &[u8],
    table: &[u8],
    scratch: &mut EncodeScratch,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(table);
    let mut codes = [0u32; 256];
    encode_codes(lengths, &mut codes);
    let max_len = lengths.iter().copied().max().unwrap_or(0) as usize;
    let qs = quarters(block.len());
    // One scratch buffer, stream j at offset j·cap (fewer live registers in the hot loop).
    let cap = qs[3] * max_len / 8 + 16 + WINDOW + 8;
    if scratch.plain.len() < 4 * cap {
        scratch.plain.resize(4 * cap, 0);
    }
    let used = lengths.iter().filter(|&&l| l > 0).count();
    let sizes = if used * used <= block.len() / PAIR_TABLE_SHARE {
        let pairs = pair_table(&mut scratch.pairs);
        fill_pairs(&codes, pairs);
        encode_pairs_dispatch(
            max_len <= 9,
            block,
            &codes,
            pairs,
            &mut scratch.plain,
            cap,
            &mut scratch.prefetch,
        )
    } else {
        encode_lanes_dispatch(
            max_len <= 11,
            block,
            &codes,
            &mut scratch.plain,
            cap,
            &mut scratch.prefetch,
        )
    };
    for &s in &sizes {
        put_leb128(s as u32, out);
    }
    for (j, &n) in sizes.iter().enumerate() {
        out.extend_from_slice(&scratch.plain[j * cap..j * cap + n]);
    }
}

/// Encodes the four quarters of `block` into `buf` (stream j at `j * cap`), `K` symbols per
/// flush (K · max code length ≤ 55, so a flush never has 8 whole bytes and needs no branch).
/// Unlike decoding, encoding has no long dependency chain to hide (code lookups depend only on
/// the input), so the quarters are coded one after the other: one lane's state fits in
/// registers, where four interleaved lanes spilled (measured: 14.7 → 7 instructions per symbol).
/// Returns the stream sizes.
#[inline(always)]
fn encode_lanes<const K: usize>(
    block: &[u8],
    codes: &[u32; 256],
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    // Code bits and lengths in separate tables: two loads instead of a load, a shift and a mask.
    let bits_of: [u64; 256] = std::array::from_fn(|s| (codes[s] >> 4) as u64);
    let len_of: [u8; 256] = std::array::from_fn(|s| (codes[s] & 15) as u8);
    code_quarters::<K>(
        block,
        buf,
        cap,
        #[inline(always)]
        |c, bits, nb| {
            for &b in c {
                *bits |= bits_of[b as usize] << *nb;
                *nb += len_of[b as usize] as u32;
            }
        },
        codes,
        prefetch,
    )
}

/// Bytes a [`code_quarters`] window spans (a power of two above 64 flushes of ≤ 7 bytes).
const WINDOW: usize = 512;
/// Flushes per [`code_quarters`] window.
const WINDOW_FLUSHES: usize = 64;

/// Codes the quarters of `block` into `buf` (stream j at `j * cap`; `cap` leaves room for
/// the longest codes plus [`WINDOW`] + 8 bytes) and returns the stream sizes.
#[inline(always)]
fn code_quarters<const B: usize>(
    block: &[u8],
    buf: &mut [u8],
    cap: usize,
    step: impl Fn(&[u8; B], &mut u64, &mut u32),
    codes: &[u32; 256],
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    let qs = quarters(block.len());
    let mut sizes = [0usize; 4];
    let mut start = 0;
    for (j, size) in sizes.iter_mut().enumerate() {
        let part = &block[start..start + qs[j]];
        start += qs[j];
        *size = code_stream(
            part,
            &mut buf[j * cap..(j + 1) * cap],
            &step,
            codes,
            prefetch,
        );
    }
    sizes
}

/// Codes `part` into `out` and returns the stream's size: `step` adds the codes of `B` bytes
/// (at most 56 bits) to the bit buffer, which is then flushed. The flushes run in windows of 64
/// whose 8-byte stores go to a fixed-size slice at a masked offset, so the loop carries no bounds
/// check; the leftover bytes are coded one by one with `codes`.
#[inline(always)]
fn code_stream<const B: usize>(
    part: &[u8],
    out: &mut [u8],
    step: &impl Fn(&[u8; B], &mut u64, &mut u32),
    codes: &[u32; 256],
    prefetch: &mut Prefetch,
) -> usize {
    let (mut pos, mut bits, mut nb) = (0usize, 0u64, 0u32);
    let (chunks, rest) = part.as_chunks::<B>();
    for group in chunks.chunks(WINDOW_FLUSHES) {
        prefetch.step();
        let w: &mut [u8; WINDOW + 8] = (&mut out[pos..pos + WINDOW + 8]).try_into().unwrap();
        let mut at = 0usize;
        for c in group {
            step(c, &mut bits, &mut nb);
            // `at` ≤ 63 · 7 < WINDOW, so the mask changes nothing but proves the bound.
            let i = at & (WINDOW - 1);
            w[i..i + 8].copy_from_slice(&bits.to_le_bytes());
            at += (nb >> 3) as usize;
            bits >>= nb & 56;
            nb &= 7;
        }
        pos += at;
    }
    for &b in rest {
        bits |= u64::from(codes[b as usize] >> 4) << nb;
        nb += codes[b as usize] & 15;
        flush(out, &mut pos, &mut bits, &mut nb);
    }
    out[pos..pos + 8].copy_from_slice(&bits.to_le_bytes());
    pos + (nb > 0) as usize
}

#[inline(always)]
fn encode_lanes_impl(
    k5: bool,
    block: &[u8],
    codes: &[u32; 256],
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    if k5 {
        encode_lanes::<5>(block, codes, buf, cap, prefetch)
    } else {
        encode_lanes::<4>(block, codes, buf, cap, prefetch)
    }
}

crate::cpu::dispatch! {
    /// [`encode_lanes`] with 5 (`k5`, codes ≤ 11 bits) or 4 symbols per flush.
    fn encode_lanes_dispatch(
        k5: bool,
        block: &[u8],
        codes: &[u32; 256],
        buf: &mut [u8],
        cap: usize,
        prefetch: &mut Prefetch,
    ) -> [usize; 4] = encode_lanes_impl / encode_lanes_v3;
}

/// Pair coding is used when the block has at least this many bytes per pair-table entry written
/// (`used²`), so that filling the table costs a small part of what the pair loop saves.
const PAIR_TABLE_SHARE: usize = 4;

/// Fills the pair-table entries of every pair of used symbols (see [`encode_pairs`]); entries of
/// unused symbols are left as they are: a block only ever looks up pairs of its own symbols.
fn fill_pairs(codes: &[u32; 256], pairs: &mut PairTable) {
    let mut used = [(0u32, 0u32, 0usize); 256];
    let mut n = 0;
    for (s, &c) in codes.iter().enumerate() {
        if c & 15 != 0 {
            used[n] = (c >> 4, c & 15, s);
            n += 1;
        }
    }
    let used = &used[..n];
    for &(cb, lb, b) in used {
        let bits = &mut pairs.bits[b << 8..(b + 1) << 8];
        let lens = &mut pairs.lens[b << 8..(b + 1) << 8];
        for &(ca, la, a) in used {
            bits[a] = u64::from(ca | cb << la);
            lens[a] = la + lb;
        }
    }
}

/// Like [`encode_lanes`], two symbols per table lookup: the [`PairTable`] holds the codes of the
/// byte pair `a, b` (a's bits first) and their total length.
/// `K` pairs per flush (`K` · 2 · max code length ≤ 56); `B` = 2 · `K` bytes per flush.
/// On bf16 exponent blocks this takes the coding loop from ~9 to ~5.3 instructions per symbol.
#[inline(always)]
fn encode_pairs<const K: usize, const B: usize>(
    block: &[u8],
    codes: &[u32; 256],
    pairs: &PairTable,
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    debug_assert_eq!(B, 2 * K);
    code_quarters::<B>(
        block,
        buf,
        cap,
        #[inline(always)]
        |c, bits, nb| {
            for k in 0..K {
                let i = u16::from_le_bytes(*c[2 * k..].first_chunk().unwrap()) as usize;
                *bits |= pairs.bits[i] << *nb;
                *nb += pairs.lens[i];
            }
        },
        codes,
        prefetch,
    )
}

#[inline(always)]
fn encode_pairs_impl(
    k3: bool,
    block: &[u8],
    codes: &[u32; 256],
    pairs: &PairTable,
    buf: &mut [u8],
    cap: usize,
    prefetch: &mut Prefetch,
) -> [usize; 4] {
    if k3 {
        encode_pairs::<3, 6>(block, codes, pairs, buf, cap, prefetch)
    } else {
        encode_pairs::<2, 4>(block, codes, pairs, buf, cap, prefetch)
    }
}

crate::cpu::dispatch! {
    /// [`encode_pairs`] with 3 (`k3`, codes ≤ 9 bits) or 2 pairs per flush.
    fn encode_pairs_dispatch(
        k3: bool,
        block: &[u8],
        codes: &[u32; 256],
        pairs: &PairTable,
        buf: &mut [u8],
        cap: usize,
        prefetch: &mut Prefetch,
    ) -> [usize; 4] = encode_pairs_impl / encode_pairs_v3;
}

/// Stores the bit buffer at `pos`, advances past its whole bytes and keeps the rest (`nb` ≤ 63
/// on entry, so at most 7 whole bytes).
#[inline(always)]
fn flush(buf: &mut [u8], pos: &mut usize, bits: &mut u64, nb: &mut u32) {
    buf[*pos..*pos + 8].copy_from_slice(&bits.to_le_bytes());
    *pos += (*nb >> 3) as usize;
    *bits >>= *nb & 56;
    *nb &= 7;
}

/// Appends the body of a Huffman-with-runs block: `run_value`, `nrun`, table, sizes, streams.
/// `lengths` has `256 + nrun` entries and must cover every token of `block` (see
/// [`crate::rle::run_histogram`]); `table` is [`write_table`]`(lengths)`.
pub fn encode_runs(
    block: &[u8],
    run_value: u8,
    lengths: &[u8],
    table: &[u8],
    scratch: &mut EncodeScratch,
    out: &mut Vec<u8>,
) {
    let nrun = lengths.len() - 256;
    out.push(run_value);
    out.push(nrun as u8);
    out.extend_from_slice(table);
    let mut codes = [0u32; MAX_SYMBOLS];
    encode_codes(lengths, &mut codes[..lengths.len()]);
    let qs = quarters(block.len());
    let mut start = 0;
    let mut sizes = [0usize; 4];
    for j in 0..4 {
        let q = &block[start..start + qs[j]];
        start += qs[j];
        let s = &mut scratch.streams[j];
        let need = q.len() * 4 + 16;
        if s.len() < need {
            s.resize(need, 0);
        }
        let mut w = BitOut::new(s);
        crate::rle::for_each_token(q, run_value, |tok| match tok {
            crate::rle::Token::Literal(b) => {
                w.put(codes[b as usize]);
                w.flush();
            }
            crate::rle::Token::Run { k, extra } => {
                w.put(codes[256 + k as usize]);
                w.put_bits(extra, k as u32);
                w.flush();
            }
        });
        sizes[j] = w.finish();
    }
    for &s in &sizes {
        put_leb128(s as u32, out);
    }
    for (s, &n) in scratch.streams.iter().zip(&sizes) {
        out.extend_from_slice(&s[..n]);
    }
}

// ---------------------------------------------------------------------------------------------
// Block decoding

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

/// Most symbols one multi-symbol table entry decodes.
const MULTI_MAX: usize = 3;

/// `REVERSED_12[v]`: the 12 low bits of `v` in reverse order (x86-64 has no bit-reverse
/// instruction; this makes the multi-symbol table build ~4× faster).
static REVERSED_12: [u16; TABLE_SIZE] = {
    let mut t = [0u16; TABLE_SIZE];
    let mut v = 0;
    while v < TABLE_SIZE {
        t[v] = ((v as u32).reverse_bits() >> (32 - MAX_CODE_LEN)) as u16;
        v += 1;
    }
    t
};

/// Builds the multi-symbol table of a byte code (`lengths`: 256 entries, a complete code of at
/// most `bits` bits whose lengths are counted in `counts`), indexed by the next `bits` bits.
/// Entry `i` holds the up to [`MULTI_MAX`] symbols whose codes lie wholly inside the bits `i`:
/// bytes 0..=2 the symbols, bits 24..=29 the bits they use, bits 30..=31 their count (so the
/// decoder stores the entry as it is and shifts by `entry >> 24`, whose count bits a 64-bit
/// shift ignores).
///
/// Every slot is written exactly once. Slots are enumerated by the symbol sequence they start
/// with: for each first symbol `a` and each second symbol `b` that fits after it, the slots
/// of each fitting third symbol `c` (every `2^(la+lb+lc)`-th slot); then the slots of `ab` whose
/// remaining `r` bits begin a code longer than `r` (in canonical order those are the `r`-bit
/// prefixes from `prefixes[r]` on, the space that codes of length ≤ `r` leave over), which keep
/// two symbols; likewise for the slots of `a` that hold only `a`.
fn build_multi_table(
    lengths: &[u8],
    counts: &[u32; MAX_CODE_LEN as usize + 1],
    bits: u32,
    multi: &mut [u32; TABLE_SIZE],
) {
    let mut codes = [0u32; 256];
    encode_codes(&lengths[..256], &mut codes);
    // Used symbols as (reversed code, length, symbol), in canonical order (length, symbol).
    let mut start = [0usize; MAX_CODE_LEN as usize + 2];
    for l in 1..=MAX_CODE_LEN as usize {
        start[l + 1] = start[l] + counts[l] as usize;
    }
    let mut used = [(0u32, 0u32, 0u32); 256];
    for (sym, &c) in codes.iter().enumerate() {
        let l = (c & 15) as usize;
        if l > 0 {
            used[start[l]] = (c >> 4, l as u32, sym as u32);
            start[l] += 1;
        }
    }
    let used = &used[..start[MAX_CODE_LEN as usize]];
    // prefixes[r]: how many r-bit (MSB-first) prefixes codes of length ≤ r cover.
    let mut prefixes = [0u32; MAX_CODE_LEN as usize + 1];
    for r in 1..=bits as usize {
        prefixes[r] = 2 * prefixes[r - 1] + counts[r];
    }
    let size = 1usize << bits;
    // Slots `prefix | x << u` whose next code does not fit the remaining bits.
    let fill_long = |multi: &mut [u32; TABLE_SIZE], prefix: u32, u: u32, entry: u32| {
        let r = bits - u;
        if r == 0 {
            multi[prefix as usize] = entry;
            return;
        }
        for v in prefixes[r as usize]..1 << r {
            let rev = (REVERSED_12[v as usize] >> (MAX_CODE_LEN - r)) as u32;
            multi[(prefix | rev << u) as usize & (TABLE_SIZE - 1)] = entry;
        }
    };
    for &(ca, la, sa) in used {
        let ea = sa;
        for &(cb, lb, sb) in used {
            let u2 = la + lb;
            if u2 > bits {
                break;
            }
            let c2 = ca | cb << la;
            let eab = ea | sb << 8;
            for &(cc, lc, sc) in used {
                let u3 = u2 + lc;
                if u3 > bits {
                    break;
                }
                let entry = eab | sc << 16 | 3 << 30 | u3 << 24;
                let at = (c2 | cc << u2) as usize;
                for chunk in multi[..size].chunks_exact_mut(1 << u3) {
                    chunk[at] = entry;
                }
            }
            fill_long(multi, c2, u2, eab | 2 << 30 | u2 << 24);
        }
        fill_long(multi, ca, la, ea | 1 << 30 | la << 24);
    }
}

/// How a block's codes are looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// One symbol per lookup (`symbol << 4 | length` entries).
    Single,
    /// Up to [`MULTI_MAX`] symbols per lookup ([`build_multi_table`] entries).
    Multi,
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
    let mut counts = [0u32; MAX_CODE_LEN as usize + 1];
    for &l in lengths.iter() {
        counts[l as usize] += 1;
    }
    counts[0] = 0;
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
    let lookup = if nsym == 256 && 2 * mean <= (bits as u64) << MAX_CODE_LEN {
        build_multi_table(lengths, &counts, bits, &mut scratch.multi);
        Lookup::Multi
    } else {
        build_decode_table(lengths, bits, &mut scratch.table[..]).map_err(invalid)?;
        Lookup::Single
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
        Lookup::Multi => kernels::decode_multi(
            bits,
            &scratch.multi,
            streams,
            &lanes,
            out,
            &mut scratch.prefetch,
        ),
        Lookup::Single => kernels::decode_single(
            bits,
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
            Lookup::Single => {
                for x in o.iter_mut() {
                    r.refill_if(bits);
                    let e = scratch.table[r.index(bits)];
                    r.skip((e & 15) as u32);
                    *x = (e >> 4) as u8;
                }
            }
        }
        check_end(&r, j, block_off)?;
    }
    Ok(pos + total)
}

/// Where the four streams of a block start in its stream bytes, and the quarters they decode
/// to in its output (`input[4]`, `output[4]`: the ends).
struct Lanes {
    input: [usize; 5],
    output: [usize; 5],
}

impl Lanes {
    fn new(sizes: [usize; 4], n: usize) -> Lanes {
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

/// The hot loops of block decoding, compiled for the baseline and for x86-64-v3 ([`crate::cpu`]).
///
/// Each lane (stream `j` and its output quarter) is decoded in rounds of `K` table lookups
/// (`K · bits` ≤ 55), the four lanes interleaved so their dependency chains overlap. A round
/// loads 8 stream bytes at the lane's bit position, shifts off the bits already used and sets a
/// sentinel bit 63; after the lookups, the sentinel has moved down by exactly the bits consumed,
/// so the position advances by `leading_zeros` (no per-lookup bookkeeping). Rounds run in
/// batches whose count is computed up front so that no round reads past its stream or writes past
/// its quarter (a multi-symbol round stores 4 bytes per lookup, up to 3 past the symbols it
/// keeps). The caller decodes what is left of each lane one symbol at a time.
mod kernels {
    use super::{Lanes, Prefetch, MULTI_MAX, TABLE_SIZE};

    /// Rounds between two steps of the prefetch (each step requests a few cache lines).
    const PREFETCH_ROUNDS: usize = 4;

    /// Stream bytes a round may advance (⌈55 / 8⌉ bits, rounded up from any bit offset).
    const ROUND_INPUT: usize = 7;

    #[inline(always)]
    fn load(streams: &[u8], bp: u64) -> u64 {
        let at = (bp >> 3) as usize;
        let v = u64::from_le_bytes(streams[at..at + 8].try_into().unwrap());
        (v >> (bp & 7)) | 1 << 63
    }

    /// Bytes a multi-symbol round may write past its lane's position: K ≤ 5 lookups, each
    /// storing a whole 4-byte entry at most 3 bytes after the previous one (3·4 + 4).
    const MULTI_ROOM: usize = 16;

    /// The first [`MULTI_ROOM`] bytes of `out`.
    #[inline(always)]
    fn window(out: &mut [u8]) -> &mut [u8; MULTI_ROOM] {
        (&mut out[..MULTI_ROOM]).try_into().unwrap()
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

    /// One round of a lane with the one-symbol table: `K` symbols into `out` (`K` bytes).
    #[inline(always)]
    fn single_round<const K: usize, const MASK: usize>(
        table: &[u16; TABLE_SIZE],
        x: &mut u64,
        out: &mut [u8],
    ) {
        let out: &mut [u8; K] = out.try_into().unwrap();
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
    use super::*;

    fn kraft(lengths: &[u8], limit: u32) -> u64 {
        lengths
            .iter()
            .filter(|&&l| l > 0)
            .map(|&l| 1u64 << (limit - l as u32))
            .sum()
    }

    #[test]
    fn lengths_are_complete_and_limited() {
        // Fibonacci frequencies force a deep tree.
        let mut f = vec![0u32; 256];
        let (mut a, mut b) = (1u32, 1u32);
        for x in f.iter_mut().take(30) {
            *x = a;
            let c = a + b;
            a = b;
            b = c;
        }
        for limit in [11, 12] {
            let mut l = vec![0u8; 256];
            build_lengths(&f, limit, &mut l);
            assert!(l.iter().all(|&x| x as u32 <= limit));
            assert_eq!(kraft(&l, 12), 1 << 12);
            assert!(l[..30].iter().all(|&x| x > 0));
            assert!(l[30..].iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn single_symbol_gets_a_partner() {
        let mut f = vec![0u32; 256];
        f[7] = 100;
        let mut l = vec![0u8; 256];
        build_lengths(&f, 11, &mut l);
        assert_eq!(l[7], 1);
        assert_eq!(l[0], 1);
        assert_eq!(kraft(&l, 12), 1 << 12);
    }

    /// The pair loop writes the same streams as the one-symbol loop, for short codes (3 pairs
    /// per flush) and long ones (2), odd quarter lengths, and a pair table left over from a
    /// block with other symbols.
    #[test]
    fn pair_coding_matches_symbol_coding() {
        let mut next = crate::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut pairs = None;
        let mut flushes = [false; 2];
        for (alphabet, skew, n) in [(8u64, 1u32, 4099usize), (40, 9, 20_001), (12, 3, 7)] {
            // Geometric-ish frequencies over `alphabet` symbols spread across the byte range.
            let block: Vec<u8> = (0..n)
                .map(|_| {
                    let r = next();
                    let k = (r % alphabet).min((r >> 32).trailing_zeros() as u64 * skew as u64);
                    (k * 37 % 256) as u8
                })
                .collect();
            let mut freqs = [0u32; 256];
            for &b in &block {
                freqs[b as usize] += 1;
            }
            let mut lengths = [0u8; 256];
            build_lengths(&freqs, MAX_CODE_LEN, &mut lengths);
            let mut codes = [0u32; 256];
            encode_codes(&lengths, &mut codes);
            let max_len = *lengths.iter().max().unwrap() as usize;
            flushes[(max_len <= 9) as usize] = true;
            let qs = quarters(n);
            let cap = qs[3] * max_len / 8 + 16 + WINDOW + 8;
            let (mut a, mut b) = (vec![0u8; 4 * cap], vec![0u8; 4 * cap]);
            let table = pair_table(&mut pairs);
            fill_pairs(&codes, table);
            let none = &mut Prefetch::default();
            let sa = encode_lanes_dispatch(max_len <= 11, &block, &codes, &mut a, cap, none);
            let sb = encode_pairs_dispatch(max_len <= 9, &block, &codes, table, &mut b, cap, none);
            assert_eq!(sa, sb, "alphabet {alphabet}");
            for j in 0..4 {
                assert_eq!(a[j * cap..j * cap + sa[j]], b[j * cap..j * cap + sb[j]]);
            }
        }
        assert_eq!(flushes, [true, true], "both pair loops ran");
    }

    /// The prefetch walks its bytes a cache line at a time, `per_group` lines per step, and
    /// stops at their end; the hint itself never faults, even on addresses nothing maps.
    #[test]
    fn prefetch_covers_its_bytes_then_stops() {
        let bytes = vec![0u8; 1000];
        let mut p = Prefetch::new(&bytes, 4);
        let start = bytes.as_ptr() as usize;
        p.step();
        assert_eq!(p.ranges[0].0, start + 4 * 64);
        for _ in 0..10 {
            p.step();
        }
        assert_eq!(p.ranges[0].0, start + 1000usize.div_ceil(64) * 64);
        Prefetch::default().step();
        for addr in [0usize, 64, usize::MAX - 63] {
            crate::cpu::prefetch(addr);
        }
    }

    #[test]
    fn four_histograms_at_once_match_one_by_one() {
        let data: Vec<u8> = (0..40_007u32).map(|i| (i * i % 251 % 37) as u8).collect();
        for cuts in [[0, 10_000, 20_001, 30_003, 40_007], [0, 0, 5, 13, 40_007]] {
            let parts: [&[u8]; 4] = std::array::from_fn(|k| &data[cuts[k]..cuts[k + 1]]);
            let four = histograms4(parts);
            for k in 0..4 {
                assert_eq!(four[k], histogram(parts[k]), "part {k} of {cuts:?}");
            }
        }
    }

    #[test]
    fn histograms_counted_in_runs_add_up_to_the_whole() {
        let data: Vec<u8> = (0..65_536u32).map(|i| (i * i % 251 % 37) as u8).collect();
        let parts: [&[u8]; 4] = std::array::from_fn(|k| &data[k * 16_384..(k + 1) * 16_384]);
        for (stride, cut) in [(64, 8), (32, 8), (64, 0), (64, 64), (4096, 2048)] {
            let mut h = Histograms4::new();
            h.add_runs(parts, stride, 0, cut);
            let mut sample = [0u32; 256];
            for part in parts {
                for run in part.chunks_exact(stride) {
                    run[..cut].iter().for_each(|&b| sample[b as usize] += 1);
                }
            }
            assert_eq!(h.total(), sample, "sample of stride {stride}, cut {cut}");
            h.add_runs(parts, stride, cut, stride);
            let whole = h.finish();
            for k in 0..4 {
                assert_eq!(whole[k], histogram(parts[k]), "part {k}, stride {stride}");
            }
        }
        // Runs beyond the shortest part are not counted.
        let mut h = Histograms4::new();
        h.add_runs(
            [&data[..64], &data[..128], &data[..128], &data[..128]],
            64,
            0,
            64,
        );
        assert_eq!(h.total().iter().sum::<u32>(), 4 * 64);
    }

    #[test]
    fn table_round_trip() {
        let mut l = vec![0u8; 260];
        for (i, x) in l.iter_mut().enumerate() {
            *x = [0, 0, 0, 0, 5, 5, 5, 5, 5, 9, 0, 12][i % 12];
        }
        let mut out = Vec::new();
        write_table(&l, &mut out);
        let mut back = vec![0u8; 260];
        let used = read_table(&out, &mut back).unwrap();
        assert_eq!(used, out.len());
        assert_eq!(back, l);
    }

    #[test]
    fn over_subscribed_table_is_rejected() {
        let mut l = vec![0u8; 256];
        l[..3].fill(1);
        let mut t = vec![0u16; TABLE_SIZE];
        assert_eq!(
            build_decode_table(&l, 12, &mut t),
            Err("over-subscribed code lengths")
        );
        l[2] = 0;
        l[1] = 2;
        assert_eq!(
            build_decode_table(&l, 12, &mut t),
            Err("incomplete code lengths")
        );
    }
}
