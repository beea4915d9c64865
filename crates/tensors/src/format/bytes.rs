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
//! Every view is checked against its storage before anything is read.

use super::zip::{self, ZipError};
use super::{Data, ElementType, Entry};
use crate::source::{ReadAt, SourceError};

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

/// Errors inside the streaming: ours, or the callback's.
enum Wrap<E> {
    Bytes(BytesError),
    User(E),
}

impl<E> From<ZipError> for Wrap<E> {
    fn from(e: ZipError) -> Self {
        Wrap::Bytes(e.into())
    }
}

impl<E> From<SourceError> for Wrap<E> {
    fn from(e: SourceError) -> Self {
        Wrap::Bytes(e.into())
    }
}

impl<E: From<BytesError>> Wrap<E> {
    fn unwrap_into(self) -> E {
        match self {
            Wrap::Bytes(b) => b.into(),
            Wrap::User(e) => e,
        }
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
    let window = window.max(1);
    match &entry.data {
        Data::Range { offset, len } => {
            let end = offset.checked_add(*len).ok_or(BytesError::OutOfStorage {
                needed: u128::from(*offset) + u128::from(*len),
                available: src.size(),
            })?;
            crate::source::for_each_window(src, *offset, end, window, |w| f(w).map_err(Wrap::User))
                .map_err(Wrap::unwrap_into)
        }
        Data::Deflated {
            offset,
            compressed,
            skip,
            len,
        } => zip::for_each_inflated(src, *offset, *compressed, *skip, *len, window, |w| {
            f(w).map_err(Wrap::User)
        })
        .map_err(Wrap::unwrap_into),
        Data::Strided {
            offset,
            len,
            storage_offset,
            strides,
        } => {
            let esize = element_bytes(entry.ty).ok_or(BytesError::ElementSize { ty: entry.ty })?;
            let view = View::new(&entry.shape, strides, *storage_offset, *len / esize)?;
            gather(src, *offset, esize, &view, window, max_span, &mut f)
        }
    }
}

/// A checked strided view: its shape, strides, first and last storage element.
struct View<'a> {
    shape: &'a [u64],
    strides: &'a [u64],
    first: u64,
    numel: u64,
    /// Smallest and largest storage element touched (`numel > 0`).
    lo: u64,
    hi: u64,
}

impl<'a> View<'a> {
    fn new(
        shape: &'a [u64],
        strides: &'a [u64],
        first: u64,
        available: u64,
    ) -> Result<View<'a>, BytesError> {
        let out = |needed| BytesError::OutOfStorage { needed, available };
        if shape.len() != strides.len() {
            return Err(out(u128::MAX));
        }
        let numel = shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .ok_or(out(u128::MAX))?;
        if numel == 0 {
            return Ok(View {
                shape,
                strides,
                first,
                numel,
                lo: first,
                hi: first,
            });
        }
        // Strides are unsigned, so the first element is the lowest and the last the highest.
        let last = shape
            .iter()
            .zip(strides)
            .try_fold(u128::from(first), |acc, (&d, &s)| {
                acc.checked_add(u128::from(d - 1) * u128::from(s))
            })
            .ok_or(out(u128::MAX))?;
        if last >= u128::from(available) {
            return Err(out(last + 1));
        }
        Ok(View {
            shape,
            strides,
            first,
            numel,
            lo: first,
            hi: last as u64,
        })
    }

    /// Calls `visit(storage element)` for every element in row-major order, with an odometer.
    fn for_each_index(&self, mut visit: impl FnMut(u64) -> bool) {
        if self.numel == 0 {
            return;
        }
        let dims = self.shape.len();
        let mut idx = vec![0u64; dims];
        let mut pos = self.first;
        loop {
            if !visit(pos) {
                return;
            }
            let mut d = dims;
            loop {
                if d == 0 {
                    return;
                }
                d -= 1;
                idx[d] += 1;
                pos += self.strides[d];
                if idx[d] < self.shape[d] {
                    break;
                }
                pos -= self.strides[d] * self.shape[d];
                idx[d] = 0;
            }
        }
    }
}

/// The output window of a gather: filled piece by piece, handed to the callback when full.
struct Windows<'f, F> {
    out: Vec<u8>,
    fill: usize,
    f: &'f mut F,
}

impl<F, E> Windows<'_, F>
where
    F: FnMut(&[u8]) -> Result<(), E>,
{
    /// The unfilled part of the window.
    fn room(&mut self) -> &mut [u8] {
        &mut self.out[self.fill..]
    }

    /// Marks `n` more bytes filled; hands the window over when it is full.
    fn advance(&mut self, n: usize) -> Result<(), E> {
        self.fill += n;
        if self.fill == self.out.len() {
            (self.f)(&self.out)?;
            self.fill = 0;
        }
        Ok(())
    }

    /// Hands over what is left.
    fn finish(self) -> Result<(), E> {
        if self.fill > 0 {
            (self.f)(&self.out[..self.fill])?;
        }
        Ok(())
    }
}

/// Gathers a view's elements in order into windows (see the module doc for the cost).
fn gather<F, E>(
    src: &dyn ReadAt,
    offset: u64,
    esize: u64,
    view: &View,
    window: usize,
    max_span: u64,
    f: &mut F,
) -> Result<(), E>
where
    F: FnMut(&[u8]) -> Result<(), E>,
    E: From<BytesError>,
{
    if view.numel == 0 {
        return Ok(());
    }
    let es = esize as usize;
    let per_window = ((window / es).max(1) as u64).min(view.numel) as usize;
    let mut out = Windows {
        out: vec![0u8; per_window * es],
        fill: 0,
        f,
    };
    let span = (view.hi - view.lo + 1) * esize;
    let mut err: Option<E> = None;
    if span <= max_span {
        let base = offset + view.lo * esize;
        let mut storage = vec![0u8; span as usize];
        for (i, chunk) in storage.chunks_mut(window).enumerate() {
            src.read_exact_at(base + (i * window) as u64, chunk)
                .map_err(BytesError::from)?;
        }
        view.for_each_index(|pos| {
            let at = ((pos - view.lo) * esize) as usize;
            out.room()[..es].copy_from_slice(&storage[at..at + es]);
            out.advance(es).map_err(|e| err = Some(e)).is_ok()
        });
    } else {
        let dims = view.shape.len();
        if dims == 0 || view.strides[dims - 1] != 1 {
            return Err(BytesError::Scattered {
                span,
                max: max_span,
            }
            .into());
        }
        // Rows: the last dimension is contiguous; one read per row (or per window of a row).
        let row = view.shape[dims - 1] * esize;
        let rows = View {
            shape: &view.shape[..dims - 1],
            strides: &view.strides[..dims - 1],
            first: view.first,
            numel: view.numel / view.shape[dims - 1],
            lo: view.lo,
            hi: view.hi,
        };
        rows.for_each_index(|start| {
            let mut at = offset + start * esize;
            let mut left = row;
            while left > 0 {
                let room = out.room();
                let n = left.min(room.len() as u64) as usize;
                if let Err(e) = src.read_exact_at(at, &mut room[..n]) {
                    err = Some(BytesError::from(e).into());
                    return false;
                }
                if let Err(e) = out.advance(n) {
                    err = Some(e);
                    return false;
                }
                at += n as u64;
                left -= n as u64;
            }
            true
        });
    }
    match err {
        Some(e) => Err(e),
        None => out.finish(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::coalesce::tests::Counting;
    use crate::format::{npy, npz, pytorch, zip::crc32};

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
}
