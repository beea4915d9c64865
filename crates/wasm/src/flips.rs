//! Bit flips between two checkpoints of one tensor ([`bitlens_stats::FlipAccumulator`]), fed window
//! by window.

use crate::convert::{to_dtype, to_json, to_u64};
use bitlens_stats::FlipAccumulator;
use wasm_bindgen::prelude::*;

/// Streams the same windows of two checkpoints of one tensor into flip statistics.
#[wasm_bindgen]
pub struct FlipsAccumulator {
    inner: Option<FlipAccumulator>,
}

#[wasm_bindgen]
impl FlipsAccumulator {
    /// An accumulator for two tensors of `dtype` and `byte_len` bytes each.
    #[wasm_bindgen(constructor)]
    pub fn new(dtype: &str, byte_len: f64) -> Result<FlipsAccumulator, JsError> {
        Ok(FlipsAccumulator {
            inner: Some(FlipAccumulator::new(
                to_dtype(dtype)?,
                to_u64(byte_len, "byte length")?,
            )),
        })
    }

    /// Feeds the same byte window of both checkpoints (equal lengths).
    pub fn update(&mut self, a: &[u8], b: &[u8]) -> Result<(), JsError> {
        let acc = self
            .inner
            .as_mut()
            .ok_or_else(|| JsError::new("accumulator already finished"))?;
        Ok(acc.update(a, b)?)
    }

    /// The pair's [`bitlens_stats::FlipStats`] as JSON. Fails unless every byte was fed.
    pub fn finish(&mut self) -> Result<String, JsError> {
        let acc = self
            .inner
            .take()
            .ok_or_else(|| JsError::new("accumulator already finished"))?;
        Ok(to_json(&acc.finish()?)?)
    }
}
