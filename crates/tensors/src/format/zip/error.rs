//! Why a zip archive or one of its members cannot be read: every rule of the reader broken is one
//! [`ZipError`] variant naming where.

use crate::source::SourceError;

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
