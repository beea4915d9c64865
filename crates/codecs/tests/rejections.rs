//! One test per rejection rule of the PLMC / LMC decoders: each bad stream yields the typed error
//! naming what and where, never a panic.

use bitlens_codecs::{decode, encode, huffman, lmc, plmc, DecodeError, Options, Params, Width};
use bitlens_test_support::floats::bf16_bits;

fn sample() -> Vec<u8> {
    (0..50_000u32)
        .flat_map(|i| {
            let v = (i.wrapping_mul(2_654_435_761) >> 20) as f32 / 4096.0 - 0.5;
            bf16_bits(v).to_le_bytes()
        })
        .collect()
}

fn packed() -> (Vec<u8>, Vec<u8>) {
    let data = sample();
    let opts = Options {
        segment_bytes: 32 << 10,
        ..Options::default()
    };
    (encode(&data, Width::W2, &opts), data)
}

#[test]
fn truncated_header() {
    let (p, data) = packed();
    assert_eq!(
        decode(&p[..10], data.len()),
        Err(DecodeError::Truncated {
            offset: 0,
            needed: 24,
            available: 10
        })
    );
}

#[test]
fn truncated_segment_table() {
    let (p, data) = packed();
    let err = decode(&p[..30], data.len()).unwrap_err();
    assert!(
        matches!(err, DecodeError::Truncated { offset: 24, .. }),
        "{err:?}"
    );
}

#[test]
fn truncated_payload() {
    let (p, data) = packed();
    let err = decode(&p[..p.len() - 1], data.len()).unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::SegmentOutOfBounds {
                reason: "compressed payload runs past the end of the stream",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn truncated_lmc_stream() {
    let data = sample();
    let params = Params::new(Width::W2);
    let enc = lmc::encode(&data, &params);
    let mut out = vec![0u8; data.len()];
    for cut in [0, 1, enc.len() / 2, enc.len() - 1] {
        let err = lmc::decode_into(&enc[..cut], &params, &mut out).unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::Truncated { .. } | DecodeError::CorruptBitstream { .. }
            ),
            "cut {cut}: {err:?}"
        );
    }
}

#[test]
fn trailing_bytes() {
    let (mut p, data) = packed();
    p.push(0);
    let err = decode(&p, data.len()).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TrailingBytes {
            offset: p.len() as u64 - 1,
            count: 1
        }
    );
}

#[test]
fn length_mismatch() {
    let (p, data) = packed();
    assert_eq!(
        decode(&p, data.len() + 1),
        Err(DecodeError::LengthMismatch {
            expected: data.len() as u64 + 1,
            actual: data.len() as u64
        })
    );
    let mut small = vec![0u8; 3];
    assert!(matches!(
        plmc::decode_into(&p, &mut small),
        Err(DecodeError::LengthMismatch { expected: 3, .. })
    ));
}

#[test]
fn bad_magic_and_version() {
    let (mut p, data) = packed();
    p[4] = 9;
    assert_eq!(
        decode(&p, data.len()),
        Err(DecodeError::UnsupportedVersion { version: 9 })
    );
    p[0] = b'X';
    assert_eq!(
        decode(&p, data.len()),
        Err(DecodeError::BadMagic { found: *b"XLMC" })
    );
}

#[test]
fn bad_header_fields() {
    let (p, data) = packed();
    let cases: [(usize, u8, &str); 3] =
        [(5, 3, "width"), (6, 7, "transform"), (7, 25, "block_log2")];
    for (at, v, field) in cases {
        let mut q = p.clone();
        q[at] = v;
        assert_eq!(
            decode(&q, data.len()),
            Err(DecodeError::BadHeader {
                offset: at as u64,
                field,
                value: v as u64
            })
        );
    }
    // segment_count inconsistent with total_len / segment_bytes.
    let mut q = p.clone();
    q[20] = q[20].wrapping_add(1);
    assert!(matches!(
        decode(&q, data.len()),
        Err(DecodeError::BadHeader {
            field: "segment_count",
            ..
        })
    ));
    // segment_bytes not a multiple of the width.
    let mut q = p;
    q[16] = q[16].wrapping_add(1);
    assert!(matches!(
        decode(&q, data.len()),
        Err(DecodeError::BadHeader {
            field: "segment_bytes",
            ..
        })
    ));
}

#[test]
fn declared_length_beyond_what_the_stream_can_hold() {
    // A 24-byte header claiming 2^40 bytes in 1 GiB segments: rejected before allocating.
    let mut h = Vec::new();
    h.extend_from_slice(b"BLMC");
    h.extend_from_slice(&[1, 1, 0, 16]);
    h.extend_from_slice(&(1u64 << 40).to_le_bytes());
    h.extend_from_slice(&(1u32 << 30).to_le_bytes());
    h.extend_from_slice(&1024u32.to_le_bytes());
    let err = decode(&h, 1 << 40).unwrap_err();
    assert!(
        matches!(err, DecodeError::TooLarge { declared, .. } if declared == 1 << 40),
        "{err:?}"
    );
}

#[test]
fn segment_uncompressed_size_must_match() {
    let (mut p, data) = packed();
    // First table entry's uncompressed length.
    p[28] ^= 1;
    assert!(matches!(
        decode(&p, data.len()),
        Err(DecodeError::SegmentOutOfBounds {
            segment: 0,
            reason: "uncompressed length differs from the fixed segment size",
            ..
        })
    ));
}

#[test]
fn bad_block_kind() {
    let (mut p, data) = packed();
    let info = plmc::read_header(&p).unwrap();
    let first_block = info.payload_offset() as usize + 1; // after the layout byte
    p[first_block] = 7;
    assert_eq!(
        decode(&p, data.len()),
        Err(DecodeError::BadBlockKind {
            offset: first_block as u64,
            kind: 7
        })
    );
}

/// A width-1 LMC stream (layout byte, then one Huffman block at offset 1) with the given table
/// and raw body after it.
fn huffman_block(lengths: &[u8], body: &[u8]) -> Vec<u8> {
    let mut b = vec![lmc::LAYOUT_GROUPED, lmc::KIND_HUFFMAN];
    huffman::write_table(lengths, &mut b);
    b.extend_from_slice(body);
    b
}

fn w1() -> Params {
    Params::new(Width::W1)
}

#[test]
fn over_subscribed_code_table() {
    let block = huffman_block(&[1u8; 256], &[0, 0, 0, 0]);
    let mut out = vec![0u8; 8];
    assert_eq!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::InvalidCodeTable {
            block: 1,
            reason: "over-subscribed code lengths"
        })
    );
}

#[test]
fn incomplete_code_table() {
    let mut lengths = [0u8; 256];
    lengths[0] = 1;
    lengths[1] = 2;
    let block = huffman_block(&lengths, &[0, 0, 0, 0]);
    let mut out = vec![0u8; 8];
    assert_eq!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::InvalidCodeTable {
            block: 1,
            reason: "incomplete code lengths"
        })
    );
}

#[test]
fn invalid_code_length_code() {
    // 16 code-length-code lengths of 1: over-subscribed before any symbol is read.
    let block = [
        lmc::LAYOUT_GROUPED,
        lmc::KIND_HUFFMAN,
        0x49,
        0x92,
        0x24,
        0x49,
        0x92,
        0x24,
    ];
    let mut out = vec![0u8; 8];
    assert_eq!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::InvalidCodeTable {
            block: 1,
            reason: "invalid code-length code"
        })
    );
}

fn two_symbol_lengths() -> [u8; 256] {
    let mut l = [0u8; 256];
    l[0] = 1;
    l[1] = 1;
    l
}

#[test]
fn bit_stream_overrun() {
    // 64 one-bit symbols → each quarter needs 2 bytes; stream 0 declares 1.
    let mut body = vec![1, 2, 2, 2];
    body.extend_from_slice(&[0; 7]);
    let block = huffman_block(&two_symbol_lengths(), &body);
    let mut out = vec![0u8; 64];
    assert_eq!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::CorruptBitstream {
            block: 1,
            stream: 0,
            reason: "bit stream overrun"
        })
    );
}

#[test]
fn bit_stream_with_unused_bytes() {
    // 8 one-bit symbols → each quarter needs 1 byte; stream 2 declares 2.
    let mut body = vec![1, 1, 2, 1];
    body.extend_from_slice(&[0xFF, 0x00, 0x03, 0x00, 0x02]);
    let block = huffman_block(&two_symbol_lengths(), &body);
    let mut out = vec![0u8; 8];
    assert_eq!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::CorruptBitstream {
            block: 1,
            stream: 2,
            reason: "bit stream has unused bytes"
        })
    );
}

#[test]
fn valid_hand_made_block_decodes() {
    // The same construction as the two tests above, but consistent: proves the rejections come
    // from the defects, not from the construction.
    let body = [1, 1, 1, 1, 0b01, 0b10, 0b11, 0b00];
    let block = huffman_block(&two_symbol_lengths(), &body);
    let mut out = vec![9u8; 8];
    lmc::decode_into(&block, &w1(), &mut out).unwrap();
    assert_eq!(out, [1, 0, 0, 1, 1, 1, 0, 0]);
}

#[test]
fn run_past_the_end_of_a_quarter() {
    // Run block: run_value 0, nrun 4 (k = 0..3); symbols 'A' = 1 and run symbols.
    let mut lengths = vec![0u8; 256 + 4];
    lengths[1] = 2;
    lengths[256] = 2;
    lengths[257] = 2;
    lengths[259] = 2;
    let mut block = vec![lmc::LAYOUT_GROUPED, lmc::KIND_HUFFMAN_RUNS, 0, 4];
    huffman::write_table(&lengths, &mut block);
    // Canonical codes: sym 1 = 00, 256 = 01, 257 = 10, 259 = 11 (written bit-reversed).
    // Stream 0 codes one run with k = 3 (8..15 bytes) into a 2-byte quarter.
    block.extend_from_slice(&[1, 1, 1, 1]);
    block.extend_from_slice(&[0b0000_0011, 0, 0, 0]);
    let mut out = vec![0u8; 8];
    assert_eq!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::CorruptBitstream {
            block: 1,
            stream: 0,
            reason: "run crosses the end of its quarter"
        })
    );
}

#[test]
fn run_symbol_count_out_of_range() {
    let block = [lmc::LAYOUT_GROUPED, lmc::KIND_HUFFMAN_RUNS, 0, 0, 0, 0];
    let mut out = vec![0u8; 8];
    assert!(matches!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::InvalidCodeTable { block: 1, .. })
    ));
}

#[test]
fn every_single_byte_corruption_is_handled() {
    // Flip each byte of a small stream: decoding must return (never panic). Every flip in the
    // header and segment table is detected or harmless; payload flips may decode to other bytes (Raw blocks
    // carry no redundancy; the snapshot container's checksums catch those).
    let data: Vec<u8> = sample()[..6000].to_vec();
    let p = encode(&data, Width::W2, &Options::default());
    let meta = plmc::read_header(&p).unwrap().payload_offset() as usize;
    for i in 0..p.len() {
        let mut q = p.clone();
        q[i] ^= 0x5A;
        let r = decode(&q, data.len());
        if i < meta {
            // (A flipped `segment_bytes` of a one-segment stream changes nothing.)
            assert!(
                r.is_err() || r == Ok(data.clone()),
                "flip at {i} not detected"
            );
        }
    }
}

#[test]
fn split_of_a_short_block() {
    // A split needs halves of at least MIN_SPLIT_HALF bytes.
    let block = [
        lmc::LAYOUT_GROUPED,
        lmc::KIND_SPLIT,
        lmc::KIND_RUN,
        1,
        lmc::KIND_RUN,
        2,
    ];
    let mut out = vec![0u8; 2 * lmc::MIN_SPLIT_HALF - 2];
    assert_eq!(
        lmc::decode_into(&block, &w1(), &mut out),
        Err(DecodeError::BadBlockKind {
            offset: 1,
            kind: lmc::KIND_SPLIT
        })
    );
    // The same block is fine when the halves are long enough.
    let mut out = vec![0u8; 2 * lmc::MIN_SPLIT_HALF];
    lmc::decode_into(&block, &w1(), &mut out).unwrap();
    assert!(out[..lmc::MIN_SPLIT_HALF].iter().all(|&b| b == 1));
    assert!(out[lmc::MIN_SPLIT_HALF..].iter().all(|&b| b == 2));
}

#[test]
fn bad_layout_byte() {
    let (mut p, data) = packed();
    let at = plmc::read_header(&p).unwrap().payload_offset() as usize;
    p[at] = 2;
    assert_eq!(
        decode(&p, data.len()),
        Err(DecodeError::BadHeader {
            offset: at as u64,
            field: "layout",
            value: 2
        })
    );
}

/// An LMC stream of one rANS block of `out_len` bytes, 75 % zeros and the rest ones, and
/// those bytes.
fn rans_stream(out_len: usize) -> (Vec<u8>, Vec<u8>) {
    let data: Vec<u8> = (0..out_len).map(|i| u8::from(i % 4 == 3)).collect();
    let mut stream = vec![lmc::LAYOUT_GROUPED, lmc::KIND_RANS];
    bitlens_codecs::rans::encode_block(&data, &mut stream);
    let mut out = vec![0u8; out_len];
    lmc::decode_into(&stream, &w1(), &mut out).expect("the hand-made rANS block decodes");
    assert_eq!(out, data, "the hand-made rANS block decodes");
    (stream, data)
}

#[test]
fn rans_block_with_a_bad_table() {
    // Symbol 0's frequency (bytes 5..7 of the stream: after layout, kind and the symbol count)
    // no longer lets the frequencies sum to 4096; the error names the block's body.
    let (mut stream, _) = rans_stream(1000);
    stream[5] ^= 0x01;
    let mut out = vec![0u8; 1000];
    assert_eq!(
        lmc::decode_into(&stream, &w1(), &mut out),
        Err(DecodeError::InvalidCodeTable {
            block: 2,
            reason: "frequencies do not sum to 4096"
        })
    );
}

#[test]
fn rans_block_cut_short_or_with_a_bad_state() {
    let (stream, data) = rans_stream(1000);
    let mut out = vec![0u8; 1000];
    assert!(matches!(
        lmc::decode_into(&stream[..stream.len() - 1], &w1(), &mut out),
        Err(DecodeError::Truncated { .. })
    ));
    // Lane 0's initial state (after the 2-byte count, two (symbol, freq) entries and four word
    // counts) set below 2^16.
    let mut bad = stream.clone();
    let state = 2 + 2 + 2 * 3 + 16;
    bad[state..state + 4].copy_from_slice(&5u32.to_le_bytes());
    assert_eq!(
        lmc::decode_into(&bad, &w1(), &mut out),
        Err(DecodeError::CorruptBitstream {
            block: 2,
            stream: 0,
            reason: "initial state below the normalization bound"
        })
    );
    // A changed word is rejected (a lane ends off its final state) or decodes to other bytes:
    // a stream that passes the end checks is what encoding its output writes.
    let mut bad = stream;
    let last = bad.len() - 1;
    bad[last] ^= 0x40;
    let r = lmc::decode_into(&bad, &w1(), &mut out);
    assert!(r.is_err() || out != data);
}

/// An LMC stream of one nibble-pairs block (kind 6, turn 3) of `out_len` bytes, and those bytes.
fn nibble_pairs_stream(out_len: usize) -> (Vec<u8>, Vec<u8>) {
    let data = bitlens_test_support::rng::turned_nibbles(0x6e1b_b1e5, out_len, 3);
    let stream = lmc::encode(&data, &w1());
    assert_eq!(
        stream[1..3],
        [lmc::KIND_NIBBLE_PAIRS, 3],
        "the encoder chose nibble pairs"
    );
    (stream, data)
}

#[test]
fn nibble_pairs_with_a_bad_turn_or_cut_short() {
    let (stream, data) = nibble_pairs_stream(5001);
    let mut out = vec![0u8; data.len()];
    lmc::decode_into(&stream, &w1(), &mut out).unwrap();
    assert_eq!(out, data);
    let mut bad = stream.clone();
    bad[2] = 8;
    assert_eq!(
        lmc::decode_into(&bad, &w1(), &mut out),
        Err(DecodeError::BadHeader {
            offset: 2,
            field: "nibble turn",
            value: 8
        })
    );
    // The stored lows end the stream: one short is named where they start.
    let lows_at = stream.len() - (data.len() - data.len() / 2);
    assert_eq!(
        lmc::decode_into(&stream[..stream.len() - 1], &w1(), &mut out),
        Err(DecodeError::Truncated {
            offset: lows_at as u64,
            needed: (data.len() - data.len() / 2) as u64,
            available: (data.len() - data.len() / 2 - 1) as u64,
        })
    );
    // Cut in the coded pairs or just after the turn: an error, never a panic.
    for cut in [3, 10, lows_at - 1] {
        assert!(lmc::decode_into(&stream[..cut], &w1(), &mut out).is_err());
    }
}
