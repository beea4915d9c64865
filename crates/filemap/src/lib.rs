//! A file's bytes mapped read-only into memory ([`FileMap`]) — the `bitlens` CLI's inputs (a
//! helper, not from a paper).
//!
//! The CLI used to read each frame of its input with a positioned read into a buffer of its own:
//! the kernel copied every byte out of the page cache first, a fifth of a decompression of a
//! 26.6 MB file on one thread (BENCHMARKS.md, "Inputs read in place"). Mapped, the page cache's
//! own pages are the input: the codecs read them where they are, and a page costs a mapping (one
//! fault per 16 pages with the kernel's fault-around) instead of a copy.
//!
//! The mapping is private, read-only and made on demand: nothing is read ahead of use, so a
//! 40 GB file costs only the pages a command touches. A pass over the file in order gives the
//! pages behind it back as it goes ([`FileMap::release_before`]), so its resident memory stays
//! bounded by the frames it holds at once, as it was with reads into reused buffers.
#![allow(unsafe_code)]

use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The unit [`FileMap::release_before`] gives back (the smallest page of the platforms bitlens
/// runs on; a larger page is given back when all its 4 KiB parts are).
const PAGE: usize = 4096;

/// The least [`FileMap::release_before`] gives back at once: each call is a system call and,
/// when other threads run, an interrupt to their cores to forget the pages (after every 1 MiB
/// frame that was 1–2 % of a decompression); the resident memory may exceed the frames held by
/// this much.
const RELEASE_BATCH: usize = 4 << 20;

/// A read-only memory map of a whole file.
pub struct FileMap {
    map: memmap2::Mmap,
    /// Bytes from the start already given back ([`FileMap::release_before`]), a multiple of
    /// [`PAGE`].
    released: AtomicUsize,
}

impl FileMap {
    /// Maps `file`, whose size is `size` bytes, read-only; `None` when it is empty (a mapping
    /// cannot be), larger than the address space, or the system refuses (a pipe, a special
    /// file): the caller then reads it with ordinary reads.
    pub fn new(file: &File, size: u64) -> Option<FileMap> {
        let len = usize::try_from(size).ok().filter(|&n| n > 0)?;
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes are shared with the file: were
        // another process to write it while it is mapped, the `&[u8]` handed out would change
        // under its borrow, and were it to truncate it, reading the lost pages would raise
        // SIGBUS. bitlens only reads the inputs it is given, as every tool that maps its inputs
        // does (Python's `safetensors` maps the same files); a file changed while a command
        // reads it gives a wrong result either way, and the container's checksums catch it on
        // decode. The length is the size the caller read from the open file's metadata.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file) }.ok()?;
        Some(FileMap {
            map,
            released: AtomicUsize::new(0),
        })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Gives the whole pages before byte `end` back to the system (`MADV_DONTNEED`) once they
    /// are [`RELEASE_BATCH`] bytes or more, or reach the end of the file: they leave the
    /// process's resident memory and stay in the page cache. Each call gives back only what
    /// earlier calls did not, so a pass that calls it after every frame pays for each page once.
    /// Reading those bytes again still works (they are mapped back from the file). A no-op off
    /// Unix, and where the system refuses.
    pub fn release_before(&self, end: u64) {
        let len = self.map.len();
        let end = usize::try_from(end).unwrap_or(usize::MAX).min(len);
        let at_end = end == len;
        let end = end / PAGE * PAGE;
        if !at_end && end < self.released.load(Ordering::Relaxed) + RELEASE_BATCH {
            return;
        }
        let start = self.released.fetch_max(end, Ordering::Relaxed);
        if start >= end {
            return;
        }
        #[cfg(unix)]
        {
            // SAFETY: `MADV_DONTNEED` is unchecked in memmap2 because, on a private mapping that
            // was written to, it drops the writes: the pages then read as the file (or zeros).
            // This mapping is read-only and never written, so the pages read back as the file's
            // bytes, the same bytes any `&[u8]` lent from it holds (the file is not changed
            // while bitlens reads it; see `new`). `start..end` lies inside the map (`end` is at
            // most its length) and starts on a page boundary.
            let advised = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    start,
                    end - start,
                )
            };
            // A hint: when the system refuses, the pages just stay until the map is dropped.
            let _ = advised;
        }
    }

    /// Bytes given back so far (a multiple of 4 KiB).
    pub fn released(&self) -> u64 {
        self.released.load(Ordering::Relaxed) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn temp_file(name: &str, bytes: &[u8]) -> (std::path::PathBuf, File) {
        let path =
            std::env::temp_dir().join(format!("bitlens-filemap-{}-{name}", std::process::id()));
        std::fs::File::create(&path)
            .unwrap()
            .write_all(bytes)
            .unwrap();
        let file = File::open(&path).unwrap();
        (path, file)
    }

    #[test]
    fn a_mapped_file_holds_its_bytes() {
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (path, file) = temp_file("bytes", &bytes);
        let map = FileMap::new(&file, bytes.len() as u64).expect("a regular file maps");
        assert_eq!(map.bytes(), &bytes[..]);
        drop(map);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn pages_given_back_read_as_the_file_and_each_is_given_back_once() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 13 % 241) as u8).collect();
        let (path, file) = temp_file("release", &bytes);
        let map = FileMap::new(&file, bytes.len() as u64).unwrap();
        let lent = map.bytes();
        assert_eq!(lent[123_456], bytes[123_456]);
        map.release_before(10_000);
        assert_eq!(map.released(), 0, "less than a batch waits");
        map.release_before(u64::MAX);
        let whole = (bytes.len() / PAGE * PAGE) as u64;
        assert_eq!(map.released(), whole, "the end gives back every whole page");
        map.release_before(5_000);
        assert_eq!(map.released(), whole, "never backwards");
        // Every byte reads as before, the given-back pages mapped again from the file.
        assert_eq!(lent, &bytes[..]);
        drop(map);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn an_empty_file_is_not_mapped() {
        let (path, file) = temp_file("empty", &[]);
        assert!(FileMap::new(&file, 0).is_none());
        std::fs::remove_file(path).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_file_that_cannot_be_mapped_is_refused_not_an_error() {
        // A character device has no pages to map.
        let null = File::open("/dev/null").unwrap();
        assert!(FileMap::new(&null, 4096).is_none());
    }
}
