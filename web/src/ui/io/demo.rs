//! The bundled demo: a small sequence of real checkpoints (a few MiniLM bf16 tensors and two
//! perturbed "later steps", made by `scripts/make-demo.sh`), fetched from the app's own origin.

use crate::ui::io::blob::js_error_text;
use crate::ui::io::files::Picked;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, Response};

/// The demo files, in step order (served from `demo/` next to the page).
pub const FILES: [&str; 3] = [
    "minilm-demo-step0.safetensors",
    "minilm-demo-step1.safetensors",
    "minilm-demo-step2.safetensors",
];

/// Fetches the demo files.
pub async fn fetch() -> Result<Vec<Picked>, String> {
    let window = web_sys::window().ok_or("no window")?;
    let mut out = Vec::new();
    for name in FILES {
        let url = format!("demo/{name}");
        let resp: Response = JsFuture::from(window.fetch_with_str(&url))
            .await
            .map_err(|e| format!("{url}: {}", js_error_text(&e)))?
            .dyn_into()
            .map_err(|_| format!("{url}: not a response"))?;
        if !resp.ok() {
            return Err(format!("{url}: HTTP {}", resp.status()));
        }
        let blob: Blob = JsFuture::from(resp.blob().map_err(|e| js_error_text(&e))?)
            .await
            .map_err(|e| format!("{url}: {}", js_error_text(&e)))?
            .dyn_into()
            .map_err(|_| format!("{url}: not a blob"))?;
        out.push(Picked {
            path: name.to_owned(),
            blob,
        });
    }
    Ok(out)
}
