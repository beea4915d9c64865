//! The legacy PyTorch format (`torch/serialization.py` `_legacy_save`, torch < 1.6 or
//! `_use_new_zipfile_serialization=False`): five pickles back to back — the magic number
//! `0x1950a86a20f9469cfc6c`, the protocol version `1001`, the sys info dict (`little_endian`,
//! `type_sizes`), the object pickle, the sorted list of storage keys — then, for each key in that
//! order, the storage as an 8-byte little-endian element count and its raw bytes. The storages'
//! places are computed from the element counts the persistent ids give; only their 8-byte
//! headers are read (to check those counts), never the data.

use super::objects::{entries, flatten};
use super::pickle::{parse, Object, Pickle, PickleError};
use super::{allowed, TorchError};
use crate::format::{Format, Layout};
use crate::source::ReadAt;
use std::collections::HashMap;

/// torch's `MAGIC_NUMBER`, as the little-endian bytes of its `LONG1`.
const MAGIC: [u8; 10] = [0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19];
/// torch's `PROTOCOL_VERSION`.
const PROTOCOL_VERSION: i64 = 1001;
/// Bytes read first when looking for a pickle's end; doubled until it is found.
const FIRST_WINDOW: u64 = 4096;

/// A pickle read from the file, with where it ends and its length.
struct Read {
    pickle: Pickle,
    end: u64,
    len: usize,
}

/// The front of the file, read in growing windows: the five pickles are back to back, so one
/// buffer serves them all and each byte is read once.
struct Front<'a> {
    src: &'a dyn ReadAt,
    buf: Vec<u8>,
}

impl Front<'_> {
    /// Parses the pickle starting at `at`, extending the buffer (doubling it) while the pickle
    /// runs past it; a small pickle in front of gigabytes of storages costs a small read, and the
    /// buffer never exceeds twice the pickles or the file.
    fn pickle_at(&mut self, at: u64, part: &str) -> Result<Read, TorchError> {
        let size = self.src.size();
        loop {
            let have = self.buf.len() as u64;
            let start = at.min(have) as usize;
            let result = parse(&self.buf[start..], &allowed);
            match result {
                Ok(p) => {
                    return Ok(Read {
                        pickle: p.pickle,
                        end: at + p.end as u64,
                        len: p.end,
                    })
                }
                Err(PickleError::Truncated { .. }) if have < size => {
                    let want = (have * 2).max(at + FIRST_WINDOW).min(size);
                    self.buf.resize(want as usize, 0);
                    self.src
                        .read_exact_at(have, &mut self.buf[have as usize..])?;
                }
                Err(e) => {
                    return Err(TorchError::Pickle {
                        part: part.into(),
                        at,
                        source: e,
                    })
                }
            }
        }
    }
}

fn header(what: impl Into<String>) -> TorchError {
    TorchError::BadLegacyHeader { what: what.into() }
}

/// Reads and checks the first four pickles of a legacy file (magic number, protocol version, sys
/// info, the object pickle); returns the object pickle and the front, to read the storage keys
/// after it.
fn read_front(src: &dyn ReadAt) -> Result<(Front<'_>, Read), TorchError> {
    let mut front = Front {
        src,
        buf: Vec::new(),
    };
    let magic = front.pickle_at(0, "magic number")?;
    match magic.pickle.get(magic.pickle.root) {
        Object::BigInt(b) if b.as_slice() == MAGIC => {}
        _ => return Err(header("magic number is not torch's")),
    }
    let version = front.pickle_at(magic.end, "protocol version")?;
    if version.pickle.get(version.pickle.root) != &Object::Int(PROTOCOL_VERSION) {
        return Err(header(format!(
            "protocol version is not {PROTOCOL_VERSION}"
        )));
    }
    let sys = front.pickle_at(version.end, "sys info")?;
    let Object::Dict(info) = sys.pickle.get(sys.pickle.root) else {
        return Err(header("sys info is not a dict"));
    };
    for (k, v) in info {
        if sys.pickle.get(*k) == &Object::Str("little_endian".into())
            && sys.pickle.get(*v) == &Object::Bool(false)
        {
            return Err(TorchError::BigEndian {
                what: "sys info".into(),
            });
        }
    }
    let main = front.pickle_at(sys.end, "main pickle")?;
    Ok((front, main))
}

/// Where the five pickles of a legacy file end (the first storage's 8-byte element count follows):
/// the bytes a reader reads before any storage.
pub fn pickles_end(src: &dyn ReadAt) -> Result<u64, TorchError> {
    let (mut front, main) = read_front(src)?;
    Ok(front.pickle_at(main.end, "storage keys")?.end)
}

/// Reads a legacy PyTorch checkpoint's tensor table.
pub fn read_legacy(src: &dyn ReadAt) -> Result<Layout, TorchError> {
    let (mut front, main) = read_front(src)?;
    let flat = flatten(&main.pickle, main.len)?;
    let keys = front.pickle_at(main.end, "storage keys")?;
    let Object::List(key_ids) = keys.pickle.get(keys.pickle.root) else {
        return Err(header("storage keys are not a list"));
    };

    let index: HashMap<&str, usize> = flat
        .storages
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), i))
        .collect();
    let size = src.size();
    let mut at = vec![None; flat.storages.len()];
    let mut pos = keys.end;
    for &k in key_ids {
        let key = match keys.pickle.get(k) {
            Object::Str(s) => s.clone(),
            Object::Int(i) => i.to_string(),
            _ => return Err(header("a storage key is not a string")),
        };
        let Some(&i) = index.get(key.as_str()) else {
            return Err(TorchError::StorageMissing {
                key,
                what: "in the storage key list but no tensor uses it".into(),
            });
        };
        let s = &flat.storages[i];
        let mut count = [0u8; 8];
        if pos.checked_add(8).is_none_or(|e| e > size) {
            return Err(TorchError::StorageTooSmall {
                key,
                needed: 8,
                available: size.saturating_sub(pos),
            });
        }
        src.read_exact_at(pos, &mut count)?;
        let found = u64::from_le_bytes(count);
        if found != s.numel {
            return Err(TorchError::StorageHeaderMismatch {
                key,
                offset: pos,
                expected: s.numel,
                found,
            });
        }
        let data = pos + 8;
        let available = size - data;
        let bytes = s.numel.checked_mul(u64::from(s.dtype.bits() / 8));
        let Some(bytes) = bytes.filter(|&b| b <= available) else {
            return Err(TorchError::StorageTooSmall {
                key,
                needed: bytes.unwrap_or(u64::MAX),
                available,
            });
        };
        if at[i].replace(data).is_some() {
            return Err(header(format!("storage key `{key}` listed twice")));
        }
        pos = data + bytes;
    }
    let at = at
        .into_iter()
        .zip(&flat.storages)
        .map(|(a, s)| {
            a.ok_or_else(|| TorchError::StorageMissing {
                key: s.key.clone(),
                what: "not in the storage key list".into(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Layout {
        format: Format::PyTorchLegacy,
        kind: "PyTorch legacy".into(),
        file_size: size,
        entries: entries(&flat, &at)?,
        metadata: flat.metadata,
    })
}
