//! The zip reader on hand-made archives: valid ones (stored, deflated, zip64, data descriptors)
//! read back exactly, and one malformed archive per rule, each refused with its own error.
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::zip::{
    crc32, for_each_inflated, Archive, Inflater, Method, ZipError, MAX_RATIO,
};
use miniz_oxide::deflate::compress_to_vec;

/// One member for [`build`].
struct M {
    name: &'static str,
    content: Vec<u8>,
    deflate: bool,
}

fn m(name: &'static str, content: &[u8], deflate: bool) -> M {
    M {
        name,
        content: content.to_vec(),
        deflate,
    }
}

/// Options for [`build`].
#[derive(Default, Clone, Copy)]
struct Opts {
    /// Write zip64 end records and zip64 extra fields (sizes and offsets as 0xFFFFFFFF).
    zip64: bool,
    /// Sizes and CRC deferred to a data descriptor.
    descriptor: bool,
}

/// Where things are in a built archive.
struct Built {
    bytes: Vec<u8>,
    /// Local header offset of each member.
    local: Vec<usize>,
    /// Central directory entry offset of each member.
    central: Vec<usize>,
    eocd: usize,
}

fn le16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn le32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn le64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn build(members: &[M], o: Opts) -> Built {
    let mut out = Vec::new();
    let mut local = Vec::new();
    let mut records = Vec::new();
    for mm in members {
        let data = if mm.deflate {
            compress_to_vec(&mm.content, 6)
        } else {
            mm.content.clone()
        };
        let crc = crc32(0, &mm.content);
        let flags: u16 = if o.descriptor { 8 } else { 0 };
        let method: u16 = if mm.deflate { 8 } else { 0 };
        let at = out.len();
        local.push(at);
        out.extend_from_slice(b"PK\x03\x04");
        le16(&mut out, 45);
        le16(&mut out, flags);
        le16(&mut out, method);
        le32(&mut out, 0);
        let (c, s) = (data.len() as u64, mm.content.len() as u64);
        let mut extra = Vec::new();
        if o.descriptor {
            le32(&mut out, 0);
            le32(&mut out, 0);
            le32(&mut out, 0);
        } else if o.zip64 {
            le32(&mut out, crc);
            le32(&mut out, u32::MAX);
            le32(&mut out, u32::MAX);
            le16(&mut extra, 1);
            le16(&mut extra, 16);
            le64(&mut extra, s);
            le64(&mut extra, c);
        } else {
            le32(&mut out, crc);
            le32(&mut out, c as u32);
            le32(&mut out, s as u32);
        }
        le16(&mut out, mm.name.len() as u16);
        le16(&mut out, extra.len() as u16);
        out.extend_from_slice(mm.name.as_bytes());
        out.extend_from_slice(&extra);
        out.extend_from_slice(&data);
        if o.descriptor {
            out.extend_from_slice(b"PK\x07\x08");
            le32(&mut out, crc);
            le32(&mut out, c as u32);
            le32(&mut out, s as u32);
        }
        records.push((mm.name, flags, method, crc, c, s, at as u64));
    }
    let cd_offset = out.len();
    let mut central = Vec::new();
    for &(name, flags, method, crc, c, s, at) in &records {
        central.push(out.len());
        out.extend_from_slice(b"PK\x01\x02");
        le16(&mut out, 45);
        le16(&mut out, 45);
        le16(&mut out, flags);
        le16(&mut out, method);
        le32(&mut out, 0);
        le32(&mut out, crc);
        let mut extra = Vec::new();
        if o.zip64 {
            le32(&mut out, u32::MAX);
            le32(&mut out, u32::MAX);
            le16(&mut extra, 1);
            le16(&mut extra, 24);
            le64(&mut extra, s);
            le64(&mut extra, c);
            le64(&mut extra, at);
        } else {
            le32(&mut out, c as u32);
            le32(&mut out, s as u32);
        }
        le16(&mut out, name.len() as u16);
        le16(&mut out, extra.len() as u16);
        le16(&mut out, 0);
        le16(&mut out, 0);
        le16(&mut out, 0);
        le32(&mut out, 0);
        le32(&mut out, if o.zip64 { u32::MAX } else { at as u32 });
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&extra);
    }
    let cd_size = out.len() - cd_offset;
    let n = records.len() as u64;
    if o.zip64 {
        let z = out.len() as u64;
        out.extend_from_slice(b"PK\x06\x06");
        le64(&mut out, 44);
        le16(&mut out, 45);
        le16(&mut out, 45);
        le32(&mut out, 0);
        le32(&mut out, 0);
        le64(&mut out, n);
        le64(&mut out, n);
        le64(&mut out, cd_size as u64);
        le64(&mut out, cd_offset as u64);
        out.extend_from_slice(b"PK\x06\x07");
        le32(&mut out, 0);
        le64(&mut out, z);
        le32(&mut out, 1);
    }
    let eocd = out.len();
    out.extend_from_slice(b"PK\x05\x06");
    le16(&mut out, 0);
    le16(&mut out, 0);
    let n16 = if o.zip64 { u16::MAX } else { n as u16 };
    le16(&mut out, n16);
    le16(&mut out, n16);
    le32(&mut out, if o.zip64 { u32::MAX } else { cd_size as u32 });
    le32(&mut out, if o.zip64 { u32::MAX } else { cd_offset as u32 });
    le16(&mut out, 0);
    Built {
        bytes: out,
        local,
        central,
        eocd,
    }
}

fn two() -> Vec<M> {
    let big: Vec<u8> = (0..5000u32).flat_map(|i| (i % 251).to_le_bytes()).collect();
    vec![
        m("a.npy", b"hello stored", false),
        m("dir/b.npy", &big, true),
    ]
}

fn read_all(zip: &[u8], a: &Archive) -> Vec<Vec<u8>> {
    a.members()
        .iter()
        .map(|mm| a.read_range(&zip, mm, 0..mm.size).unwrap())
        .collect()
}

fn open(bytes: &[u8]) -> Result<Archive, ZipError> {
    Archive::open(&bytes)
}

#[test]
fn valid_archives_read_back_exactly() {
    for o in [
        Opts::default(),
        Opts {
            zip64: true,
            ..Opts::default()
        },
        Opts {
            descriptor: true,
            ..Opts::default()
        },
    ] {
        let ms = two();
        let z = build(&ms, o);
        let a = open(&z.bytes).unwrap();
        assert_eq!(a.is_zip64(), o.zip64);
        assert_eq!(a.members().len(), 2);
        assert_eq!(a.members()[0].method, Method::Stored);
        assert_eq!(a.members()[1].method, Method::Deflated);
        assert_eq!(a.find("dir/b.npy").unwrap().size, 20000);
        let got = read_all(&z.bytes, &a);
        assert_eq!(got[0], ms[0].content);
        assert_eq!(got[1], ms[1].content);
        let b = a.find("dir/b.npy").unwrap();
        assert_eq!(
            a.read_range(&z.bytes.as_slice(), b, 1000..1010).unwrap(),
            &ms[1].content[1000..1010]
        );
        let off = a.data_offset(&z.bytes.as_slice(), b).unwrap();
        let mut streamed = Vec::new();
        for_each_inflated::<_, ZipError>(
            &z.bytes.as_slice(),
            off,
            b.compressed,
            7,
            19_000,
            333,
            |w| {
                assert!(w.len() <= 333);
                streamed.extend_from_slice(w);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(streamed, &ms[1].content[7..19_007]);
    }
}

#[test]
fn a_comment_and_an_empty_archive_are_fine() {
    let mut z = build(&two(), Opts::default()).bytes;
    let n = z.len();
    z[n - 2..].copy_from_slice(&5u16.to_le_bytes());
    z.extend_from_slice(b"hello");
    assert_eq!(open(&z).unwrap().members().len(), 2);
    let empty = build(&[], Opts::default()).bytes;
    assert_eq!(empty.len(), 22);
    assert!(open(&empty).unwrap().members().is_empty());
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// The first member's data offset, then the whole-member read of each member, as one result.
fn walk(bytes: &[u8]) -> Result<(), ZipError> {
    let a = open(bytes)?;
    for mm in a.members() {
        a.read_range(&bytes, mm, 0..mm.size)?;
    }
    Ok(())
}

macro_rules! refused {
    ($bytes:expr, $pat:pat) => {{
        let bytes: &[u8] = &$bytes;
        let r = walk(bytes);
        assert!(matches!(r, Err($pat)), "got {r:?}");
    }};
}

#[test]
fn no_end_record() {
    refused!(*b"PK\x03\x04 not a zip", ZipError::NoEocd { .. });
    let z = build(&two(), Opts::default());
    refused!(z.bytes[..z.bytes.len() - 1], ZipError::NoEocd { .. });
    // A comment length that does not end at the end of the file.
    let mut b = z.bytes.clone();
    put16(&mut b, z.eocd + 20, 3);
    refused!(b, ZipError::NoEocd { .. });
    // 64 KiB + 22 of junk after the record: beyond the search window.
    let mut b = z.bytes.clone();
    b.extend(std::iter::repeat_n(0u8, 70_000));
    refused!(b, ZipError::NoEocd { .. });
}

#[test]
fn multi_disk() {
    let z = build(&two(), Opts::default());
    let mut b = z.bytes.clone();
    put16(&mut b, z.eocd + 4, 1);
    refused!(b, ZipError::MultiDisk { .. });
    let mut b = z.bytes.clone();
    put16(&mut b, z.eocd + 8, 1);
    refused!(b, ZipError::MultiDisk { .. });
    let mut b = z.bytes.clone();
    put16(&mut b, z.central[0] + 34, 2);
    refused!(b, ZipError::MultiDisk { .. });
    let z = build(
        &two(),
        Opts {
            zip64: true,
            ..Opts::default()
        },
    );
    let mut b = z.bytes.clone();
    put32(&mut b, z.eocd - 4, 3); // locator: total disks
    refused!(b, ZipError::MultiDisk { .. });
}

#[test]
fn bad_zip64() {
    let z = build(
        &two(),
        Opts {
            zip64: true,
            ..Opts::default()
        },
    );
    let mut b = z.bytes.clone();
    let loc = z.eocd - 20;
    b[loc + 8..loc + 16].copy_from_slice(&(loc as u64).to_le_bytes());
    refused!(b, ZipError::BadZip64 { .. });
    let mut b = z.bytes.clone();
    let rec = z.eocd - 20 - 56;
    b[rec] = b'X';
    refused!(b, ZipError::BadZip64 { .. });
    // A zip64 sentinel in a central entry without its extra value.
    let mut b = z.bytes.clone();
    put16(&mut b, z.central[0] + 30, 0); // extra length 0: the entry now ends early
    refused!(b, ZipError::BadCentralEntry { .. });
}

#[test]
fn central_directory_out_of_file() {
    let z = build(&two(), Opts::default());
    let mut b = z.bytes.clone();
    put32(&mut b, z.eocd + 16, z.eocd as u32);
    refused!(b, ZipError::CentralDirectoryOutOfFile { .. });
    let mut b = z.bytes.clone();
    put32(&mut b, z.eocd + 12, u32::MAX - 1);
    refused!(b, ZipError::CentralDirectoryOutOfFile { .. });
}

#[test]
fn entry_count_mismatch() {
    let z = build(&two(), Opts::default());
    let mut b = z.bytes.clone();
    put16(&mut b, z.eocd + 8, 3);
    put16(&mut b, z.eocd + 10, 3);
    refused!(
        b,
        ZipError::EntryCount {
            declared: 3,
            found: 2
        }
    );
    // A count of 65535 with two entries' bytes: nothing is allocated for 65535.
    let mut b = z.bytes.clone();
    put16(&mut b, z.eocd + 8, u16::MAX);
    put16(&mut b, z.eocd + 10, u16::MAX);
    refused!(b, ZipError::EntryCount { .. });
}

#[test]
fn bad_central_entry() {
    let z = build(&two(), Opts::default());
    let mut b = z.bytes.clone();
    b[z.central[1]] = b'X';
    refused!(b, ZipError::BadCentralEntry { index: 1, .. });
    let mut b = z.bytes.clone();
    put16(&mut b, z.central[1] + 28, 500); // name runs past the directory
    refused!(b, ZipError::BadCentralEntry { index: 1, .. });
}

fn with_names(names: [&'static str; 2]) -> Vec<u8> {
    build(
        &[m(names[0], b"x", false), m(names[1], b"y", false)],
        Opts::default(),
    )
    .bytes
}

#[test]
fn unsafe_and_duplicate_names() {
    for bad in [
        "../evil.npy",
        "/etc/passwd",
        "a\\b.npy",
        "a/../../b",
        "C:x.npy",
    ] {
        let b = with_names(["ok.npy", bad]);
        refused!(b, ZipError::BadName { .. });
    }
    refused!(with_names(["same", "same"]), ZipError::DuplicateName { .. });
}

#[test]
fn encrypted_and_unsupported_methods() {
    let z = build(&two(), Opts::default());
    let mut b = z.bytes.clone();
    put16(&mut b, z.central[0] + 8, 1);
    refused!(b, ZipError::Encrypted { .. });
    let mut b = z.bytes.clone();
    put16(&mut b, z.local[0] + 6, 1); // only the local header says so
    refused!(b, ZipError::Encrypted { .. });
    let mut b = z.bytes.clone();
    put16(&mut b, z.central[1] + 10, 14); // LZMA
    refused!(b, ZipError::UnsupportedMethod { method: 14, .. });
}

#[test]
fn overlapping_members_and_sizes_beyond_the_file() {
    let z = build(&two(), Opts::default());
    // The first member's stored size grows into the second.
    let mut b = z.bytes.clone();
    put32(&mut b, z.central[0] + 20, 100);
    put32(&mut b, z.central[0] + 24, 100);
    refused!(b, ZipError::Overlap { .. });
    // Both members at the same offset.
    let mut b = z.bytes.clone();
    put32(&mut b, z.central[1] + 42, 0);
    refused!(b, ZipError::Overlap { .. });
    // The last member runs into the central directory / past the file.
    let mut b = z.bytes.clone();
    put32(&mut b, z.central[1] + 20, u32::MAX - 8);
    refused!(b, ZipError::BeyondFile { .. });
    // A local extra field that pushes the data past the slot (found when the header is read).
    let mut b = z.bytes.clone();
    put16(&mut b, z.local[0] + 28, 40);
    refused!(
        b,
        ZipError::BadLocalHeader { .. } | ZipError::Overlap { .. }
    );
    // Stored with differing sizes.
    let mut b = z.bytes.clone();
    put32(&mut b, z.central[0] + 24, 3);
    refused!(b, ZipError::StoredSizeMismatch { .. });
}

#[test]
fn local_header_disagreeing() {
    let z = build(&two(), Opts::default());
    let mut b = z.bytes.clone();
    b[z.local[1]] = b'X';
    refused!(b, ZipError::BadLocalHeader { .. });
    let mut b = z.bytes.clone();
    b[z.local[0] + 30] = b'z'; // name
    refused!(b, ZipError::LocalMismatch { field: "name", .. });
    let mut b = z.bytes.clone();
    put32(&mut b, z.local[1] + 14, 1);
    refused!(
        b,
        ZipError::LocalMismatch {
            field: "CRC-32",
            ..
        }
    );
    let mut b = z.bytes.clone();
    put32(&mut b, z.local[1] + 22, 7);
    refused!(b, ZipError::LocalMismatch { field: "size", .. });
    let mut b = z.bytes.clone();
    put16(&mut b, z.local[1] + 8, 0);
    refused!(
        b,
        ZipError::LocalMismatch {
            field: "compression method",
            ..
        }
    );
}

#[test]
fn crc_and_deflate_stream_errors() {
    let z = build(&two(), Opts::default());
    // A wrong CRC in both headers: found when the member is read whole.
    let mut b = z.bytes.clone();
    put32(&mut b, z.central[0] + 16, 7);
    put32(&mut b, z.local[0] + 14, 7);
    refused!(b, ZipError::CrcMismatch { .. });
    // Garbage where the deflate stream is.
    let mut b = z.bytes.clone();
    let data = z.local[1] + 30 + "dir/b.npy".len();
    for x in &mut b[data..data + 8] {
        *x = 0xFF;
    }
    refused!(
        b,
        ZipError::Corrupt { .. } | ZipError::Truncated { .. } | ZipError::InflatedTooShort { .. }
    );
}

/// A member declaring `size` inflated bytes, with `content` deflated.
fn liar(content: &[u8], size: u32) -> Vec<u8> {
    let z = build(&[m("x.npy", content, true)], Opts::default());
    let mut b = z.bytes;
    put32(&mut b, z.central[0] + 24, size);
    put32(&mut b, z.local[0] + 22, size);
    b
}

#[test]
fn zip_bombs_are_refused_without_allocating() {
    // A few compressed bytes declaring 4 GB: refused from the sizes alone, at open.
    let b = liar(&[0u8; 1000], u32::MAX - 1);
    assert!(matches!(
        open(&b),
        Err(ZipError::RatioTooHigh {
            limit: MAX_RATIO,
            ..
        })
    ));
    // A stream that inflates to more than it declares: reading stops at the declared size and
    // the whole-member read says it is too long.
    let content = vec![7u8; 100_000];
    refused!(liar(&content, 50_000), ZipError::InflatedTooLong { .. });
    // One that inflates to less.
    refused!(liar(&content, 100_500), ZipError::InflatedTooShort { .. });
    // An honest highly compressible member is fine, and a reader asking for a prefix gets
    // just that.
    let b = liar(&content, 100_000);
    let a = open(&b).unwrap();
    let mm = &a.members()[0];
    assert!(mm.compressed < 1000);
    assert_eq!(
        a.read_range(&b.as_slice(), mm, 0..10).unwrap(),
        vec![7u8; 10]
    );
    let off = a.data_offset(&b.as_slice(), mm).unwrap();
    let mut inf = Inflater::new(&b, off, mm.compressed, 10).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    assert_eq!(inf.read(&mut buf).unwrap(), 10, "never more than declared");
    assert_eq!(inf.read(&mut buf).unwrap(), 0);
    assert!(matches!(
        inf.finish(),
        Err(ZipError::InflatedTooLong { .. })
    ));
}

#[test]
fn ranges_past_a_member_are_refused() {
    let z = build(&two(), Opts::default());
    let a = open(&z.bytes).unwrap();
    let mm = &a.members()[0];
    assert!(matches!(
        a.read_range(&z.bytes.as_slice(), mm, 0..mm.size + 1),
        Err(ZipError::RangeOutOfMember { .. })
    ));
}
