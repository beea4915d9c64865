//! Collecting the files the user gives the page: from a file or directory `<input>`, or from a
//! drop (files and whole directories, walked with the `webkitGetAsEntry` entries API).

use js_sys::{Array, Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, DragEvent, File, FileSystemDirectoryEntry, FileSystemEntry, HtmlInputElement};

/// One given file: its path relative to what was picked or dropped, and its data.
#[derive(Clone, Debug)]
pub struct Picked {
    /// `dir/sub/name` for files inside a directory, else the bare name.
    pub path: String,
    /// The file's data (never read whole).
    pub blob: Blob,
}

/// The files of an `<input type=file>` (with `webkitRelativePath` for directory pickers).
pub fn from_input(input: &HtmlInputElement) -> Vec<Picked> {
    let Some(list) = input.files() else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.get(i))
        .map(|f| {
            let rel = Reflect::get(&f, &"webkitRelativePath".into())
                .ok()
                .and_then(|v| v.as_string())
                .filter(|s| !s.is_empty());
            Picked {
                path: rel.unwrap_or_else(|| f.name()),
                blob: f.into(),
            }
        })
        .collect()
}

/// What a drop carried, taken synchronously inside the event handler (the browser invalidates the
/// items once the handler returns).
pub enum Dropped {
    /// A file or directory entry, to be walked.
    Entry(FileSystemEntry),
    /// A plain file (browsers without the entries API).
    File(File),
}

/// Takes the items of a drop event.
pub fn take_drop(event: &DragEvent) -> Vec<Dropped> {
    let Some(dt) = event.data_transfer() else {
        return Vec::new();
    };
    let items = dt.items();
    let mut out = Vec::new();
    for i in 0..items.length() {
        let Some(item) = items.get(i) else { continue };
        if item.kind() != "file" {
            continue;
        }
        match item.webkit_get_as_entry() {
            Ok(Some(entry)) => out.push(Dropped::Entry(entry)),
            _ => {
                if let Ok(Some(f)) = item.get_as_file() {
                    out.push(Dropped::File(f));
                }
            }
        }
    }
    out
}

/// Calls `target[method](resolve, reject)` and awaits the callback.
async fn callback_call(target: &JsValue, method: &str) -> Result<JsValue, JsValue> {
    let f: Function = Reflect::get(target, &method.into())?.dyn_into()?;
    let target = target.clone();
    let promise = Promise::new(&mut |resolve, reject| {
        if let Err(e) = f.call2(&target, &resolve, &reject) {
            let _ = reject.call1(&JsValue::NULL, &e);
        }
    });
    JsFuture::from(promise).await
}

/// Walks dropped entries (directories recursively) into files with relative paths.
pub async fn walk(dropped: Vec<Dropped>) -> Result<Vec<Picked>, JsValue> {
    let mut out = Vec::new();
    let mut stack: Vec<FileSystemEntry> = Vec::new();
    for d in dropped {
        match d {
            Dropped::File(f) => out.push(Picked {
                path: f.name(),
                blob: f.into(),
            }),
            Dropped::Entry(e) => stack.push(e),
        }
    }
    while let Some(entry) = stack.pop() {
        let path = entry.full_path().trim_start_matches('/').to_owned();
        if entry.is_directory() {
            let dir: FileSystemDirectoryEntry = entry.unchecked_into();
            let reader = dir.create_reader();
            // readEntries returns the listing in batches until an empty one.
            loop {
                let batch: Array = callback_call(&reader, "readEntries").await?.into();
                if batch.length() == 0 {
                    break;
                }
                stack.extend(batch.iter().map(|e| e.unchecked_into::<FileSystemEntry>()));
            }
        } else {
            let file: File = callback_call(&entry, "file").await?.dyn_into()?;
            out.push(Picked {
                path,
                blob: file.into(),
            });
        }
    }
    Ok(out)
}
