//! NumPy `.npy` files: versions 1.0, 2.0 and 3.0 of the format as `numpy/lib/format.py`
//! (NEP 1) writes them — the magic `\x93NUMPY`, a version, a little-endian header length (u16 for
//! 1.0, u32 for 2.0 and 3.0), a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` (latin-1 for 1.0/2.0, UTF-8 for
//! 3.0), then the array's bytes.
//!
//! The dict is read by a small strict literal parser ([`literal`]: strings, integers, booleans,
//! `None`, tuples, lists and dicts, nothing evaluated) and must hold exactly the keys `descr`,
//! `fortran_order` and `shape`, as numpy requires. Element types are the little-endian numeric ones
//! bitlens knows (`<f2 <f4 <f8 |b1 |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 <c8`); big-endian arrays,
//! object arrays (`|O`: a pickle, refused by name), structured and void types (ml_dtypes'
//! `bfloat16` is saved as `<V2` and its element type is lost) and other kinds are refused with an
//! error naming the descriptor.
//!
//! `fortran_order: True` arrays are given as [`Data::Strided`] with column-major strides (or
//! [`Data::Range`] when the order does not matter: at most one dimension longer than 1).
//! The file has no name for its array: its one entry is named [`ENTRY_NAME`].

pub mod literal;

use crate::format::{Data, ElementType, Entry, Format, Layout, MetaValue};
use crate::source::{ReadAt, SourceError};
use crate::Dtype;

/// The magic string every `.npy` starts with.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Bytes needed to know a header's length: magic, version, and a u32 length.
pub const PREAMBLE_LEN: usize = 12;
/// The longest header accepted (numpy refuses more than 10 000 bytes unless told otherwise; the
/// headers of the types read here take about 128).
pub const MAX_HEADER_LEN: u64 = 65_536;
/// The most dimensions an array may have (numpy's `NPY_MAXDIMS`).
pub const MAX_DIMS: usize = 64;
/// The name of a `.npy` file's one entry.
pub const ENTRY_NAME: &str = "array";

/// Why a `.npy` file (or an `.npz` member) cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpyError {
    /// A read from the source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// Fewer bytes than the magic, version and header length.
    #[error(".npy: {size} bytes is too small for the magic, version and header length")]
    TooSmall {
        /// The size.
        size: u64,
    },
    /// The magic string is missing.
    #[error(".npy: missing the magic string \\x93NUMPY")]
    BadMagic,
    /// A version other than 1.0, 2.0 and 3.0.
    #[error(".npy: unsupported format version {major}.{minor} (1.0, 2.0 and 3.0 are known)")]
    UnsupportedVersion {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// The header is longer than [`MAX_HEADER_LEN`].
    #[error(".npy: header of {len} bytes exceeds the limit of {limit}")]
    HeaderTooLong {
        /// Declared length.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// The header runs past the end of the file.
    #[error(".npy: header ends at byte {end}, past the end of the file ({size} bytes)")]
    HeaderOutOfFile {
        /// Where the header ends.
        end: u64,
        /// The file size.
        size: u64,
    },
    /// The header is not in its version's encoding.
    #[error(".npy: header is not valid {encoding}")]
    HeaderEncoding {
        /// The encoding expected.
        encoding: &'static str,
    },
    /// The header is not a Python literal this parser reads.
    #[error(".npy: header syntax error at byte {at} of the dict: {why}")]
    Syntax {
        /// Offset in the header text.
        at: usize,
        /// What was expected.
        why: &'static str,
    },
    /// The header is a literal but not a dict.
    #[error(".npy: header is not a dict")]
    NotADict,
    /// A required key is missing.
    #[error(".npy: header has no {key:?} key")]
    MissingKey {
        /// The key.
        key: &'static str,
    },
    /// A key other than `descr`, `fortran_order`, `shape` (or a key twice).
    #[error(".npy: header has an unexpected or repeated key {key}")]
    UnexpectedKey {
        /// The key, as written.
        key: String,
    },
    /// A key's value has the wrong type.
    #[error(".npy: header's {key:?} must be {expected}")]
    BadValue {
        /// The key.
        key: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// An object array: its data is a pickle.
    #[error(".npy: object array (descr {descr:?}): its data is a pickle, which is never loaded")]
    Pickle {
        /// The descriptor.
        descr: String,
    },
    /// A structured dtype (a list of fields).
    #[error(".npy: structured dtype {descr} is not supported (only plain numeric arrays)")]
    Structured {
        /// The descriptor, as written.
        descr: String,
    },
    /// A void dtype (`V2`: how ml_dtypes' bfloat16 is saved) — raw bytes of unknown type.
    #[error(".npy: void dtype {descr:?} holds raw bytes of unknown type (ml_dtypes' bfloat16 is saved as '<V2'); not supported")]
    Void {
        /// The descriptor.
        descr: String,
    },
    /// A big-endian dtype.
    #[error(".npy: big-endian dtype {descr:?} is not supported (save the array little-endian: arr.astype(arr.dtype.newbyteorder('<')))")]
    BigEndian {
        /// The descriptor.
        descr: String,
    },
    /// A dtype bitlens has no element type for (strings, datetimes, complex128, …).
    #[error(".npy: unsupported dtype {descr:?}")]
    UnsupportedDtype {
        /// The descriptor.
        descr: String,
    },
    /// More dimensions than [`MAX_DIMS`].
    #[error(".npy: {dims} dimensions exceed numpy's limit of {limit}")]
    TooManyDims {
        /// The dimensions.
        dims: usize,
        /// The limit.
        limit: usize,
    },
    /// The shape's byte size overflows 64 bits.
    #[error(".npy: shape {shape:?} overflows 64-bit byte sizes")]
    SizeOverflow {
        /// The shape.
        shape: Vec<u64>,
    },
    /// The data runs past the end of the file.
    #[error(
        ".npy: {len} bytes of data at offset {offset} run past the end of the file ({size} bytes)"
    )]
    DataOutOfFile {
        /// Where the data starts.
        offset: u64,
        /// Its length.
        len: u64,
        /// The file (or member) size.
        size: u64,
    },
}

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// Format version `(major, minor)`.
    pub version: (u8, u8),
    /// The `descr` string as written (`<f4`).
    pub descr: String,
    /// The element type.
    pub dtype: Dtype,
    /// Whether the data is in column-major order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<u64>,
    /// Header length including magic, version and length field: where the data starts.
    pub data_offset: u64,
    /// The data's length: product of the shape × item size.
    pub data_len: u64,
}

impl NpyHeader {
    /// `"1.0"`, `"2.0"`, `"3.0"`.
    pub fn version_string(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }

    /// Where this array's bytes are, its data starting at `offset`: a range in row-major order,
    /// or column-major strides for a Fortran-ordered array with more than one dimension longer
    /// than 1.
    pub fn data_at(&self, offset: u64) -> Data {
        let long_dims = self.shape.iter().filter(|&&d| d > 1).count();
        if !self.fortran_order || long_dims <= 1 {
            return Data::Range {
                offset,
                len: self.data_len,
            };
        }
        let mut strides = Vec::with_capacity(self.shape.len());
        let mut s = 1u64;
        for &d in &self.shape {
            strides.push(s);
            // The product of the shape fits u64 (checked by `parse_header`).
            s = s.saturating_mul(d);
        }
        Data::Strided {
            offset,
            len: self.data_len,
            storage_offset: 0,
            strides,
        }
    }
}

/// From the first [`PREAMBLE_LEN`] bytes (fewer when the file is shorter): the version and the
/// total header length (where the data starts), checked against [`MAX_HEADER_LEN`].
pub fn preamble(first: &[u8]) -> Result<((u8, u8), u64), NpyError> {
    if first.len() < 10 {
        if !MAGIC.starts_with(&first[..first.len().min(6)]) {
            return Err(NpyError::BadMagic);
        }
        return Err(NpyError::TooSmall {
            size: first.len() as u64,
        });
    }
    if &first[..6] != MAGIC {
        return Err(NpyError::BadMagic);
    }
    let (major, minor) = (first[6], first[7]);
    let (len, fixed) = match (major, minor) {
        (1, 0) => (u64::from(u16::from_le_bytes([first[8], first[9]])), 10),
        (2, 0) | (3, 0) => {
            let Some(b) = first.get(8..12) else {
                return Err(NpyError::TooSmall {
                    size: first.len() as u64,
                });
            };
            (u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])), 12)
        }
        _ => return Err(NpyError::UnsupportedVersion { major, minor }),
    };
    if len > MAX_HEADER_LEN {
        return Err(NpyError::HeaderTooLong {
            len,
            limit: MAX_HEADER_LEN,
        });
    }
    Ok(((major, minor), fixed + len))
}

/// Parses a whole header (`header` = the file's first `data_offset` bytes, as [`preamble`] told).
pub fn parse_header(header: &[u8]) -> Result<NpyHeader, NpyError> {
    let (version, total) = preamble(header)?;
    if (header.len() as u64) < total {
        return Err(NpyError::HeaderOutOfFile {
            end: total,
            size: header.len() as u64,
        });
    }
    let body = &header[if version.0 == 1 { 10 } else { 12 }..total as usize];
    let text: String = if version.0 == 3 {
        std::str::from_utf8(body)
            .map_err(|_| NpyError::HeaderEncoding { encoding: "UTF-8" })?
            .to_owned()
    } else {
        // latin-1: every byte is the code point of the same value.
        body.iter().map(|&b| char::from(b)).collect()
    };
    let value = literal::parse(&text)?;
    let literal::Value::Dict(items) = value else {
        return Err(NpyError::NotADict);
    };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (k, v) in items {
        let slot = match &k {
            literal::Value::Str(s) if s == "descr" => &mut descr,
            literal::Value::Str(s) if s == "fortran_order" => &mut fortran,
            literal::Value::Str(s) if s == "shape" => &mut shape,
            _ => return Err(NpyError::UnexpectedKey { key: k.to_string() }),
        };
        if slot.is_some() {
            return Err(NpyError::UnexpectedKey { key: k.to_string() });
        }
        *slot = Some(v);
    }
    let descr = descr.ok_or(NpyError::MissingKey { key: "descr" })?;
    let fortran = fortran.ok_or(NpyError::MissingKey {
        key: "fortran_order",
    })?;
    let shape = shape.ok_or(NpyError::MissingKey { key: "shape" })?;
    let fortran_order = match fortran {
        literal::Value::Bool(b) => b,
        _ => {
            return Err(NpyError::BadValue {
                key: "fortran_order",
                expected: "True or False",
            })
        }
    };
    let bad_shape = NpyError::BadValue {
        key: "shape",
        expected: "a tuple of non-negative integers",
    };
    let literal::Value::Tuple(dims) = shape else {
        return Err(bad_shape);
    };
    if dims.len() > MAX_DIMS {
        return Err(NpyError::TooManyDims {
            dims: dims.len(),
            limit: MAX_DIMS,
        });
    }
    let shape = dims
        .iter()
        .map(|d| match d {
            literal::Value::Int(i) => u64::try_from(*i).ok(),
            _ => None,
        })
        .collect::<Option<Vec<u64>>>()
        .ok_or(bad_shape)?;
    let (descr, dtype) = match descr {
        literal::Value::Str(s) => {
            let d = dtype_of(&s)?;
            (s, d)
        }
        other @ literal::Value::List(_) => {
            return Err(NpyError::Structured {
                descr: other.to_string(),
            })
        }
        _ => {
            return Err(NpyError::BadValue {
                key: "descr",
                expected: "a dtype string",
            })
        }
    };
    let item = u64::from(dtype.bits() / 8);
    let data_len = shape
        .iter()
        .try_fold(item, |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| NpyError::SizeOverflow {
            shape: shape.clone(),
        })?;
    Ok(NpyHeader {
        version,
        descr,
        dtype,
        fortran_order,
        shape,
        data_offset: total,
        data_len,
    })
}

/// The element type of a `descr` string, or the error naming why it is refused.
pub fn dtype_of(descr: &str) -> Result<Dtype, NpyError> {
    let err_descr = || descr.to_owned();
    let mut chars = descr.chars();
    let order = chars.next().unwrap_or(' ');
    let (order, rest) = if matches!(order, '<' | '>' | '|' | '=') {
        (order, chars.as_str())
    } else {
        ('=', descr)
    };
    let kind = rest.chars().next().unwrap_or(' ');
    if kind == 'O' {
        return Err(NpyError::Pickle { descr: err_descr() });
    }
    if kind == 'V' {
        return Err(NpyError::Void { descr: err_descr() });
    }
    let dtype = match rest {
        "b1" | "?" => Dtype::BOOL,
        "i1" => Dtype::I8,
        "u1" => Dtype::U8,
        "f2" => Dtype::F16,
        "f4" => Dtype::F32,
        "f8" => Dtype::F64,
        "i2" => Dtype::I16,
        "u2" => Dtype::U16,
        "i4" => Dtype::I32,
        "u4" => Dtype::U32,
        "i8" => Dtype::I64,
        "u8" => Dtype::U64,
        "c8" => Dtype::C64,
        _ => return Err(NpyError::UnsupportedDtype { descr: err_descr() }),
    };
    let single_byte = dtype.bits() <= 8;
    match order {
        '<' => Ok(dtype),
        '|' | '>' | '=' if single_byte => Ok(dtype),
        '>' => Err(NpyError::BigEndian { descr: err_descr() }),
        // `|` on a multi-byte type, or no byte order at all: numpy never writes either.
        _ => Err(NpyError::UnsupportedDtype { descr: err_descr() }),
    }
}

/// Reads a `.npy` file's header (two small reads) into a [`Layout`] with one entry named
/// [`ENTRY_NAME`] and the metadata `npy_version` and `fortran_order`.
pub fn read(src: &dyn ReadAt) -> Result<Layout, NpyError> {
    let size = src.size();
    let mut first = vec![0u8; size.min(PREAMBLE_LEN as u64) as usize];
    src.read_exact_at(0, &mut first)?;
    let (_, total) = preamble(&first)?;
    if total > size {
        return Err(NpyError::HeaderOutOfFile { end: total, size });
    }
    // `total` ≤ 12 + MAX_HEADER_LEN and ≤ the file size.
    let mut header = vec![0u8; total as usize];
    src.read_exact_at(0, &mut header)?;
    let h = parse_header(&header)?;
    check_fits(&h, size)?;
    Ok(Layout {
        format: Format::Npy,
        kind: format!("NumPy .npy v{}", h.version_string()),
        file_size: size,
        entries: vec![Entry {
            name: ENTRY_NAME.to_owned(),
            ty: ElementType::Dtype(h.dtype),
            shape: h.shape.clone(),
            data: h.data_at(h.data_offset),
        }],
        metadata: vec![
            ("npy_version".to_owned(), MetaValue::Str(h.version_string())),
            ("fortran_order".to_owned(), MetaValue::Bool(h.fortran_order)),
        ],
    })
}

/// Checks the header and data fit in `size` bytes (a file's, or an `.npz` member's).
pub fn check_fits(h: &NpyHeader, size: u64) -> Result<(), NpyError> {
    if h.data_offset
        .checked_add(h.data_len)
        .is_none_or(|e| e > size)
    {
        return Err(NpyError::DataOutOfFile {
            offset: h.data_offset,
            len: h.data_len,
            size,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtypes_map_or_are_refused_by_name() {
        assert_eq!(dtype_of("<f4").unwrap(), Dtype::F32);
        assert_eq!(dtype_of("|b1").unwrap(), Dtype::BOOL);
        assert_eq!(dtype_of("|u1").unwrap(), Dtype::U8);
        assert_eq!(dtype_of("<c8").unwrap(), Dtype::C64);
        assert!(matches!(dtype_of(">f4"), Err(NpyError::BigEndian { .. })));
        assert!(matches!(dtype_of("|O"), Err(NpyError::Pickle { .. })));
        assert!(matches!(dtype_of("<V2"), Err(NpyError::Void { .. })));
        assert!(matches!(dtype_of("|V2"), Err(NpyError::Void { .. })));
        assert!(matches!(
            dtype_of("<c16"),
            Err(NpyError::UnsupportedDtype { .. })
        ));
        assert!(matches!(
            dtype_of("<U5"),
            Err(NpyError::UnsupportedDtype { .. })
        ));
        assert!(matches!(
            dtype_of("|f4"),
            Err(NpyError::UnsupportedDtype { .. })
        ));
    }
}
