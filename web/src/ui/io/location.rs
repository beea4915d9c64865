//! The page URL as view state: reading `?url=…&stats=…&tab=…&tensor=…&embed=1` at start, and writing the
//! current view back with `history.replaceState` (no new history entry, no reload) so a copied link
//! reproduces it. Beside the view state, the page settings for tests and benchmarks that a link keeps:
//! `?codec-threads=N&codec-read-ahead=B` force the codec worker's build (see [`codec_worker_query`]).

use crate::model::link::ViewState;
use web_sys::UrlSearchParams;

/// The view state of the page's own URL.
pub fn read() -> ViewState {
    let Some(search) = web_sys::window().and_then(|w| w.location().search().ok()) else {
        return ViewState::default();
    };
    let Ok(params) = UrlSearchParams::new_with_str(&search) else {
        return ViewState::default();
    };
    let keys = ["url", "stats", "tab", "tensor", "embed"];
    let mut pairs = Vec::new();
    for key in keys {
        for v in params.get_all(key).iter() {
            if let Some(v) = v.as_string() {
                pairs.push((key.to_owned(), v));
            }
        }
    }
    ViewState::from_pairs(pairs)
}

/// The query string of `state` (`?…`, or empty), encoded.
pub fn query(state: &ViewState) -> String {
    let Ok(params) = UrlSearchParams::new() else {
        return String::new();
    };
    for (k, v) in state.to_pairs() {
        params.append(k, &v);
    }
    for (page, _, n) in codec_forced() {
        params.append(page, &n.to_string());
    }
    let q = String::from(params.to_string());
    if q.is_empty() {
        q
    } else {
        format!("?{q}")
    }
}

/// Replaces the page URL's query with `state`'s (path and fragment kept); false when the browser
/// refused.
pub fn write(state: &ViewState) -> bool {
    let Some(w) = web_sys::window() else {
        return false;
    };
    let loc = w.location();
    let (Ok(path), Ok(hash)) = (loc.pathname(), loc.hash()) else {
        return false;
    };
    let url = format!("{path}{}{hash}", query(state));
    w.history()
        .and_then(|h| h.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&url)))
        .is_ok()
}

/// The page's parameters that force the codec worker's choice (tests and benchmarks), and the
/// names `web/worker.js` reads them by from its own URL: `?codec-threads=N` (0: the
/// single-threaded build; N > 0: the threaded build with a pool of N threads, on a cross-origin
/// isolated page with the build made) and `?codec-read-ahead=0|1` (the read-ahead thread off or
/// on, on an isolated page), instead of what its `chooseBuild` picks.
const CODEC_FORCED: [(&str, &str); 2] = [
    ("codec-threads", "threads"),
    ("codec-read-ahead", "read-ahead"),
];

/// The page URL's [`CODEC_FORCED`] parameters that are numbers, as (page name, worker name, value).
fn codec_forced() -> Vec<(&'static str, &'static str, u32)> {
    let params = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .and_then(|search| UrlSearchParams::new_with_str(&search).ok());
    let Some(params) = params else {
        return Vec::new();
    };
    CODEC_FORCED
        .iter()
        .filter_map(|&(page, worker)| Some((page, worker, params.get(page)?.trim().parse().ok()?)))
        .collect()
}

/// The codec worker's query for the page's forced choice (`&threads=N&read-ahead=B`, or empty);
/// [`query`] keeps the page's parameters, so they outlive [`write`].
pub fn codec_worker_query() -> String {
    codec_forced()
        .into_iter()
        .map(|(_, worker, n)| format!("&{worker}={n}"))
        .collect()
}
