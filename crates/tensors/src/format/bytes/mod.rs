//! A tensor's bytes from any [`Data`]: streamed in the tensor's element order (row-major over its
//! shape) in windows to a callback, reading only what the tensor needs.
//!
//! - [`Data::Range`]: the range, read in windows of at most `window` bytes (one buffer).
//! - [`Data::Deflated`] (`.npz`, deflated PyTorch zip members): inflated by the bounded
//!   [`zip::for_each_inflated`], the `.npy` header's `skip` bytes dropped and inflation stopped
//!   at the tensor's last byte.
//! - [`Data::Strided`] (PyTorch views into a shared storage): elements gathered at
//!   `storage_offset + Σ index·stride` (torch's `as_strided`). The cost depends on the view:
//!   - when the storage span the view touches is at most [`MAX_GATHER_SPAN`] bytes, that span is
//!     read once, in windows of `window` bytes, into one buffer and gathered from memory: a
//!     transposed matrix costs one pass over its storage and `span` bytes of memory;
//!   - a larger view whose last dimension is contiguous (stride 1: row slices, narrowed columns
//!     blocks) is read row by row, one read per row, straight into the output window;
//!   - a larger view with a strided last dimension (a transposed matrix of more than
//!     [`MAX_GATHER_SPAN`] bytes) is refused with [`BytesError::Scattered`] rather than read once
//!     per element or held whole.
//!
//! Every view is checked against its storage, and every storage or range against the source,
//! before anything is read or allocated for it.
//!
//! [`Reader`] is the same as a pull reader (the caller asks for the next bytes), and
//! [`for_each_pair`] reads two tensors in lockstep through two readers: how a diff compares a
//! deflated member or a view with its counterpart, window by window, on one thread.

mod strided;

use crate::format::zip::{self, ZipError};
use crate::format::{Data, ElementType, Entry};
use crate::source::{ReadAt, SourceError};
use strided::View;

/// The largest storage span a strided view is gathered from in memory (256 MiB).
pub const MAX_GATHER_SPAN: u64 = 256 << 20;

/// Why a tensor's bytes could not be streamed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BytesError {
    /// Reading the source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Inflating a deflated member failed.
    #[error(transparent)]
    Zip(#[from] ZipError),
    /// A strided view of an element type without a whole-byte element size.
    #[error("a strided view of {ty:?} elements (views need whole-byte elements)")]
    ElementSize {
        /// The element type.
        ty: ElementType,
    },
    /// A strided view reaches past its storage, or its size overflows.
    #[error("a strided view reaches element {needed} of a storage of {available} elements")]
    OutOfStorage {
        /// Elements the view needs.
        needed: u128,
        /// Elements the storage has.
        available: u64,
    },
    /// Two tensors compared in lockstep have different byte lengths.
    #[error("tensors of {a} and {b} bytes cannot be compared")]
    LengthMismatch {
        /// Bytes of the first.
        a: u64,
        /// Bytes of the second.
        b: u64,
    },
    /// A strided view too large to gather in memory whose last dimension is not contiguous.
    #[error("a strided view spanning {span} bytes of its storage with a non-contiguous last dimension (at most {max} bytes are gathered in memory)")]
    Scattered {
        /// Bytes of storage the view spans.
        span: u64,
        /// [`MAX_GATHER_SPAN`].
        max: u64,
    },
}

/// Bytes of one element of `ty`, when it is a whole number of bytes.
fn element_bytes(ty: ElementType) -> Option<u64> {
    match ty {
        ElementType::Dtype(d) if d.bits() % 8 == 0 => Some(u64::from(d.bits() / 8)),
        _ => None,
    }
}

/// The tensor's stored byte length in element order (the bytes [`for_each_window`] streams).
pub fn byte_len(entry: &Entry) -> u64 {
    match &entry.data {
        Data::Range { len, .. } | Data::Deflated { len, .. } => *len,
        Data::Strided { .. } => element_bytes(entry.ty).map_or(0, |e| {
            entry
                .shape
                .iter()
                .try_fold(e, |n, &d| n.checked_mul(d))
                .unwrap_or(0)
        }),
    }
}

/// Streams `entry`'s bytes in element order into `f`, in pieces of at most `window` bytes (for
/// a strided view: at most `window` bytes rounded up to one element), reusing one buffer.
pub fn for_each_window<F, E>(src: &dyn ReadAt, entry: &Entry, window: usize, f: F) -> Result<(), E>
where
    F: FnMut(&[u8]) -> Result<(), E>,
    E: From<BytesError>,
{
    stream(src, entry, window, MAX_GATHER_SPAN, f)
}

/// [`for_each_window`] with the in-memory gather limit as a parameter (tests lower it).
fn stream<F, E>(
    src: &dyn ReadAt,
    entry: &Entry,
    window: usize,
    max_span: u64,
    mut f: F,
) -> Result<(), E>
where
    F: FnMut(&[u8]) -> Result<(), E>,
    E: From<BytesError>,
{
    let mut reader = Reader::with_max_span(src, entry, window, max_span)?;
    let window = window.max(1);
    let piece = match entry.data {
        Data::Strided { .. } => element_bytes(entry.ty).map_or(window, |e| {
            let e = e as usize;
            window.div_ceil(e) * e
        }),
        _ => window,
    };
    let mut buf = vec![0u8; (piece as u64).min(reader.left()) as usize];
    loop {
        let n = reader.read_some(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        f(&buf[..n])?;
    }
}

/// A pull reader of one tensor's bytes in element order (what [`for_each_window`] streams):
/// each [`Reader::read`] fills the caller's buffer with the next bytes. Two readers read in
/// lockstep compare two tensors window by window without holding either whole (see
/// [`for_each_pair`]).
pub struct Reader<'a> {
    src: &'a dyn ReadAt,
    left: u64,
    kind: Kind<'a>,
}

/// How a [`Reader`] produces its bytes.
enum Kind<'a> {
    /// A plain range: the next byte's offset.
    Range { pos: u64 },
    /// A deflated member, its header already skipped.
    Deflated(Box<zip::Inflater<'a>>),
    /// A strided view.
    Strided(strided::Strided),
}

impl<'a> Reader<'a> {
    /// A reader of `entry` of `src`: checks a view against its storage and its storage against
    /// the source, and for a view of at most [`MAX_GATHER_SPAN`] bytes of storage reads that
    /// span (in windows of `window` bytes) before returning (see the module doc).
    pub fn new(src: &'a dyn ReadAt, entry: &Entry, window: usize) -> Result<Self, BytesError> {
        Self::with_max_span(src, entry, window, MAX_GATHER_SPAN)
    }

    fn with_max_span(
        src: &'a dyn ReadAt,
        entry: &Entry,
        window: usize,
        max_span: u64,
    ) -> Result<Self, BytesError> {
        let window = window.max(1);
        let left = byte_len(entry);
        let kind = match &entry.data {
            Data::Range { offset, len } => {
                check_source(src, *offset, *len)?;
                Kind::Range { pos: *offset }
            }
            Data::Deflated {
                offset,
                compressed,
                skip,
                len,
            } => {
                let total = skip.checked_add(*len).ok_or(ZipError::RatioTooHigh {
                    at: *offset,
                    compressed: *compressed,
                    size: u64::MAX,
                    limit: zip::MAX_RATIO,
                })?;
                let mut inf = zip::Inflater::new(src, *offset, *compressed, total)?;
                inf.skip(*skip)?;
                Kind::Deflated(Box::new(inf))
            }
            Data::Strided {
                offset,
                len,
                storage_offset,
                strides,
            } => {
                let esize =
                    element_bytes(entry.ty).ok_or(BytesError::ElementSize { ty: entry.ty })?;
                check_source(src, *offset, *len)?;
                let view = View::new(&entry.shape, strides, *storage_offset, *len / esize)?;
                Kind::Strided(strided::strided(
                    src, *offset, esize, &view, window, max_span,
                )?)
            }
        };
        Ok(Reader { src, left, kind })
    }

    /// Bytes not read yet.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Reads the next `min(out.len(), left)` bytes into `out` (all of them); returns how many
    /// (0 once the tensor is read).
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, BytesError> {
        let n = (out.len() as u64).min(self.left) as usize;
        let mut filled = 0;
        while filled < n {
            filled += self.read_some(&mut out[filled..n])?;
        }
        Ok(n)
    }

    /// Reads some of the next bytes into `out`: all of `min(out.len(), left)` but for a deflated
    /// member, which gives what one step of inflation produced (a stream hands its windows on
    /// as soon as they come); returns how many (0 once the tensor is read).
    pub fn read_some(&mut self, out: &mut [u8]) -> Result<usize, BytesError> {
        let n = (out.len() as u64).min(self.left) as usize;
        if n == 0 {
            return Ok(0);
        }
        let out = &mut out[..n];
        let n = match &mut self.kind {
            Kind::Range { pos } => {
                self.src.read_exact_at(*pos, out)?;
                *pos += n as u64;
                n
            }
            Kind::Deflated(inf) => inf.read(out)?,
            Kind::Strided(view) => {
                view.read(self.src, out)?;
                n
            }
        };
        self.left -= n as u64;
        Ok(n)
    }
}

/// Refuses `len` bytes at `offset` that are not all in `src` (before anything is allocated for
/// them).
fn check_source(src: &dyn ReadAt, offset: u64, len: u64) -> Result<(), BytesError> {
    if offset.checked_add(len).is_none_or(|e| e > src.size()) {
        return Err(SourceError::OutOfBounds {
            offset,
            len,
            size: src.size(),
        }
        .into());
    }
    Ok(())
}

/// Streams two tensors of the same byte length in lockstep: `f` gets equal-length pieces of both,
/// at most `window` bytes each (one buffer per side, reused), until both are read. Errors when
/// their lengths differ.
pub fn for_each_pair<F, E>(
    a: (&dyn ReadAt, &Entry),
    b: (&dyn ReadAt, &Entry),
    window: usize,
    mut f: F,
) -> Result<(), E>
where
    F: FnMut(&[u8], &[u8]) -> Result<(), E>,
    E: From<BytesError>,
{
    let (len_a, len_b) = (byte_len(a.1), byte_len(b.1));
    if len_a != len_b {
        return Err(BytesError::LengthMismatch { a: len_a, b: len_b }.into());
    }
    let mut ra = Reader::new(a.0, a.1, window)?;
    let mut rb = Reader::new(b.0, b.1, window)?;
    let size = (window.max(1) as u64).min(len_a) as usize;
    let (mut wa, mut wb) = (vec![0u8; size], vec![0u8; size]);
    loop {
        let n = ra.read(&mut wa)?;
        if n == 0 {
            return Ok(());
        }
        rb.read(&mut wb[..n])?;
        f(&wa[..n], &wb[..n])?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::coalesce::tests::Counting;
    use crate::format::numpy::{npy, npz};
    use crate::format::{pytorch, zip::crc32};

    fn fixture(path: &str) -> Vec<u8> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/");
        std::fs::read(format!("{root}{path}")).unwrap()
    }

    /// Every entry's streamed bytes, with windows of `window` bytes.
    fn streamed(file: &[u8], entry: &Entry, window: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for_each_window::<_, BytesError>(&file, entry, window, |w| {
            assert!(w.len() <= window.max(8), "window of {} bytes", w.len());
            out.extend_from_slice(w);
            Ok(())
        })
        .unwrap();
        assert_eq!(out.len() as u64, byte_len(entry));
        out
    }

    fn f32s(b: &[u8]) -> Vec<f32> {
        b.chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn torch_views_stream_their_elements_in_view_order() {
        for name in ["views.pt", "views_legacy.pt"] {
            let file = fixture(&format!("torch/{name}"));
            let layout = pytorch::read(&file).unwrap();
            let get = |n: &str| layout.entries.iter().find(|e| e.name == n).unwrap();
            let base = f32s(&streamed(&file, get("base"), 1 << 20));
            assert_eq!(base.len(), 16 * 24);
            assert!(matches!(get("transposed").data, Data::Strided { .. }));
            for window in [4, 12, 100, 1 << 20] {
                let t = f32s(&streamed(&file, get("transposed"), window));
                // transposed[i][j] == base[j][i]
                for i in 0..24 {
                    for j in 0..16 {
                        assert_eq!(t[i * 16 + j], base[j * 24 + i], "{name} window {window}");
                    }
                }
                let col = f32s(&streamed(&file, get("column"), window));
                assert!(
                    (0..24).any(|k| (0..16).all(|r| col[r] == base[r * 24 + k])),
                    "{name}: column is a column of base"
                );
            }
        }
    }

    #[test]
    fn numpy_fortran_and_compressed_arrays_match_their_crcs() {
        let expected: serde_json::Value =
            serde_json::from_slice(&fixture("numpy/expected.json")).unwrap();
        let mut checked = 0;
        for (file_name, want) in expected.as_object().unwrap() {
            if want.get("error").is_some() {
                continue; // a file the readers refuse (object, big-endian, deflated Fortran…)
            }
            let file = fixture(&format!("numpy/{file_name}"));
            let layout = if file_name.ends_with(".npz") {
                npz::read(&file).unwrap()
            } else {
                npy::read(&file).unwrap()
            };
            let Some(entries) = want["entries"].as_array() else {
                continue;
            };
            for (e, w) in layout.entries.iter().zip(entries) {
                assert_eq!(e.name, w["name"].as_str().unwrap());
                let Some(crc) = w["crc32"].as_u64() else {
                    continue;
                };
                let Data::Strided { offset, len, .. } = e.data else {
                    for window in [7, 4096] {
                        let got = crc32(0, &streamed(&file, e, window));
                        assert_eq!(u64::from(got), crc, "{file_name}: {}", e.name);
                    }
                    checked += 1;
                    continue;
                };
                // Fortran order: the CRC is of the stored (column-major) bytes; the streamed
                // bytes are their row-major transposition.
                let stored = &file[offset as usize..(offset + len) as usize];
                assert_eq!(u64::from(crc32(0, stored)), crc, "{file_name}");
                let es = element_bytes(e.ty).unwrap() as usize;
                let (rows, cols) = (e.shape[0] as usize, e.shape[1] as usize);
                for window in [7, 4096] {
                    let s = streamed(&file, e, window);
                    for i in 0..rows {
                        for j in 0..cols {
                            let (r, c) = ((i * cols + j) * es, (j * rows + i) * es);
                            assert_eq!(s[r..r + es], stored[c..c + es], "{file_name}");
                        }
                    }
                }
                checked += 1;
            }
        }
        assert!(checked >= 8, "checked {checked} arrays");
    }

    #[test]
    fn large_views_are_read_by_rows_or_refused_when_their_rows_are_strided() {
        let file = fixture("torch/views.pt");
        let layout = pytorch::read(&file).unwrap();
        let get = |n: &str| layout.entries.iter().find(|e| e.name == n).unwrap();
        let base = streamed(&file, get("base"), 1 << 20);
        // `base` as a strided view of its own storage: rows [2, 24) of 16 in storage order
        // (last dimension contiguous), with a gather limit below its span.
        let Data::Range { offset, len } = get("base").data else {
            panic!("base is contiguous")
        };
        let rows = Entry {
            name: "rows".into(),
            ty: get("base").ty,
            shape: vec![14, 24],
            data: Data::Strided {
                offset,
                len,
                storage_offset: 2 * 24,
                strides: vec![24, 1],
            },
        };
        let counting = Counting {
            file: &file,
            reads: std::cell::Cell::new(0),
        };
        let reads = &counting.reads;
        for window in [5, 100, 4096] {
            reads.set(0);
            let mut out = Vec::new();
            stream::<_, BytesError>(&counting, &rows, window, 64, |w| {
                out.extend_from_slice(w);
                Ok(())
            })
            .unwrap();
            assert_eq!(out, base[2 * 24 * 4..]);
            if window == 4096 {
                assert_eq!(reads.get(), 14, "one read per row");
            }
        }
        let r = stream::<_, BytesError>(&file, get("transposed"), 4096, 64, |_| Ok(()));
        assert!(matches!(r, Err(BytesError::Scattered { max: 64, .. })));
    }

    #[test]
    fn a_view_past_its_storage_is_refused_before_reading() {
        let file = vec![0u8; 64];
        let entry = Entry {
            name: "v".into(),
            ty: ElementType::Dtype(crate::Dtype::F32),
            shape: vec![4, 4],
            data: Data::Strided {
                offset: 0,
                len: 64,
                storage_offset: 1,
                strides: vec![1, 4],
            },
        };
        let r = for_each_window::<_, BytesError>(&file, &entry, 16, |_| Ok(()));
        assert!(matches!(
            r,
            Err(BytesError::OutOfStorage {
                needed: 17,
                available: 16
            })
        ));
    }

    #[test]
    fn empty_views_and_huge_strides_of_unit_dimensions_are_read_without_overflow() {
        let file: Vec<u8> = (0..64u8).collect();
        let view = |shape: Vec<u64>, storage_offset, strides| Entry {
            name: "v".into(),
            ty: ElementType::Dtype(crate::Dtype::U8),
            shape,
            data: Data::Strided {
                offset: 0,
                len: 64,
                storage_offset,
                strides,
            },
        };
        // No element: nothing is read, wherever its storage offset points (a fuzzer's find).
        let empty = view(vec![0, 3], u64::MAX, vec![1, 1]);
        assert_eq!(streamed(&file, &empty, 8), Vec::<u8>::new());
        // A dimension of size 1 may have any stride.
        let unit = view(vec![4, 1, 2], 1, vec![8, u64::MAX, 1]);
        let want: Vec<u8> = (0..4).flat_map(|i| [1 + 8 * i, 2 + 8 * i]).collect();
        for window in [1, 3, 64] {
            assert_eq!(streamed(&file, &unit, window), want);
            let mut pulled = Vec::new();
            for_each_pair::<_, BytesError>((&file, &unit), (&file, &unit), window, |a, b| {
                assert_eq!(a, b);
                pulled.extend_from_slice(a);
                Ok(())
            })
            .unwrap();
            assert_eq!(pulled, want);
        }
    }
}
