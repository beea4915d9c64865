//! The snapshot API run as WebAssembly (in node): compressing through JavaScript read / chunk
//! callbacks gives the same bytes as the core's `compress` called directly, decompressing restores
//! the original, and a corrupt snapshot fails with the core's typed message.
#![cfg(target_arch = "wasm32")]
// clippy does not see #[wasm_bindgen_test] functions as tests: let them unwrap as tests do.
#![allow(clippy::unwrap_used)]

use bitlens_protocol::js::{from_js, to_js};
use bitlens_protocol::{CompressOptions, Compressed, Roundtrip};
use bitlens_snapshot::{CodecChoice, CodecKind, SnapshotReader};
use bitlens_tensors::Header;
use bitlens_test_support::floats::{bf16_bits, second_moment_bf16, SECOND_MOMENT};
use bitlens_test_support::safetensors::{self, Builder};
use bitlens_wasm::snapshot::codec_roundtrip_js;
use bitlens_wasm::{compress_snapshot, decompress_snapshot, open_snapshot, Failure, JsSource};
use js_sys::{Function, Uint8Array, JSON};
use std::rc::Rc;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;

/// A safetensors file with a BF16 tensor `a` and an F32 tensor `b`, smooth-ish values.
fn file() -> Vec<u8> {
    let n = 3000u16;
    let a: Vec<u8> = (0..n)
        .flat_map(|i| bf16_bits((f32::from(i) * 0.37).sin() * 0.05).to_le_bytes())
        .collect();
    let b: Vec<u8> = (0..n)
        .flat_map(|i| ((f32::from(i) * 0.11).cos() * 0.02).to_le_bytes())
        .collect();
    Builder::new()
        .unaligned()
        .tensor("a", "BF16", &[n.into()], &a)
        .tensor("b", "F32", &[n.into()], &b)
        .build()
}

/// A JavaScript `read(offset, length)` over `bytes`, and the closure keeping it alive.
fn reader(bytes: Rc<Vec<u8>>) -> (Function, Closure<dyn FnMut(f64, f64) -> Uint8Array>) {
    let c = Closure::<dyn FnMut(f64, f64) -> Uint8Array>::new(move |off: f64, len: f64| {
        let (a, b) = (off as usize, off as usize + len as usize);
        Uint8Array::from(&bytes[a..b])
    });
    (c.as_ref().unchecked_ref::<Function>().clone(), c)
}

/// Compression options as the page sends them: a JavaScript object, read with serde-wasm-bindgen.
fn options(json: &str) -> CompressOptions {
    from_js(JSON::parse(json).unwrap()).unwrap()
}

/// A source over `bytes` through a JavaScript `read` function, and the closure keeping it alive.
fn source(bytes: &Rc<Vec<u8>>) -> (JsSource, Closure<dyn FnMut(f64, f64) -> Uint8Array>) {
    let (read, keep) = reader(bytes.clone());
    (JsSource::new(read, bytes.len() as f64).unwrap(), keep)
}

fn compress_js(src: &Rc<Vec<u8>>, json: &str) -> Result<(Compressed, Vec<u8>), Failure> {
    let (source, _keep) = source(src);
    let mut out = Vec::new();
    let result = compress_snapshot(
        &source,
        None,
        &options(json),
        &mut |chunk: &[u8]| {
            out.extend_from_slice(chunk);
            Ok(())
        },
        &mut |_| {},
    )?;
    Ok((result, out))
}

/// Decompresses `snap` through a JavaScript `read` function; the restored bytes.
fn decompress_js(snap: &Rc<Vec<u8>>) -> Result<Vec<u8>, Failure> {
    let (source, _keep) = source(snap);
    decompress_js_from(source)
}

/// Decompresses the snapshot behind `source`; the restored bytes.
fn decompress_js_from<R: bitlens_snapshot::Source>(source: R) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let written = decompress_snapshot(
        source,
        None,
        &mut |chunk: &[u8]| {
            out.extend_from_slice(chunk);
            Ok(())
        },
        &mut |_| {},
    )?;
    assert_eq!(written, out.len() as u64);
    Ok(out)
}

/// The LMC snapshot of safetensors file `src` and its index entries, from the core called directly.
fn core_lmc(src: &[u8]) -> (Vec<u8>, Vec<bitlens_snapshot::Entry>) {
    let header = Header::parse(&src[..safetensors::data_start(src)], src.len() as u64).unwrap();
    let choice = CodecChoice::new(CodecKind::Lmc);
    bitlens_snapshot::compress(
        &src,
        &header,
        None,
        &|t| choice.codec_for(t.dtype),
        Vec::new(),
        &mut |_| {},
    )
    .unwrap()
}

#[wasm_bindgen_test]
fn compress_matches_the_core_and_round_trips() {
    let src = Rc::new(file());
    let (result, snap) = compress_js(&src, r#"{"codec":"lmc"}"#).unwrap();
    // The core called directly writes the same bytes.
    let (direct, entries) = core_lmc(&src);
    assert_eq!(snap, direct);
    assert_eq!(result.out_bytes, snap.len() as u64);
    assert_eq!(result.entries[0].stored_bytes, entries[0].stored_len());
    // Index and decompression through the API.
    let snap = Rc::new(snap);
    let (read, _keep) = source(&snap);
    let info = open_snapshot(read).unwrap();
    assert_eq!(info.original_size, src.len() as u64);
    assert_eq!(decompress_js(&snap).unwrap(), *src);
    assert!(SnapshotReader::open(snap.as_slice()).is_ok());
}

/// Adam's second moment in bf16 as the codec meets it (`second_moment_bf16`): a flat code the
/// workers encode and decode with 128-bit SIMD (`huffman::encode_stride` / `decode_stride`). The
/// snapshot is byte for byte the native one (`SECOND_MOMENT`, asserted natively by the snapshot
/// crate's `a_second_moment_snapshot_is_the_same_on_every_build`), and it round-trips.
#[wasm_bindgen_test]
fn a_second_moment_round_trips_through_the_computed_flat_code() {
    let (n, seed, expected) = SECOND_MOMENT;
    let src = Rc::new(
        Builder::new()
            .tensor(
                "exp_avg_sq",
                "BF16",
                &[n as u64],
                &second_moment_bf16(n, seed),
            )
            .build(),
    );
    let (_, snap) = compress_js(&src, r#"{"codec":"lmc"}"#).unwrap();
    assert_eq!((snap.len(), bitlens_snapshot::checksum(&snap)), expected);
    assert_eq!(decompress_js(&Rc::new(snap)).unwrap(), *src);
}

/// Four-byte elements as the workers split them into byte groups and merge them back with
/// 128-bit SIMD shuffles (`byte_group`'s width-4 kernels): F32 with the sign rotated, I32
/// without, both with a tail of elements past the last 16, compress to the core's bytes and
/// round-trip byte for byte.
#[wasm_bindgen_test]
fn four_byte_elements_split_and_merge_with_and_without_the_rotation() {
    let n = 5003u32;
    let f32s: Vec<u8> = (0..n)
        .flat_map(|i| ((i as f32 * 0.013).sin() * 0.1 - 0.003).to_le_bytes())
        .collect();
    let i32s: Vec<u8> = (0..n)
        .flat_map(|i| ((i as i32 * 7919) % 2001 - 1000).to_le_bytes())
        .collect();
    let src = Rc::new(
        Builder::new()
            .tensor("f", "F32", &[n.into()], &f32s)
            .tensor("i", "I32", &[n.into()], &i32s)
            .build(),
    );
    let (_, snap) = compress_js(&src, r#"{"codec":"lmc"}"#).unwrap();
    assert_eq!(snap, core_lmc(&src).0);
    assert_eq!(decompress_js(&Rc::new(snap)).unwrap(), *src);
}

#[wasm_bindgen_test]
fn overrides_and_lossy_errors() {
    let src = Rc::new(file());
    let (v, _) = compress_js(
        &src,
        r#"{"codec":"lmc","overrides":{"a":{"codec":"neuzip","mantissa_bits":1}}}"#,
    )
    .unwrap();
    assert!(v.lossy);
    assert!(v.entries[0].error.unwrap().max_rel > 0.0);
    assert!(v.entries[1].error.is_none());
    assert_eq!(v.entries[1].codec, "lmc");
    let rt: Roundtrip = from_js(
        codec_roundtrip_js(
            JSON::parse(r#"{"codec":"neuzip","mantissa_bits":3}"#).unwrap(),
            "BF16",
            &src[src.len() - 18000..src.len() - 12000],
        )
        .unwrap_or_else(|_| panic!("roundtrip")),
    )
    .unwrap();
    assert!(rt.lossy);
    // The result goes back to JavaScript as the same object.
    assert_eq!(from_js::<Roundtrip>(to_js(&rt).unwrap()).unwrap(), rt);
}

#[wasm_bindgen_test]
fn corrupt_snapshots_fail_with_the_core_message() {
    let src = Rc::new(file());
    let (_, mut snap) = compress_js(&src, r#"{"codec":"stored"}"#).unwrap();
    // Flip a data byte (inside tensor `b`'s frame, stored as is).
    let mid = snap.len() / 2;
    snap[mid] ^= 0x55;
    let expected = {
        let r = SnapshotReader::open(snap.as_slice()).unwrap();
        r.decode_all(None, &mut |_| Ok(())).unwrap_err().to_string()
    };
    let snap = Rc::new(snap);
    let err = decompress_js(&snap).unwrap_err();
    assert_eq!(err.0, expected);
    // Bad options are errors too.
    assert!(compress_js(&src, r#"{"codec":"bitsnap"}"#).is_err());
}

#[wasm_bindgen_test]
fn js_source_reads_through_its_windows() {
    use bitlens_wasm::source::READ_AHEAD;
    // Two and a half windows of bytes that differ from position to position.
    let size = 2 * READ_AHEAD + READ_AHEAD / 2;
    let bytes: Rc<Vec<u8>> = Rc::new((0..size).map(|i| (i * 7 + (i >> 13)) as u8).collect());
    let (read, _keep) = reader(bytes.clone());
    let src = JsSource::new(read, size as f64).unwrap_or_else(|_| panic!("source"));
    read_cases(&src, &bytes);
}

/// Reads through `src` that start and end inside, across and outside its windows.
fn read_cases(src: &JsSource, bytes: &[u8]) {
    use bitlens_tensors::ReadAt;
    use bitlens_wasm::source::READ_AHEAD;
    let size = bytes.len();
    let cases = [
        (0, 8),                                   // small, fills the first window
        (100, 4096),                              // inside it
        (READ_AHEAD - 10, 100),                   // across its end
        (READ_AHEAD / 2, READ_AHEAD + 5),         // longer than a window, starting in one
        (2 * READ_AHEAD + 3, READ_AHEAD / 2 - 3), // the tail, up to the end of the file
        (5, 1),                                   // back to the start
        (size - 1, 1),                            // the last byte
        (READ_AHEAD + 7, READ_AHEAD + 1),         // a window or more, outside one: direct
        (READ_AHEAD + 9, 10),                     // the window was dropped: read again
        (7, 0),                                   // nothing
    ];
    for (offset, len) in cases {
        let mut buf = vec![0u8; len];
        src.read_exact_at(offset as u64, &mut buf)
            .unwrap_or_else(|e| panic!("read {offset}+{len}: {e}"));
        assert!(buf == bytes[offset..offset + len], "bytes {offset}+{len}");
    }
    let mut past = vec![0u8; 2];
    assert!(src.read_exact_at(size as u64 - 1, &mut past).is_err());
}

/// A JavaScript `read(offset, length)` over `bytes` that adds up the bytes it gives in `count`.
fn counting_source(
    bytes: &Rc<Vec<u8>>,
    count: &Rc<std::cell::Cell<u64>>,
) -> (JsSource, Closure<dyn FnMut(f64, f64) -> Uint8Array>) {
    let size = bytes.len() as f64;
    let (bytes, count) = (bytes.clone(), count.clone());
    let c = Closure::<dyn FnMut(f64, f64) -> Uint8Array>::new(move |off: f64, len: f64| {
        count.set(count.get() + len as u64);
        Uint8Array::from(&bytes[off as usize..off as usize + len as usize])
    });
    let read = c.as_ref().unchecked_ref::<Function>().clone();
    (JsSource::new(read, size).unwrap(), c)
}

#[wasm_bindgen_test]
fn the_decompress_job_reads_every_frame_once() {
    use bitlens_wasm::worker::frames_source::{decompress_ahead, FramesAhead};
    use std::cell::Cell;
    let src = Rc::new(file());
    let (_, snap) = compress_js(&src, r#"{"codec":"lmc"}"#).unwrap();
    let snap = Rc::new(snap);
    let reader = SnapshotReader::open(snap.as_slice()).unwrap();
    let frames = reader.entries.iter().flat_map(|e| &e.frames);
    let first = frames.clone().map(|f| f.offset).min().unwrap();
    let end = frames.map(|f| f.offset + f.stored_len).max().unwrap();
    // Windows of 4 KiB, smaller than the snapshot, as 32 MiB windows are for large files.
    let window = 4096;
    assert!(snap.len() > 3 * window);
    let (exact_count, ahead_count) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    let (exact, _keep_exact) = counting_source(&snap, &exact_count);
    let (ahead, _keep_ahead) = counting_source(&snap, &ahead_count);
    let framed = FramesAhead::new(exact.read_ahead(0), ahead.read_ahead(window));
    let mut out = Vec::new();
    let (info, written) = decompress_ahead(
        &framed,
        None,
        &mut |chunk: &[u8]| {
            out.extend_from_slice(chunk);
            Ok(())
        },
        &mut |_| {},
    )
    .unwrap();
    assert!(out == *src, "restored bytes");
    assert_eq!(written, src.len() as u64);
    // The index it reports is the one every other opening reads.
    assert_eq!(info, open_snapshot(snap.as_slice()).unwrap());
    // The frames come through the read-ahead source once (its last window may run past them);
    // the rest, exactly as asked, once (one opening).
    let (ahead_bytes, exact_bytes) = (ahead_count.get(), exact_count.get());
    assert!(
        (end - first..=snap.len() as u64 - first).contains(&ahead_bytes),
        "{ahead_bytes} read ahead"
    );
    let rest = snap.len() as u64 - (end - first);
    assert!(exact_bytes <= rest, "{exact_bytes} exact bytes of {rest}");
    // A read-ahead source alone fetches windows of frames at each jump of the opening, and
    // fetches them again to decode.
    let plain_count = Rc::new(Cell::new(0));
    let (plain, _keep_plain) = counting_source(&snap, &plain_count);
    let restored = decompress_js_from(plain.read_ahead(window)).unwrap();
    assert!(restored == *src, "restored bytes (plain source)");
    assert!(
        plain_count.get() >= snap.len() as u64 + window as u64,
        "{} bytes read by the plain source, {} in the snapshot",
        plain_count.get(),
        snap.len()
    );
    assert!(ahead_bytes + exact_bytes < plain_count.get());
}

/// The job's output sink: small writes gathered, large ones (frames) handed on as they are; the
/// chunks are the bytes in order, none longer than a chunk.
#[wasm_bindgen_test]
fn output_chunks_are_the_bytes_in_order_and_never_longer_than_a_chunk() {
    use bitlens_wasm::sink::{ChunkSink, CHUNK_BYTES};
    use std::io::Write;
    let sizes = [
        3,
        10,
        CHUNK_BYTES / 2,
        7,
        CHUNK_BYTES,
        1,
        CHUNK_BYTES * 2 + 5,
        0,
        9,
    ];
    let mut want = Vec::new();
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut sink = ChunkSink::new(|c: &[u8]| {
        chunks.push(c.to_vec());
        Ok(())
    });
    for (i, &n) in sizes.iter().enumerate() {
        let data: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
        sink.write_all(&data).unwrap();
        want.extend_from_slice(&data);
    }
    sink.flush().unwrap();
    assert_eq!(sink.written(), want.len() as u64);
    drop(sink);
    assert!(chunks
        .iter()
        .all(|c| !c.is_empty() && c.len() <= CHUNK_BYTES));
    assert_eq!(chunks.concat(), want);
}
