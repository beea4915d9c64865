//! The trace against the coder: its bytes are [`encode_block`]'s, its decode steps give the
//! input back and [`decode_block`] agrees, and the steps chain (each lane's state after one
//! step is its state before the next; decoding symbol `i` starts from the state encoding it
//! ended in).

use super::*;
use crate::xorshift;
use bitlens_codecs::rans::{decode_block, encode_block};
use proptest::prelude::*;

/// Checks everything a trace promises about `symbols`.
fn check(symbols: &[u8]) -> Trace {
    let t = trace(symbols).unwrap();
    let mut block = Vec::new();
    encode_block(symbols, &mut block);
    assert_eq!(t.bytes, block, "the encoder's bytes");
    assert_eq!(t.decoded, symbols, "decodes back");
    let mut back = vec![0u8; symbols.len()];
    assert_eq!(decode_block(&t.bytes, &mut back, 0).unwrap(), t.bytes.len());
    assert_eq!(back, symbols);
    let n = symbols.len();
    assert_eq!((t.encode.len(), t.decode.len()), (n, n));
    // Encoding: last symbol first, each lane's states chained from 2^16 to its final state.
    let mut states = [RANS_L; LANES];
    let mut emitted = [0usize; LANES];
    for (k, s) in t.encode.iter().enumerate() {
        assert_eq!(s.index, n - 1 - k);
        assert_eq!(s.lane, s.index % LANES);
        assert_eq!(s.symbol, symbols[s.index]);
        assert_eq!(s.state_before, states[s.lane]);
        assert!(s.state_after >= RANS_L, "{s:?}");
        if let Some(w) = s.emitted {
            // The word is the low half of the state before; the high half carries on.
            assert_eq!(w, s.state_before as u16);
            emitted[s.lane] += 1;
        }
        states[s.lane] = s.state_after;
    }
    assert_eq!(states, t.final_states);
    assert_eq!(emitted.map(|e| e), t.words.each_ref().map(Vec::len));
    // Decoding: first symbol first, from the final states back to 2^16, each step undoing the
    // encoder's step for the same symbol.
    let by_index: Vec<&EncodeStep> = t.encode.iter().rev().collect();
    let mut states = t.final_states;
    let mut read = [0usize; LANES];
    for (i, s) in t.decode.iter().enumerate() {
        assert_eq!((s.index, s.lane, s.symbol), (i, i % LANES, symbols[i]));
        assert_eq!(s.state_before, states[s.lane]);
        assert_eq!(s.state_before, by_index[i].state_after);
        assert_eq!(s.state_after, by_index[i].state_before);
        assert_eq!(s.slot, s.state_before % (1 << PROB_BITS));
        if let Some(w) = s.read {
            assert_eq!(w, t.words[s.lane][read[s.lane]]);
            read[s.lane] += 1;
        }
        let e = t.table.iter().find(|e| e.symbol == s.symbol).unwrap();
        if e.freq < 1 << PROB_BITS {
            assert!((e.cum..e.cum + e.freq).contains(&s.slot), "{s:?} {e:?}");
        }
        states[s.lane] = s.state_after;
    }
    assert_eq!(states, [RANS_L; LANES]);
    // Sizes add up.
    let z = &t.sizes;
    assert_eq!(
        z.rans_bytes,
        z.rans_table_bytes + z.rans_state_bytes + z.rans_word_bytes
    );
    assert!(z.quantized_bits + 1e-9 >= z.entropy_bits);
    assert!(z.huffman_code_bits as f64 + 1e-9 >= z.entropy_bits);
    assert_eq!(t.table.iter().map(|e| e.freq).sum::<u32>(), 1 << PROB_BITS);
    t
}

#[test]
fn short_and_special_sequences() {
    check(&[5]);
    check(&[1, 2, 3]);
    check(&[7; 4]);
    check(&[7; 1000]);
    check(&[0, 255, 0, 255, 0]);
    let t = check(&(0..=255).collect::<Vec<u8>>());
    assert_eq!(t.table.len(), 256);
    assert_eq!(trace(&[]), Err(TraceError::Empty));
    assert_eq!(
        trace(&vec![0; MAX_TRACE_SYMBOLS + 1]),
        Err(TraceError::TooLong(MAX_TRACE_SYMBOLS + 1))
    );
}

#[test]
fn renormalization_writes_words_on_long_skewed_sequences() {
    let mut r = xorshift(0x0123_4567_89ab_cdef);
    // 90 % one symbol: ~0.67 bits of entropy per symbol.
    let symbols: Vec<u8> = (0..20_000)
        .map(|_| match r() % 40 {
            0..36 => 120,
            k => 121 + (k % 4) as u8,
        })
        .collect();
    let t = check(&symbols);
    assert!(t.encode.iter().filter(|s| s.emitted.is_some()).count() > 500);
    // rANS gets within 1 % of the quantized cost (plus table and states), and beats Huffman,
    // which spends at least one bit per symbol.
    let z = t.sizes;
    let payload = (z.rans_word_bytes + z.rans_state_bytes) as f64 * 8.0;
    let states = (8 * z.rans_state_bytes) as f64;
    assert!(
        payload < z.quantized_bits * 1.01 + states,
        "{payload} vs {}",
        z.quantized_bits
    );
    assert!(payload < z.huffman_code_bits as f64);
}

#[test]
fn exponents_are_the_biased_exponent_fields() {
    let data: Vec<u8> = [1.0f32, -2.0, 0.5, 3.0e-39]
        .iter()
        .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
        .collect();
    assert_eq!(exponents(&data, FloatFormat::Bf16, 10), [127, 128, 126, 0]);
    assert_eq!(exponents(&data, FloatFormat::Bf16, 2), [127, 128]);
    let data: Vec<u8> = [1.0f32, 65536.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(exponents(&data, FloatFormat::F32, 2), [127, 143]);
}

#[test]
fn real_bf16_exponents_are_traced() {
    let Some(data) = crate::real_bf16_megabyte() else {
        return;
    };
    let exps = exponents(&data, FloatFormat::Bf16, 4096);
    let t = check(&exps);
    // Weight exponents hold ~2.5–3 bits: rANS lands near the bound.
    let z = t.sizes;
    assert!(z.entropy_bits / 4096.0 < 4.0, "{}", z.entropy_bits / 4096.0);
    assert!((z.rans_word_bytes * 8) as f64 <= z.quantized_bits * 1.02 + 64.0);
}

proptest! {
    #[test]
    fn any_sequence_is_traced(symbols in prop::collection::vec(any::<u8>(), 1..2000), shift in 0u8..8) {
        let symbols: Vec<u8> = symbols.iter().map(|&s| s >> shift).collect();
        check(&symbols);
    }
}
