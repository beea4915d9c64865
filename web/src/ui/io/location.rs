//! The page URL as view state: reading `?url=…&stats=…&tab=…&tensor=…&embed=1` at start, and writing the
//! current view back with `history.replaceState` (no new history entry, no reload) so a copied link
//! reproduces it.

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
