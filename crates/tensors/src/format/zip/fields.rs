//! What central directory entries and local headers both hold: the general purpose flags, the
//! zip64 extended information extra field (APPNOTE §4.5.3) and the member name, checked safe.

use super::read::{u16_at, u32_at, u64_at};
use super::ZipError;

pub(super) const FLAG_ENCRYPTED: u16 = 1;
pub(super) const FLAG_DESCRIPTOR: u16 = 1 << 3;
pub(super) const FLAG_STRONG_ENCRYPTION: u16 = 1 << 6;
const ZIP64_EXTRA_ID: u16 = 0x0001;

/// The values of a zip64 extended information extra field (APPNOTE §4.5.3): each present only
/// when the matching 32-bit (16-bit for the disk) field holds its sentinel, in this order.
pub(super) struct Zip64Needs {
    pub(super) size: bool,
    pub(super) compressed: bool,
    pub(super) offset: bool,
    pub(super) disk: bool,
}

/// Finds the zip64 extra field in `extra` and reads the values `needs` asks for; `None` when a
/// value is needed but the field is absent or too short, `Err` when the extra block is malformed.
pub(super) fn zip64_values(
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
pub(super) fn check_name(raw: &[u8]) -> Result<String, ZipError> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
