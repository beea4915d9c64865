//! Reading any supported checkpoint: the format is detected from the first bytes ([`detect`]) and
//! that format's reader runs; a zip is told apart (NumPy `.npz` or PyTorch) by its members.

use super::numpy::{npy, npz};
use super::{detect, gguf, pytorch, safetensors, zip, Format, Layout, DETECT_BYTES};
use crate::source::{ReadAt, SourceError};

/// Why a file could not be read as a checkpoint: its format is unknown, or its reader refused it.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// No reader knows the first bytes.
    #[error("not a checkpoint bitlens reads (safetensors, GGUF, PyTorch .pt/.bin, NumPy .npy/.npz): it starts with {first}")]
    Unknown {
        /// The first bytes, in hex.
        first: String,
    },
    /// Reading the source failed, or a safetensors header is invalid.
    #[error(transparent)]
    Safetensors(#[from] SourceError),
    /// A GGUF file broke a rule.
    #[error("GGUF: {0}")]
    Gguf(#[from] gguf::GgufError),
    /// A PyTorch checkpoint broke a rule (or ran into a forbidden global).
    #[error("PyTorch: {0}")]
    Torch(#[from] pytorch::TorchError),
    /// A zip archive broke a rule.
    #[error("zip: {0}")]
    Zip(#[from] zip::ZipError),
    /// A `.npy` file broke a rule.
    #[error("NumPy .npy: {0}")]
    Npy(#[from] npy::NpyError),
    /// A `.npz` archive broke a rule.
    #[error("NumPy .npz: {0}")]
    Npz(#[from] npz::NpzError),
}

/// Reads any supported checkpoint file as a [`Layout`]: detects the format from its first
/// [`DETECT_BYTES`] and runs that reader; a zip is an `.npz` when its members are `.npy` files,
/// else a PyTorch checkpoint. Every zip member's local header is checked ([`zip::Locate::Verify`]).
pub fn open(src: &dyn ReadAt) -> Result<Layout, FormatError> {
    open_with(src, zip::Locate::Verify)
}

/// [`open`], finding PyTorch zip storages as `locate` says: [`zip::Locate::Predict`] reads the
/// table of a PyTorch zip in a few reads whatever its tensor count (for remote files, where each
/// read is a request).
pub fn open_with(src: &dyn ReadAt, locate: zip::Locate) -> Result<Layout, FormatError> {
    let size = src.size();
    let mut first = [0u8; DETECT_BYTES];
    let first = &mut first[..(size.min(DETECT_BYTES as u64) as usize)];
    src.read_exact_at(0, first)?;
    match detect(first, size) {
        Some(Format::Safetensors) => Ok(safetensors::read(src)?),
        Some(Format::Gguf) => Ok(gguf::read(src)?),
        Some(Format::Npy) => Ok(npy::read(src)?),
        Some(Format::PyTorchLegacy) => Ok(pytorch::read(src)?),
        Some(Format::Zip) => {
            let archive = zip::Archive::open(src)?;
            if npz::is_npz(&archive) {
                Ok(npz::read_archive(src, &archive)?)
            } else {
                Ok(pytorch::read_zip_with(src, &archive, locate)?)
            }
        }
        None => Err(FormatError::Unknown {
            first: first.iter().map(|b| format!("{b:02x}")).collect(),
        }),
    }
}
