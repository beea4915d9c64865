//! The bundled demo: a small sequence of real checkpoints (a few MiniLM bf16 tensors and two
//! perturbed "later steps", made by `scripts/make-demo.sh`), fetched from the app's own origin
//! with gloo-net (each body taken as a `Blob`: [`body_blob`]).

use crate::ui::io::files::Picked;
use crate::ui::io::remote::{body_blob, net_error_text};
use gloo_net::http::Request;

/// The demo files, in step order (served from `demo/` next to the page).
pub const FILES: [&str; 3] = [
    "minilm-demo-step0.safetensors",
    "minilm-demo-step1.safetensors",
    "minilm-demo-step2.safetensors",
];

/// Fetches the demo files.
pub async fn fetch() -> Result<Vec<Picked>, String> {
    let mut out = Vec::new();
    for name in FILES {
        let url = format!("demo/{name}");
        let resp = Request::get(&url)
            .send()
            .await
            .map_err(|e| format!("{url}: {}", net_error_text(&e)))?;
        if !resp.ok() {
            return Err(format!("{url}: HTTP {}", resp.status()));
        }
        out.push(Picked {
            path: name.to_owned(),
            blob: body_blob(&url, resp).await?,
        });
    }
    Ok(out)
}
