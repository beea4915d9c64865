//! Header reading in two steps, so a caller reads only `8 + N` bytes of a file of any size:
//! [`header_prefix_len`] on the first 8 bytes, then [`parse_header`] on the first `8 + N`.

use crate::convert::{to_json, to_u64};
use bitlens_tensors::{Header, TensorInfo};
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// `8 + N`: how many leading bytes [`parse_header`] needs, from the first 8 bytes of the file and its
/// size. Fails with the core crate's message when the length is implausible.
#[wasm_bindgen(js_name = headerPrefixLen)]
pub fn header_prefix_len(first8: &[u8], file_size: f64) -> Result<f64, JsError> {
    let first8: [u8; 8] = first8
        .try_into()
        .map_err(|_| JsError::new("need exactly the first 8 bytes of the file"))?;
    let needed = Header::needed_prefix(first8, to_u64(file_size, "file size")?)?;
    Ok(needed as f64)
}

/// The JSON document [`parse_header`] returns.
#[derive(Serialize)]
struct HeaderJson<'a> {
    header_len: u64,
    data_start: u64,
    file_size: u64,
    metadata: &'a Option<Vec<(String, String)>>,
    tensors: &'a [TensorInfo],
}

/// Parses and validates a header from the file's first `8 + N` bytes and the file size. Returns
/// JSON `{header_len, data_start, file_size, metadata, tensors: [{name, dtype, shape,
/// data_offsets}]}` with tensors in data order.
#[wasm_bindgen(js_name = parseHeader)]
pub fn parse_header(prefix: &[u8], file_size: f64) -> Result<String, JsError> {
    let header = Header::parse(prefix, to_u64(file_size, "file size")?)?;
    Ok(to_json(&HeaderJson {
        header_len: header.header_len,
        data_start: header.data_start(),
        file_size: header.file_size,
        metadata: &header.metadata,
        tensors: &header.tensors,
    })?)
}
