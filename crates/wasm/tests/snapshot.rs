//! The snapshot API run as WebAssembly (in node): compressing through JavaScript read / chunk
//! callbacks gives the same bytes as the core's `compress` called directly, decompressing restores
//! the original, and a corrupt snapshot fails with the core's typed message.
#![cfg(target_arch = "wasm32")]
// clippy does not see #[wasm_bindgen_test] functions as tests: let them unwrap as tests do.
#![allow(clippy::unwrap_used)]

use bitlens_snapshot::{CodecChoice, CodecKind, SnapshotReader};
use bitlens_tensors::Header;
use bitlens_test_support::floats::bf16_bits;
use bitlens_test_support::safetensors::{self, Builder};
use bitlens_wasm::{codec_roundtrip, compress_snapshot, decompress_snapshot, open_snapshot};
use js_sys::{Function, Uint8Array};
use std::cell::RefCell;
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

/// `on_chunk`, the closure keeping it alive, and the bytes it collected.
type Collector = (
    Function,
    Closure<dyn FnMut(Uint8Array)>,
    Rc<RefCell<Vec<u8>>>,
);

/// A JavaScript `on_chunk(bytes)` collecting into a vector.
fn collector() -> Collector {
    let out = Rc::new(RefCell::new(Vec::new()));
    let o = out.clone();
    let c = Closure::<dyn FnMut(Uint8Array)>::new(move |a: Uint8Array| {
        o.borrow_mut().extend_from_slice(&a.to_vec())
    });
    (c.as_ref().unchecked_ref::<Function>().clone(), c, out)
}

fn ignore() -> Function {
    Function::new_no_args("")
}

fn compress_js(src: &Rc<Vec<u8>>, options: &str) -> (String, Vec<u8>) {
    let (read, _keep) = reader(src.clone());
    let (chunk, _keep2, out) = collector();
    let json = compress_snapshot(read, src.len() as f64, options, None, 0.0, chunk, ignore())
        .unwrap_or_else(|_| panic!("compress"));
    let bytes = out.borrow().clone();
    (json, bytes)
}

#[wasm_bindgen_test]
fn compress_matches_the_core_and_round_trips() {
    let src = Rc::new(file());
    let (json, snap) = compress_js(&src, r#"{"codec":"lmc"}"#);
    // The core called directly writes the same bytes.
    let header = Header::parse(&src[..safetensors::data_start(&src)], src.len() as u64).unwrap();
    let choice = CodecChoice::new(CodecKind::Lmc);
    let (direct, entries) = bitlens_snapshot::compress(
        &src.as_slice(),
        &header,
        None,
        &|t| choice.codec_for(t.dtype),
        Vec::new(),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(snap, direct);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["out_bytes"].as_u64().unwrap(), snap.len() as u64);
    assert_eq!(
        v["entries"][0]["stored_bytes"].as_u64().unwrap(),
        entries[0].stored_len()
    );
    // Index and decompression through the API.
    let snap = Rc::new(snap);
    let (read, _keep) = reader(snap.clone());
    let info: serde_json::Value = serde_json::from_str(
        &open_snapshot(read.clone(), snap.len() as f64).unwrap_or_else(|_| panic!("open")),
    )
    .unwrap();
    assert_eq!(info["original_size"].as_u64().unwrap(), src.len() as u64);
    let (chunk, _keep2, out) = collector();
    decompress_snapshot(read, snap.len() as f64, None, 0.0, chunk, ignore())
        .unwrap_or_else(|_| panic!("decompress"));
    assert_eq!(*out.borrow(), *src);
    assert!(SnapshotReader::open(snap.as_slice()).is_ok());
}

#[wasm_bindgen_test]
fn overrides_and_lossy_errors() {
    let src = Rc::new(file());
    let (json, _) = compress_js(
        &src,
        r#"{"codec":"lmc","overrides":{"a":{"codec":"neuzip","mantissa_bits":1}}}"#,
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["lossy"], true);
    assert!(v["entries"][0]["error"]["max_rel"].as_f64().unwrap() > 0.0);
    assert!(v["entries"][1]["error"].is_null());
    assert_eq!(v["entries"][1]["codec"], "lmc");
    let now = Function::new_no_args("return 0");
    let rt: serde_json::Value = serde_json::from_str(
        &codec_roundtrip(
            r#"{"codec":"neuzip","mantissa_bits":3}"#,
            "BF16",
            &src[src.len() - 18000..src.len() - 12000],
            now,
        )
        .unwrap_or_else(|_| panic!("roundtrip")),
    )
    .unwrap();
    assert_eq!(rt["lossy"], true);
}

#[wasm_bindgen_test]
fn corrupt_snapshots_fail_with_the_core_message() {
    let src = Rc::new(file());
    let (_, mut snap) = compress_js(&src, r#"{"codec":"stored"}"#);
    // Flip a data byte (inside tensor `b`'s frame, stored as is).
    let mid = snap.len() / 2;
    snap[mid] ^= 0x55;
    let expected = {
        let r = SnapshotReader::open(snap.as_slice()).unwrap();
        r.decode_all(None, &mut |_| Ok(())).unwrap_err().to_string()
    };
    let snap = Rc::new(snap);
    let (read, _keep) = reader(snap.clone());
    let (chunk, _keep2, _) = collector();
    let err = decompress_snapshot(read, snap.len() as f64, None, 0.0, chunk, ignore()).unwrap_err();
    let msg = js_sys::Error::from(wasm_bindgen::JsValue::from(err)).message();
    assert_eq!(String::from(msg), expected);
    // Bad options are errors too.
    let (read, _keep) = reader(src.clone());
    let (chunk, _keep2, _) = collector();
    assert!(compress_snapshot(
        read,
        src.len() as f64,
        r#"{"codec":"bitsnap"}"#,
        None,
        0.0,
        chunk,
        ignore()
    )
    .is_err());
}

#[wasm_bindgen_test]
fn js_source_reads_through_its_windows() {
    use bitlens_wasm::snapshot::{JsSource, READ_AHEAD};
    // Two and a half windows of bytes that differ from position to position.
    let size = 2 * READ_AHEAD + READ_AHEAD / 2;
    let bytes: Rc<Vec<u8>> = Rc::new((0..size).map(|i| (i * 7 + (i >> 13)) as u8).collect());
    let (read, _keep) = reader(bytes.clone());
    let src = JsSource::new(read, size as f64).unwrap_or_else(|_| panic!("source"));
    read_cases(&src, &bytes);
}

/// Reads through `src` that start and end inside, across and outside its windows.
fn read_cases(src: &bitlens_wasm::snapshot::JsSource, bytes: &[u8]) {
    use bitlens_tensors::ReadAt;
    use bitlens_wasm::snapshot::READ_AHEAD;
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
