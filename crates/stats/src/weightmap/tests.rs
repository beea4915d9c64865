//! Weight maps against a reference computed naively from every lane's value: every dtype the
//! map reads, NaN / Inf / subnormal patterns, random windows and block sizes, a quantized tensor,
//! the changes between two tensors, and the bytes a narrow window of wide rows reads.

use super::*;
use bitlens_tensors::format::{Data, ElementType, GgmlType};
use bitlens_tensors::Dtype;
use proptest::prelude::*;
use std::cell::Cell;

/// A tensor of `dtype` and `shape` over `bytes`, placed after 8 bytes of something else.
fn tensor(dtype: ElementType, shape: &[u64], bytes: &[u8]) -> (Vec<u8>, Entry) {
    let mut file = vec![0xAB; 8];
    file.extend_from_slice(bytes);
    let entry = Entry {
        name: "t".into(),
        ty: dtype,
        shape: shape.to_vec(),
        data: Data::Range {
            offset: 8,
            len: bytes.len() as u64,
        },
    };
    (file, entry)
}

/// Every lane's value widened as the map widens it (through f32), decoded independently of the
/// map for the common float types (the 8-bit ones through [`elements`]).
fn reference_values(file: &[u8], entry: &Entry) -> Vec<f32> {
    let Data::Range { offset, len } = entry.data else {
        unreachable!()
    };
    let bytes = &file[offset as usize..(offset + len) as usize];
    match entry.ty {
        ElementType::Dtype(Dtype::F32) => bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect(),
        ElementType::Dtype(Dtype::BF16) => bytes
            .chunks_exact(2)
            .map(|c| half::bf16::from_le_bytes(c.try_into().unwrap()).to_f32())
            .collect(),
        ElementType::Dtype(Dtype::F16) => bytes
            .chunks_exact(2)
            .map(|c| half::f16::from_le_bytes(c.try_into().unwrap()).to_f32())
            .collect(),
        ElementType::Dtype(Dtype::F64) => bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap()) as f32)
            .collect(),
        ElementType::Dtype(Dtype::I8) => bytes.iter().map(|&b| b as i8 as f32).collect(),
        ElementType::Ggml(g) => bitlens_tensors::format::gguf::dequantize_to_vec(g, bytes).unwrap(),
        _ => elements(&file, entry, 0, MAX_ELEMENTS)
            .unwrap()
            .iter()
            .map(|e| e.value as f32)
            .collect(),
    }
}

/// The tile computed naively: each cell's lanes gathered by (row, column).
fn reference_tile(
    values: &[f32],
    grid: Grid,
    w: &Window,
    zero: impl Fn(usize) -> bool,
) -> Vec<[f64; 6]> {
    let mut cells =
        vec![[0.0, f64::INFINITY, f64::NEG_INFINITY, 0.0, 0.0, 0.0]; w.cells() as usize];
    for r in w.row0..w.row0 + w.rows {
        for c in w.col0..w.col0 + w.cols {
            let Some(lane) = grid.lane(r, c) else {
                continue;
            };
            let i = ((r - w.row0) / w.block_rows * w.cell_cols() + (c - w.col0) / w.block_cols)
                as usize;
            let v = values[lane as usize];
            let cell = &mut cells[i];
            if v.is_finite() {
                cell[0] += f64::from(v);
                cell[1] = cell[1].min(f64::from(v));
                cell[2] = cell[2].max(f64::from(v));
                cell[4] += 1.0;
            }
            cell[3] += f64::from(u8::from(zero(lane as usize)));
            cell[5] += 1.0;
        }
    }
    cells
}

/// Checks `tile` against the naive reference of `values`.
fn assert_matches(tile: &Tile, values: &[f32], zero: impl Fn(usize) -> bool) {
    let want = reference_tile(values, tile.grid, &tile.window, zero);
    assert_eq!(tile.mean.0.len(), want.len());
    for (i, w) in want.iter().enumerate() {
        let (finite, lanes) = (w[4], w[5]);
        assert_eq!(f64::from(tile.lanes.0[i]), lanes, "lanes of cell {i}");
        assert_eq!(f64::from(tile.finite.0[i]), finite, "finite of cell {i}");
        if finite == 0.0 {
            assert!(tile.mean.0[i].is_nan() && tile.min.0[i].is_nan() && tile.max.0[i].is_nan());
        } else {
            let mean = w[0] / finite;
            let got = f64::from(tile.mean.0[i]);
            assert!(
                (got - mean).abs() <= 1e-6 * mean.abs().max(1e-30) || got == mean as f32 as f64,
                "mean of cell {i}: {got} vs {mean}"
            );
            assert_eq!(f64::from(tile.min.0[i]), w[1], "min of cell {i}");
            assert_eq!(f64::from(tile.max.0[i]), w[2], "max of cell {i}");
        }
        if lanes > 0.0 {
            assert_eq!(tile.zeros.0[i], (w[3] / lanes) as f32, "zeros of cell {i}");
        }
    }
}

/// The dtypes the property test draws, with their width in bytes.
const DTYPES: [(Dtype, usize); 14] = [
    (Dtype::F32, 4),
    (Dtype::BF16, 2),
    (Dtype::F16, 2),
    (Dtype::F64, 8),
    (Dtype::I8, 1),
    (Dtype::U8, 1),
    (Dtype::F8_E4M3, 1),
    (Dtype::F8_E5M2, 1),
    (Dtype::I16, 2),
    (Dtype::U16, 2),
    (Dtype::I32, 4),
    (Dtype::U32, 4),
    (Dtype::I64, 8),
    (Dtype::U64, 8),
];

/// Random bytes with some lanes set to NaN, ±Inf, ±0 and subnormal patterns.
fn specials(dtype: Dtype, bytes: &mut [u8], picks: &[(usize, u8)]) {
    let w = (dtype.bits() / 8) as usize;
    let lanes = bytes.len() / w;
    if lanes == 0 {
        return;
    }
    for &(at, kind) in picks {
        let lane = &mut bytes[(at % lanes) * w..(at % lanes + 1) * w];
        let pattern: u64 = match (dtype, kind % 5) {
            (Dtype::F32, 0) => 0x7FC0_0000,
            (Dtype::F32, 1) => 0xFF80_0000,
            (Dtype::F32, 2) => 0x8000_0000,
            (Dtype::F32, 3) => 0x0000_0001,
            (Dtype::BF16 | Dtype::F16, 0) => 0x7FFF,
            (Dtype::BF16, 1) => 0x7F80,
            (Dtype::F16, 1) => 0xFC00,
            (_, 2) => 1 << (dtype.bits() - 1),
            (_, 3) => 1,
            (Dtype::F64, 0) => 0x7FF8_0000_0000_0000,
            (Dtype::F64, 1) => 0x7FF0_0000_0000_0000,
            _ => 0,
        };
        lane.copy_from_slice(&pattern.to_le_bytes()[..w]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn every_cell_equals_the_naive_aggregate(
        dtype in 0..DTYPES.len(),
        dims in prop_oneof![
            (1u64..300).prop_map(|n| vec![n]),
            (1u64..40, 1u64..40).prop_map(|(a, b)| vec![a, b]),
            (1u64..6, 1u64..7, 1u64..20).prop_map(|(a, b, c)| vec![a, b, c]),
        ],
        seed in any::<u64>(),
        picks in prop::collection::vec((any::<usize>(), any::<u8>()), 0..12),
        cut in (0.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0, 0.0f64..1.0),
        blocks in (1u64..9, 1u64..9),
        stretch in 1usize..40,
    ) {
        let (dt, w) = DTYPES[dtype];
        let n: u64 = dims.iter().product();
        let mut bytes: Vec<u8> = (0..n as usize * w)
            .map(|i| (seed.wrapping_mul(6364136223846793005).wrapping_add((i as u64).wrapping_mul(1442695040888963407)) >> 33) as u8)
            .collect();
        specials(dt, &mut bytes, &picks);
        let (file, entry) = tensor(ElementType::Dtype(dt), &dims, &bytes);
        let grid = Grid::of_shape(&dims, 1);
        let row0 = (cut.0 * grid.rows as f64) as u64;
        let col0 = (cut.1 * grid.cols as f64) as u64;
        let window = Window {
            row0,
            col0,
            rows: 1 + ((grid.rows - row0 - 1) as f64 * cut.2) as u64,
            cols: 1 + ((grid.cols - col0 - 1) as f64 * cut.3) as u64,
            block_rows: blocks.0,
            block_cols: blocks.1,
        };
        let tile = weight_map(&file, &entry, None, &window, Layer::Values, LOCAL_GAP).unwrap();
        let values = reference_values(&file, &entry);
        assert_matches(&tile, &values, |i| values[i] == 0.0);
        // Samples made and folded a few lanes at a time: the same cells.
        let fold = MapFold::with_stretch(&entry, None, &window, Layer::Values, stretch).unwrap();
        let short = read_and_fold(fold, &file, &entry, None, LOCAL_GAP).unwrap();
        assert_matches(&short, &values, |i| values[i] == 0.0);

        // Bit planes: the fraction of lanes with the bit set.
        let bit = (seed % u64::from(dt.bits())) as u8;
        let plane = weight_map(&file, &entry, None, &window, Layer::BitPlane { bit }, LOCAL_GAP).unwrap();
        let set: Vec<f32> = bytes
            .chunks_exact(w)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..w].copy_from_slice(c);
                ((u64::from_le_bytes(b) >> bit) & 1) as f32
            })
            .collect();
        assert_matches(&plane, &set, |i| set[i] == 0.0);
    }
}

#[test]
fn the_whole_window_of_a_matrix_and_its_exact_elements() {
    let values: Vec<f32> = (0..12 * 10).map(|i| (i as f32 - 60.0) * 0.25).collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let (file, entry) = tensor(ElementType::Dtype(Dtype::F32), &[12, 10], &bytes);
    let grid = Grid::of_shape(&entry.shape, 1);
    let window = Window::whole(grid, 20);
    assert_eq!((window.block_rows, window.block_cols), (3, 3));
    let tile = weight_map(&file, &entry, None, &window, Layer::Values, LOCAL_GAP).unwrap();
    assert_matches(&tile, &values, |i| values[i] == 0.0);
    // Cell (0, 0): rows 0..3, columns 0..3.
    let v = &values;
    let block: Vec<f32> = (0..3)
        .flat_map(|r| (0..3).map(move |c| v[r * 10 + c]))
        .collect();
    assert_eq!(
        tile.min.0[0],
        block.iter().cloned().fold(f32::INFINITY, f32::min)
    );
    assert_eq!(tile.bytes_read, 480);
    let e = elements(&file, &entry, 61, 3).unwrap();
    assert_eq!(e.iter().map(|e| e.index).collect::<Vec<_>>(), [61, 62, 63]);
    assert_eq!(e[0].value, 0.25);
    assert_eq!(e[0].hex, "3e800000");
    assert_eq!(e[0].width, 32);
    assert!(elements(&file, &entry, 120, 5).unwrap().is_empty());
    assert_eq!(elements(&file, &entry, 118, 5).unwrap().len(), 2);
}

#[test]
fn exponents_are_unbiased_and_int_tensors_have_none() {
    let values = [1.0f32, 2.0, 0.5, 1024.0];
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|v| half::bf16::from_f32(*v).to_le_bytes())
        .collect();
    let (file, entry) = tensor(ElementType::Dtype(Dtype::BF16), &[1, 4], &bytes);
    let w = Window {
        row0: 0,
        col0: 0,
        rows: 1,
        cols: 4,
        block_rows: 1,
        block_cols: 1,
    };
    let tile = weight_map(&file, &entry, None, &w, Layer::Exponent, LOCAL_GAP).unwrap();
    assert_eq!(tile.mean.0, [0.0, 1.0, -1.0, 10.0]);
    let (file, entry) = tensor(ElementType::Dtype(Dtype::I32), &[1, 1], &[0, 0, 0, 0]);
    let w1 = Window { cols: 1, ..w };
    assert!(matches!(
        weight_map(&file, &entry, None, &w1, Layer::Exponent, LOCAL_GAP),
        Err(MapError::Layer { .. })
    ));
}

#[test]
fn changes_count_unchanged_bits_and_take_the_difference() {
    let a = [1.0f32, 0.0, 3.0, f32::NAN];
    let b = [1.0f32, -0.0, 5.0, f32::NAN];
    let to_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let (fa, ea) = tensor(ElementType::Dtype(Dtype::F32), &[2, 2], &to_bytes(&a));
    let (fb, eb) = tensor(ElementType::Dtype(Dtype::F32), &[2, 2], &to_bytes(&b));
    let w = Window {
        row0: 0,
        col0: 0,
        rows: 2,
        cols: 2,
        block_rows: 1,
        block_cols: 2,
    };
    let tile = weight_map(&fa, &ea, Some((&fb, &eb)), &w, Layer::Changes, LOCAL_GAP).unwrap();
    let other = Some((&fb as &dyn ReadAt, &eb));
    for stretch in [1, 3] {
        let fold = MapFold::with_stretch(&ea, Some(&eb), &w, Layer::Changes, stretch).unwrap();
        let short = read_and_fold(fold, &fa, &ea, other, LOCAL_GAP).unwrap();
        assert_eq!(short, tile, "{stretch} lanes at a time");
    }
    // Row 0: 1→1 unchanged, +0→-0 changed (equal values, other bits).
    assert_eq!(tile.zeros.0[0], 0.5);
    assert_eq!(tile.mean.0[0], 0.0);
    // Row 1: 3→5 changed (Δ = 2), NaN→NaN same bits: unchanged, left out of the mean.
    assert_eq!(
        (tile.zeros.0[1], tile.mean.0[1], tile.finite.0[1]),
        (0.5, 2.0, 1.0)
    );
    assert_eq!(tile.bytes_read, 32);
    let (fc, ec) = tensor(ElementType::Dtype(Dtype::F32), &[4], &to_bytes(&b));
    assert!(matches!(
        weight_map(&fa, &ea, Some((&fc, &ec)), &w, Layer::Changes, LOCAL_GAP),
        Err(MapError::Pair(_))
    ));
    assert!(weight_map(&fa, &ea, None, &w, Layer::Changes, LOCAL_GAP).is_err());
}

#[test]
fn quantized_tensors_map_their_dequantized_values() {
    // Three rows of two Q8_0 blocks (a f16 scale, then 32 i8 codes).
    let mut bytes = Vec::new();
    for b in 0..6u8 {
        bytes.extend_from_slice(&half::f16::from_f32(0.5 + f32::from(b)).to_le_bytes());
        bytes.extend((0..32u8).map(|i| (i as i8 - 16 + b as i8) as u8));
    }
    let (file, entry) = tensor(ElementType::Ggml(GgmlType(8)), &[3, 64], &bytes);
    let grid = Grid::of_shape(&entry.shape, 1);
    let values = reference_values(&file, &entry);
    for window in [
        Window::whole(grid, 1 << 20),
        Window {
            row0: 1,
            col0: 40,
            rows: 2,
            cols: 17,
            block_rows: 2,
            block_cols: 5,
        },
    ] {
        // Whole pieces, and one to three blocks at a time.
        for stretch in [fold::STRETCH_LANES, 1, 33, 70] {
            let fold = MapFold::with_stretch(&entry, None, &window, Layer::Values, stretch);
            let tile = read_and_fold(fold.unwrap(), &file, &entry, None, LOCAL_GAP).unwrap();
            assert_matches(&tile, &values, |i| values[i] == 0.0);
        }
    }
    let e = elements(&file, &entry, 70, 2).unwrap();
    assert_eq!(e[0].value, f64::from(values[70]));
    assert!(matches!(
        weight_map(
            &file,
            &entry,
            None,
            &Window::whole(grid, 10),
            Layer::BitPlane { bit: 0 },
            LOCAL_GAP
        ),
        Err(MapError::Layer { .. })
    ));
}

/// A source that counts the bytes read.
struct Counting<'a>(&'a [u8], Cell<u64>);

impl ReadAt for Counting<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.1.set(self.1.get() + buf.len() as u64);
        self.0.read_exact_at(offset, buf)
    }
}

#[test]
fn a_narrow_window_of_wide_rows_reads_only_its_columns() {
    let (rows, cols) = (64u64, 200_000u64);
    let bytes = vec![0x3Fu8; (rows * cols * 2) as usize];
    let (file, entry) = tensor(ElementType::Dtype(Dtype::BF16), &[rows, cols], &bytes);
    let src = Counting(&file, Cell::new(0));
    let w = Window {
        row0: 10,
        col0: 1000,
        rows: 20,
        cols: 500,
        block_rows: 1,
        block_cols: 1,
    };
    let tile = weight_map(&src, &entry, None, &w, Layer::Values, LOCAL_GAP).unwrap();
    assert_eq!(src.1.get(), 20 * 500 * 2);
    assert_eq!(tile.bytes_read, 20 * 500 * 2);
    // A window over nearly whole rows reads them in one stretch.
    let src = Counting(&file, Cell::new(0));
    let w = Window {
        row0: 0,
        col0: 0,
        rows: 3,
        cols: cols - 10,
        block_rows: 1,
        block_cols: 1000,
    };
    weight_map(&src, &entry, None, &w, Layer::Values, LOCAL_GAP).unwrap();
    assert_eq!(src.1.get(), (2 * cols + cols - 10) * 2);
}

#[test]
fn bad_windows_and_truncated_files_are_errors_not_panics() {
    let (file, entry) = tensor(ElementType::Dtype(Dtype::F32), &[4, 4], &[0; 64]);
    let w = Window {
        row0: 3,
        col0: 0,
        rows: 2,
        cols: 4,
        block_rows: 1,
        block_cols: 1,
    };
    assert!(matches!(
        weight_map(&file, &entry, None, &w, Layer::Values, LOCAL_GAP),
        Err(MapError::Window { .. })
    ));
    let w = Window { rows: 1, ..w };
    assert!(weight_map(
        &file[..40].to_vec(),
        &entry,
        None,
        &w,
        Layer::Values,
        LOCAL_GAP
    )
    .is_err());
    let huge = Window {
        row0: 0,
        col0: 0,
        rows: 4,
        cols: 4,
        block_rows: 1,
        block_cols: 1,
    };
    let (f2, e2) = tensor(ElementType::Dtype(Dtype::F6_E2M3), &[4, 4], &[0; 12]);
    assert!(matches!(
        weight_map(&f2, &e2, None, &huge, Layer::Values, LOCAL_GAP),
        Err(MapError::Unsupported(_))
    ));
}

#[test]
fn cells_cross_as_bytes_and_back() {
    let cells = Cells(vec![1.5, f32::NAN, -0.0]);
    let json = serde_json::to_string(&cells).unwrap();
    let back: Cells = serde_json::from_str(&json).unwrap();
    assert_eq!(back.0[0], 1.5);
    assert!(back.0[1].is_nan());
    assert_eq!(back.0[2].to_bits(), (-0.0f32).to_bits());
    assert!(serde_json::from_str::<Cells>("[1,2,3]").is_err());
}

#[test]
fn windows_too_wide_for_column_slots_fold_each_run_into_its_cell() {
    let cols = (1u64 << 20) + 9;
    let values: Vec<f32> = (0..2 * cols)
        .map(|i| {
            if i % 1001 == 0 {
                f32::NAN
            } else {
                (i % 977) as f32 - 400.0
            }
        })
        .collect();
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let (file, entry) = tensor(ElementType::Dtype(Dtype::F32), &[2, cols], &bytes);
    let w = Window {
        row0: 0,
        col0: 3,
        rows: 2,
        cols: cols - 3,
        block_rows: 2,
        block_cols: 1000,
    };
    let tile = weight_map(&file, &entry, None, &w, Layer::Values, LOCAL_GAP).unwrap();
    assert_matches(&tile, &values, |i| values[i] == 0.0);
}

/// The map's own path natively on the bench matrix (`scripts/bench-web.sh` makes it): the base
/// tile of the fitted view of `big.weight`, reading from memory, as one worker's band would.
/// `cargo test --release -p bitlens-stats weight_map_speed -- --ignored --nocapture`
#[test]
#[ignore]
fn weight_map_speed() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../.cache/weights/big-matrix-bf16.safetensors"
    );
    let Ok(file) = std::fs::read(path) else {
        eprintln!("no {path}: run ONLY=values scripts/bench-web.sh once");
        return;
    };
    let layout = bitlens_tensors::format::open(&file).unwrap();
    let entry = layout
        .entries
        .into_iter()
        .find(|e| e.name == "big.weight")
        .unwrap();
    let grid = Grid::of_shape(&entry.shape, 1);
    let w = Window {
        row0: 0,
        col0: 0,
        rows: grid.rows / 2,
        cols: grid.cols,
        block_rows: 97,
        block_cols: 1,
    };
    let mut best = f64::INFINITY;
    for _ in 0..15 {
        let t = std::time::Instant::now();
        let tile = weight_map(&file, &entry, None, &w, Layer::Values, LOCAL_GAP).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(tile.mean.0.len() as u64, w.cells());
    }
    println!(
        "{} values, best of 15: {:.1} ms, {:.0} M values/s",
        w.rows * w.cols,
        best * 1e3,
        (w.rows * w.cols) as f64 / best / 1e6,
    );
}

#[test]
fn a_cell_taller_than_any_grid_is_cut_at_the_window() {
    // The fuzzer's case: a window from row 1 whose cells are u64::MAX rows tall (its end
    // overflowed). The window's one row is one cell row, as with cells one row tall.
    let values = [1.0f32, 2.0, 0.5, 1024.0, 3.0, 4.0, 5.0, 6.0];
    let bytes: Vec<u8> = values
        .iter()
        .flat_map(|v| half::bf16::from_f32(*v).to_le_bytes())
        .collect();
    let (file, entry) = tensor(ElementType::Dtype(Dtype::BF16), &[2, 4], &bytes);
    let w = Window {
        row0: 1,
        col0: 0,
        rows: 1,
        cols: 4,
        block_rows: 1,
        block_cols: 1,
    };
    let tall = Window {
        block_rows: u64::MAX,
        ..w
    };
    let want = weight_map(&file, &entry, None, &w, Layer::Values, LOCAL_GAP).unwrap();
    let got = weight_map(&file, &entry, None, &tall, Layer::Values, LOCAL_GAP).unwrap();
    assert_eq!(got.mean.0, want.mean.0);
    assert_eq!(got.mean.0, [3.0, 4.0, 5.0, 6.0]);
}
