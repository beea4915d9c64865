//! NumPy `.npz` files: a zip of `.npy` members, as `numpy/lib/npyio.py` writes them — stored
//! (`np.savez`) or deflated (`np.savez_compressed`), one member `<name>.npy` per array.
//!
//! Each member becomes an entry named `<name>` (the member name without `.npy`). A stored member's
//! data is a [`Data::Range`] in the file (its data offset plus its `.npy` header's length); a
//! deflated member's is a [`Data::Deflated`] whose `skip` is its `.npy` header's length — only the
//! first inflated bytes (the header, at most [`npy::MAX_HEADER_LEN`] + 12) are inflated to read it.
//! Statistics over a deflated entry stream it with [`for_each_inflated`], bounded by the declared
//! size. Members that are not `.npy` and Fortran-ordered deflated arrays (a deflate stream has no
//! strides) are refused.

use super::npy::{self, NpyError, NpyHeader, PREAMBLE_LEN};
use crate::format::zip::{Archive, Inflater, Member, Method, Scratch, ZipError};
use crate::format::{Data, ElementType, Entry, Format, Layout, MetaValue};
use crate::source::{ReadAt, SourceError};

/// Streams bytes of a [`Data::Deflated`] entry (`offset`, `compressed`, `skip`, `len`) into a
/// callback in windows: what a statistics reader calls for deflated `.npz` members.
pub use crate::format::zip::for_each_inflated;

/// Bytes of a member's data read along with its local header: numpy's `.npy` headers take 128
/// (and deflate to less).
const PREFETCH: u64 = 256;

/// The suffix of every `.npz` member.
pub const SUFFIX: &str = ".npy";

/// Why an `.npz` file cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NpzError {
    /// The zip archive is invalid.
    #[error(transparent)]
    Zip(#[from] ZipError),
    /// A member's `.npy` content is invalid.
    #[error(".npz member {member:?}: {source}")]
    Npy {
        /// The member.
        member: String,
        /// The `.npy` rule broken.
        #[source]
        source: NpyError,
    },
    /// A member whose name does not end in `.npy`.
    #[error(".npz member {member:?} is not an array (its name does not end in .npy)")]
    NotNpy {
        /// The member.
        member: String,
    },
    /// A Fortran-ordered array in a deflated member.
    #[error(
        ".npz member {member:?}: a Fortran-ordered array in a deflated member is not supported"
    )]
    FortranDeflated {
        /// The member.
        member: String,
    },
}

/// Whether an archive is an `.npz`: it has members and every one is a `.npy`.
pub fn is_npz(archive: &Archive) -> bool {
    !archive.members().is_empty() && archive.members().iter().all(|m| m.name.ends_with(SUFFIX))
}

/// Opens `src` as a zip and reads it as an `.npz`.
pub fn read(src: &dyn ReadAt) -> Result<Layout, NpzError> {
    let archive = Archive::open(src)?;
    read_archive(src, &archive)
}

/// Reads an opened archive as an `.npz`: per member, its local header and the `.npy` header at
/// the start of its data (inflating only that much of a deflated member).
pub fn read_archive(src: &dyn ReadAt, archive: &Archive) -> Result<Layout, NpzError> {
    // Small members' local headers (and .npy headers) are read together.
    let coalesced = crate::format::coalesce::Coalesced::local_headers(src, archive, PREFETCH);
    let src: &dyn ReadAt = &coalesced;
    let mut entries = Vec::with_capacity(archive.members().len());
    let mut deflated = false;
    let mut scratch = Some(Scratch::new());
    for m in archive.members() {
        let Some(name) = m.name.strip_suffix(SUFFIX) else {
            return Err(NpzError::NotNpy {
                member: m.name.clone(),
            });
        };
        let (data_offset, h) = member_header(src, archive, m, &mut scratch)?;
        let data = match m.method {
            Method::Stored => h.data_at(data_offset + h.data_offset),
            Method::Deflated => {
                deflated = true;
                if matches!(h.data_at(0), Data::Strided { .. }) {
                    return Err(NpzError::FortranDeflated {
                        member: m.name.clone(),
                    });
                }
                Data::Deflated {
                    offset: data_offset,
                    compressed: m.compressed,
                    skip: h.data_offset,
                    len: h.data_len,
                }
            }
        };
        entries.push(Entry {
            name: name.to_owned(),
            ty: ElementType::Dtype(h.dtype),
            shape: h.shape,
            data,
        });
    }
    Ok(Layout {
        format: Format::Zip,
        kind: "NumPy .npz".to_owned(),
        file_size: src.size(),
        entries,
        metadata: vec![("compressed".to_owned(), MetaValue::Bool(deflated))],
    })
}

/// A member's data offset in the file and its `.npy` header, checked to fit the member.
/// `scratch` holds inflater memory reused from member to member (taken, and put back when the
/// header was read).
pub fn member_header(
    src: &dyn ReadAt,
    archive: &Archive,
    m: &Member,
    scratch: &mut Option<Scratch>,
) -> Result<(u64, NpyHeader), NpzError> {
    let npy_err = |source| NpzError::Npy {
        member: m.name.clone(),
        source,
    };
    let first_len = m.size.min(PREAMBLE_LEN as u64) as usize;
    let header = match m.method {
        Method::Stored => {
            // One read for the local header and (usually) the whole .npy header.
            let (data_offset, mut header) = archive.locate(src, m, PREFETCH)?;
            if header.len() < first_len {
                return Err(ZipError::from(SourceError::OutOfBounds {
                    offset: data_offset,
                    len: first_len as u64,
                    size: src.size(),
                })
                .into());
            }
            let (_, total) = npy::preamble(&header[..first_len]).map_err(npy_err)?;
            header_fits(total, m.size).map_err(npy_err)?;
            // `total` ≤ 12 + MAX_HEADER_LEN and ≤ the member's (checked) size.
            if (header.len() as u64) < total {
                header = vec![0u8; total as usize];
                src.read_exact_at(data_offset, &mut header)
                    .map_err(ZipError::from)?;
            }
            header.truncate(total as usize);
            (data_offset, header)
        }
        Method::Deflated => {
            let (data_offset, prefix) = archive.locate(src, m, PREFETCH)?;
            let mut inf = Inflater::with_scratch(
                src,
                data_offset,
                m.compressed,
                m.size,
                prefix,
                scratch.take().unwrap_or_default(),
            )?;
            let mut header = vec![0u8; first_len];
            fill(&mut inf, &mut header)?;
            let (_, total) = npy::preamble(&header).map_err(npy_err)?;
            header_fits(total, m.size).map_err(npy_err)?;
            // A v1.0 header may end before the 12 bytes inflated first.
            header.resize(total as usize, 0);
            if let Some(rest) = header.get_mut(first_len..) {
                fill(&mut inf, rest)?;
            }
            *scratch = Some(inf.into_scratch());
            (data_offset, header)
        }
    };
    let (data_offset, header) = header;
    let h = npy::parse_header(&header).map_err(npy_err)?;
    npy::check_fits(&h, m.size).map_err(npy_err)?;
    Ok((data_offset, h))
}

fn header_fits(total: u64, size: u64) -> Result<(), NpyError> {
    if total > size {
        return Err(NpyError::HeaderOutOfFile { end: total, size });
    }
    Ok(())
}

/// Inflates exactly `buf.len()` bytes (the caller checked they are within the declared size).
fn fill(inf: &mut Inflater<'_>, buf: &mut [u8]) -> Result<(), ZipError> {
    let mut at = 0;
    while at < buf.len() {
        match inf.read(&mut buf[at..])? {
            0 => {
                return Err(ZipError::InflatedTooShort {
                    at: inf.stream_offset(),
                    expected: buf.len() as u64,
                    got: at as u64,
                })
            }
            n => at += n,
        }
    }
    Ok(())
}
