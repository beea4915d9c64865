//! Which format a file is, told from its first bytes (and its size), never from its name: the
//! magic numbers of GGUF, zip, NumPy `.npy` and pickle protocols 2–3, and safetensors' header
//! length followed by `{`.

use serde::{Deserialize, Serialize};

/// The container formats, as detected from their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// safetensors: an 8-byte little-endian header length, then a JSON header (`{`).
    Safetensors,
    /// GGUF (llama.cpp): magic `GGUF`.
    Gguf,
    /// A zip archive (`PK\x03\x04`): a PyTorch checkpoint (`*/data.pkl`) or a NumPy `.npz`; which
    /// one is told by its members.
    Zip,
    /// PyTorch's legacy format: a pickle (protocol 2: `\x80\x02`) starting with torch's magic number.
    PyTorchLegacy,
    /// NumPy `.npy`: magic `\x93NUMPY`.
    Npy,
}

/// Bytes [`detect`] needs at most.
pub const DETECT_BYTES: usize = 16;

/// The format of a file from its first bytes (up to [`DETECT_BYTES`]) and its size; `None` when no
/// reader knows it.
pub fn detect(first: &[u8], file_size: u64) -> Option<Format> {
    if first.starts_with(b"GGUF") {
        return Some(Format::Gguf);
    }
    if first.starts_with(b"PK\x03\x04") || first.starts_with(b"PK\x05\x06") {
        return Some(Format::Zip);
    }
    if first.starts_with(b"\x93NUMPY") {
        return Some(Format::Npy);
    }
    if first.starts_with(b"\x80\x02") || first.starts_with(b"\x80\x03") {
        return Some(Format::PyTorchLegacy);
    }
    // safetensors: a header length that fits the file, then `{`.
    if let (Some(len), Some(&b'{')) = (first.first_chunk::<8>(), first.get(8)) {
        let n = u64::from_le_bytes(*len);
        if n >= 2 && n <= file_size.saturating_sub(8) {
            return Some(Format::Safetensors);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_their_first_bytes() {
        assert_eq!(detect(b"GGUF\x03\0\0\0", 100), Some(Format::Gguf));
        assert_eq!(detect(b"PK\x03\x04rest", 100), Some(Format::Zip));
        assert_eq!(detect(b"\x93NUMPY\x01\0", 100), Some(Format::Npy));
        assert_eq!(
            detect(b"\x80\x02\x8a\x0a", 100),
            Some(Format::PyTorchLegacy)
        );
        let mut st = 10u64.to_le_bytes().to_vec();
        st.push(b'{');
        assert_eq!(detect(&st, 18), Some(Format::Safetensors));
        assert_eq!(detect(&st, 17), None, "header longer than the file");
        assert_eq!(detect(b"hello world", 100), None);
        assert_eq!(detect(b"", 0), None);
    }
}
