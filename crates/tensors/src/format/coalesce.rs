//! Many small reads at known places made as a few larger ones: a zip's local headers (one per
//! member, each a few dozen bytes before the member's data) are read one request per member by
//! [`zip::Archive::locate`]; when members are small their headers lie close together, and one
//! read of the region they are in serves them all.
//!
//! [`Coalesced`] is a [`ReadAt`] over another one, given the regions that will be read: regions
//! closer than [`MAX_GAP`] are merged into spans of at most [`MAX_SPAN`] bytes. A read inside a
//! span reads the whole span once (kept until a read needs another span, so memory is one span);
//! any other read goes straight to the source. The bytes served are the source's either way.

use super::zip::{self, Archive};
use crate::source::{ReadAt, SourceError};
use std::cell::RefCell;

/// Regions at most this far apart are read together (the bytes between are read and dropped).
pub const MAX_GAP: u64 = 16 << 10;
/// The largest span read at once.
pub const MAX_SPAN: u64 = 256 << 10;

/// A source whose planned small reads are coalesced (see the module doc).
pub struct Coalesced<'a> {
    src: &'a dyn ReadAt,
    /// Sorted, disjoint `[start, end)` spans.
    spans: Vec<(u64, u64)>,
    /// The span read last and its bytes.
    cache: RefCell<(u64, Vec<u8>)>,
}

impl<'a> Coalesced<'a> {
    /// Plans the reads of `regions` (`(offset, len)`, any order; clipped to the source).
    pub fn new(src: &'a dyn ReadAt, mut regions: Vec<(u64, u64)>) -> Coalesced<'a> {
        let size = src.size();
        regions.sort_unstable();
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for (offset, len) in regions {
            let end = offset.saturating_add(len).min(size);
            if offset >= end {
                continue;
            }
            match spans.last_mut() {
                Some((start, last))
                    if offset <= last.saturating_add(MAX_GAP) && end - *start <= MAX_SPAN =>
                {
                    *last = (*last).max(end);
                }
                _ => spans.push((offset, end)),
            }
        }
        Coalesced {
            src,
            spans,
            cache: RefCell::new((0, Vec::new())),
        }
    }

    /// Plans the local header reads of every member of `archive`, each with `prefetch` bytes of
    /// its data (as [`Archive::locate`] reads them).
    pub fn local_headers(src: &'a dyn ReadAt, archive: &Archive, prefetch: u64) -> Coalesced<'a> {
        Coalesced::local_headers_of(src, archive.members(), prefetch)
    }

    /// [`Coalesced::local_headers`] of some `members` only.
    pub fn local_headers_of(
        src: &'a dyn ReadAt,
        members: &[zip::Member],
        prefetch: u64,
    ) -> Coalesced<'a> {
        let regions = members
            .iter()
            .map(|m| {
                let len = (30 + m.name.len() as u64 + zip::EXTRA_GUESS)
                    .saturating_add(prefetch.min(m.compressed))
                    .min(m.slot_end.saturating_sub(m.header_offset));
                (m.header_offset, len)
            })
            .collect();
        Coalesced::new(src, regions)
    }

    /// Spans planned (for measurements).
    pub fn spans(&self) -> usize {
        self.spans.len()
    }
}

impl ReadAt for Coalesced<'_> {
    fn size(&self) -> u64 {
        self.src.size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        let Some(end) = offset.checked_add(buf.len() as u64) else {
            return self.src.read_exact_at(offset, buf);
        };
        let serve = |start: u64, bytes: &[u8], buf: &mut [u8]| {
            let at = (offset - start) as usize;
            buf.copy_from_slice(&bytes[at..at + buf.len()]);
        };
        {
            let cache = self.cache.borrow();
            if offset >= cache.0 && end <= cache.0 + cache.1.len() as u64 && !cache.1.is_empty() {
                serve(cache.0, &cache.1, buf);
                return Ok(());
            }
        }
        let i = self.spans.partition_point(|&(_, e)| e <= offset);
        match self.spans.get(i) {
            Some(&(start, stop)) if start <= offset && end <= stop => {
                let mut bytes = vec![0u8; (stop - start) as usize];
                self.src.read_exact_at(start, &mut bytes)?;
                serve(start, &bytes, buf);
                *self.cache.borrow_mut() = (start, bytes);
                Ok(())
            }
            _ => self.src.read_exact_at(offset, buf),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;

    /// A file that counts the reads made of it.
    pub(crate) struct Counting<'a> {
        pub(crate) file: &'a [u8],
        pub(crate) reads: Cell<u32>,
    }

    impl ReadAt for Counting<'_> {
        fn size(&self) -> u64 {
            self.file.len() as u64
        }

        fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
            self.reads.set(self.reads.get() + 1);
            self.file.read_exact_at(offset, buf)
        }
    }

    #[test]
    fn close_regions_are_read_once_and_every_read_gets_the_sources_bytes() {
        let file: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let src = Counting {
            file: &file,
            reads: Cell::new(0),
        };
        // Two groups: 0..~3 KB, and 100 000.. (far), plus one region past the end (clipped).
        let regions = vec![
            (2000, 50),
            (0, 40),
            (1000, 100),
            (100_000, 64),
            (199_990, 100),
        ];
        let c = Coalesced::new(&src, regions);
        assert_eq!(c.spans(), 3);
        let mut buf = [0u8; 40];
        for at in [0u64, 1000, 1050, 2000] {
            c.read_exact_at(at, &mut buf).unwrap();
            assert_eq!(buf[..], file[at as usize..at as usize + 40]);
        }
        assert_eq!(src.reads.get(), 1, "the first group in one read");
        c.read_exact_at(100_010, &mut buf).unwrap();
        assert_eq!(buf[..], file[100_010..100_050]);
        // Outside every span: straight to the source.
        c.read_exact_at(50_000, &mut buf).unwrap();
        assert_eq!(buf[..], file[50_000..50_040]);
        assert_eq!(src.reads.get(), 3);
        let mut tail = [0u8; 10];
        c.read_exact_at(199_990, &mut tail).unwrap();
        assert_eq!(tail[..], file[199_990..]);
        assert!(c.read_exact_at(199_995, &mut tail).is_err(), "past the end");
    }
}
