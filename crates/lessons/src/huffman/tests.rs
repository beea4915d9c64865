//! The explanation against the real encoder: every block's explained size equals the bytes the
//! LMC encoder writes for it (and those bytes are the block's share of a tensor's LMC and PLMC
//! streams), on synthetic blocks of every kind and on real bf16 weights; the code, tree, limit
//! and table comparisons hold their invariants.

use super::*;
use crate::xorshift;
use bitlens_codecs::huffman::DEFAULT_CODE_LIMIT;
use bitlens_codecs::lmc::LAYOUT_GROUPED;
use proptest::prelude::*;

const LIMIT: u32 = DEFAULT_CODE_LIMIT;

/// The encoder's bytes for `block` coded alone.
fn coded_len(block: &[u8], limit: u32) -> usize {
    let params = Params {
        width: Width::W1,
        transform: Transform::None,
        block_log2: MAX_BLOCK_LOG2,
        code_limit: limit as u8,
    };
    lmc::encode(block, &params).len() - 1
}

/// Explains `block` and checks the explanation accounts for every byte the encoder wrote.
fn check_block(block: &[u8], limit: u32) -> BlockExplanation {
    let e = explain_block(block, limit, 16).unwrap();
    let enc = &e.encoder;
    assert_eq!(enc.coded_bytes, coded_len(block, limit), "encoder size");
    assert_eq!(enc.explained_bytes, enc.coded_bytes, "explained size");
    for leaf in &enc.leaves {
        assert_eq!(leaf.explained_bytes, leaf.coded_bytes, "{leaf:?}");
    }
    // The leaves tile the block.
    let mut at = 0;
    for leaf in &enc.leaves {
        assert_eq!(leaf.offset, at);
        at += leaf.len;
    }
    assert_eq!(at, block.len());
    assert_eq!(
        enc.leaves.len(),
        enc.split_bytes + 1,
        "a split has two children"
    );
    check_code(&e.code, &e.histogram, limit);
    e
}

/// A code is complete and prefix-free (canonical), within the limit, and costs Σ count · length.
fn check_code(code: &Code, hist: &[u32], limit: u32) {
    let kraft: u64 = code
        .symbols
        .iter()
        .map(|s| 1u64 << (MAX_CODE_LEN - u32::from(s.length)))
        .sum();
    assert_eq!(kraft, 1 << MAX_CODE_LEN, "complete");
    assert!(code.longest <= limit);
    for (a, b) in code.symbols.iter().zip(&code.symbols[1..]) {
        // Canonical: each code is the one before plus one, shifted to its length.
        assert_eq!(b.code, (a.code + 1) << (b.length - a.length), "{a:?} {b:?}");
        assert_eq!(b.bits.len(), usize::from(b.length));
    }
    let bits: u64 = code
        .symbols
        .iter()
        .map(|s| u64::from(hist[usize::from(s.symbol)]) * u64::from(s.length))
        .sum();
    assert_eq!(bits, code.code_bits);
}

fn skewed(n: usize, seed: u64, spread: u32) -> Vec<u8> {
    let mut r = xorshift(seed);
    (0..n)
        .map(|_| (((r() >> 40) as u32).trailing_zeros() * spread % 256) as u8)
        .collect()
}

/// 72 % zeros and the rest over 32 values, as the high bytes of a training step's XOR delta:
/// a rANS block.
fn mostly_zero(n: usize, seed: u64) -> Vec<u8> {
    let mut r = xorshift(seed);
    (0..n)
        .map(|_| match r() {
            x if x % 100 < 72 => 0,
            x => 1 + (x >> 32) as u8 % 32,
        })
        .collect()
}

#[test]
fn every_kind_of_block_is_explained_to_the_byte() {
    let mut r = xorshift(0x5eed_1234_5678_9abc);
    let random: Vec<u8> = (0..128 << 10).map(|_| (r() >> 33) as u8).collect();
    let mut sparse = vec![0u8; 65536];
    for i in (0..sparse.len()).step_by(97) {
        sparse[i] = (i % 251) as u8 | 1;
    }
    let mut halves = skewed(65536, 3, 1);
    halves.extend(skewed(65536, 4, 37));
    let mut kinds = std::collections::BTreeSet::new();
    for block in [
        vec![7u8; 1000],
        vec![7u8; 65536],
        vec![1, 2],
        vec![9],
        skewed(65536, 1, 1),
        skewed(65536, 2, 3),
        skewed(12_345, 5, 1),
        skewed(1 << 20, 6, 1),
        random.clone(),
        random[..4000].to_vec(),
        sparse,
        halves,
        mostly_zero(65536, 7),
        bitlens_test_support::rng::turned_nibbles(11, 65536, 1),
        bitlens_test_support::rng::turned_nibbles(12, 65535, 6),
    ] {
        let e = check_block(&block, LIMIT);
        for leaf in &e.encoder.leaves {
            kinds.insert(format!("{:?}", leaf.kind));
            // What is stored as it is: a raw leaf's bytes, a pair leaf's low nibbles.
            let stored = match leaf.kind {
                LeafKind::Raw => leaf.len,
                LeafKind::NibblePairs => leaf.len - leaf.len / 2,
                _ => 0,
            };
            assert_eq!(leaf.stored_bytes, stored, "{leaf:?}");
        }
        if e.encoder.split_bytes > 0 {
            kinds.insert("split".into());
        }
    }
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [
            "Huffman",
            "HuffmanRuns",
            "NibblePairs",
            "Rans",
            "Raw",
            "Run",
            "split"
        ]
    );
}

#[test]
fn the_run_variant_is_costed_exactly() {
    let mut block = vec![0u8; 65536];
    for i in (0..block.len()).step_by(97) {
        block[i] = (i % 251) as u8 | 1;
    }
    let e = check_block(&block, LIMIT);
    let runs = e
        .runs
        .as_ref()
        .expect("the zero byte covers 99 % of the block");
    assert_eq!(runs.run_value, 0);
    assert!(runs.share > 0.98);
    assert_eq!(e.encoder.leaves.len(), 1);
    let leaf = &e.encoder.leaves[0];
    assert_eq!(leaf.kind, LeafKind::HuffmanRuns);
    assert_eq!(
        leaf.explained_bytes, runs.bytes,
        "the chosen variant is the one costed"
    );
    assert!(
        runs.bytes < e.plain_bytes / 4,
        "runs beat plain Huffman's 1 bit per byte"
    );
    assert!(
        e.plain_bytes * 8 >= block.len(),
        "plain Huffman: at least 1 bit per byte"
    );
    // Literals + run bytes cover the block.
    assert_eq!(runs.literals, (0..block.len()).step_by(97).count() as u64);
    // No runs where the most frequent byte covers less than half.
    assert!(check_block(&skewed(65536, 1, 37), LIMIT).runs.is_none());
}

#[test]
fn the_length_limit_cost_is_the_difference_to_the_unlimited_code() {
    // Fibonacci counts need codes far longer than 12 bits.
    let mut block = Vec::new();
    let (mut a, mut b) = (1usize, 1usize);
    for s in 0..24u8 {
        block.extend(std::iter::repeat_n(s, a));
        (a, b) = (b, a + b);
    }
    for limit in [9, 11, 12] {
        let e = check_block(&block, limit);
        assert!(e.unlimited.longest > 12, "{}", e.unlimited.longest);
        assert!(e.code.longest <= limit);
        assert!(e.code.code_bits > e.unlimited.code_bits);
        assert!(e.unlimited.code_bits as f64 >= e.entropy_bits);
    }
    // A sum of two uniform 6-bit values: rare tails need 12-bit codes, and the encoder takes
    // the 11-bit-limited code instead, as it costs at most 1/1024 more.
    let mut r = xorshift(9);
    let tails: Vec<u8> = (0..65536)
        .map(|_| ((r() >> 58) + (r() >> 58)) as u8)
        .collect();
    let e = check_block(&tails, LIMIT);
    assert_eq!(e.unlimited.longest, 12);
    assert_eq!(e.code.longest, 11);
    assert!(e.code.code_bits > e.unlimited.code_bits);
    assert!(e.code.code_bits <= e.unlimited.code_bits + e.unlimited.code_bits / 1024);
    // A mild block (uniform over 50 values): the limit costs nothing.
    let mild: Vec<u8> = (0..65536).map(|_| (r() % 50) as u8).collect();
    let e = check_block(&mild, LIMIT);
    assert!(e.unlimited.longest <= LIMIT);
    assert_eq!(e.code.code_bits, e.unlimited.code_bits);
    // Huffman is within one bit per symbol of the entropy.
    let n = e.len as f64;
    assert!(e.entropy_bits <= e.code.code_bits as f64);
    assert!((e.code.code_bits as f64) < e.entropy_bits + n);
}

#[test]
fn the_tree_folds_all_but_the_most_frequent_symbols() {
    let block = skewed(65536, 11, 7);
    let e = check_block(&block, LIMIT);
    for top in [0, 1, 3, 8, 1000] {
        let t = tree(&e.code, top);
        assert_eq!(t[0].weight, block.len() as u64);
        assert_eq!(t[0].prefix, "");
        let (mut leaves, mut folded) = (0, 0);
        for node in &t {
            match node.kind {
                NodeKind::Inner { zero, one } => {
                    assert_eq!(node.weight, t[zero].weight + t[one].weight);
                    assert_eq!(t[zero].prefix, format!("{}0", node.prefix));
                    assert_eq!(t[one].prefix, format!("{}1", node.prefix));
                }
                NodeKind::Leaf { symbol } => {
                    leaves += 1;
                    let s = e.code.symbols.iter().find(|s| s.symbol == symbol).unwrap();
                    assert_eq!(s.bits, node.prefix);
                    assert_eq!(u64::from(s.count), node.weight);
                }
                NodeKind::Others { symbols } => folded += symbols,
            }
        }
        assert_eq!(leaves, top.min(e.code.symbols.len()));
        assert_eq!(leaves + folded, e.code.symbols.len());
    }
}

#[test]
fn one_global_table_against_a_table_per_block() {
    // Two halves with different statistics: per-block tables pay off.
    let mut group = skewed(256 << 10, 21, 1);
    group.extend(skewed(256 << 10, 22, 29));
    let c = compare_tables(&group, 16, LIMIT).unwrap();
    assert_eq!(c.blocks, 8);
    assert_eq!(c.adaptive.tables, 8);
    assert!(c.block_entropy_bits <= c.global_entropy_bits + 1e-6);
    assert!(c.adaptive.code_bits < c.global.code_bits);
    assert!(c.adaptive.bytes < c.global.bytes);
    assert!(c.global.code_bits as f64 >= c.global_entropy_bits);
    // The encoder's bytes are the blocks' explained bytes.
    let blocks: usize = group
        .chunks(1 << 16)
        .map(|b| check_block(b, LIMIT).encoder.coded_bytes)
        .sum();
    assert_eq!(c.encoder_bytes, blocks);
}

#[test]
fn bad_requests_are_errors() {
    assert_eq!(explain_block(&[], LIMIT, 8), Err(ExplainError::Empty));
    let big = vec![0u8; (1 << 20) + 1];
    assert!(matches!(
        explain_block(&big, LIMIT, 8),
        Err(ExplainError::TooLong { .. })
    ));
    assert_eq!(explain_block(&[1, 2], 8, 8), Err(ExplainError::Limit(8)));
    assert_eq!(explain_block(&[1, 2], 13, 8), Err(ExplainError::Limit(13)));
    assert_eq!(
        compare_tables(&[1], 11, LIMIT),
        Err(ExplainError::BlockSize(11))
    );
    assert_eq!(compare_tables(&[], 16, LIMIT), Err(ExplainError::Empty));
    assert!(matches!(
        group_bytes(&[0; 8], Width::W2, Transform::None, 2),
        Err(ExplainError::Group { group: 2, width: 2 })
    ));
}

#[test]
fn byte_groups_are_the_encoders_groups() {
    let data: Vec<u8> = (0..1001u32).map(|i| (i * 7 % 256) as u8).collect();
    for t in [Transform::None, Transform::SignRotate] {
        let mut grouped = vec![0u8; data.len()];
        bitlens_codecs::byte_group::split(&data, 4, t, &mut grouped);
        for g in 0..4 {
            assert_eq!(
                group_bytes(&data, Width::W4, t, g).unwrap(),
                grouped[g * 250..(g + 1) * 250]
            );
        }
    }
}

/// The LMC stream of `data` rebuilt from the blocks coded alone (row by row, group by group,
/// as the format lays them out), with the explained size of every block checked on the way.
fn stream_from_blocks(data: &[u8], params: &Params) -> (Vec<u8>, usize) {
    let w = params.width.bytes();
    let e = data.len() / w;
    let groups: Vec<Vec<u8>> = (0..w)
        .map(|g| group_bytes(data, params.width, params.transform, g).unwrap())
        .collect();
    let mut out = vec![LAYOUT_GROUPED];
    let mut blocks = 0;
    let alone = Params {
        width: Width::W1,
        transform: Transform::None,
        block_log2: MAX_BLOCK_LOG2,
        code_limit: params.code_limit,
    };
    for r in (0..e).step_by(params.block_bytes()) {
        for g in &groups {
            let block = &g[r..(r + params.block_bytes()).min(e)];
            let coded = lmc::encode(block, &alone);
            let explained = explain_block(block, u32::from(params.code_limit), 8).unwrap();
            assert_eq!(explained.encoder.explained_bytes, coded.len() - 1);
            out.extend_from_slice(&coded[1..]);
            blocks += 1;
        }
    }
    out.extend_from_slice(&data[e * w..]);
    (out, blocks)
}

#[test]
fn explained_blocks_make_up_a_tensors_lmc_and_plmc_streams() {
    // bf16-like data: a smooth exponent byte and a noisy low byte, 300k elements + a tail byte.
    let mut r = xorshift(0xabad_cafe_f00d_0001);
    let mut data = Vec::new();
    for _ in 0..300_000 {
        let v = f32::from_bits(0x3C00_0000 + ((r() >> 40) as u32 & 0x00FF_FFFF));
        let v = if r() & 1 == 0 { -v } else { v };
        data.extend_from_slice(&half::bf16::from_f32(v).to_le_bytes());
    }
    data.push(0x55);
    for (width, d) in [(Width::W2, &data[..]), (Width::W4, &data[..])] {
        let params = Params::new(width);
        let (rebuilt, blocks) = stream_from_blocks(d, &params);
        assert!(blocks >= 4);
        assert_eq!(lmc::encode(d, &params), rebuilt, "{width:?}");
        // PLMC: one segment (≤ 1 MiB) is this LMC stream, after the header and segment table.
        let plmc =
            bitlens_codecs::plmc::encode(d, width, &bitlens_codecs::plmc::Options::default());
        assert!(plmc.ends_with(&rebuilt), "{width:?}");
    }
}

#[test]
fn blocks_of_a_whole_tensors_groups_add_up_to_its_multi_segment_plmc_stream() {
    // 2.5 MiB of bf16: three PLMC segments (1 MiB, 1 MiB, 0.5 MiB). With the default sizes a
    // segment's groups are whole blocks, so the blocks of the whole tensor's groups at multiples
    // of the block size are exactly PLMC's blocks.
    let mut r = xorshift(0x7e57_0000_0000_0001);
    let data: Vec<u8> = (0..(5 << 19) / 2)
        .flat_map(|_| {
            let x = r();
            ((0x3C00 + (x >> 40) as u16 % 0x300) | ((x & 1) as u16) << 15).to_le_bytes()
        })
        .collect();
    let params = Params::new(Width::W2);
    let b = params.block_bytes();
    let mut coded = 0;
    for g in 0..2 {
        let group = group_bytes(&data, Width::W2, params.transform, g).unwrap();
        for block in group.chunks(b) {
            coded += explain_block(block, LIMIT, 4).unwrap().encoder.coded_bytes;
        }
    }
    let plmc =
        bitlens_codecs::plmc::encode(&data, Width::W2, &bitlens_codecs::plmc::Options::default());
    let segments = 3;
    // Header, segment table, and one layout byte per segment (no tails: whole elements).
    assert_eq!(plmc.len(), 24 + 8 * segments + segments + coded);
}

#[test]
fn real_bf16_blocks_are_explained_to_the_byte() {
    let Some(data) = crate::real_bf16_megabyte() else {
        return;
    };
    let data = &data[..];
    let params = Params::new(Width::W2);
    let (rebuilt, blocks) = stream_from_blocks(data, &params);
    assert_eq!(blocks, 8);
    assert_eq!(lmc::encode(data, &params), rebuilt);
    // 64 KiB blocks of the exponent group, as the lesson shows them.
    let exps = group_bytes(data, Width::W2, Transform::SignRotate, 1).unwrap();
    for block in exps.chunks(1 << 16) {
        let e = check_block(block, LIMIT);
        assert!(e.code.code_bits as f64 >= e.entropy_bits);
        assert!(
            (e.code.code_bits as f64) < e.entropy_bits * 1.05,
            "near the bound"
        );
    }
    let c = compare_tables(&exps, 16, LIMIT).unwrap();
    assert!(c.encoder_bytes as u64 <= c.adaptive.bytes + 64 * c.blocks as u64);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn any_block_is_explained_to_the_byte(
        len in 1usize..80_000,
        seed in 1u64..u64::MAX,
        shift in 0u32..8,
        zero_share in 0u32..100,
        limit in 9u32..=12,
    ) {
        let mut r = xorshift(seed);
        let block: Vec<u8> = (0..len)
            .map(|_| {
                let x = r();
                if (x % 100) < u64::from(zero_share) { 0 } else { (x >> 32) as u8 >> shift }
            })
            .collect();
        let e = explain_block(&block, limit, 8).unwrap();
        prop_assert_eq!(e.encoder.explained_bytes, coded_len(&block, limit));
        prop_assert_eq!(e.encoder.explained_bytes, e.encoder.coded_bytes);
    }
}
