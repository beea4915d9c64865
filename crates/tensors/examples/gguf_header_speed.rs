//! Time to read a GGUF file's tensor table (header, key/values, tensor infos) next to the time
//! to read a safetensors header, both from a file with positioned reads (no pass over the data).
//!
//!     cargo run --release -p bitlens-tensors --example gguf_header_speed -- MODEL.gguf [MODEL.safetensors]
#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::gguf;
use bitlens_tensors::{read_header, ReadAt, SourceError};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::time::Instant;

/// A file as a [`ReadAt`] source, counting its reads.
struct Src(File, u64, std::cell::Cell<u64>);

impl ReadAt for Src {
    fn size(&self) -> u64 {
        self.1
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.2.set(self.2.get() + 1);
        self.0
            .read_exact_at(buf, offset)
            .map_err(|source| SourceError::Backend {
                offset,
                len: buf.len() as u64,
                source,
            })
    }
}

fn open(path: &str) -> Src {
    let f = File::open(path).unwrap();
    let size = f.metadata().unwrap().len();
    Src(f, size, std::cell::Cell::new(0))
}

/// Best of 20 runs of `f`, in milliseconds.
fn best(mut f: impl FnMut()) -> f64 {
    (0..20)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let src = open(&args[0]);
    let layout = gguf::read(&src).unwrap();
    let reads = src.2.replace(0);
    let ms = best(|| {
        gguf::read(&src).unwrap();
    });
    println!(
        "{}: {} tensors, {} key/values: {ms:.2} ms, {reads} reads",
        layout.kind,
        layout.entries.len(),
        layout.metadata.len()
    );
    if let Some(path) = args.get(1) {
        let src = open(path);
        let header = read_header(&src).unwrap();
        let ms = best(|| {
            read_header(&src).unwrap();
        });
        println!("safetensors: {} tensors: {ms:.2} ms", header.tensors.len());
    }
}
