//! Prints the [`Layout`] of each `.npy` / `.npz` / GGUF / PyTorch (or safetensors) file given, one JSON line per
//! file: `{"path", "layout", "reads", "bytes_read", "micros"}` (the reads the reader made of the
//! in-memory file and the time it took) or `{"path", "error", "debug"}`. With `--inflate`, it also
//! streams every deflated entry through `npz::for_each_inflated` and adds `inflate_mb_s` (inflated
//! MB per second). With `--predict`, PyTorch zips are read with `zip::Locate::Predict` (no local
//! header read). The cross-checks in `tests/python/test_numpy_formats.py` run it until the CLI
//! reads these formats.
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::zip::{Locate, ZipError};
use bitlens_tensors::format::{detect, npy, npz, Data, Format, Layout};
use bitlens_tensors::{read_header, ReadAt, SourceError};
use std::cell::Cell;
use std::time::Instant;

/// A source that counts the reads made of it.
struct Counting<'a> {
    bytes: &'a [u8],
    reads: Cell<u64>,
    read_bytes: Cell<u64>,
}

impl ReadAt for Counting<'_> {
    fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.reads.set(self.reads.get() + 1);
        self.read_bytes
            .set(self.read_bytes.get() + buf.len() as u64);
        self.bytes.read_exact_at(offset, buf)
    }
}

fn layout(src: &Counting<'_>, locate: Locate) -> Result<Layout, Box<dyn std::error::Error>> {
    let b = src.bytes;
    match detect(&b[..b.len().min(16)], b.len() as u64) {
        Some(Format::Npy) => Ok(npy::read(src)?),
        Some(Format::Zip) => {
            let archive = bitlens_tensors::format::zip::Archive::open(src)?;
            if npz::is_npz(&archive) {
                Ok(npz::read_archive(src, &archive)?)
            } else {
                Ok(bitlens_tensors::format::pytorch::read_zip_with(
                    src, &archive, locate,
                )?)
            }
        }
        Some(Format::Safetensors) => {
            // For comparison: the safetensors header alone.
            let h = read_header(src)?;
            Ok(Layout {
                format: Format::Safetensors,
                kind: format!("safetensors ({} tensors)", h.tensors.len()),
                file_size: b.len() as u64,
                entries: Vec::new(),
                metadata: Vec::new(),
            })
        }
        // GGUF, PyTorch: through `format::open` (its 16-byte detection read included).
        _ => Ok(bitlens_tensors::format::open(src)?),
    }
}

/// Streams every deflated entry; returns inflated MB/s.
fn inflate_all(bytes: &[u8], l: &Layout) -> f64 {
    let t = Instant::now();
    let mut total = 0u64;
    let src: &dyn ReadAt = &bytes;
    for e in &l.entries {
        if let Data::Deflated {
            offset,
            compressed,
            skip,
            len,
        } = e.data
        {
            npz::for_each_inflated::<_, ZipError>(
                src,
                offset,
                compressed,
                skip,
                len,
                1 << 20,
                |w| {
                    total += w.len() as u64;
                    Ok(())
                },
            )
            .unwrap();
        }
    }
    total as f64 / 1e6 / t.elapsed().as_secs_f64()
}

fn main() {
    let mut inflate = false;
    let mut locate = Locate::Verify;
    for arg in std::env::args().skip(1) {
        if arg == "--inflate" {
            inflate = true;
            continue;
        }
        if arg == "--predict" {
            locate = Locate::Predict;
            continue;
        }
        let bytes = std::fs::read(&arg).unwrap();
        let src = Counting {
            bytes: &bytes,
            reads: Cell::new(0),
            read_bytes: Cell::new(0),
        };
        let t = Instant::now();
        let result = layout(&src, locate);
        let micros = t.elapsed().as_micros() as u64;
        let mut line = match result {
            Ok(l) => serde_json::json!({
                "path": arg,
                "reads": src.reads.get(),
                "bytes_read": src.read_bytes.get(),
                "micros": micros,
                "inflate_mb_s": inflate.then(|| inflate_all(&bytes, &l)),
                "layout": l,
            }),
            Err(e) => {
                serde_json::json!({ "path": arg, "error": e.to_string(), "debug": format!("{e:?}") })
            }
        };
        if !inflate {
            if let Some(o) = line.as_object_mut() {
                o.remove("inflate_mb_s");
            }
        }
        println!("{line}");
    }
}
