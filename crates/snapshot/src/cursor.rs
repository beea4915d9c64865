//! A bounds-checked little-endian reader over a byte string, shared by the container's index
//! parser ([`crate::format::read_index`]) and the Inshrinkerator annex parser
//! ([`crate::inshrink::Annex::parse`]); each names a field that runs past the end in its own error
//! type (a helper, not from a paper).

/// Reads fields from the front of a byte string; a field that runs past the end is the error
/// `short(field, offset)` gives.
pub(crate) struct ByteCursor<'a, E> {
    bytes: &'a [u8],
    /// Offset of the next field.
    pub pos: usize,
    short: fn(&'static str, usize) -> E,
}

impl<'a, E> ByteCursor<'a, E> {
    /// A cursor at the start of `bytes` whose truncation error is `short(field, offset)`.
    pub fn new(bytes: &'a [u8], short: fn(&'static str, usize) -> E) -> Self {
        ByteCursor {
            bytes,
            pos: 0,
            short,
        }
    }

    /// Bytes after the cursor.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, field `what`.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], E> {
        let s = self
            .bytes
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or((self.short)(what, self.pos))?;
        self.pos += n;
        Ok(s)
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], E> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    /// The next byte.
    pub fn u8(&mut self, what: &'static str) -> Result<u8, E> {
        Ok(self.array::<1>(what)?[0])
    }

    /// The next little-endian `u16`.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, E> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// The next little-endian `u32`.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, E> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// The next little-endian `u64`.
    pub fn u64(&mut self, what: &'static str) -> Result<u64, E> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// The next little-endian `f32`.
    pub fn f32(&mut self, what: &'static str) -> Result<f32, E> {
        self.array(what).map(f32::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_fields_and_names_a_short_one_where_it_starts() {
        let bytes = [1u8, 2, 0, 3, 0, 0, 0, 9];
        let mut c = ByteCursor::new(&bytes, |what, at| format!("{what} at {at}"));
        assert_eq!(c.u8("a"), Ok(1));
        assert_eq!(c.u16("b"), Ok(2));
        assert_eq!(c.u32("c"), Ok(3));
        assert_eq!(c.remaining(), 1);
        assert_eq!(c.u64("d"), Err("d at 7".to_owned()));
        // A failed read leaves the cursor where it was.
        assert_eq!((c.pos, c.u8("e")), (7, Ok(9)));
        assert_eq!(c.take(usize::MAX, "f"), Err("f at 8".to_owned()));
    }
}
