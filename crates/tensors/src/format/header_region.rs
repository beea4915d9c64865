//! The header rule of sidecars (`<file>.bitlens.json`, precomputed statistics): which bytes of a
//! checkpoint file describe its tensors — the bytes every reader of its format reads anyway
//! before any tensor byte. A sidecar records the file's size and a hash of these bytes; the page,
//! the embed and the CLI trust a sidecar only when both match the file they read, so statistics
//! made once over a catalogue show at once with no tensor byte read ([`header_region`]).
//!
//! Per format:
//! - **safetensors**: the `8 + N` bytes of the length and the JSON header (every tensor's dtype,
//!   shape and offsets, and `__metadata__`).
//! - **GGUF**: everything before the tensor data: magic, version, counts, every key/value, every
//!   tensor info and the alignment padding (up to the data section's start).
//! - **NumPy `.npy`**: its header (magic, version, length and the header dict), up to the data.
//! - **zip-based (NumPy `.npz`, PyTorch zip)**: the *central directory and the end records*, from
//!   the central directory's offset to the end of the file. This is what the zip reader reads
//!   first for any archive (the members' local headers and a PyTorch pickle are read after it,
//!   some of them only on a local file), and it holds every member's name, sizes, offset and
//!   CRC-32 — a CRC of each member's bytes, tensors included — so a member rewritten in place,
//!   moved or resized changes it too. The leading bytes of a zip are its first member's local
//!   header, which says nothing of the others.
//! - **PyTorch legacy**: the five pickles at the front (magic number, protocol version, sys
//!   info, the object pickle naming every storage, the storage keys), up to the first storage.
//!
//! The region is found by the format's own reader over `src`, so it costs the reads the reader
//! makes; read through a [`Retaining`](crate::source::Retaining) source after the layout was
//! read, it costs none.

use super::numpy::npy;
use super::{detect, gguf, pytorch, zip, Format, FormatError, DETECT_BYTES};
use crate::source::ReadAt;
use crate::Header;
use serde::{Deserialize, Serialize};

/// A byte range of a file: the bytes that describe its tensors ([`header_region`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderRegion {
    /// Offset of its first byte (0 but for zip-based formats, whose central directory ends the
    /// file).
    pub offset: u64,
    /// Its length in bytes.
    pub len: u64,
}

impl HeaderRegion {
    /// Where it ends (exclusive).
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// The header region of a safetensors file of `size` bytes that starts with `first` (at least
/// its first 8 bytes): [`header_region`]'s rule for safetensors alone, for a caller that knows
/// the format and would not compile the other formats' readers (the page).
pub fn safetensors_region(first: &[u8], size: u64) -> Result<HeaderRegion, FormatError> {
    let first8 = first.first_chunk::<8>().copied().unwrap_or_default();
    let len = Header::needed_prefix(first8, size).map_err(crate::SourceError::from)?;
    Ok(HeaderRegion {
        offset: 0,
        len: len.min(size),
    })
}

/// The bytes of the checkpoint file `src` that describe its tensors (see the module doc for each
/// format's rule); an error when no reader knows the file, or its header breaks its format's
/// rules where the region is found.
pub fn header_region(src: &dyn ReadAt) -> Result<HeaderRegion, FormatError> {
    let size = src.size();
    let mut first = [0u8; DETECT_BYTES];
    let first = &mut first[..(size.min(DETECT_BYTES as u64) as usize)];
    src.read_exact_at(0, first)?;
    let leading = |len: u64| HeaderRegion {
        offset: 0,
        len: len.min(size),
    };
    match detect(first, size) {
        Some(Format::Safetensors) => safetensors_region(first, size),
        Some(Format::Gguf) => Ok(leading(gguf::read_file(src)?.data_start)),
        Some(Format::Npy) => {
            let mut preamble = vec![0u8; size.min(npy::PREAMBLE_LEN as u64) as usize];
            src.read_exact_at(0, &mut preamble)?;
            Ok(leading(npy::preamble(&preamble)?.1))
        }
        Some(Format::PyTorchLegacy) => Ok(leading(pytorch::pickles_end(src)?)),
        Some(Format::Zip) => {
            let (cd_offset, _) = zip::Archive::open(src)?.central_directory();
            Ok(HeaderRegion {
                offset: cd_offset,
                len: size - cd_offset,
            })
        }
        None => Err(FormatError::Unknown {
            first: first.iter().map(|b| format!("{b:02x}")).collect(),
        }),
    }
}
