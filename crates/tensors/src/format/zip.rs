//! A zip reader over [`ReadAt`] for the zips checkpoints come in (PyTorch's `archive/…` files,
//! NumPy's `.npz`): it reads the end of central directory record (in the last KiB, else searching
//! back at most 64 KiB + 22 bytes), the zip64 locator and record when present (usually in the same
//! read), and the central directory — two reads for most archives, never a pass over the members'
//! data. A member's local header is read only when its data offset is asked for
//! ([`Archive::data_offset`]; [`Archive::locate`] also returns the member's first bytes from the
//! same read), so opening a remote archive costs the same few range requests whatever its size.
//!
//! Follows PKWARE's APPNOTE.TXT (6.3.x: §4.3.6 local header, §4.3.12 central directory, §4.3.14–16
//! zip64 and end records, §4.5.3 the zip64 extra field) as Python's `zipfile` and PyTorch's miniz
//! writer use it. Every rule broken is a [`ZipError`]: no end record, records or members outside
//! the file, entry counts that do not match, unsafe names (`..`, absolute paths, backslashes),
//! encryption, methods other than stored and deflate, overlapping members, multi-disk archives.
//!
//! Deflated members are inflated with `miniz_oxide` by an [`Inflater`] that never produces more
//! than the member's declared size, refuses declared sizes beyond what deflate can reach from the
//! compressed size ([`MAX_RATIO`]: a zip bomb declaring a huge size is refused before anything is
//! allocated), reports a member whose stream is longer or shorter than declared, and checks the
//! CRC-32 when a whole member is read.

use crate::source::{ReadAt, SourceError};
use miniz_oxide::inflate::stream::{inflate as mz_inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};
use std::collections::HashSet;
use std::ops::Range;

/// Size of the end of central directory record without its comment.
pub const EOCD_LEN: u64 = 22;
/// The longest comment an end record can carry (how far back its signature is searched).
pub const MAX_COMMENT_LEN: u64 = 65_535;
/// Bytes at the end of a file searched first for the end record.
const FIRST_TAIL: u64 = 1024;
/// The largest inflated/compressed ratio a deflate stream can reach (a run of one byte coded as
/// 258-byte matches: about 1032:1). A member declaring more is refused as a zip bomb.
pub const MAX_RATIO: u64 = 1032;
/// Inflated bytes allowed on top of `compressed × MAX_RATIO` (tiny members: block headers).
const RATIO_SLACK: u64 = 1024;
/// Compressed bytes read per request while inflating: the first read is small (a reader after a
/// member's first bytes needs little), each next one doubles, up to the largest.
const INPUT_WINDOW: u64 = 64 * 1024;
const FIRST_INPUT_WINDOW: u64 = 1024;
/// Stored ranges up to this long are read along with their member's local header (one read).
const READ_WITH_HEADER: u64 = 1 << 20;

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

const SIG_LOCAL: &[u8; 4] = b"PK\x03\x04";
const SIG_CENTRAL: &[u8; 4] = b"PK\x01\x02";
const SIG_EOCD: &[u8; 4] = b"PK\x05\x06";
const SIG_ZIP64_EOCD: &[u8; 4] = b"PK\x06\x06";
const SIG_ZIP64_LOCATOR: &[u8; 4] = b"PK\x06\x07";
const LOCAL_LEN: u64 = 30;
const CENTRAL_LEN: usize = 46;
const ZIP64_LOCATOR_LEN: u64 = 20;
const ZIP64_EOCD_LEN: u64 = 56;
/// Smallest data descriptor (crc, compressed and inflated sizes, no signature).
const DESCRIPTOR_MIN_LEN: u64 = 12;
const FLAG_ENCRYPTED: u16 = 1;
const FLAG_DESCRIPTOR: u16 = 1 << 3;
const FLAG_STRONG_ENCRYPTION: u16 = 1 << 6;
const ZIP64_EXTRA_ID: u16 = 0x0001;

/// Why a zip archive (or one of its members) cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZipError {
    /// A read from the source failed or ran past its end.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// No end of central directory record whose comment ends the file in the last bytes searched.
    #[error("no zip end of central directory record in the last {searched} bytes (not a zip, or truncated)")]
    NoEocd {
        /// Bytes searched back from the end.
        searched: u64,
    },
    /// The archive spans several disks (or says so).
    #[error("multi-disk zip archives are not supported (record at offset {at})")]
    MultiDisk {
        /// Offset of the record saying so.
        at: u64,
    },
    /// The zip64 end of central directory locator or record is invalid.
    #[error("invalid zip64 end of central directory at offset {at}: {why}")]
    BadZip64 {
        /// Offset of the locator or record.
        at: u64,
        /// The rule broken.
        why: &'static str,
    },
    /// The central directory does not lie between the start of the file and the end records.
    #[error("central directory at offset {offset} ({size} bytes) runs past {limit}, where the end records start")]
    CentralDirectoryOutOfFile {
        /// Declared offset.
        offset: u64,
        /// Declared size.
        size: u64,
        /// Where the end records start.
        limit: u64,
    },
    /// The end record's entry count differs from the entries in the central directory.
    #[error("the end record declares {declared} entries but the central directory holds {found}")]
    EntryCount {
        /// Declared count.
        declared: u64,
        /// Entries found in the central directory's bytes.
        found: u64,
    },
    /// A central directory entry is malformed.
    #[error("central directory entry {index} at offset {at}: {why}")]
    BadCentralEntry {
        /// Index of the entry.
        index: usize,
        /// Offset of the entry.
        at: u64,
        /// The rule broken.
        why: &'static str,
    },
    /// A member name that could escape an extraction directory or is not UTF-8.
    #[error("zip member {name:?}: unsafe name ({why})")]
    BadName {
        /// The name (lossily decoded).
        name: String,
        /// The rule broken.
        why: &'static str,
    },
    /// Two members with the same name.
    #[error("zip member {name:?} appears twice")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// An encrypted member.
    #[error("zip member {name:?} is encrypted")]
    Encrypted {
        /// The member.
        name: String,
    },
    /// A compression method other than stored (0) and deflate (8).
    #[error(
        "zip member {name:?}: unsupported compression method {method} (only stored and deflate)"
    )]
    UnsupportedMethod {
        /// The member.
        name: String,
        /// The method id.
        method: u16,
    },
    /// A stored member whose compressed and inflated sizes differ.
    #[error("stored zip member {name:?}: compressed size {compressed} differs from size {size}")]
    StoredSizeMismatch {
        /// The member.
        name: String,
        /// Compressed size.
        compressed: u64,
        /// Declared size.
        size: u64,
    },
    /// A member whose bytes run into the next member.
    #[error("zip member {name:?}: its bytes run to offset {end}, past offset {limit} where the next member starts")]
    Overlap {
        /// The member.
        name: String,
        /// Where its bytes end (at least).
        end: u64,
        /// Where the next member's local header starts.
        limit: u64,
    },
    /// A member whose bytes run past the central directory's start (the end of the members).
    #[error("zip member {name:?}: its bytes run to offset {end}, past offset {limit} where the central directory starts")]
    BeyondFile {
        /// The member.
        name: String,
        /// Where its bytes end (at least).
        end: u64,
        /// Where the central directory starts.
        limit: u64,
    },
    /// A member's local header is malformed.
    #[error("zip member {name:?}: local header at offset {at}: {why}")]
    BadLocalHeader {
        /// The member.
        name: String,
        /// Offset of the local header.
        at: u64,
        /// The rule broken.
        why: &'static str,
    },
    /// A member's local header disagrees with its central directory entry.
    #[error("zip member {name:?}: local header's {field} differs from the central directory's")]
    LocalMismatch {
        /// The member.
        name: String,
        /// The field that differs.
        field: &'static str,
    },
    /// A deflated stream declaring more inflated bytes than deflate can produce from its size.
    #[error("deflate stream at offset {at}: {size} bytes from {compressed} compressed exceeds the ratio limit {limit}:1 (zip bomb)")]
    RatioTooHigh {
        /// Offset of the stream.
        at: u64,
        /// Compressed size.
        compressed: u64,
        /// Declared inflated size.
        size: u64,
        /// The ratio limit.
        limit: u64,
    },
    /// Invalid deflate data.
    #[error("deflate stream at offset {at}: corrupt data after {produced} inflated bytes")]
    Corrupt {
        /// Offset of the stream.
        at: u64,
        /// Bytes inflated before the error.
        produced: u64,
    },
    /// The compressed bytes end before the deflate stream does.
    #[error("deflate stream at offset {at}: its {compressed} compressed bytes end before the stream does")]
    Truncated {
        /// Offset of the stream.
        at: u64,
        /// Compressed size.
        compressed: u64,
    },
    /// The deflate stream ends before its declared size.
    #[error("deflate stream at offset {at}: ends after {got} bytes, {expected} declared")]
    InflatedTooShort {
        /// Offset of the stream.
        at: u64,
        /// Declared size.
        expected: u64,
        /// Bytes it inflated to.
        got: u64,
    },
    /// The deflate stream goes on past its declared size.
    #[error("deflate stream at offset {at}: inflates past its declared {expected} bytes")]
    InflatedTooLong {
        /// Offset of the stream.
        at: u64,
        /// Declared size.
        expected: u64,
    },
    /// A member's CRC-32 differs from its bytes'.
    #[error("zip member {name:?}: CRC-32 {got:#010x} differs from the declared {expected:#010x}")]
    CrcMismatch {
        /// The member.
        name: String,
        /// Declared CRC-32.
        expected: u32,
        /// CRC-32 of its bytes.
        got: u32,
    },
    /// A byte range past a member's size was asked for.
    #[error("zip member {name:?}: range {start}..{end} runs past its {size} bytes")]
    RangeOutOfMember {
        /// The member.
        name: String,
        /// Range start.
        start: u64,
        /// Range end.
        end: u64,
        /// Member size.
        size: u64,
    },
}

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
    cd_offset: u64,
    cd_size: u64,
    zip64: bool,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

fn read_vec(src: &dyn ReadAt, offset: u64, len: u64) -> Result<Vec<u8>, SourceError> {
    // Checked against the source's size before allocating: `len` is bounded by the input.
    let out_of_bounds = SourceError::OutOfBounds {
        offset,
        len,
        size: src.size(),
    };
    let n = usize::try_from(len).map_err(|_| out_of_bounds)?;
    crate::source::check_bounds(offset, n, src.size())?;
    let mut buf = vec![0u8; n];
    src.read_exact_at(offset, &mut buf)?;
    Ok(buf)
}

/// The values of a zip64 extended information extra field (APPNOTE §4.5.3): each present only
/// when the matching 32-bit (16-bit for the disk) field holds its sentinel, in this order.
struct Zip64Needs {
    size: bool,
    compressed: bool,
    offset: bool,
    disk: bool,
}

/// Finds the zip64 extra field in `extra` and reads the values `needs` asks for; `None` when a
/// value is needed but the field is absent or too short, `Err` when the extra block is malformed.
fn zip64_values(
    extra: &[u8],
    needs: &Zip64Needs,
) -> Result<Option<[Option<u64>; 4]>, &'static str> {
    let mut pos = 0usize;
    let mut found: Option<&[u8]> = None;
    while pos < extra.len() {
        if extra.len() - pos < 4 {
            return Err("extra field header truncated");
        }
        let id = u16_at(extra, pos);
        let len = usize::from(u16_at(extra, pos + 2));
        let body = extra
            .get(pos + 4..pos + 4 + len)
            .ok_or("extra field runs past the extra block")?;
        if id == ZIP64_EXTRA_ID && found.is_none() {
            found = Some(body);
        }
        pos += 4 + len;
    }
    let wanted = [needs.size, needs.compressed, needs.offset, needs.disk];
    if !wanted.iter().any(|w| *w) {
        return Ok(Some([None; 4]));
    }
    let Some(body) = found else { return Ok(None) };
    let mut out = [None; 4];
    let mut at = 0usize;
    for (i, w) in wanted.iter().enumerate() {
        if !*w {
            continue;
        }
        let width = if i == 3 { 4 } else { 8 };
        let Some(bytes) = body.get(at..at + width) else {
            return Ok(None);
        };
        out[i] = Some(if width == 8 {
            u64_at(bytes, 0)
        } else {
            u64::from(u32_at(bytes, 0))
        });
        at += width;
    }
    Ok(Some(out))
}

/// Checks a member name is safe to use as a path: UTF-8, not empty, relative, no `..`
/// component, no backslash, no NUL, no drive letter.
fn check_name(raw: &[u8]) -> Result<String, ZipError> {
    let bad = |why| ZipError::BadName {
        name: String::from_utf8_lossy(raw).into_owned(),
        why,
    };
    let name = std::str::from_utf8(raw).map_err(|_| bad("not UTF-8"))?;
    if name.is_empty() {
        return Err(bad("empty"));
    }
    if name.contains('\\') {
        return Err(bad("backslash"));
    }
    if name.contains('\0') {
        return Err(bad("NUL byte"));
    }
    if name.starts_with('/') {
        return Err(bad("absolute path"));
    }
    let b = name.as_bytes();
    if b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic() {
        return Err(bad("drive letter"));
    }
    if name.split('/').any(|c| c == "..") {
        return Err(bad("`..` component"));
    }
    Ok(name.to_owned())
}

/// Where the end records say the central directory is.
struct EndRecords {
    entries: u64,
    cd_offset: u64,
    cd_size: u64,
    /// Where the end records start (the zip64 record, or the end record).
    start: u64,
    zip64: bool,
}

fn read_end_records(src: &dyn ReadAt) -> Result<EndRecords, ZipError> {
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
fn min_member_end(member: &Member, extra: u64) -> Option<u64> {
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

/// Refuses a deflate stream of `compressed` bytes declaring more than deflate can produce.
fn check_ratio(at: u64, compressed: u64, size: u64) -> Result<(), ZipError> {
    if size
        > compressed
            .saturating_mul(MAX_RATIO)
            .saturating_add(RATIO_SLACK)
    {
        return Err(ZipError::RatioTooHigh {
            at,
            compressed,
            size,
            limit: MAX_RATIO,
        });
    }
    Ok(())
}

/// An inflater's working memory (about 43 KB: the 32 KiB window and the decoder's tables), kept
/// to be reused by the next one.
pub struct Scratch(Box<InflateState>);

impl Scratch {
    /// Fresh working memory.
    pub fn new() -> Self {
        Scratch(InflateState::new_boxed(DataFormat::Raw))
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new()
    }
}

/// A bounded streaming inflater over a raw deflate stream of `compressed` bytes at an offset of a
/// [`ReadAt`]: it reads the compressed bytes in windows growing from 1 KiB to 64 KiB and never
/// produces more than the declared size.
pub struct Inflater<'a> {
    src: &'a dyn ReadAt,
    at: u64,
    pos: u64,
    end: u64,
    size: u64,
    produced: u64,
    state: Box<InflateState>,
    input: Vec<u8>,
    in_start: usize,
    window: u64,
    ended: bool,
}

impl<'a> Inflater<'a> {
    /// An inflater for the `compressed` bytes at `offset` declared to inflate to `size` bytes;
    /// refuses streams outside the source and declared sizes beyond [`MAX_RATIO`].
    pub fn new(
        src: &'a dyn ReadAt,
        offset: u64,
        compressed: u64,
        size: u64,
    ) -> Result<Self, ZipError> {
        Self::with_prefix(src, offset, compressed, size, Vec::new())
    }

    /// [`Inflater::new`] given the stream's first compressed bytes already read (`prefix`, at
    /// most `compressed` bytes: see [`Archive::locate`]).
    pub fn with_prefix(
        src: &'a dyn ReadAt,
        offset: u64,
        compressed: u64,
        size: u64,
        prefix: Vec<u8>,
    ) -> Result<Self, ZipError> {
        Self::with_scratch(src, offset, compressed, size, prefix, Scratch::new())
    }

    /// [`Inflater::with_prefix`] reusing the working memory of an earlier inflater
    /// ([`Inflater::into_scratch`]): for reading the start of many members.
    pub fn with_scratch(
        src: &'a dyn ReadAt,
        offset: u64,
        compressed: u64,
        size: u64,
        mut prefix: Vec<u8>,
        scratch: Scratch,
    ) -> Result<Self, ZipError> {
        let Scratch(mut state) = scratch;
        // A full reset (dictionary zeroed): nothing of an earlier stream can show through.
        state.reset(DataFormat::Raw);
        if offset
            .checked_add(compressed)
            .is_none_or(|e| e > src.size())
        {
            return Err(SourceError::OutOfBounds {
                offset,
                len: compressed,
                size: src.size(),
            }
            .into());
        }
        check_ratio(offset, compressed, size)?;
        prefix.truncate(compressed as usize);
        Ok(Inflater {
            src,
            at: offset,
            pos: offset + prefix.len() as u64,
            end: offset + compressed,
            size,
            produced: 0,
            state,
            input: prefix,
            in_start: 0,
            window: FIRST_INPUT_WINDOW,
            ended: false,
        })
    }

    /// Gives back the working memory for another inflater.
    pub fn into_scratch(self) -> Scratch {
        Scratch(self.state)
    }

    /// Offset of the compressed stream in the source.
    pub fn stream_offset(&self) -> u64 {
        self.at
    }

    /// Inflated bytes produced so far.
    pub fn produced(&self) -> u64 {
        self.produced
    }

    /// Inflates into `out`, at most up to the declared size; returns the bytes written (0 once
    /// the declared size is reached). Errors if the stream is corrupt, its compressed bytes end
    /// first, or it ends before the declared size.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, ZipError> {
        let want = (self.size - self.produced).min(out.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        match self.pump(&mut out[..want])? {
            0 => Err(ZipError::InflatedTooShort {
                at: self.at,
                expected: self.size,
                got: self.produced,
            }),
            n => Ok(n),
        }
    }

    /// Inflates and discards `n` bytes (bounded by the declared size).
    pub fn skip(&mut self, n: u64) -> Result<(), ZipError> {
        let target = self.produced.saturating_add(n).min(self.size);
        let mut scratch = vec![0u8; (target - self.produced).min(32 * 1024) as usize];
        while self.produced < target {
            let want = (target - self.produced).min(scratch.len() as u64) as usize;
            self.read(&mut scratch[..want])?;
        }
        Ok(())
    }

    /// After the declared size was produced: checks the stream ends there (it produces no more
    /// byte and reaches its end block within its compressed bytes).
    pub fn finish(mut self) -> Result<(), ZipError> {
        if self.produced < self.size {
            return Err(ZipError::InflatedTooShort {
                at: self.at,
                expected: self.size,
                got: self.produced,
            });
        }
        let mut probe = [0u8; 1];
        while !self.ended {
            if self.pump(&mut probe)? > 0 {
                return Err(ZipError::InflatedTooLong {
                    at: self.at,
                    expected: self.size,
                });
            }
        }
        Ok(())
    }

    /// One step of inflation into `out` (non-empty); returns bytes written, 0 only once the
    /// stream has ended.
    fn pump(&mut self, out: &mut [u8]) -> Result<usize, ZipError> {
        loop {
            if self.ended {
                return Ok(0);
            }
            // Inflate what is buffered first (the inflater may hold output from earlier input);
            // read more compressed bytes only when it can make no progress without them.
            let r = mz_inflate(
                &mut self.state,
                &self.input[self.in_start..],
                out,
                MZFlush::None,
            );
            self.in_start += r.bytes_consumed;
            self.produced += r.bytes_written as u64;
            match r.status {
                Ok(MZStatus::StreamEnd) => self.ended = true,
                Ok(_) | Err(MZError::Buf) => {}
                Err(_) => {
                    return Err(ZipError::Corrupt {
                        at: self.at,
                        produced: self.produced,
                    })
                }
            }
            if r.bytes_written > 0 || self.ended {
                return Ok(r.bytes_written);
            }
            if r.bytes_consumed > 0 {
                continue;
            }
            if self.in_start < self.input.len() {
                // Input and room for output, yet no progress: the data is bad.
                return Err(ZipError::Corrupt {
                    at: self.at,
                    produced: self.produced,
                });
            }
            if self.pos == self.end {
                return Err(ZipError::Truncated {
                    at: self.at,
                    compressed: self.end - self.at,
                });
            }
            let n = (self.end - self.pos).min(self.window);
            self.window = (self.window * 2).min(INPUT_WINDOW);
            self.input = read_vec(self.src, self.pos, n)?;
            self.in_start = 0;
            self.pos += n;
        }
    }
}

/// Streams bytes `skip..skip + len` of the raw deflate stream of `compressed` bytes at `offset`
/// (a [`crate::format::Data::Deflated`]) into `f` in pieces of at most `window` bytes, reusing
/// one buffer; inflation stops at `skip + len` and never produces more.
pub fn for_each_inflated<F, E>(
    src: &dyn ReadAt,
    offset: u64,
    compressed: u64,
    skip: u64,
    len: u64,
    window: usize,
    mut f: F,
) -> Result<(), E>
where
    F: FnMut(&[u8]) -> Result<(), E>,
    E: From<ZipError>,
{
    let total = skip.checked_add(len).ok_or(ZipError::RatioTooHigh {
        at: offset,
        compressed,
        size: u64::MAX,
        limit: MAX_RATIO,
    })?;
    let mut inf = Inflater::new(src, offset, compressed, total)?;
    inf.skip(skip)?;
    let mut buf = vec![0u8; (window.max(1) as u64).min(len) as usize];
    while inf.produced() < total {
        let want = (total - inf.produced()).min(buf.len() as u64) as usize;
        let n = inf.read(&mut buf[..want])?;
        f(&buf[..n])?;
    }
    Ok(())
}

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// The zip CRC-32 (IEEE, reflected) of `bytes`, continuing from `crc` (0 to start).
pub fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in bytes {
        c = CRC_TABLE[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_check_value() {
        assert_eq!(crc32(0, b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(crc32(0, b"1234"), b"56789"), 0xCBF4_3926);
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name(b"archive/data/0").is_ok());
        for bad in [
            &b"../x"[..],
            b"/x",
            b"a\\b",
            b"C:x",
            b"a/../b",
            b"",
            b"\xff",
        ] {
            assert!(
                matches!(check_name(bad), Err(ZipError::BadName { .. })),
                "{bad:?}"
            );
        }
    }
}
