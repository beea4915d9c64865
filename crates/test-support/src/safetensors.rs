//! safetensors files made in memory: the 8-byte little-endian header length, the JSON header,
//! then the tensors' bytes. [`from_json`] takes the header exactly as given (for files that break
//! a rule on purpose); [`Builder`] writes a valid header from a list of tensors.

use std::fmt::Display;

/// A safetensors file: `json.len()` as a little-endian `u64`, `json` byte for byte (no padding,
/// no checks), then `data`.
pub fn from_json(json: &str, data: &[u8]) -> Vec<u8> {
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(json.as_bytes());
    file.extend_from_slice(data);
    file
}

/// Where the data section of a safetensors file starts: 8 + the header length its first 8 bytes
/// declare. Panics if `file` is shorter than 8 bytes.
pub fn data_start(file: &[u8]) -> usize {
    let len = file
        .first_chunk::<8>()
        .expect("a safetensors file starts with its 8-byte header length");
    8 + u64::from_le_bytes(*len) as usize
}

/// `file` (a safetensors file) with about `per_mille` / 1000 of its tensors' bytes changed: byte
/// `i` of a tensor's data is XORed with a nonzero byte when `noise[i] · 1000 / 256 < per_mille`,
/// `noise` being [`crate::rng::bytes`]`(seed, file.len())` (header and padding are kept).
pub fn changed(file: &[u8], per_mille: u64, seed: u64) -> Vec<u8> {
    let start = data_start(file);
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&file[8..start]).expect("a valid safetensors header");
    let mut out = file.to_vec();
    let noise = crate::rng::bytes(seed, out.len());
    for (name, t) in &header {
        if name == "__metadata__" {
            continue;
        }
        let offsets = t["data_offsets"].as_array().expect("data_offsets");
        let at = |k: usize| start + offsets[k].as_u64().expect("an offset") as usize;
        for i in at(0)..at(1) {
            if u64::from(noise[i]) * 1000 / 256 < per_mille {
                out[i] ^= noise[(i + 1) % noise.len()] | 1;
            }
        }
    }
    out
}

/// Builds a valid safetensors file: optional `__metadata__` entries, then the tensors in the
/// order added, their data back to back from offset 0.
///
/// The header is written as
/// `{"__metadata__":{"k":"v"},"name":{"dtype":"BF16","shape":[2, 3],"data_offsets":[0,12]}}`
/// (names and metadata JSON-escaped; a shape with more than one dimension has a space after each
/// comma) and, unless [`Builder::unaligned`], padded with spaces to a multiple of 8 bytes as the
/// `safetensors` library writes it.
///
/// ```
/// use bitlens_test_support::safetensors::{data_start, Builder};
/// let file = Builder::new()
///     .metadata("format", "pt")
///     .tensor("w", "BF16", &[2], &[0x80, 0x3F, 0, 0x40])
///     .build();
/// assert_eq!(data_start(&file) % 8, 0);
/// assert_eq!(file[data_start(&file)..], [0x80, 0x3F, 0, 0x40]);
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    metadata: Vec<(String, String)>,
    entries: Vec<String>,
    data: Vec<u8>,
    aligned: bool,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// An empty file whose header will be padded to a multiple of 8 bytes.
    pub fn new() -> Self {
        Builder {
            metadata: Vec::new(),
            entries: Vec::new(),
            data: Vec::new(),
            aligned: true,
        }
    }

    /// Leaves the header unpadded: the data starts right after the JSON's closing brace.
    pub fn unaligned(mut self) -> Self {
        self.aligned = false;
        self
    }

    /// Adds a `__metadata__` entry (written in the order added).
    pub fn metadata(mut self, key: &str, value: &str) -> Self {
        self.metadata.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Adds a tensor: `dtype` as safetensors spells it (`"BF16"`, or anything whose `Display`
    /// prints that, such as `bitlens_tensors::Dtype`), its shape, and its bytes, placed after the
    /// previous tensor's. Nothing checks that the shape and the byte count agree.
    pub fn tensor(mut self, name: &str, dtype: impl Display, shape: &[u64], data: &[u8]) -> Self {
        let start = self.data.len();
        self.data.extend_from_slice(data);
        self.entries.push(format!(
            r#"{}:{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{start},{}]}}"#,
            quoted(name),
            self.data.len()
        ));
        self
    }

    /// The file's bytes.
    pub fn build(self) -> Vec<u8> {
        let mut parts = Vec::with_capacity(self.entries.len() + 1);
        if !self.metadata.is_empty() {
            let entries: Vec<String> = self
                .metadata
                .iter()
                .map(|(k, v)| format!("{}:{}", quoted(k), quoted(v)))
                .collect();
            parts.push(format!(r#""__metadata__":{{{}}}"#, entries.join(",")));
        }
        parts.extend(self.entries);
        let mut json = format!("{{{}}}", parts.join(","));
        if self.aligned {
            while json.len() % 8 != 0 {
                json.push(' ');
            }
        }
        from_json(&json, &self.data)
    }
}

/// `s` as a JSON string literal.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serializes to JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact bytes: the tests' fixtures (and so what they assert) depend on them.
    #[test]
    fn writes_the_header_byte_for_byte() {
        let file = Builder::new()
            .metadata("format", "pt")
            .metadata("step", "100")
            .tensor("a", "BF16", &[2, 1], &[1, 2, 3, 4])
            .tensor("s", "F32", &[], &[5, 6, 7, 8])
            .build();
        let json = r#"{"__metadata__":{"format":"pt","step":"100"},"a":{"dtype":"BF16","shape":[2, 1],"data_offsets":[0,4]},"s":{"dtype":"F32","shape":[],"data_offsets":[4,8]}}"#;
        let padded = format!(
            "{json}{}",
            " ".repeat(json.len().next_multiple_of(8) - json.len())
        );
        assert_eq!(file, from_json(&padded, &[1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(data_start(&file), 8 + padded.len());
    }

    #[test]
    fn unaligned_leaves_the_header_as_written() {
        let file = Builder::new()
            .unaligned()
            .tensor("w", "U8", &[3], &[9, 9, 9])
            .build();
        let json = r#"{"w":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}"#;
        assert_eq!(file, from_json(json, &[9, 9, 9]));
    }

    #[test]
    fn names_are_escaped() {
        let file = Builder::new().tensor("a\"b", "U8", &[0], &[]).build();
        let header: serde_json::Value =
            serde_json::from_slice(&file[8..data_start(&file)]).expect("valid JSON");
        assert!(header.get("a\"b").is_some());
        assert_eq!(Builder::new().build(), from_json("{}      ", &[]));
    }
}
