//! `bg4-lz4` against the published description: the chunk boundaries of xet-core's own test
//! vectors (`xet_data/src/deduplication/chunking.rs`: `test_correctness_1mb_random_data`,
//! `test_correctness_1mb_const_data`, `test_correctness_100kb_hitting_data`), the stored layout
//! of a small input written out by hand, and byte-identical round trips over every size that
//! matters (0, 1..7, non-multiples of 4, chunk-limit sizes, random and real weights).
#![allow(clippy::unwrap_used)]

use bitlens_peers::xet::{self, bg4, chunk, chunker, Scheme};
use proptest::prelude::*;

/// SplitMix64, as xet-core's chunker tests generate their portable random data.
fn splitmix_bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(n + 7);
    while out.len() < n {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(n);
    out
}

#[test]
fn random_megabyte_chunks_where_the_hub_cuts_it() {
    let data = splitmix_bytes(1_000_000, 0);
    // The same spot checks the published test makes of its data.
    assert_eq!((data[0], data[127], data[111_111]), (175, 132, 118));
    assert_eq!(
        chunker::boundaries(&data),
        [
            84493, 134421, 144853, 243318, 271793, 336457, 467529, 494581, 582000, 596735, 616815,
            653164, 678202, 724510, 815591, 827760, 958832, 991092, 1000000
        ]
    );
}

#[test]
fn constant_megabyte_is_cut_at_the_maximum() {
    assert_eq!(
        chunker::boundaries(&[59u8; 1_000_000]),
        [131072, 262144, 393216, 524288, 655360, 786432, 917504, 1000000]
    );
}

/// A 128-byte pattern known to trigger a boundary, `padding` zeros after it, repeated to `n`
/// bytes: the published test of the minimum-chunk rule.
fn triggering_data(n: usize, padding: usize) -> Vec<u8> {
    let mut data: Vec<u8> = vec![
        154, 52, 42, 34, 159, 75, 126, 224, 70, 236, 12, 196, 79, 236, 178, 124, 127, 50, 99, 178,
        44, 176, 174, 126, 250, 235, 205, 174, 252, 122, 35, 10, 20, 101, 214, 69, 193, 8, 115,
        105, 158, 228, 120, 111, 136, 162, 198, 251, 211, 183, 253, 252, 164, 147, 63, 16, 186,
        162, 117, 23, 170, 36, 205, 187, 174, 76, 210, 174, 211, 175, 12, 173, 145, 59, 2, 70, 222,
        181, 159, 227, 182, 156, 189, 51, 226, 106, 24, 50, 183, 157, 140, 10, 8, 23, 212, 70, 10,
        234, 23, 33, 219, 254, 39, 236, 70, 49, 191, 116, 9, 115, 15, 101, 26, 159, 165, 220, 15,
        170, 56, 125, 92, 163, 94, 235, 38, 40, 49, 81,
    ];
    data.resize(data.len() + padding, 0);
    while data.len() < n {
        let take = (n - data.len()).min(data.len());
        data.extend_from_within(0..take);
    }
    data
}

#[test]
fn boundaries_past_the_minimum_match_the_published_table() {
    // (padding, data[11111], boundaries): rows of the published table.
    let rows: [(usize, u8, [usize; 8]); 7] = [
        (
            0,
            236,
            [8256, 16448, 24640, 32832, 41024, 49216, 57408, 65536],
        ),
        (
            1,
            50,
            [8320, 16576, 24832, 33088, 41344, 49600, 57856, 65536],
        ),
        (
            2,
            36,
            [8254, 16574, 24894, 33214, 41534, 49854, 58174, 65536],
        ),
        (
            3,
            116,
            [8317, 16570, 24823, 33076, 41329, 49582, 57835, 65536],
        ),
        (
            38,
            0,
            [8198, 16498, 24798, 33098, 41398, 49698, 57998, 65536],
        ),
        (
            104,
            0,
            [8416, 16768, 25120, 33472, 41824, 50176, 58528, 65536],
        ),
        (
            127,
            0,
            [8224, 16639, 25054, 33469, 41884, 50299, 58714, 65536],
        ),
    ];
    for (padding, sample, want) in rows {
        let data = triggering_data(65536, padding);
        assert_eq!(data[11111], sample, "padding {padding}");
        assert_eq!(chunker::boundaries(&data), want, "padding {padding}");
    }
}

/// Every chunk but the last lies within the limits, and the chunks tile the input.
#[test]
fn chunks_respect_the_limits() {
    let data = splitmix_bytes(3_000_000, 9);
    let ends = chunker::boundaries(&data);
    let mut start = 0;
    for (i, &end) in ends.iter().enumerate() {
        let len = end - start;
        assert!(len <= chunker::MAX_CHUNK);
        assert!(len >= chunker::MIN_CHUNK || i == ends.len() - 1);
        start = end;
    }
    assert_eq!(start, data.len());
}

/// The stored bytes of a small input, written out by hand from the published layout: one chunk
/// (under the minimum), 8-byte header, LZ4 frame of the byte groups when the predictor says so.
#[test]
fn a_small_input_is_stored_as_published() {
    // 1030 bytes: 257 quads and 2 trailing bytes; position 3 skewed, every bin of every
    // position filled, so the hub's predictor picks BG4.
    let data = skewed(1030);
    assert!(xet::predictor::bg4_recommended(&data));
    let mut out = Vec::new();
    let tally = xet::compress_into(&data, &mut out).unwrap();
    assert_eq!((tally.bg4_lz4, tally.lz4, tally.none), (1, 0, 0));
    let compressed = out.len() - chunk::HEADER_LEN;
    let c = (compressed as u32).to_le_bytes();
    assert_eq!(out[..8], [0, c[0], c[1], c[2], 2, 0x06, 0x04, 0]); // 1030 = 0x0406
    let mut groups = vec![0; data.len()];
    bg4::split(&data, &mut groups);
    // Groups of 258, 258, 257, 257 bytes, group 0 first.
    assert_eq!(groups[..3], [0, 1, 2]);
    assert_eq!(groups[257], 1); // byte 1028, the first trailing byte: (1028 / 4) as u8
    assert_eq!(groups[258..261], [0, 1, 2]);
    let mut frame = Vec::new();
    let mut enc = lz4_frame(&mut frame);
    std::io::Write::write_all(&mut enc, &groups).unwrap();
    enc.finish().unwrap();
    assert_eq!(out[8..], frame[..]);
    let mut back = Vec::new();
    xet::decompress_into(&out, &mut back).unwrap();
    assert_eq!(back, data);
}

fn lz4_frame(out: &mut Vec<u8>) -> lz4_flex::frame::FrameEncoder<&mut Vec<u8>> {
    lz4_flex::frame::FrameEncoder::new(out)
}

/// Skewed bytes the predictor sends to BG4, `n` of them.
fn skewed(n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| match (i % 4, (i / 4) % 4096) {
            (3, k @ 0..=8) => ((1u16 << k) - 1) as u8,
            (3, _) => 0x0f,
            (_, k) => k as u8,
        })
        .collect()
}

/// Runs of 32 chunks share the verdict on their first chunk.
#[test]
fn the_scheme_is_retested_every_32_chunks() {
    // 33 maximum chunks of zeros (every position has empty bins: LZ4), then skewed bytes. Chunks
    // 33..64 would each be BG4 on their own, yet follow chunk 32's verdict; chunk 64 is retested.
    let mut data = vec![0u8; 33 * chunker::MAX_CHUNK];
    data.extend_from_slice(&skewed(40 * chunker::MAX_CHUNK));
    let ends = chunker::boundaries(&data);
    assert!(ends.len() > 64);
    assert_eq!(ends[32], 33 * chunker::MAX_CHUNK);
    let schemes = xet::schemes(&data, &ends);
    assert_eq!(schemes.len(), ends.len());
    assert!(xet::predictor::bg4_recommended(&data[ends[32]..ends[33]]));
    assert!(schemes[..64].iter().all(|s| *s == Scheme::Lz4));
    assert!(xet::predictor::bg4_recommended(&data[ends[63]..ends[64]]));
    assert_eq!(schemes[64], Scheme::Bg4Lz4);
}

fn roundtrip(data: &[u8]) {
    let mut packed = Vec::new();
    xet::compress_into(data, &mut packed).unwrap();
    let mut back = vec![1, 2, 3]; // cleared by the decoder
    xet::decompress_into(&packed, &mut back).unwrap();
    assert_eq!(back, data, "{} bytes", data.len());
}

#[test]
fn every_small_size_round_trips() {
    for n in (0..=67).chain([1023, 8191, 8192, 8193, 131_071, 131_072, 131_073, 262_145]) {
        roundtrip(&splitmix_bytes(n, n as u64));
        roundtrip(&vec![0x3c; n]);
    }
}

proptest! {
    // Few cases of up to two maximum chunks and a bit: LZ4 frames are slow in a debug build.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn arbitrary_bytes_round_trip(data in proptest::collection::vec(any::<u8>(), 0..270_000)) {
        roundtrip(&data);
    }

    /// Bytes drawn from few values (zeros, one repeated value, now and then any byte), as
    /// sparse or quantized tensors are: chunks LZ4 and BG4 both shrink.
    #[test]
    fn low_entropy_bytes_round_trip(seed in any::<u64>(), n in 0usize..270_000) {
        let mut next = bitlens_test_support::rng::xorshift(seed);
        let data: Vec<u8> = (0..n)
            .map(|_| match next() % 8 {
                0..=3 => 0,
                4..=6 => 0x3f,
                r => (next() >> 8) as u8 ^ r as u8,
            })
            .collect();
        roundtrip(&data);
    }
}

/// Real weights in every float format: byte for byte, and smaller than the input.
#[test]
fn real_weights_round_trip_and_shrink() {
    for name in [
        "minilm-bf16.safetensors",
        "minilm-f16.safetensors",
        "minilm-f32.safetensors",
    ] {
        let Some(path) = bitlens_test_support::weights::path_or_skip(name) else {
            return;
        };
        let file = std::fs::read(path).unwrap();
        // An odd window (not a multiple of 4, not on a tensor boundary) of 4 MB.
        let data = &file[1001..(1001 + 4_000_003).min(file.len())];
        let mut packed = Vec::new();
        let tally = xet::compress_into(data, &mut packed).unwrap();
        assert!(packed.len() < data.len(), "{name}");
        assert!(tally.bg4_lz4 > 0, "{name}: {tally:?}");
        let mut back = Vec::new();
        xet::decompress_into(&packed, &mut back).unwrap();
        assert_eq!(back, data, "{name}");
    }
}

/// Damaged streams are typed errors.
#[test]
fn damaged_streams_are_errors() {
    let data = splitmix_bytes(20_000, 3);
    let mut packed = Vec::new();
    xet::compress_into(&vec![7u8; 20_000], &mut packed).unwrap();
    let mut out = Vec::new();
    for cut in [1, 7, packed.len() - 1] {
        assert!(
            xet::decompress_into(&packed[..cut], &mut out).is_err(),
            "cut {cut}"
        );
    }
    let mut bad = packed.clone();
    bad[4] = 9;
    assert!(matches!(
        xet::decompress_into(&bad, &mut out),
        Err(xet::Bg4Lz4Error::Scheme(9))
    ));
    let mut bad = packed.clone();
    bad[5] = bad[5].wrapping_add(1); // the chunk's length no longer matches its frame
    assert!(xet::decompress_into(&bad, &mut out).is_err());
    xet::compress_into(&data, &mut packed).unwrap();
    assert_eq!(packed[4], 0, "random bytes are stored");
    packed[9] ^= 1;
    xet::decompress_into(&packed, &mut out).unwrap();
    assert_ne!(out, data);
}
