//! Strided views (PyTorch views into a shared storage, Fortran-ordered `.npy` arrays): a view is
//! checked against its storage ([`View::new`]: every element it touches is there, nothing
//! overflows), then its elements, at `storage_offset + Σ index·stride` (torch's `as_strided`), are
//! produced in row-major order either gathered from the storage span held in memory or read row
//! by row (see the parent module's doc for when each is used and what it costs).

use super::BytesError;
use crate::source::ReadAt;

/// How a strided view's bytes are produced.
pub(super) enum Strided {
    /// A view gathered from its storage span held in memory; `part` bytes of the current element
    /// are already out.
    Gather {
        storage: Vec<u8>,
        lo: u64,
        es: usize,
        part: usize,
        odo: Odometer,
    },
    /// A view read row by row (contiguous last dimension); `done` bytes of the current row
    /// (whose first storage element the odometer gives) are already out.
    Rows {
        offset: u64,
        es: u64,
        row: u64,
        done: u64,
        odo: Odometer,
    },
}

impl Strided {
    /// Fills all of `out` with the view's next bytes (the caller bounds `out` by the bytes left).
    pub(super) fn read(&mut self, src: &dyn ReadAt, out: &mut [u8]) -> Result<(), BytesError> {
        let n = out.len();
        match self {
            Strided::Gather {
                storage,
                lo,
                es,
                part,
                odo,
            } => {
                let mut filled = 0;
                while filled < n {
                    let at = ((odo.pos - *lo) as usize) * *es + *part;
                    let k = (*es - *part).min(n - filled);
                    out[filled..filled + k].copy_from_slice(&storage[at..at + k]);
                    filled += k;
                    *part += k;
                    if *part == *es {
                        *part = 0;
                        odo.step();
                    }
                }
            }
            Strided::Rows {
                offset,
                es,
                row,
                done,
                odo,
            } => {
                let mut filled = 0;
                while filled < n {
                    let k = (*row - *done).min((n - filled) as u64) as usize;
                    let at = *offset + odo.pos * *es + *done;
                    src.read_exact_at(at, &mut out[filled..filled + k])?;
                    filled += k;
                    *done += k as u64;
                    if *done == *row {
                        *done = 0;
                        odo.step();
                    }
                }
            }
        }
        Ok(())
    }
}

/// Row-major position in a strided view: the index and its storage element.
pub(super) struct Odometer {
    shape: Vec<u64>,
    strides: Vec<u64>,
    idx: Vec<u64>,
    pos: u64,
}

impl Odometer {
    fn new(shape: &[u64], strides: &[u64], first: u64) -> Odometer {
        Odometer {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            idx: vec![0; shape.len()],
            pos: first,
        }
    }

    /// The next index in row-major order (wrapping to the first after the last; the reader stops
    /// by its byte count before that matters).
    fn step(&mut self) {
        // Wrapping: a dimension of size 1 may have any stride, so stepping past its end can leave
        // u64 before stepping back; every position the reader uses is in the view (`View::new`).
        for d in (0..self.shape.len()).rev() {
            self.idx[d] += 1;
            self.pos = self.pos.wrapping_add(self.strides[d]);
            if self.idx[d] < self.shape[d] {
                return;
            }
            self.pos = self
                .pos
                .wrapping_sub(self.strides[d].wrapping_mul(self.shape[d]));
            self.idx[d] = 0;
        }
    }
}

/// A checked strided view: its shape, strides, first and last storage element.
pub(super) struct View<'a> {
    shape: &'a [u64],
    strides: &'a [u64],
    first: u64,
    numel: u64,
    /// Smallest and largest storage element touched (`numel > 0`).
    lo: u64,
    hi: u64,
}

impl<'a> View<'a> {
    /// Checks a view of `available` storage elements: every element it touches is in the storage.
    pub(super) fn new(
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
}

/// How a view is read (see the module doc for the cost).
pub(super) fn strided(
    src: &dyn ReadAt,
    offset: u64,
    esize: u64,
    view: &View,
    window: usize,
    max_span: u64,
) -> Result<Strided, BytesError> {
    let odometer = || Odometer::new(view.shape, view.strides, view.first);
    if view.numel == 0 {
        // Nothing to read (the view's first element need not exist).
        return Ok(Strided::Gather {
            storage: Vec::new(),
            lo: view.lo,
            es: esize as usize,
            part: 0,
            odo: odometer(),
        });
    }
    // The view lies in its storage (`View::new`), and the storage in the source (`check_source`):
    // none of these products overflow.
    let span = (view.hi - view.lo + 1) * esize;
    if span <= max_span {
        let base = offset + view.lo * esize;
        let mut storage = vec![0u8; span as usize];
        for (i, chunk) in storage.chunks_mut(window).enumerate() {
            src.read_exact_at(base + (i * window) as u64, chunk)?;
        }
        return Ok(Strided::Gather {
            storage,
            lo: view.lo,
            es: esize as usize,
            part: 0,
            odo: odometer(),
        });
    }
    let dims = view.shape.len();
    if dims == 0 || view.strides[dims - 1] != 1 {
        return Err(BytesError::Scattered {
            span,
            max: max_span,
        });
    }
    // Rows: the last dimension is contiguous; one read per row (or per window of a row).
    Ok(Strided::Rows {
        offset,
        es: esize,
        row: view.shape[dims - 1] * esize,
        done: 0,
        odo: Odometer::new(
            &view.shape[..dims - 1],
            &view.strides[..dims - 1],
            view.first,
        ),
    })
}
