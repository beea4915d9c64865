//! How far lossily decoded float values are from the originals: [`ErrorStats`], the one
//! accumulator behind the error report stored in a snapshot's index ([`ErrorReport`]), the lossy
//! rows of `bitlens bench` and the page's codec round trips.
//!
//! It lives in this crate because the snapshot format owns the report it produces (the writer
//! stores one per lossy tensor), and both the CLI and the wasm layer already depend on it; the
//! codecs crate stays free of reporting.
//!
//! Rules, per `(original, decoded)` pair of values (read exactly, `f16` / `bf16` with `half`):
//! - a finite original is one of the report's `values`. Its error is `|decoded - original|`
//!   (infinite when the decoded value is NaN or infinite); the relative error `error / |original|`
//!   is taken over the nonzero originals. MSE and the mean relative error average over these.
//! - a non-finite original (NaN, ±Inf) is not one of the `values`: it is *kept* when the decoded
//!   value is of the same kind (any NaN for a NaN, the same infinity for an infinity) and adds no
//!   error; otherwise it is *lost*.
//! - every non-finite mismatch — a finite original decoded as NaN / Inf, or a lost non-finite
//!   original — is counted ([`ErrorStats::nonfinite_lost`]) and makes the largest absolute and
//!   relative errors infinite, so a report can never look exact when one was not.
//!
//! Subnormal values are ordinary finite values. Accumulators of parts of a tensor [`merge`]
//! (sums add, maxima take the larger); feeding the parts to one accumulator in order gives the
//! same floating-point sums as merging them in that order.
//!
//! [`merge`]: ErrorStats::merge

use crate::format::ErrorReport;
use bitlens_tensors::Dtype;

/// Why [`ErrorStats::add_bytes`] could not compare two buffers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MetricsError {
    /// The dtype has no float values to compare (integers, packed or 8-bit floats, complex).
    #[error("{dtype} values have no error report")]
    NotFloat {
        /// The dtype.
        dtype: Dtype,
    },
    /// The buffers differ in length.
    #[error("original is {original} bytes but decoded is {decoded}")]
    LengthMismatch {
        /// Original length.
        original: usize,
        /// Decoded length.
        decoded: usize,
    },
}

/// Running error sums over `(original, decoded)` value pairs; see the module doc for the rules.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ErrorStats {
    values: u64,
    sq: f64,
    max_abs: f64,
    max_rel: f64,
    rel: f64,
    rel_count: u64,
    nonfinite_kept: u64,
    nonfinite_lost: u64,
}

/// True when `a` and `b` are both NaN or the same infinity.
fn same_nonfinite(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || (a.is_infinite() && a == b)
}

impl ErrorStats {
    /// Adds one pair.
    #[inline]
    pub fn add(&mut self, original: f64, decoded: f64) {
        let x = original;
        if !x.is_finite() {
            if same_nonfinite(x, decoded) {
                self.nonfinite_kept += 1;
            } else {
                self.lost();
            }
            return;
        }
        let e = if decoded.is_finite() {
            (decoded - x).abs()
        } else {
            self.lost();
            f64::INFINITY
        };
        self.values += 1;
        self.sq += e * e;
        self.max_abs = self.max_abs.max(e);
        if x != 0.0 {
            let r = e / x.abs();
            self.max_rel = self.max_rel.max(r);
            self.rel += r;
            self.rel_count += 1;
        }
    }

    fn lost(&mut self) {
        self.nonfinite_lost += 1;
        self.max_abs = f64::INFINITY;
        self.max_rel = f64::INFINITY;
    }

    /// Adds every pair of two little-endian buffers of `dtype` values (F64, F32, F16 or BF16).
    pub fn add_bytes(
        &mut self,
        dtype: Dtype,
        original: &[u8],
        decoded: &[u8],
    ) -> Result<(), MetricsError> {
        if original.len() != decoded.len() {
            return Err(MetricsError::LengthMismatch {
                original: original.len(),
                decoded: decoded.len(),
            });
        }
        match dtype {
            Dtype::F64 => self.add_lanes(original, decoded, f64::from_le_bytes),
            Dtype::F32 => self.add_lanes(original, decoded, |b| f32::from_le_bytes(b).into()),
            Dtype::F16 => {
                self.add_lanes(original, decoded, |b| half::f16::from_le_bytes(b).to_f64())
            }
            Dtype::BF16 => {
                self.add_lanes(original, decoded, |b| half::bf16::from_le_bytes(b).to_f64())
            }
            _ => return Err(MetricsError::NotFloat { dtype }),
        }
        Ok(())
    }

    #[inline]
    fn add_lanes<const W: usize>(&mut self, a: &[u8], b: &[u8], value: impl Fn([u8; W]) -> f64) {
        let (a, _) = a.as_chunks::<W>();
        let (b, _) = b.as_chunks::<W>();
        for (x, y) in a.iter().zip(b) {
            self.add(value(*x), value(*y));
        }
    }

    /// Adds the pairs another accumulator has seen.
    pub fn merge(&mut self, other: &ErrorStats) {
        self.values += other.values;
        self.sq += other.sq;
        self.max_abs = self.max_abs.max(other.max_abs);
        self.max_rel = self.max_rel.max(other.max_rel);
        self.rel += other.rel;
        self.rel_count += other.rel_count;
        self.nonfinite_kept += other.nonfinite_kept;
        self.nonfinite_lost += other.nonfinite_lost;
    }

    /// Finite originals compared.
    pub fn values(&self) -> u64 {
        self.values
    }

    /// Non-finite originals decoded as the same kind of non-finite value.
    pub fn nonfinite_kept(&self) -> u64 {
        self.nonfinite_kept
    }

    /// Non-finite mismatches: finite originals decoded as NaN / Inf, and non-finite originals not
    /// kept.
    pub fn nonfinite_lost(&self) -> u64 {
        self.nonfinite_lost
    }

    /// The report as the snapshot index stores it (means are 0 over no values).
    pub fn report(&self) -> ErrorReport {
        ErrorReport {
            values: self.values,
            mse: self.sq / self.values.max(1) as f64,
            max_abs: self.max_abs,
            max_rel: self.max_rel,
            mean_rel: self.rel / self.rel_count.max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    fn stats(pairs: &[(f64, f64)]) -> ErrorStats {
        let mut s = ErrorStats::default();
        for &(x, y) in pairs {
            s.add(x, y);
        }
        s
    }

    #[test]
    fn finite_values_give_the_usual_sums() {
        let r = stats(&[(1.0, 1.5), (-2.0, -2.0), (0.0, 0.25), (4.0, 3.0)]).report();
        assert_eq!(r.values, 4);
        assert_eq!(r.mse, (0.25 + 0.0 + 0.0625 + 1.0) / 4.0);
        assert_eq!(r.max_abs, 1.0);
        // Relative errors over the nonzero originals only: 0.5, 0, 0.25.
        assert_eq!(r.max_rel, 0.5);
        assert_eq!(r.mean_rel, 0.75 / 3.0);
    }

    #[test]
    fn nothing_compared_reports_zeros() {
        assert_eq!(ErrorStats::default().report(), ErrorReport::default());
    }

    #[test]
    fn non_finite_originals_kept_add_no_error() {
        let s = stats(&[
            (f64::NAN, -f64::NAN),
            (f64::INFINITY, f64::INFINITY),
            (f64::NEG_INFINITY, f64::NEG_INFINITY),
            (1.0, 1.0),
        ]);
        assert_eq!(s.report(), stats(&[(1.0, 1.0)]).report());
        assert_eq!((s.nonfinite_kept(), s.nonfinite_lost()), (3, 0));
    }

    #[test]
    fn non_finite_originals_lost_make_the_maxima_infinite() {
        for (x, y) in [
            (f64::NAN, 1.0),
            (f64::INFINITY, f64::NEG_INFINITY),
            (f64::INFINITY, f64::NAN),
            (f64::NEG_INFINITY, -65504.0),
        ] {
            let s = stats(&[(x, y), (2.0, 2.0)]);
            let r = s.report();
            assert_eq!((r.values, r.mse, r.mean_rel), (1, 0.0, 0.0), "{x} → {y}");
            assert_eq!((r.max_abs, r.max_rel), (f64::INFINITY, f64::INFINITY));
            assert_eq!(s.nonfinite_lost(), 1);
        }
    }

    #[test]
    fn finite_originals_decoded_non_finite_are_infinite_errors() {
        for y in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let s = stats(&[(3.0, y), (0.0, y)]);
            let r = s.report();
            assert_eq!(r.values, 2);
            assert_eq!(r.mse, f64::INFINITY);
            assert_eq!(
                (r.max_abs, r.max_rel, r.mean_rel),
                (f64::INFINITY, f64::INFINITY, f64::INFINITY)
            );
            assert_eq!(s.nonfinite_lost(), 2);
        }
    }

    #[test]
    fn subnormals_are_ordinary_values() {
        let tiny = f16::from_bits(0x0001); // 2^-24, the smallest f16 subnormal
        let twice = f16::from_bits(0x0002);
        let mut s = ErrorStats::default();
        let bytes = |v: &[f16]| v.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<u8>>();
        s.add_bytes(Dtype::F16, &bytes(&[tiny, tiny]), &bytes(&[twice, tiny]))
            .unwrap();
        let r = s.report();
        assert_eq!(r.values, 2);
        assert_eq!(r.max_abs, 2f64.powi(-24));
        assert_eq!(r.max_rel, 1.0);
        let sub = bf16::from_bits(0x0001); // the smallest bf16 subnormal, 2^-133
        let mut s = ErrorStats::default();
        s.add_bytes(Dtype::BF16, &sub.to_le_bytes(), &bf16::ZERO.to_le_bytes())
            .unwrap();
        assert_eq!(s.report().max_abs, 2f64.powi(-133));
        assert_eq!(s.report().max_rel, 1.0);
    }

    #[test]
    fn bytes_of_each_float_dtype_decode_exactly() {
        let (x, y) = (1.0f64 + 2f64.powi(-7), 1.0f64);
        let cases: [(Dtype, Vec<u8>, Vec<u8>); 4] = [
            (Dtype::F64, x.to_le_bytes().into(), y.to_le_bytes().into()),
            (
                Dtype::F32,
                (x as f32).to_le_bytes().into(),
                (y as f32).to_le_bytes().into(),
            ),
            (
                Dtype::F16,
                f16::from_f64(x).to_le_bytes().into(),
                f16::from_f64(y).to_le_bytes().into(),
            ),
            (
                Dtype::BF16,
                bf16::from_f64(x).to_le_bytes().into(),
                bf16::from_f64(y).to_le_bytes().into(),
            ),
        ];
        for (dtype, a, b) in cases {
            let mut s = ErrorStats::default();
            s.add_bytes(dtype, &a, &b).unwrap();
            assert_eq!(s.report().max_abs, 2f64.powi(-7), "{dtype}");
        }
        // NaN and Inf bit patterns of the half types go through `half` as well.
        let mut s = ErrorStats::default();
        let nan_inf = [0x7E00u16, 0x7C00]
            .map(|b| f16::from_bits(b).to_le_bytes())
            .concat();
        s.add_bytes(Dtype::F16, &nan_inf, &nan_inf).unwrap();
        assert_eq!(s.nonfinite_kept(), 2);
    }

    #[test]
    fn other_dtypes_and_unequal_lengths_are_refused() {
        let mut s = ErrorStats::default();
        assert_eq!(
            s.add_bytes(Dtype::I32, &[0; 4], &[0; 4]),
            Err(MetricsError::NotFloat { dtype: Dtype::I32 })
        );
        assert!(matches!(
            s.add_bytes(Dtype::F32, &[0; 4], &[0; 8]),
            Err(MetricsError::LengthMismatch { .. })
        ));
        assert_eq!(s, ErrorStats::default());
    }

    #[test]
    fn merging_parts_equals_one_pass() {
        let pairs: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64 - 50.0, (i as f64 - 50.0) * 1.01))
            .chain([(f64::NAN, f64::NAN), (1.0, f64::INFINITY)])
            .collect();
        let whole = stats(&pairs);
        let mut merged = stats(&pairs[..37]);
        merged.merge(&stats(&pairs[37..]));
        assert_eq!(merged.values(), whole.values());
        assert_eq!(merged.nonfinite_kept(), 1);
        assert_eq!(merged.nonfinite_lost(), 1);
        let (m, w) = (merged.report(), whole.report());
        assert_eq!((m.max_abs, m.max_rel), (w.max_abs, w.max_rel));
        let finite = &pairs[..100];
        let mut m = stats(&finite[..37]);
        m.merge(&stats(&finite[37..]));
        let w = stats(finite).report();
        assert!((m.report().mse - w.mse).abs() <= 1e-12 * w.mse);
        assert!((m.report().mean_rel - w.mean_rel).abs() <= 1e-12 * w.mean_rel);
        assert_eq!(m.report().max_rel, w.max_rel);
    }
}
