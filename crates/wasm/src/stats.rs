//! One tensor's statistics ([`bitlens_stats::Accumulator`]), fed window by window.

use crate::convert::{to_dtype, to_json, to_u64};
use bitlens_stats::Accumulator;
use wasm_bindgen::prelude::*;

/// Streams one tensor's bytes into statistics; call [`StatsAccumulator::finish`] once at the end.
#[wasm_bindgen]
pub struct StatsAccumulator {
    inner: Option<Accumulator>,
}

#[wasm_bindgen]
impl StatsAccumulator {
    /// An accumulator for a tensor of `dtype` (a safetensors dtype name) and `byte_len` bytes.
    #[wasm_bindgen(constructor)]
    pub fn new(dtype: &str, byte_len: f64) -> Result<StatsAccumulator, JsError> {
        Ok(StatsAccumulator {
            inner: Some(Accumulator::new(
                to_dtype(dtype)?,
                to_u64(byte_len, "byte length")?,
            )),
        })
    }

    /// Feeds the next window of the tensor's bytes (any size).
    pub fn update(&mut self, window: &[u8]) -> Result<(), JsError> {
        Ok(self.active()?.update(window)?)
    }

    /// Bytes still expected.
    #[wasm_bindgen(js_name = remainingBytes)]
    pub fn remaining_bytes(&self) -> f64 {
        self.inner
            .as_ref()
            .map_or(0.0, |a| a.remaining_bytes() as f64)
    }

    /// The tensor's [`bitlens_stats::TensorStats`] as JSON. Fails unless every byte was fed.
    pub fn finish(&mut self) -> Result<String, JsError> {
        let acc = self
            .inner
            .take()
            .ok_or_else(|| JsError::new("accumulator already finished"))?;
        Ok(to_json(&acc.finish()?)?)
    }
}

impl StatsAccumulator {
    fn active(&mut self) -> Result<&mut Accumulator, JsError> {
        self.inner
            .as_mut()
            .ok_or_else(|| JsError::new("accumulator already finished"))
    }
}
