//! Local files and URLs as [`ReadAt`] sources: a file mapped into memory and read in place
//! ([`bitlens_filemap`]; positioned reads where it cannot be mapped), an `http(s)` URL read by Range
//! requests ([`crate::http`]), and a source whose first bytes are already in memory (format
//! detection costs no request of its own).

use crate::error::{Context, Result};
use crate::http::HttpSource;
use bitlens_filemap::FileMap;
use bitlens_tensors::{ReadAt, SourceError};
use std::fs::File;
use std::path::Path;

/// A local file: mapped into memory where it can be ([`FileMap`]), so readers use its bytes in
/// place ([`ReadAt::bytes_at`]); else read with positioned reads (no shared cursor, so threads can
/// share it).
pub struct FileSource {
    file: File,
    size: u64,
    map: Option<FileMap>,
}

impl FileSource {
    /// Opens a file, mapped when it is a non-empty regular file the system lets us map.
    pub fn open(path: &Path) -> Result<Self> {
        let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        let meta = file
            .metadata()
            .with_context(|| format!("{}: cannot stat", path.display()))?;
        let size = meta.len();
        let map = if meta.is_file() {
            FileMap::new(&file, size)
        } else {
            None
        };
        Ok(FileSource { file, size, map })
    }

    /// True when the file is read in place from a memory map.
    pub fn is_mapped(&self) -> bool {
        self.map.is_some()
    }
}

impl ReadAt for FileSource {
    fn size(&self) -> u64 {
        self.size
    }

    /// A positioned read, also when the file is mapped: readers that copy (the statistics, in
    /// any order) do not grow the process's resident memory by the pages they map.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        bitlens_tensors::source::check_bounds(offset, buf.len(), self.size)?;
        read_at(&self.file, offset, buf).map_err(|source| SourceError::Backend {
            offset,
            len: buf.len() as u64,
            source,
        })
    }

    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.map.as_ref()?.bytes().bytes_at(offset, len)
    }

    fn done_before(&self, end: u64) {
        if let Some(map) = &self.map {
            map.release_before(end);
        }
    }
}

#[cfg(unix)]
fn read_at(file: &File, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut offset: u64, mut buf: &mut [u8]) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// An input's bytes: a local file or a remote one.
pub enum Source {
    /// A local file.
    File(FileSource),
    /// An `http(s)` URL read by range requests.
    Http(HttpSource),
}

impl Source {
    /// Opens a local path or an `http(s)` URL.
    pub fn open(input: &Path) -> Result<Source> {
        if is_url(input)? {
            return Ok(Source::Http(HttpSource::open(&input.to_string_lossy())?));
        }
        Ok(Source::File(FileSource::open(input)?))
    }
}

impl ReadAt for Source {
    fn size(&self) -> u64 {
        match self {
            Source::File(f) => f.size(),
            Source::Http(h) => h.size(),
        }
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        match self {
            Source::File(f) => f.read_exact_at(offset, buf),
            Source::Http(h) => h.read_exact_at(offset, buf),
        }
    }

    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        match self {
            Source::File(f) => f.bytes_at(offset, len),
            Source::Http(_) => None,
        }
    }

    fn done_before(&self, end: u64) {
        if let Source::File(f) = self {
            f.done_before(end);
        }
    }
}

/// True when `input` names an `http://` or `https://` URL; an error for other `scheme://` forms.
pub fn is_url(input: &Path) -> Result<bool> {
    match input.to_str() {
        Some(s) => Ok(bitlens_remote::is_url(s)?),
        None => Ok(false),
    }
}

/// A source whose first bytes were read already: reads inside them are served from memory, so
/// detecting the format costs no request of its own.
pub(crate) struct Head<'a> {
    /// The source.
    pub src: &'a dyn ReadAt,
    /// Its first bytes.
    pub first: Vec<u8>,
}

impl ReadAt for Head<'_> {
    fn size(&self) -> u64 {
        self.src.size()
    }

    /// Serves the part of a read inside the first bytes from memory and reads only the rest.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        match usize::try_from(offset) {
            Ok(at) if at < self.first.len() => {
                let n = (self.first.len() - at).min(buf.len());
                buf[..n].copy_from_slice(&self.first[at..at + n]);
                if n < buf.len() {
                    self.src.read_exact_at(offset + n as u64, &mut buf[n..])?;
                }
                Ok(())
            }
            _ => self.src.read_exact_at(offset, buf),
        }
    }

    fn bytes_at(&self, offset: u64, len: usize) -> Option<&[u8]> {
        self.src.bytes_at(offset, len)
    }

    fn done_before(&self, end: u64) {
        self.src.done_before(end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_in_place_and_through_reads_alike() {
        let bytes: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
        let path = std::env::temp_dir().join(format!("bitlens-source-{}", std::process::id()));
        std::fs::write(&path, &bytes).unwrap();
        let src = FileSource::open(&path).unwrap();
        assert!(src.is_mapped());
        assert_eq!(src.bytes_at(65_000, 5_000), Some(&bytes[65_000..70_000]));
        let mut buf = vec![0u8; 5_000];
        src.read_exact_at(65_000, &mut buf).unwrap();
        assert_eq!(buf, &bytes[65_000..70_000]);
        // Past the end: nothing in place, and the read says where.
        assert_eq!(src.bytes_at(69_999, 2), None);
        assert!(matches!(
            src.read_exact_at(69_999, &mut buf[..2]),
            Err(SourceError::OutOfBounds { offset: 69_999, .. })
        ));
        std::fs::remove_file(&path).unwrap();
        // An empty file is not mapped, and reads nothing.
        std::fs::write(&path, b"").unwrap();
        let empty = FileSource::open(&path).unwrap();
        assert!(!empty.is_mapped());
        assert_eq!(empty.bytes_at(0, 0), None);
        empty.read_exact_at(0, &mut []).unwrap();
        std::fs::remove_file(&path).unwrap();
    }
}
