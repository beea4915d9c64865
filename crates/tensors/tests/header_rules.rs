//! One test per header validation rule, each on a hand-made file.

use bitlens_tensors::{read_header, Dtype, Header, HeaderError, SourceError, MAX_HEADER_LEN};
use bitlens_test_support::safetensors;

/// A safetensors file: length prefix, the JSON exactly as given, then `data_len` zero bytes.
fn file(json: &str, data_len: usize) -> Vec<u8> {
    safetensors::from_json(json, &vec![0; data_len])
}

fn parse(f: &[u8]) -> Result<Header, HeaderError> {
    Header::parse(f, f.len() as u64)
}

#[test]
fn accepts_a_valid_file_and_keeps_metadata_and_raw_bytes() {
    let json = r#"{"__metadata__":{"z":"1","a":"2"},"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[8,20]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  "#;
    let f = file(json, 20);
    let h = parse(&f).unwrap();
    assert_eq!(h.header_len, json.len() as u64);
    assert_eq!(h.raw, json.as_bytes());
    assert_eq!(
        h.metadata,
        Some(vec![("z".into(), "1".into()), ("a".into(), "2".into())])
    );
    let names: Vec<_> = h.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"], "sorted by offset");
    assert_eq!(h.tensors[1].dtype, Dtype::BF16);
    assert_eq!(h.tensors[1].elements(), 6);
    assert_eq!(
        h.file_range(&h.tensors[1]),
        (8 + json.len() as u64 + 8, f.len() as u64)
    );
    // The same header through the ReadAt path.
    assert_eq!(read_header(&f).unwrap(), h);
}

#[test]
fn scalars_and_empty_tensors_are_valid() {
    let json = r#"{"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},"e":{"dtype":"F16","shape":[0,4],"data_offsets":[8,8]}}"#;
    let h = parse(&file(json, 8)).unwrap();
    assert_eq!(h.tensor("s").unwrap().elements(), 1);
    assert_eq!(h.tensor("e").unwrap().elements(), 0);
}

#[test]
fn rejects_file_shorter_than_length_prefix() {
    assert_eq!(
        parse(&[1, 2, 3]),
        Err(HeaderError::FileTooSmall { file_size: 3 })
    );
}

#[test]
fn rejects_header_over_100_mb() {
    let mut f = (MAX_HEADER_LEN + 1).to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    assert!(
        matches!(parse(&f), Err(HeaderError::HeaderTooLarge { header_len, .. }) if header_len == MAX_HEADER_LEN + 1)
    );
}

#[test]
fn rejects_header_longer_than_file() {
    let mut f = 1000u64.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    assert_eq!(
        parse(&f),
        Err(HeaderError::HeaderBeyondFile {
            header_len: 1000,
            file_size: 10
        })
    );
}

#[test]
fn rejects_invalid_utf8_with_its_offset() {
    let mut f = file(r#"{"a":1}"#, 0);
    f[10] = 0xFF;
    assert_eq!(parse(&f), Err(HeaderError::InvalidUtf8 { offset: 10 }));
}

#[test]
fn rejects_garbage_json_with_its_position() {
    let f = file("{\"a\":\n  nonsense}", 0);
    match parse(&f) {
        Err(HeaderError::InvalidJson {
            line: 2,
            column,
            offset,
            ..
        }) => {
            // Line 2 starts 6 bytes into the header; the parser stops inside `nonsense`.
            assert_eq!(offset, 8 + 6 + column as u64 - 1);
            assert!((3..=4).contains(&column), "{column}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn rejects_json_that_is_not_an_object() {
    assert!(matches!(
        parse(&file("[1,2]", 0)),
        Err(HeaderError::InvalidJson { .. })
    ));
}

#[test]
fn rejects_entry_of_wrong_shape() {
    let f = file(
        r#"{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}"#,
        4,
    );
    assert!(matches!(parse(&f), Err(HeaderError::InvalidJson { .. })));
    let f = file(r#"{"a":{"dtype":"F32","data_offsets":[0,4]}}"#, 4);
    assert!(
        matches!(parse(&f), Err(HeaderError::InvalidJson { message, .. }) if message.contains("shape"))
    );
}

#[test]
fn rejects_metadata_with_non_string_values() {
    let f = file(r#"{"__metadata__":{"n":1}}"#, 0);
    assert!(matches!(parse(&f), Err(HeaderError::InvalidJson { .. })));
}

#[test]
fn rejects_unknown_dtype() {
    let f = file(
        r#"{"a":{"dtype":"F12","shape":[1],"data_offsets":[0,2]}}"#,
        2,
    );
    assert_eq!(
        parse(&f),
        Err(HeaderError::UnknownDtype {
            tensor: "a".into(),
            dtype: "F12".into()
        })
    );
}

#[test]
fn rejects_duplicate_tensor_names() {
    let f = file(
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
        2,
    );
    assert_eq!(
        parse(&f),
        Err(HeaderError::DuplicateTensor { name: "a".into() })
    );
}

#[test]
fn rejects_duplicate_metadata_keys() {
    let f = file(r#"{"__metadata__":{"k":"1","k":"2"}}"#, 0);
    assert_eq!(
        parse(&f),
        Err(HeaderError::DuplicateMetadataKey { key: "k".into() })
    );
}

#[test]
fn rejects_reversed_offsets() {
    let f = file(
        r#"{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},"b":{"dtype":"U8","shape":[1],"data_offsets":[4,2]}}"#,
        4,
    );
    assert!(
        matches!(parse(&f), Err(HeaderError::ReversedOffsets { tensor, start: 4, end: 2 }) if tensor == "b")
    );
}

#[test]
fn rejects_gap_between_tensors() {
    let f = file(
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}"#,
        3,
    );
    assert_eq!(
        parse(&f),
        Err(HeaderError::NotContiguous {
            tensor: "b".into(),
            expected: 1,
            start: 2
        })
    );
}

#[test]
fn rejects_overlapping_tensors() {
    let f = file(
        r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}"#,
        3,
    );
    assert_eq!(
        parse(&f),
        Err(HeaderError::NotContiguous {
            tensor: "b".into(),
            expected: 2,
            start: 1
        })
    );
}

#[test]
fn rejects_data_not_starting_at_zero() {
    let f = file(
        r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
        2,
    );
    assert!(matches!(
        parse(&f),
        Err(HeaderError::NotContiguous {
            expected: 0,
            start: 1,
            ..
        })
    ));
}

#[test]
fn rejects_shape_overflow() {
    let f = file(
        r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296,2],"data_offsets":[0,4]}}"#,
        4,
    );
    assert!(matches!(parse(&f), Err(HeaderError::ShapeOverflow { .. })));
    // elements fit in u64 but elements × bits does not
    let f = file(
        r#"{"a":{"dtype":"F64","shape":[2305843009213693952],"data_offsets":[0,4]}}"#,
        4,
    );
    assert!(matches!(parse(&f), Err(HeaderError::ShapeOverflow { .. })));
}

#[test]
fn rejects_size_not_matching_shape() {
    let f = file(
        r#"{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}"#,
        4,
    );
    assert!(matches!(
        parse(&f),
        Err(HeaderError::SizeMismatch {
            expected: 6,
            actual: 4,
            ..
        })
    ));
}

#[test]
fn rejects_packed_tensor_not_ending_on_a_byte() {
    let f = file(
        r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}"#,
        2,
    );
    assert!(matches!(
        parse(&f),
        Err(HeaderError::MisalignedPacked {
            elements: 3,
            bits: 4,
            ..
        })
    ));
    let ok = file(
        r#"{"a":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}}"#,
        2,
    );
    assert!(parse(&ok).is_ok());
}

#[test]
fn rejects_truncated_data() {
    let json = r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#;
    let mut f = file(json, 16);
    f.truncate(f.len() - 3);
    assert_eq!(
        parse(&f),
        Err(HeaderError::DataSizeMismatch {
            data_end: 8 + json.len() as u64 + 16,
            file_size: f.len() as u64
        })
    );
}

#[test]
fn rejects_trailing_data() {
    let json = r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#;
    let f = file(json, 2);
    assert!(matches!(
        parse(&f),
        Err(HeaderError::DataSizeMismatch { .. })
    ));
}

#[test]
fn the_data_size_rule_uses_the_file_size_not_the_buffer() {
    let json = r#"{"a":{"dtype":"U8","shape":[1000000],"data_offsets":[0,1000000]}}"#;
    let f = file(json, 0); // header only: the data is never read
    let h = Header::parse(&f, f.len() as u64 + 1_000_000).unwrap();
    assert_eq!(h.data_len(), 1_000_000);
}

#[test]
fn read_header_reports_short_sources() {
    assert!(matches!(
        read_header(&vec![0u8; 4]),
        Err(SourceError::Header(HeaderError::FileTooSmall {
            file_size: 4
        }))
    ));
}
