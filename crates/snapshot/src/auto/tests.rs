use super::*;

#[test]
fn samples_are_inside_the_tensor_aligned_and_about_a_64th() {
    assert!(sample_ranges(0, 2).is_empty());
    assert_eq!(sample_ranges(1000, 4), vec![(0, 1000)]);
    assert_eq!(sample_ranges(WHOLE_SAMPLE, 2), vec![(0, WHOLE_SAMPLE)]);
    for (len, lane) in [
        (WHOLE_SAMPLE + 2, 2),
        (300_000, 2),
        (1 << 20, 4),
        (23_440_896, 2),
        (1 << 30, 8),
    ] {
        let r = sample_ranges(len, lane);
        let total: u64 = r.iter().map(|x| x.1).sum();
        assert!(!r.is_empty() && r.len() as u64 <= MAX_CHUNKS, "{len}");
        assert!(
            total >= (len / SAMPLE_SHARE).min(MAX_CHUNKS * SAMPLE_CHUNK),
            "{len}"
        );
        assert!(
            total <= (len / SAMPLE_SHARE + SAMPLE_CHUNK).max(SAMPLE_CHUNK),
            "{len}"
        );
        for &(at, n) in &r {
            assert!(at + n <= len && at % lane == 0, "{len}: {at}+{n}");
        }
        assert!(
            r.windows(2).all(|w| w[0].0 + w[0].1 <= w[1].0),
            "{len}: {r:?}"
        );
    }
    // Several chunks span the tensor: the first at its start, the last at its end.
    let r = sample_ranges(64 << 20, 2);
    assert_eq!(r.len() as u64, MAX_CHUNKS);
    assert_eq!(r[0].0, 0);
    assert_eq!(r[r.len() - 1].0 + SAMPLE_CHUNK, 64 << 20);
}

#[test]
fn the_lmc_model_of_a_sparse_xor_counts_runs() {
    // 1 byte in 200 nonzero: without runs Huffman pays ≥ 1 bit per byte (12.5 %).
    let mut xor = vec![0u8; 1 << 16];
    for i in (0..xor.len()).step_by(200) {
        xor[i] = (i % 251) as u8 | 1;
    }
    let plain = GroupCosts::of(&xor, Width::W1, Transform::None);
    let predicted = plain.lmc_bytes(xor.len() as u64);
    assert!(predicted < xor.len() as f64 / 16.0, "{predicted}");
    let actual = bitlens_codecs::encode(&xor, Width::W1, &Default::default()).len() as f64;
    assert!(
        (predicted / actual - 1.0).abs() < 0.2,
        "{predicted} vs {actual}"
    );
}
