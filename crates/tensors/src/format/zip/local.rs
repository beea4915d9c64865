//! A member's local header (APPNOTE §4.3.6) and its data: where the data starts, read and checked
//! against the central directory ([`Archive::locate`]) or predicted from the directory alone
//! ([`Archive::predicted_data_offset`], for remote sources), and a range of the member's bytes
//! ([`Archive::read_range`]: stored ones read directly, deflated ones inflated, bounded).

use super::crc32::crc32;
use super::fields::{
    zip64_values, Zip64Needs, FLAG_DESCRIPTOR, FLAG_ENCRYPTED, FLAG_STRONG_ENCRYPTION,
};
use super::inflate::{Inflater, INPUT_WINDOW};
use super::read::{read_vec, u16_at, u32_at};
use super::{Archive, Member, Method, ZipError};
use crate::source::ReadAt;
use std::ops::Range;

/// How a reader finds where a member's data starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Locate {
    /// Read each member's local header and check it against the central directory
    /// ([`Archive::data_offset`]): exact, one read per member (coalesced where members are small).
    #[default]
    Verify,
    /// Take the offset from the central directory ([`Archive::predicted_data_offset`]), reading no
    /// local header, and verify only where the prediction is impossible: a tensor table in a few
    /// reads, for sources where every read is a network request.
    Predict,
}

/// Local extra field bytes read along with a local header, hoping the extra field fits (zip64
/// sizes: 20 bytes; PyTorch's alignment padding: under 64).
pub const EXTRA_GUESS: u64 = 128;
/// Stored ranges up to this long are read along with their member's local header (one read).
const READ_WITH_HEADER: u64 = 1 << 20;
const SIG_LOCAL: &[u8; 4] = b"PK\x03\x04";
const LOCAL_LEN: u64 = 30;
/// Smallest data descriptor (crc, compressed and inflated sizes, no signature).
const DESCRIPTOR_MIN_LEN: u64 = 12;

impl Archive {
    /// Reads `member`'s local header (one small read, two when its extra field is longer than
    /// [`EXTRA_GUESS`]) and returns where its data starts, after checking the header agrees with
    /// the central directory (name, method, and — unless deferred to a data descriptor — CRC-32
    /// and sizes) and that the data fits its slot.
    pub fn data_offset(&self, src: &dyn ReadAt, member: &Member) -> Result<u64, ZipError> {
        Ok(self.locate(src, member, 0)?.0)
    }

    /// Where `member`'s data starts if the archive's members tile its body — each member's local
    /// header, data and data descriptor back to back up to the next member's local header (or the
    /// central directory), as torch, numpy/Python `zipfile`, miniz, Info-ZIP and Java lay them out —
    /// computed from the central directory alone, without reading the local header: the data ends
    /// where the slot ends, less the data descriptor (16 bytes with its signature, 24 with zip64
    /// sizes) when the member has one. `None` when that leaves no room for the local header and
    /// name, or the descriptor's size is ambiguous (sizes at the zip64 limit).
    ///
    /// A prediction, not a check: a crafted archive whose local header's extra field and descriptor
    /// disagree with the tiling would be read a few bytes off (never outside the member's slot).
    /// Readers that read every byte anyway use [`Archive::data_offset`]; [`Locate::Predict`] is
    /// for reading a table over a network, where a read per member is a request per member.
    pub fn predicted_data_offset(&self, member: &Member) -> Option<u64> {
        let desc = if member.flags & FLAG_DESCRIPTOR == 0 {
            0
        } else if member.compressed < u64::from(u32::MAX) && member.size < u64::from(u32::MAX) {
            16
        } else {
            return None;
        };
        let data = member
            .slot_end
            .checked_sub(desc)?
            .checked_sub(member.compressed)?;
        let min = member
            .header_offset
            .checked_add(LOCAL_LEN + member.name.len() as u64)?;
        (data >= min).then_some(data)
    }

    /// [`Archive::data_offset`], also returning up to `prefetch` bytes of the member's (stored or
    /// compressed) data read along with the local header in the same request — what a reader
    /// wanting the start of a member (an `.npy` header) needs, in one read per member.
    pub fn locate(
        &self,
        src: &dyn ReadAt,
        member: &Member,
        prefetch: u64,
    ) -> Result<(u64, Vec<u8>), ZipError> {
        let at = member.header_offset;
        let bad = |why| ZipError::BadLocalHeader {
            name: member.name.clone(),
            at,
            why,
        };
        if at + LOCAL_LEN > member.slot_end {
            return Err(bad("local header runs past its slot"));
        }
        let guess = (LOCAL_LEN + member.name.len() as u64 + EXTRA_GUESS)
            .saturating_add(prefetch.min(member.compressed))
            .min(member.slot_end - at);
        let mut buf = read_vec(src, at, guess)?;
        let h = &buf[..LOCAL_LEN as usize];
        if &h[..4] != SIG_LOCAL {
            return Err(bad("bad local header signature"));
        }
        let flags = u16_at(h, 6);
        let method = u16_at(h, 8);
        let (crc, c32, s32) = (u32_at(h, 14), u32_at(h, 18), u32_at(h, 22));
        let (nl, xl) = (u64::from(u16_at(h, 26)), u64::from(u16_at(h, 28)));
        let data = at + LOCAL_LEN + nl + xl;
        if data > member.slot_end {
            return Err(bad("name and extra field run past its slot"));
        }
        if (buf.len() as u64) < LOCAL_LEN + nl + xl {
            // A long extra field (alignment padding): read the rest of the header.
            let want = (LOCAL_LEN + nl + xl).saturating_add(prefetch.min(member.compressed));
            buf = read_vec(src, at, want.min(member.slot_end - at))?;
        }
        let mut data_bytes = buf.split_off((LOCAL_LEN + nl + xl) as usize);
        data_bytes.truncate(prefetch.min(member.compressed) as usize);
        let var = &buf[LOCAL_LEN as usize..];
        let mismatch = |field| ZipError::LocalMismatch {
            name: member.name.clone(),
            field,
        };
        if var[..nl as usize] != *member.name.as_bytes() {
            return Err(mismatch("name"));
        }
        if flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION) != 0 {
            return Err(ZipError::Encrypted {
                name: member.name.clone(),
            });
        }
        let central_method = match member.method {
            Method::Stored => 0,
            Method::Deflated => 8,
        };
        if method != central_method {
            return Err(mismatch("compression method"));
        }
        if (flags | member.flags) & FLAG_DESCRIPTOR == 0 {
            let needs = Zip64Needs {
                size: s32 == u32::MAX,
                compressed: c32 == u32::MAX,
                offset: false,
                disk: false,
            };
            let z = zip64_values(&var[nl as usize..], &needs)
                .map_err(bad)?
                .ok_or(bad(
                    "a size is 0xFFFFFFFF but its zip64 extra value is missing",
                ))?;
            if crc != member.crc32 {
                return Err(mismatch("CRC-32"));
            }
            if z[1].unwrap_or(u64::from(c32)) != member.compressed {
                return Err(mismatch("compressed size"));
            }
            if z[0].unwrap_or(u64::from(s32)) != member.size {
                return Err(mismatch("size"));
            }
        }
        let end = min_member_end(member, data - at - LOCAL_LEN - nl);
        if end.is_none_or(|e| e > member.slot_end) {
            let end_at = end.unwrap_or(u64::MAX);
            return Err(if member.slot_end == self.cd_offset {
                ZipError::BeyondFile {
                    name: member.name.clone(),
                    end: end_at,
                    limit: member.slot_end,
                }
            } else {
                ZipError::Overlap {
                    name: member.name.clone(),
                    end: end_at,
                    limit: member.slot_end,
                }
            });
        }
        Ok((data, data_bytes))
    }

    /// The bytes `range` of `member`'s inflated content. Stored members are read directly;
    /// deflated ones are inflated up to `range.end` only, and when the range reaches the end the
    /// stream is checked to end there and its CRC-32 is checked. Memory grows only with the bytes
    /// actually produced (never beyond `range`'s length).
    pub fn read_range(
        &self,
        src: &dyn ReadAt,
        member: &Member,
        range: Range<u64>,
    ) -> Result<Vec<u8>, ZipError> {
        if range.start > range.end || range.end > member.size {
            return Err(ZipError::RangeOutOfMember {
                name: member.name.clone(),
                start: range.start,
                end: range.end,
                size: member.size,
            });
        }
        // A small stored range comes with its local header in one read.
        let prefetch = match member.method {
            Method::Stored if range.end <= READ_WITH_HEADER => range.end,
            _ => 0,
        };
        let (data, head) = self.locate(src, member, prefetch)?;
        let whole = range.start == 0 && range.end == member.size;
        let out = match member.method {
            Method::Stored => match head.get(range.start as usize..range.end as usize) {
                Some(bytes) if prefetch > 0 => bytes.to_vec(),
                _ => read_vec(src, data + range.start, range.end - range.start)?,
            },
            Method::Deflated => {
                let mut inf = Inflater::new(src, data, member.compressed, member.size)?;
                inf.skip(range.start)?;
                let mut out = Vec::new();
                let mut buf = vec![0u8; (range.end - range.start).min(INPUT_WINDOW) as usize];
                while inf.produced() < range.end {
                    let want = (range.end - inf.produced()).min(buf.len() as u64) as usize;
                    let n = inf.read(&mut buf[..want])?;
                    out.extend_from_slice(&buf[..n]);
                }
                if range.end == member.size {
                    inf.finish()?;
                }
                out
            }
        };
        if whole {
            let got = crc32(0, &out);
            if got != member.crc32 {
                return Err(ZipError::CrcMismatch {
                    name: member.name.clone(),
                    expected: member.crc32,
                    got,
                });
            }
        }
        Ok(out)
    }
}

/// The least offset `member`'s bytes reach: header, name, `extra` bytes of extra field, data and
/// (when flagged) the smallest data descriptor; `None` on overflow.
pub(super) fn min_member_end(member: &Member, extra: u64) -> Option<u64> {
    let desc = if member.flags & FLAG_DESCRIPTOR != 0 {
        DESCRIPTOR_MIN_LEN
    } else {
        0
    };
    member
        .header_offset
        .checked_add(LOCAL_LEN + member.name.len() as u64 + extra)?
        .checked_add(member.compressed)?
        .checked_add(desc)
}
