//! Saving files the page made: every download of a set with one click (the snapshots of a shard
//! set, the files restored from them), one `<a download>` click per file.

use wasm_bindgen::JsCast;
use web_sys::HtmlAnchorElement;

/// Starts the download of each `(object URL, file name)`, in order. The browser may ask once
/// whether the page may download several files.
pub fn save_all<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<(), String> {
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("no document")?;
    for (url, name) in files {
        let a: HtmlAnchorElement = document
            .create_element("a")
            .map_err(|e| super::blob::js_error_text(&e))?
            .dyn_into()
            .map_err(|_| "not an anchor element")?;
        a.set_href(url);
        a.set_download(name);
        a.click();
    }
    Ok(())
}
