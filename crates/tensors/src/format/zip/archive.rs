//! The central directory (APPNOTE §4.3.12): an [`Archive`] of [`Member`]s read from it in one
//! read after the end records, with every rule that needs only the directory checked — counts,
//! names, methods, encryption, duplicate names, and members' slots that neither overlap nor run
//! past the directory. Local headers are module `local`'s.

use super::fields::{check_name, zip64_values, Zip64Needs, FLAG_ENCRYPTED, FLAG_STRONG_ENCRYPTION};
use super::inflate::check_ratio;
use super::local::min_member_end;
use super::read::{read_vec, u16_at, u32_at};
use super::records::read_end_records;
use super::ZipError;
use crate::source::ReadAt;
use std::collections::HashSet;

const SIG_CENTRAL: &[u8; 4] = b"PK\x01\x02";
const CENTRAL_LEN: usize = 46;

/// How a member's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Method 0: verbatim.
    Stored,
    /// Method 8: a raw deflate stream.
    Deflated,
}

/// One member, as its central directory entry describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its name (UTF-8, checked safe: relative, no `..`, no backslash).
    pub name: String,
    /// How its bytes are stored.
    pub method: Method,
    /// The general purpose flags.
    pub flags: u16,
    /// CRC-32 of its inflated bytes.
    pub crc32: u32,
    /// Compressed size (equal to `size` when stored).
    pub compressed: u64,
    /// Inflated size.
    pub size: u64,
    /// Offset of its local header.
    pub header_offset: u64,
    /// Where its slot ends: the next member's local header, or the central directory. Its local
    /// header, data and data descriptor must fit before it.
    pub slot_end: u64,
}

/// A zip archive's central directory: its members in directory order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archive {
    members: Vec<Member>,
    pub(super) cd_offset: u64,
    cd_size: u64,
    zip64: bool,
}

impl Archive {
    /// Reads the end records and the central directory of `src` (two to four reads) and checks
    /// every rule that needs only them: counts, names, methods, encryption, and that members'
    /// slots (from their local header offsets and sizes) neither overlap nor run past the
    /// central directory. Local headers are not read: see [`Archive::data_offset`].
    pub fn open(src: &dyn ReadAt) -> Result<Archive, ZipError> {
        let end = read_end_records(src)?;
        if end
            .cd_offset
            .checked_add(end.cd_size)
            .is_none_or(|e| e > end.start)
        {
            return Err(ZipError::CentralDirectoryOutOfFile {
                offset: end.cd_offset,
                size: end.cd_size,
                limit: end.start,
            });
        }
        let cd = read_vec(src, end.cd_offset, end.cd_size)?;
        // Each entry takes at least CENTRAL_LEN bytes: the capacity is bounded by the bytes read.
        let fits = (cd.len() / CENTRAL_LEN) as u64;
        let mut members: Vec<Member> = Vec::with_capacity(end.entries.min(fits) as usize);
        let mut pos = 0usize;
        while pos < cd.len() {
            let index = members.len();
            let at = end.cd_offset + pos as u64;
            let bad = |why| ZipError::BadCentralEntry { index, at, why };
            let e = cd
                .get(pos..pos + CENTRAL_LEN)
                .ok_or(bad("truncated entry"))?;
            if &e[..4] != SIG_CENTRAL {
                return Err(bad("bad central directory entry signature"));
            }
            let flags = u16_at(e, 8);
            let method = u16_at(e, 10);
            let crc32 = u32_at(e, 16);
            let (c32, s32) = (u32_at(e, 20), u32_at(e, 24));
            let (nl, xl, cl) = (
                usize::from(u16_at(e, 28)),
                usize::from(u16_at(e, 30)),
                usize::from(u16_at(e, 32)),
            );
            let disk16 = u16_at(e, 34);
            let off32 = u32_at(e, 42);
            let var = cd
                .get(pos + CENTRAL_LEN..pos + CENTRAL_LEN + nl + xl + cl)
                .ok_or(bad(
                    "name, extra field or comment runs past the central directory",
                ))?;
            let name = check_name(&var[..nl])?;
            let needs = Zip64Needs {
                size: s32 == u32::MAX,
                compressed: c32 == u32::MAX,
                offset: off32 == u32::MAX,
                disk: disk16 == u16::MAX,
            };
            let z = zip64_values(&var[nl..nl + xl], &needs)
                .map_err(bad)?
                .ok_or(bad(
                    "a 32-bit field is 0xFFFFFFFF but its zip64 extra value is missing",
                ))?;
            let size = z[0].unwrap_or(u64::from(s32));
            let compressed = z[1].unwrap_or(u64::from(c32));
            let header_offset = z[2].unwrap_or(u64::from(off32));
            let disk = z[3].unwrap_or(u64::from(disk16));
            if disk != 0 {
                return Err(ZipError::MultiDisk { at });
            }
            if flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION) != 0 {
                return Err(ZipError::Encrypted { name });
            }
            let method = match method {
                0 => Method::Stored,
                8 => Method::Deflated,
                m => return Err(ZipError::UnsupportedMethod { name, method: m }),
            };
            match method {
                Method::Stored if compressed != size => {
                    return Err(ZipError::StoredSizeMismatch {
                        name,
                        compressed,
                        size,
                    })
                }
                Method::Deflated => check_ratio(header_offset, compressed, size)?,
                Method::Stored => {}
            }
            members.push(Member {
                name,
                method,
                flags,
                crc32,
                compressed,
                size,
                header_offset,
                slot_end: end.cd_offset,
            });
            pos += CENTRAL_LEN + nl + xl + cl;
        }
        if members.len() as u64 != end.entries {
            return Err(ZipError::EntryCount {
                declared: end.entries,
                found: members.len() as u64,
            });
        }
        let mut names = HashSet::with_capacity(members.len());
        for m in &members {
            if !names.insert(m.name.as_str()) {
                return Err(ZipError::DuplicateName {
                    name: m.name.clone(),
                });
            }
        }
        // Slots: each member runs at least to its header, name, data (and descriptor); the next
        // member by offset (or the central directory) must start after that.
        let mut order: Vec<usize> = (0..members.len()).collect();
        order.sort_by_key(|&i| members[i].header_offset);
        for w in 0..order.len() {
            let limit = order
                .get(w + 1)
                .map_or(end.cd_offset, |&j| members[j].header_offset);
            let m = &mut members[order[w]];
            m.slot_end = limit;
            let min_end = min_member_end(m, 0);
            if min_end.is_none_or(|e| e > limit) {
                let end_at = min_end.unwrap_or(u64::MAX);
                return Err(if w + 1 < order.len() {
                    ZipError::Overlap {
                        name: m.name.clone(),
                        end: end_at,
                        limit,
                    }
                } else {
                    ZipError::BeyondFile {
                        name: m.name.clone(),
                        end: end_at,
                        limit,
                    }
                });
            }
        }
        Ok(Archive {
            members,
            cd_offset: end.cd_offset,
            cd_size: end.cd_size,
            zip64: end.zip64,
        })
    }

    /// The members, in central directory order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The member named `name`.
    pub fn find(&self, name: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.name == name)
    }

    /// Offset and size of the central directory.
    pub fn central_directory(&self) -> (u64, u64) {
        (self.cd_offset, self.cd_size)
    }

    /// Whether the archive has zip64 end records.
    pub fn is_zip64(&self) -> bool {
        self.zip64
    }
}
