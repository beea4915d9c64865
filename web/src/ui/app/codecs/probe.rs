//! The probe of a snapshot URL typed in the Codecs view: one `Range: bytes=0-7` request (no
//! credentials), judged by the shared rules of [`bitlens_remote`], giving the file's size from its
//! `Content-Range` and checking the snapshot magic, before the codec worker reads the index.

use bitlens_protocol::RemoteFile;
use bitlens_remote::{check, check_body, check_url, Answer, RangeError, RemoteError};
use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{RequestInit, Response};

/// The snapshot magic, the first 8 bytes of every `.bls` file.
const MAGIC: &[u8; 8] = b"BITLENS\0";

/// Probes `url`: a remote snapshot of known size, or the message to show (naming the URL).
pub async fn probe(url: &str) -> Result<RemoteFile, String> {
    check_url(url).map_err(|e| format!("{url}: {e}"))?;
    let remote = |error: RangeError| {
        RemoteError {
            url: url.to_owned(),
            error,
            tries: 1,
        }
        .to_string()
    };
    let (size, first8) = first_bytes(url).await.map_err(remote)?;
    if first8 != MAGIC {
        return Err(format!(
            "{url}: not a bitlens snapshot (it does not start with BITLENS\\0)"
        ));
    }
    Ok(RemoteFile {
        url: url.to_owned(),
        size,
        credentials: false,
    })
}

/// The file's size and its first 8 bytes.
async fn first_bytes(url: &str) -> Result<(u64, Vec<u8>), RangeError> {
    let network = |e: JsValue| RangeError::Network {
        message: format!(
            "no answer: a network error, or the server refused the cross-origin read (CORS) ({})",
            crate::ui::io::blob::js_error_text(&e)
        ),
    };
    let window = web_sys::window().ok_or_else(|| network(JsValue::from_str("no window")))?;
    let headers = Object::new();
    Reflect::set(&headers, &"Range".into(), &"bytes=0-7".into()).map_err(network)?;
    let init = RequestInit::new();
    init.set_headers(&headers);
    let answer = JsFuture::from(window.fetch_with_str_and_init(url, &init))
        .await
        .map_err(network)?;
    let response: Response = answer.dyn_into().map_err(network)?;
    let headers = response.headers();
    let content_range = headers.get("Content-Range").ok().flatten();
    let content_length = headers
        .get("Content-Length")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse().ok());
    let total = check(
        &Answer {
            status: response.status(),
            content_range: content_range.as_deref(),
            content_length,
        },
        0,
        8,
        None,
    )?;
    let body = JsFuture::from(response.array_buffer().map_err(network)?)
        .await
        .map_err(network)?;
    let bytes = Uint8Array::new(&body).to_vec();
    check_body(0, bytes.len() as u64, 8)?;
    Ok((total, bytes))
}
