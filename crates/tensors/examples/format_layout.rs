//! Prints the [`Layout`] of each `.npy` / `.npz` file given, one JSON line per file:
//! `{"path": …, "layout": {…}}` or `{"path": …, "error": "Display", "debug": "Debug"}`.
//! The cross-checks in `tests/python/test_numpy_formats.py` run it until the CLI reads these
//! formats.
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::{detect, npy, npz, Format, Layout};

fn layout(bytes: &[u8]) -> Result<Layout, Box<dyn std::error::Error>> {
    match detect(&bytes[..bytes.len().min(16)], bytes.len() as u64) {
        Some(Format::Npy) => Ok(npy::read(&bytes)?),
        Some(Format::Zip) => Ok(npz::read(&bytes)?),
        other => Err(format!("not a .npy or .npz file ({other:?})").into()),
    }
}

fn main() {
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).unwrap();
        let line = match layout(&bytes) {
            Ok(l) => serde_json::json!({ "path": path, "layout": l }),
            Err(e) => {
                serde_json::json!({ "path": path, "error": e.to_string(), "debug": format!("{e:?}") })
            }
        };
        println!("{line}");
    }
}
