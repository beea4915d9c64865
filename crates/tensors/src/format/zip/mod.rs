//! A zip reader over [`ReadAt`](crate::source::ReadAt) for the zips checkpoints come in
//! (PyTorch's `archive/…` files, NumPy's `.npz`): it reads the end of central directory record (in
//! the last KiB, else searching back at most 64 KiB + 22 bytes), the zip64 locator and record when
//! present (usually in the same read), and the central directory — two reads for most archives,
//! never a pass over the members' data. A member's local header is read only when its data offset is asked for
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
//!
//! One module per part: `records` (the end records), `archive` (the central directory), `local`
//! (local headers and members' bytes), `inflate` (bounded inflate) and `crc32`, with `error` for
//! [`ZipError`] and the field readers they share in `fields` and `read`.

mod archive;
mod crc32;
mod error;
mod fields;
mod inflate;
mod local;
mod read;
mod records;

pub use archive::{Archive, Member, Method};
pub use crc32::crc32;
pub use error::ZipError;
pub use inflate::{for_each_inflated, Inflater, Scratch, MAX_RATIO};
pub use local::{Locate, EXTRA_GUESS};
pub use records::{EOCD_LEN, MAX_COMMENT_LEN};
