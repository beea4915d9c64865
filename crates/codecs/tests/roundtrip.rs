//! Property tests: every input round-trips byte-exactly through PLMC for every width, with small
//! segments and blocks, and the output never depends on the thread count.
// Helpers outside the #[test] functions unwrap too: a failure there is a test failure.
#![allow(clippy::unwrap_used)]

use bitlens_codecs::{decode, encode, lmc, plmc, Options, Params, Transform, Width};
use bitlens_test_support::{floats::bf16_bits, rng::xorshift};
use proptest::prelude::*;

const WIDTHS: [Width; 4] = [Width::W1, Width::W2, Width::W4, Width::W8];

/// Floats in the shape of real weights, with special bit patterns sprinkled in.
fn floats(width: usize, n: usize, seed: u64) -> Vec<u8> {
    let mut next = xorshift(seed);
    let mut out = Vec::with_capacity(n * width);
    for _ in 0..n {
        let r = next();
        // Roughly normal(0, 0.05): sum of uniforms.
        let u = ((r & 0xffff) as f64 + ((r >> 16) & 0xffff) as f64 + ((r >> 32) & 0xffff) as f64)
            / 65536.0
            - 1.5;
        let v = (u * 0.1) as f32;
        let special = match (r >> 56) % 64 {
            0 => Some(f32::NAN),
            1 => Some(f32::INFINITY),
            2 => Some(f32::NEG_INFINITY),
            3 => Some(f32::from_bits(1)), // smallest subnormal
            4 => Some(-0.0),
            _ => None,
        };
        let v = special.unwrap_or(v);
        match width {
            1 => out.push((v.to_bits() >> 24) as u8),
            2 => out.extend_from_slice(&bf16_bits(v).to_le_bytes()),
            4 => out.extend_from_slice(&v.to_bits().to_le_bytes()),
            _ => out.extend_from_slice(&(v as f64).to_bits().to_le_bytes()),
        }
    }
    out
}

/// XOR of `base` with a copy where a `per_mille`/1000 share of elements changed.
fn sparse_delta(base: &[u8], width: usize, per_mille: u64, seed: u64) -> Vec<u8> {
    let mut next = xorshift(seed);
    let mut out = vec![0u8; base.len()];
    for (o, b) in out.chunks_mut(width).zip(base.chunks(width)) {
        let x = next();
        if x % 1000 < per_mille {
            for (i, (oo, bb)) in o.iter_mut().zip(b).enumerate() {
                *oo = bb ^ (x >> (8 * i + 3)) as u8 | (i == 0) as u8;
            }
        }
    }
    out
}

/// The XOR of two training steps of `n` elements of `width` bytes: every element changed, by
/// a number of low bits spread evenly over 1 to `8 · width − 4`, so the high byte groups are
/// mostly zero and their blocks skewed (coded with rANS).
fn training_delta(n: usize, width: usize, seed: u64) -> Vec<u8> {
    let mut next = xorshift(seed);
    let mut out = Vec::with_capacity(n * width);
    for _ in 0..n {
        let k = 1 + next() % (8 * width as u64 - 4);
        let flip = next() & (u64::MAX >> (64 - k));
        out.extend_from_slice(&flip.to_le_bytes()[..width]);
    }
    out
}

fn data_strategy() -> impl Strategy<Value = (Vec<u8>, usize)> {
    let width = prop::sample::select(vec![1usize, 2, 4, 8]);
    (width, 0usize..40_000, any::<u64>(), 0u8..8).prop_map(|(w, len, seed, kind)| {
        let n = len / w;
        let partial = len % w;
        let mut v = match kind {
            // Random, incompressible bytes.
            0 => {
                let mut next = xorshift(seed);
                (0..len).map(|_| (next() >> 32) as u8).collect()
            }
            // Weight-like floats with NaN / Inf / subnormals / -0.
            1 => floats(w, n, seed),
            // Constant runs of a few values (whole-block runs).
            2 => {
                let mut v = Vec::with_capacity(len);
                let mut s = seed;
                while v.len() < len {
                    let run = 1 + (s % 9000) as usize;
                    v.extend(std::iter::repeat_n((s >> 20) as u8, run.min(len - v.len())));
                    s = s.rotate_left(17).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                }
                v
            }
            // Sparse deltas: 0 %, 5 %, 100 % of elements changed.
            3 => sparse_delta(&floats(w, n, seed), w, 0, seed),
            4 => sparse_delta(&floats(w, n, seed), w, 50, seed),
            5 => sparse_delta(&floats(w, n, seed), w, 1000, seed),
            // Four uniform bits and four skewed ones per byte, turned: nibble pairs (kind 6).
            6 => bitlens_test_support::rng::turned_nibbles(seed, len, (seed % 8) as u32),
            // Dense training deltas: skewed high bytes.
            _ => training_delta(n, w, seed),
        };
        v.truncate(n * w);
        v.extend((0..partial).map(|i| (seed >> (i * 8)) as u8));
        (v, w)
    })
}

/// The segment size a PLMC stream declares.
fn enc_segment(stream: &[u8]) -> usize {
    plmc::read_header(stream).unwrap().segment_bytes as usize
}

fn options(segment_bytes: usize, block_bytes: usize, threads: usize) -> Options {
    Options {
        segment_bytes,
        block_bytes: Some(block_bytes),
        threads: Some(threads),
        ..Options::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn plmc_round_trips(
        (data, w) in data_strategy(),
        segment in prop::sample::select(vec![8usize, 1000, 4096, 12_345, 1 << 20]),
        block_log2 in 12u8..=16,
        transform in prop::sample::select(vec![Transform::None, Transform::SignRotate]),
    ) {
        let width = Width::from_bytes(w).unwrap();
        let mut opts = options(segment, 1 << block_log2, 1);
        opts.transform = transform;
        let packed = encode(&data, width, &opts);
        let back = decode(&packed, data.len()).unwrap();
        prop_assert!(back == data, "round trip differs");
        // Same bytes with two threads, and both decode paths agree.
        let packed2 = encode(&data, width, &Options { threads: Some(2), ..opts });
        prop_assert!(packed2 == packed, "output depends on the thread count");
        let mut out = vec![0xAAu8; data.len()];
        plmc::decode_into_with_threads(&packed, &mut out, Some(2)).unwrap();
        prop_assert!(out == data);
        // Incompressible input costs almost nothing extra: header + table + 1 byte per block.
        let info = plmc::read_header(&packed).unwrap();
        let blocks = (data.len() / w).div_ceil(1 << block_log2) * w + info.segment_count as usize * w;
        prop_assert!(packed.len() <= data.len() + plmc::HEADER_LEN + 9 * info.segment_count as usize + blocks);
    }

    #[test]
    fn streaming_matches_one_shot(
        (data, w) in data_strategy(),
        segment in prop::sample::select(vec![8usize, 1000, 4096]),
        pieces in 1usize..5,
        window in 1usize..30_000,
        threads in 1usize..3,
        stale in prop::sample::select(vec![(2usize, 1usize), (3, 4), (1, 2)]),
    ) {
        let width = Width::from_bytes(w).unwrap();
        let opts = options(segment, 1 << 12, threads);
        let whole = encode(&data, width, &opts);
        // Pieces of whole segments (the last takes the rest) give the same bytes.
        // A reused buffer with stale bytes: they must all be overwritten or cut. Larger than the
        // stream, or (with 2 threads) room for only part of the segments placed in order, the
        // rest appended after them.
        let mut streamed = vec![0xEE; data.len() * stale.0 / stale.1 + 100];
        let mut enc = plmc::StreamEncoder::new(data.len() as u64, width, &opts, &mut streamed);
        let step = enc.segment_bytes() * pieces;
        for piece in data.chunks(step) {
            enc.push(piece);
        }
        enc.finish();
        prop_assert!(streamed == whole, "pieces change the stream");
        // Windows of whole segments decode to the input, in order.
        let mut dec = plmc::StreamDecoder::new(&whole, data.len(), Some(threads)).unwrap();
        let mut out = Vec::new();
        let mut back = Vec::new();
        while dec.next_window(window, &mut out).unwrap() {
            prop_assert!(!out.is_empty() && (out.len() <= window || out.len() <= enc_segment(&whole)));
            back.extend_from_slice(&out);
        }
        prop_assert!(back == data, "windows differ from the input");
    }

    /// Rows of 64 KiB blocks whose byte groups are each random, skewed or constant, chosen per
    /// row: the encoder's sampled Raw decision, its histograms counted around the sample and its
    /// raw groups split straight into the output (predicted from the row before, moved back when
    /// the prediction fails) all run. Blocks never depend on other rows, so the stream must be
    /// the rows' own streams one after the other, and decode to the input.
    #[test]
    fn rows_of_large_blocks_code_independently(
        w in prop::sample::select(vec![2usize, 4, 8]),
        kinds in prop::collection::vec(prop::collection::vec(0u8..3, 8), 1..5),
        last in 0usize..70_000,
        seed in any::<u64>(),
        transform in prop::sample::select(vec![Transform::None, Transform::SignRotate]),
    ) {
        let width = Width::from_bytes(w).unwrap();
        let p = Params { block_log2: 16, transform, ..Params::new(width) };
        let n = p.block_bytes();
        let mut next = xorshift(seed);
        let mut data = Vec::new();
        for (r, row) in kinds.iter().enumerate() {
            let elems = if r + 1 == kinds.len() { last } else { n };
            for i in 0..elems {
                for &kind in &row[..w] {
                    let x = next();
                    // Random, skewed (no zeros, so nothing looks like a sparse delta), constant.
                    data.push([(x >> 24) as u8, 100 + (x % 3 + (i % 7 == 0) as u64) as u8, 42][kind as usize]);
                }
            }
        }
        let whole = lmc::encode(&data, &p);
        let mut rows = vec![lmc::LAYOUT_GROUPED];
        for row in data.chunks(n * w) {
            rows.extend_from_slice(&lmc::encode(row, &p)[1..]);
        }
        prop_assert!(whole == rows, "rows do not code independently");
        let mut out = vec![0u8; data.len()];
        lmc::decode_into(&whole, &p, &mut out).unwrap();
        prop_assert!(out == data, "round trip differs");
    }

    #[test]
    fn lmc_round_trips_every_width(seed in any::<u64>(), len in 0usize..9000) {
        for width in WIDTHS {
            let data = floats(width.bytes(), len / width.bytes() + 1, seed);
            let data = &data[..len.min(data.len())];
            let p = Params { block_log2: 12, ..Params::new(width) };
            let enc = lmc::encode(data, &p);
            prop_assert!(enc.len() <= lmc::max_encoded_len(data.len()));
            let mut out = vec![0u8; data.len()];
            lmc::decode_into(&enc, &p, &mut out).unwrap();
            prop_assert_eq!(&out[..], data);
        }
    }
}

#[test]
fn empty_and_tiny_inputs() {
    for width in WIDTHS {
        for len in 0..20 {
            let data: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(77)).collect();
            let packed = encode(&data, width, &Options::default());
            assert_eq!(
                decode(&packed, len).unwrap(),
                data,
                "width {width:?} len {len}"
            );
        }
    }
    let packed = encode(&[], Width::W2, &Options::default());
    assert_eq!(
        packed.len(),
        plmc::HEADER_LEN,
        "empty input is a bare header"
    );
}

#[test]
fn sparse_delta_beats_one_bit_per_byte() {
    let base = floats(2, 200_000, 7);
    let delta = sparse_delta(&base, 2, 50, 9);
    let packed = encode(&delta, Width::W2, &Options::default());
    assert_eq!(decode(&packed, delta.len()).unwrap(), delta);
    // Plain Huffman cannot go below 1 bit per byte (= 0.125 of the input).
    let ratio = packed.len() as f64 / delta.len() as f64;
    assert!(ratio < 0.11, "ratio {ratio}");
}

#[test]
fn unchanged_delta_is_almost_free() {
    let zeros = vec![0u8; 3 << 20];
    let packed = encode(&zeros, Width::W2, &Options::default());
    // One Run block (2 bytes) per 64 KiB group block.
    assert!(packed.len() < 300, "{}", packed.len());
    assert_eq!(decode(&packed, zeros.len()).unwrap(), zeros);
}

#[test]
fn segments_are_fixed_size_and_independent() {
    let data = floats(4, 100_000, 3);
    let opts = options(64 << 10, 4096, 1);
    let packed = encode(&data, Width::W4, &opts);
    let info = plmc::read_header(&packed).unwrap();
    assert_eq!(info.segment_bytes, 64 << 10);
    assert_eq!(info.segment_count as usize, data.len().div_ceil(64 << 10));
    // Every segment's table entry decodes on its own to its slice of the input.
    let mut off = info.payload_offset() as usize;
    for i in 0..info.segment_count as usize {
        let e = plmc::HEADER_LEN + 8 * i;
        let clen = u32::from_le_bytes(packed[e..e + 4].try_into().unwrap()) as usize;
        let ulen = u32::from_le_bytes(packed[e + 4..e + 8].try_into().unwrap()) as usize;
        let start = i * (64 << 10);
        let mut out = vec![0u8; ulen];
        lmc::decode_into(&packed[off..off + clen], &info.params, &mut out).unwrap();
        assert_eq!(out, data[start..start + ulen]);
        off += clen;
    }
    assert_eq!(off, packed.len());
}

#[test]
fn heterogeneous_block_is_split() {
    // One 64 KiB block: a skewed first half and a random second half.
    let mut data: Vec<u8> = (0..32_768u32).map(|i| (i % 5 == 0) as u8 * 7).collect();
    let mut next = xorshift(0x2545_f491_4f6c_dd1d);
    data.extend((0..32_768).map(|_| next() as u8));
    let p = Params::new(Width::W1);
    let enc = lmc::encode(&data, &p);
    assert_eq!(enc[..2], [lmc::LAYOUT_GROUPED, lmc::KIND_SPLIT]);
    let mut out = vec![0u8; data.len()];
    lmc::decode_into(&enc, &p, &mut out).unwrap();
    assert_eq!(out, data);
    // Split halves: a Huffman block, then a Raw block (the random half does not shrink).
    assert!(enc.len() < 32_768 + 32_768 / 3, "{}", enc.len());
}

#[test]
fn out_of_range_options_are_clamped_not_fatal() {
    let data = floats(4, 30_000, 11);
    for (segment_bytes, block_bytes, code_limit, threads) in [
        (0, 0, 0, Some(0)),
        (usize::MAX, usize::MAX, 255, Some(3)),
        (3, 5000, 9, None),
    ] {
        let opts = Options {
            segment_bytes,
            block_bytes: Some(block_bytes),
            code_limit,
            threads,
            ..Options::default()
        };
        let packed = encode(&data, Width::W4, &opts);
        let info = plmc::read_header(&packed).unwrap();
        assert_eq!(info.segment_bytes % 4, 0);
        assert!((12..=20).contains(&info.params.block_log2));
        assert_eq!(decode(&packed, data.len()).unwrap(), data);
    }
}

#[test]
fn sparse_random_delta_drops_grouping_when_it_pays() {
    // fp32 XOR delta where 5 % of elements got a random new value: every byte of a changed
    // element is random, so grouping would code each position four times.
    let base = floats(4, 100_000, 5);
    let delta = sparse_delta(&base, 4, 50, 6);
    let opts = Options {
        threads: Some(1),
        ..Options::default()
    };
    let packed = encode(&delta, Width::W4, &opts);
    let info = plmc::read_header(&packed).unwrap();
    assert_eq!(packed[info.payload_offset() as usize], lmc::LAYOUT_BYTES);
    assert_eq!(decode(&packed, delta.len()).unwrap(), delta);
    // The dense weights themselves stay grouped.
    let packed = encode(&base, Width::W4, &opts);
    assert_eq!(packed[info.payload_offset() as usize], lmc::LAYOUT_GROUPED);
}
