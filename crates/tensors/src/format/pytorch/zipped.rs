//! The PyTorch zip format (`torch/serialization.py` `_save`, torch ≥ 1.6): a zip whose members
//! share one top directory (`archive/`, or the file's stem): `data.pkl` (the object pickle),
//! `byteorder` (`little` / `big`, torch ≥ 2.1), `version`, and `data/<key>` for each storage,
//! stored uncompressed (torch aligns them to 64 bytes). A storage's bytes are its member's data.

use super::objects::{entries, flatten};
use super::pickle::parse;
use super::{allowed, TorchError};
use crate::format::zip::{Archive, Locate, Method};
use crate::format::{Format, Layout};
use crate::source::ReadAt;

/// The longest `byteorder` member read.
const MAX_BYTEORDER: u64 = 16;

/// Reads the tensor table of a PyTorch zip checkpoint whose central directory is `archive`,
/// checking every storage's local header. [`TorchError::NotPyTorch`] when the zip has no
/// `data.pkl` (an `.npz`, say).
pub fn read_zip(src: &dyn ReadAt, archive: &Archive) -> Result<Layout, TorchError> {
    read_zip_with(src, archive, Locate::Verify)
}

/// [`read_zip`], finding the storages' data as `locate` says: with [`Locate::Predict`] no local
/// header of a storage is read (the table costs the end records, the central directory, `data.pkl`
/// and `byteorder`).
pub fn read_zip_with(
    src: &dyn ReadAt,
    archive: &Archive,
    locate: Locate,
) -> Result<Layout, TorchError> {
    // The storages' local headers: read together where members are small (none when predicted).
    let planned = match locate {
        Locate::Verify => archive.members(),
        Locate::Predict => &[],
    };
    let headers = crate::format::coalesce::Coalesced::local_headers_of(src, planned, 0);
    let mut pkl = None;
    for m in archive.members() {
        if m.name == "data.pkl" || m.name.ends_with("/data.pkl") {
            if let Some(first) = pkl.replace(m) {
                return Err(TorchError::SeveralPickles {
                    first: first.name.clone(),
                    second: m.name.clone(),
                });
            }
        }
    }
    let pkl = pkl.ok_or(TorchError::NotPyTorch)?;
    let prefix = &pkl.name[..pkl.name.len() - "data.pkl".len()];

    if let Some(m) = archive.find(&format!("{prefix}byteorder")) {
        let order = archive.read_range(src, m, 0..m.size.min(MAX_BYTEORDER))?;
        if order.as_slice() != b"little" {
            return Err(TorchError::BigEndian {
                what: format!("`{}` says `{}`", m.name, String::from_utf8_lossy(&order)),
            });
        }
    }

    let bytes = archive.read_range(src, pkl, 0..pkl.size)?;
    let parsed = parse(&bytes, &allowed).map_err(|e| TorchError::Pickle {
        part: pkl.name.clone(),
        at: 0,
        source: e,
    })?;
    let flat = flatten(&parsed.pickle, parsed.end)?;

    let mut at = Vec::with_capacity(flat.storages.len());
    for s in &flat.storages {
        let name = format!("{prefix}data/{}", s.key);
        let m = archive
            .find(&name)
            .ok_or_else(|| TorchError::StorageMissing {
                key: s.key.clone(),
                what: format!("no member `{name}`"),
            })?;
        if m.method != Method::Stored {
            return Err(TorchError::CompressedStorage { member: name });
        }
        let needed = s.numel.checked_mul(u64::from(s.dtype.bits() / 8));
        if needed.is_none_or(|n| n > m.size) {
            return Err(TorchError::StorageTooSmall {
                key: s.key.clone(),
                needed: needed.unwrap_or(u64::MAX),
                available: m.size,
            });
        }
        let predicted = match locate {
            Locate::Predict => archive.predicted_data_offset(m),
            Locate::Verify => None,
        };
        match predicted {
            Some(offset) => at.push(offset),
            None => at.push(archive.data_offset(&headers, m)?),
        }
    }
    Ok(Layout {
        format: Format::Zip,
        kind: "PyTorch zip".into(),
        file_size: src.size(),
        entries: entries(&flat, &at)?,
        metadata: flat.metadata,
    })
}
