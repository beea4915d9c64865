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
//! 40 GB file costs only the pages a command touches.
#![allow(unsafe_code)]

use std::fs::File;

/// A read-only memory map of a whole file.
pub struct FileMap {
    map: memmap2::Mmap,
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
        Some(FileMap { map })
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
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
