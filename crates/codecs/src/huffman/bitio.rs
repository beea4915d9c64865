//! LSB-first bit streams and LEB128 size fields of a Huffman block body (LMC paper §4.2; the
//! field layout is in [`super`]): the block encoder's writer, the decoder's reader (loaded 8 bytes
//! at a time) and the bounds-checked reader of the code-length table.

use super::TABLE_SIZE;

/// LSB-first bit writer into a pre-sized buffer (8 spare bytes at the end are required).
pub(super) struct BitOut<'a> {
    buf: &'a mut [u8],
    pos: usize,
    bits: u64,
    nbits: u32,
}

impl<'a> BitOut<'a> {
    pub(super) fn new(buf: &'a mut [u8]) -> Self {
        BitOut {
            buf,
            pos: 0,
            bits: 0,
            nbits: 0,
        }
    }
    /// Appends a packed code (`code << 4 | len`). Caller keeps `nbits` ≤ 64 between flushes.
    #[inline(always)]
    pub(super) fn put(&mut self, c: u32) {
        self.bits |= ((c >> 4) as u64) << self.nbits;
        self.nbits += c & 15;
    }
    #[inline(always)]
    pub(super) fn put_bits(&mut self, v: u32, n: u32) {
        self.bits |= (v as u64) << self.nbits;
        self.nbits += n;
    }
    #[inline(always)]
    pub(super) fn flush(&mut self) {
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
    pub(super) fn finish(mut self) -> usize {
        self.flush();
        self.pos + (self.nbits > 0) as usize
    }
}

/// LSB-first bit reader over one stream; reads past the end see zero bits (the caller checks
/// [`BitIn::consumed`] against the stream length afterwards). `Copy`, so hot loops can keep each
/// lane in locals (registers) instead of behind a reference.
#[derive(Clone, Copy)]
pub(super) struct BitIn<'a> {
    pub(super) buf: &'a [u8],
    pos: usize,
    pub(super) bits: u64,
    pub(super) nbits: u32,
}

impl<'a> BitIn<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
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
        let v = u64::from_le_bytes(
            self.buf[self.pos..self.pos + 8]
                .try_into()
                .expect("8 bytes"),
        );
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
    pub(super) fn refill(&mut self) {
        if self.can_refill_fast() {
            self.refill_fast()
        } else {
            self.refill_slow()
        }
    }
    /// A reader positioned `bit` bits into `buf`, with ≥ 56 bits loaded.
    #[inline]
    pub(super) fn at(buf: &'a [u8], bit: u64) -> Self {
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
    pub(super) fn refill_if(&mut self, need: u32) {
        if self.nbits < need {
            self.refill();
        }
    }
    /// The next `bits` bits, as a table index.
    #[inline(always)]
    pub(super) fn index(&self, bits: u32) -> usize {
        (self.bits as usize) & ((1 << bits) - 1) & (TABLE_SIZE - 1)
    }
    /// Drops `n` loaded bits.
    #[inline(always)]
    pub(super) fn skip(&mut self, n: u32) {
        self.bits >>= n;
        self.nbits -= n;
    }
    #[inline(always)]
    pub(super) fn take(&mut self, n: u32) -> u32 {
        let v = (self.bits & ((1u64 << n) - 1)) as u32;
        self.bits >>= n;
        self.nbits -= n;
        v
    }
    /// Bits consumed so far (may exceed the stream if it was corrupt).
    #[inline]
    pub(super) fn consumed(&self) -> u64 {
        self.pos as u64 * 8 - self.nbits as u64
    }
}

/// Reads bits for the code-length table with explicit bounds.
pub(super) struct TableIn<'a> {
    pub(super) buf: &'a [u8],
    pub(super) bitpos: usize,
}

impl TableIn<'_> {
    pub(super) fn peek(&self, n: u32) -> u32 {
        let byte = self.bitpos >> 3;
        let mut tmp = [0u8; 4];
        let avail = self.buf.get(byte..).unwrap_or(&[]);
        let k = avail.len().min(4);
        tmp[..k].copy_from_slice(&avail[..k]);
        let v = u32::from_le_bytes(tmp) >> (self.bitpos & 7);
        v & ((1u32 << n) - 1)
    }
    pub(super) fn read(&mut self, n: u32) -> Result<u32, &'static str> {
        let v = self.peek(n);
        self.bitpos += n as usize;
        if self.bitpos > self.buf.len() * 8 {
            return Err("code table runs past the end of the block");
        }
        Ok(v)
    }
}

/// Appends `v` in unsigned LEB128 (7 bits a byte, lowest first; bit 7 set on every byte but the
/// last): the stream sizes of a block.
pub fn put_leb128(v: u32, out: &mut Vec<u8>) {
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

/// Reads an unsigned LEB128 `u32` at `*pos` and moves `*pos` past it; `None` when it is truncated,
/// longer than 5 bytes or above `u32::MAX`.
pub fn get_leb128(data: &[u8], pos: &mut usize) -> Option<u32> {
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
