//! How messages cross `postMessage` (wasm32 only): serde-wasm-bindgen turns them into plain
//! JavaScript objects (structured-cloneable), and the JavaScript values inside — `Blob`s,
//! `ArrayBuffer`s — ride along as themselves in a [`Js`] (never serialized; an `ArrayBuffer` can
//! then be transferred). Both sides encode and decode with [`to_js`] / [`from_js`], so they agree on
//! every setting (maps as plain objects).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsValue;

/// A JavaScript value carried inside a message as itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Js(#[serde(with = "serde_wasm_bindgen::preserve")] pub JsValue);

impl From<JsValue> for Js {
    fn from(value: JsValue) -> Self {
        Js(value)
    }
}

/// A request as the page posts it and the worker reads it.
pub type Request = crate::WorkerRequest<Js>;

/// An event as the worker posts it and the page reads it.
pub type Event = crate::WorkerEvent<Js>;

/// A message (or any protocol value) as a JavaScript value.
pub fn to_js<T: Serialize>(value: &T) -> Result<JsValue, serde_wasm_bindgen::Error> {
    value.serialize(&serde_wasm_bindgen::Serializer::new().serialize_maps_as_objects(true))
}

/// A message (or any protocol value) from a JavaScript value.
pub fn from_js<T: DeserializeOwned>(value: JsValue) -> Result<T, serde_wasm_bindgen::Error> {
    serde_wasm_bindgen::from_value(value)
}
