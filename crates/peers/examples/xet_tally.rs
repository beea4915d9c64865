//! How the hub's scheme stores each file given: chunks, how many took each scheme (None, LZ4,
//! BG4-LZ4) and the stored size, the figures BENCHMARKS.md ("The hub's scheme") explains its
//! ratios with. `cargo run --release -p bitlens-peers --example xet_tally -- FILE...`
#![allow(clippy::unwrap_used)]

fn main() {
    for path in std::env::args().skip(1) {
        let data = std::fs::read(&path).unwrap();
        let mut out = Vec::new();
        let t = bitlens_peers::compress_into(&data, &mut out).unwrap();
        let chunks = t.none + t.lz4 + t.bg4_lz4;
        println!(
            "{path}: {} bytes, {chunks} chunks (mean {:.0} B): none {}, lz4 {}, bg4-lz4 {}; ratio {:.4}",
            data.len(),
            data.len() as f64 / chunks.max(1) as f64,
            t.none,
            t.lz4,
            t.bg4_lz4,
            out.len() as f64 / data.len().max(1) as f64
        );
    }
}
