//! Arbitrary tensor descriptions, windows and layers over arbitrary file bytes through the weight
//! map (`bitlens_stats::weightmap`): the first bytes of the input describe one tensor (where its
//! bytes are, its element type and shape), a window of its grid and a layer; the rest is the
//! file. `weight_map` and `elements` return a tile of the window's cells (or lanes) or a typed
//! error — never a panic. The lanes read are kept to at most 2^22 (the window's, and all those
//! before it: a tensor that is not a plain byte range is streamed up to its window), so a run
//! stays short — a map costs what its window covers, as a caller asked.
#![no_main]

use bitlens_stats::weightmap::{elements, weight_map, Grid, Layer, Window, LOCAL_GAP};
use bitlens_tensors::format::{Data, ElementType, Entry, GgmlType};
use bitlens_tensors::Dtype;
use libfuzzer_sys::fuzz_target;

/// Most lanes a fuzzed call may read.
const MAX_LANES: u64 = 1 << 22;

/// A little-endian reader over the description bytes (zeros once they run out).
struct Desc<'a>(&'a [u8]);

impl Desc<'_> {
    fn u8(&mut self) -> u8 {
        let (b, rest) = self.0.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
        self.0 = rest;
        b
    }
    /// A small number most of the time, any u64 sometimes.
    fn num(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => (0..8).fold(0u64, |n, i| n | u64::from(self.u8()) << (8 * i)),
            1 => (0..2).fold(0u64, |n, i| n | u64::from(self.u8()) << (8 * i)),
            _ => u64::from(self.u8()),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let split = usize::from(data.first().copied().unwrap_or(0)).min(data.len());
    let (desc, file) = data.split_at(split);
    let mut d = Desc(desc.get(1..).unwrap_or(&[]));
    let ty = match d.u8() {
        t if t & 0x80 != 0 => ElementType::Ggml(GgmlType(u32::from(t & 0x3f))),
        t => ElementType::Dtype(Dtype::ALL[usize::from(t) % Dtype::ALL.len()]),
    };
    let dims = usize::from(d.u8() % 4);
    let shape: Vec<u64> = (0..dims).map(|_| d.num()).collect();
    let data = match d.u8() % 3 {
        0 => Data::Range { offset: d.num(), len: d.num() },
        1 => Data::Deflated { offset: d.num(), compressed: d.num(), skip: d.num(), len: d.num() },
        _ => Data::Strided {
            offset: d.num(),
            len: d.num(),
            storage_offset: d.num(),
            strides: (0..dims).map(|_| d.num()).collect(),
        },
    };
    let entry = Entry { name: "fuzz".into(), ty, shape, data };
    let window = Window {
        row0: d.num(),
        col0: d.num(),
        rows: d.num(),
        cols: d.num(),
        block_rows: d.num(),
        block_cols: d.num(),
    };
    let layer = match d.u8() % 4 {
        0 => Layer::Values,
        1 => Layer::BitPlane { bit: d.u8() },
        2 => Layer::Exponent,
        _ => Layer::Changes,
    };
    let src = file.to_vec();
    let grid = Grid::of_shape(&entry.shape, 2);
    let last_lane = (window.row0.saturating_add(window.rows))
        .saturating_mul(grid.cols)
        .saturating_add(window.col0.saturating_add(window.cols));
    if last_lane <= MAX_LANES {
        if let Ok(tile) = weight_map(&src, &entry, Some((&src, &entry)), &window, layer, LOCAL_GAP) {
            let cells = tile.window.cells() as usize;
            assert_eq!(tile.mean.0.len(), cells);
            assert_eq!(tile.lanes.0.len(), cells);
            assert!(tile.lanes.0.iter().sum::<f32>() as u64 <= window.rows * window.cols);
        }
    }
    let (start, count) = (d.num(), d.num());
    if start > MAX_LANES {
        return;
    }
    if let Ok(lanes) = elements(&src, &entry, start, count) {
        assert!(lanes.len() as u64 <= count);
        assert!(lanes.iter().all(|e| e.hex.len() == e.width.div_ceil(4) as usize));
    }
});
