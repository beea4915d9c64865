//! Conversions at the JavaScript boundary: JavaScript numbers to `u64` byte counts and offsets
//! (exact up to 2^53, i.e. 8 PiB), dtype names, JSON text, the clock, and the module's
//! linear-memory size.

use crate::error::Failure;
use bitlens_tensors::Dtype;
use wasm_bindgen::prelude::*;

/// Largest integer a JavaScript number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A non-negative integral JavaScript number as `u64`, or an error naming `what`.
pub fn to_u64(value: f64, what: &str) -> Result<u64, Failure> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= MAX_SAFE {
        Ok(value as u64)
    } else {
        Err(Failure(format!(
            "{what} must be a non-negative integer below 2^53, got {value}"
        )))
    }
}

/// Parses a safetensors dtype name (`"BF16"`, `"F32"`, ...).
pub fn to_dtype(name: &str) -> Result<Dtype, Failure> {
    name.parse::<Dtype>()
        .map_err(|_| Failure(format!("unknown dtype `{name}`")))
}

/// Serializes a result as JSON text.
pub fn to_json<T: serde::Serialize>(value: &T) -> Result<String, Failure> {
    Ok(serde_json::to_string(value)?)
}

#[wasm_bindgen]
extern "C" {
    /// `performance.now()`: milliseconds, in a page, a worker or node.
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    pub fn now() -> f64;
}

/// Size of this module's linear memory in bytes (the high-water mark: wasm memory never shrinks).
#[wasm_bindgen(js_name = memoryBytes)]
pub fn memory_bytes() -> f64 {
    (core::arch::wasm32::memory_size::<0>() * 65_536) as f64
}
