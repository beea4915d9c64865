//! The end records (APPNOTE §4.3.14–16): the end of central directory record, found searching back
//! from the end of the file (the last KiB first, then at most 64 KiB + 22 bytes: the longest
//! comment), and the zip64 locator and record before it when present — usually all in one read.
//! They say where the central directory is and how many entries it holds.

use super::read::{read_vec, u16_at, u32_at, u64_at};
use super::ZipError;
use crate::source::{ReadAt, SourceError};

/// Size of the end of central directory record without its comment.
pub const EOCD_LEN: u64 = 22;
/// The longest comment an end record can carry (how far back its signature is searched).
pub const MAX_COMMENT_LEN: u64 = 65_535;
/// Bytes at the end of a file searched first for the end record.
const FIRST_TAIL: u64 = 1024;
const SIG_EOCD: &[u8; 4] = b"PK\x05\x06";
const SIG_ZIP64_EOCD: &[u8; 4] = b"PK\x06\x06";
const SIG_ZIP64_LOCATOR: &[u8; 4] = b"PK\x06\x07";
const ZIP64_LOCATOR_LEN: u64 = 20;
const ZIP64_EOCD_LEN: u64 = 56;

/// Where the end records say the central directory is.
pub(super) struct EndRecords {
    pub(super) entries: u64,
    pub(super) cd_offset: u64,
    pub(super) cd_size: u64,
    /// Where the end records start (the zip64 record, or the end record).
    pub(super) start: u64,
    pub(super) zip64: bool,
}

/// Finds and reads the end records (see the module doc).
pub(super) fn read_end_records(src: &dyn ReadAt) -> Result<EndRecords, ZipError> {
    let size = src.size();
    let max_tail = size.min(EOCD_LEN + MAX_COMMENT_LEN);
    if max_tail < EOCD_LEN {
        return Err(ZipError::NoEocd { searched: max_tail });
    }
    // The last KiB first (an archive without a long comment); the whole window only if needed.
    // Searching back from the end, both find the same record when the short tail holds one.
    let mut found = None;
    for tail_len in [max_tail.min(FIRST_TAIL), max_tail] {
        let tail_start = size - tail_len;
        let tail = read_vec(src, tail_start, tail_len)?;
        let tl = tail.len();
        let at = (0..=tl - EOCD_LEN as usize).rev().find(|&i| {
            &tail[i..i + 4] == SIG_EOCD
                && i + EOCD_LEN as usize + usize::from(u16_at(&tail, i + 20)) == tl
        });
        if let Some(i) = at {
            found = Some((tail_start, tail, i));
            break;
        }
        if tail_len == max_tail {
            break;
        }
    }
    let Some((tail_start, tail, i)) = found else {
        return Err(ZipError::NoEocd { searched: max_tail });
    };
    let eocd_at = tail_start + i as u64;
    let e = &tail[i..i + EOCD_LEN as usize];
    let (disk, cd_disk) = (u16_at(e, 4), u16_at(e, 6));
    let (entries_disk, entries) = (u16_at(e, 8), u16_at(e, 10));
    let mut rec = EndRecords {
        entries: u64::from(entries),
        cd_size: u64::from(u32_at(e, 12)),
        cd_offset: u64::from(u32_at(e, 16)),
        start: eocd_at,
        zip64: false,
    };
    // The zip64 records sit right before the end record, usually within the tail already read.
    let bytes_at = |offset: u64, len: u64| -> Result<Vec<u8>, SourceError> {
        match offset.checked_sub(tail_start) {
            Some(rel) if rel + len <= tail.len() as u64 => {
                Ok(tail[rel as usize..(rel + len) as usize].to_vec())
            }
            _ => read_vec(src, offset, len),
        }
    };
    let has_locator = eocd_at >= ZIP64_LOCATOR_LEN
        && bytes_at(eocd_at - ZIP64_LOCATOR_LEN, 4)? == SIG_ZIP64_LOCATOR;
    if !has_locator {
        if disk != 0 || cd_disk != 0 || entries_disk != entries {
            return Err(ZipError::MultiDisk { at: eocd_at });
        }
        return Ok(rec);
    }
    let loc_at = eocd_at - ZIP64_LOCATOR_LEN;
    let loc = bytes_at(loc_at, ZIP64_LOCATOR_LEN)?;
    if u32_at(&loc, 4) != 0 || u32_at(&loc, 16) != 1 {
        return Err(ZipError::MultiDisk { at: loc_at });
    }
    let z_at = u64_at(&loc, 8);
    if z_at
        .checked_add(ZIP64_EOCD_LEN)
        .is_none_or(|end| end > loc_at)
    {
        return Err(ZipError::BadZip64 {
            at: loc_at,
            why: "the zip64 record it points to is not before it",
        });
    }
    let z = bytes_at(z_at, ZIP64_EOCD_LEN)?;
    if &z[..4] != SIG_ZIP64_EOCD {
        return Err(ZipError::BadZip64 {
            at: z_at,
            why: "bad zip64 end of central directory signature",
        });
    }
    let rec_size = u64_at(&z, 4);
    if rec_size < ZIP64_EOCD_LEN - 12 || rec_size > loc_at - z_at - 12 {
        return Err(ZipError::BadZip64 {
            at: z_at,
            why: "record size does not fit before the locator",
        });
    }
    if u32_at(&z, 16) != 0 || u32_at(&z, 20) != 0 || u64_at(&z, 24) != u64_at(&z, 32) {
        return Err(ZipError::MultiDisk { at: z_at });
    }
    rec.entries = u64_at(&z, 32);
    rec.cd_size = u64_at(&z, 40);
    rec.cd_offset = u64_at(&z, 48);
    rec.start = z_at;
    rec.zip64 = true;
    Ok(rec)
}
