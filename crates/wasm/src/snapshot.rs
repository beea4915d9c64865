//! Compressed snapshots in the page: [`compress_snapshot`] turns a safetensors file into a `.bls`
//! snapshot, [`open_snapshot`] reads a snapshot's index, [`decompress_snapshot`] writes the original
//! file back (every checksum verified), and [`codec_roundtrip`] / [`peer_codec_roundtrip`] time one
//! codec on one tensor.
//!
//! Files are never held whole in wasm memory: the caller passes a synchronous read function
//! `read(offset, length) -> Uint8Array` (in a worker, `FileReaderSync` over `Blob.slice`), and the
//! output goes to `on_chunk(Uint8Array)` in chunks of at most [`CHUNK_BYTES`], which the worker
//! folds into a `Blob`. Errors are the core crate's typed messages.

use crate::convert::{to_json, to_u64};
use bitlens_snapshot::{
    BaseSource, ChoiceError, Codec, CodecChoice, CodecKind, Entry, ErrorReport, SnapshotError,
    SnapshotReader,
};
use bitlens_tensors::{Dtype, Header, ReadAt, SourceError, TensorInfo};
use js_sys::{Function, Uint8Array};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;
use wasm_bindgen::prelude::*;

/// Output bytes gathered before they are handed to JavaScript.
pub const CHUNK_BYTES: usize = 8 << 20;

/// Bytes the source reads from the browser at a time. Every read is a round trip to the browser's
/// file backend with a fixed cost: measured with `FileReaderSync` in headless Chromium on a 45 MB
/// file, 4 MiB reads ran at ≈0.5 GB/s, 16 MiB at ≈0.7 GB/s and 64 MiB at ≈0.9–1.0 GB/s. The core
/// reads a checkpoint front to back in pieces of a few KiB (small tensors) to 16 MiB (its LMC
/// window), so the source reads ahead in pieces of this size and serves those reads from them.
pub const READ_AHEAD: usize = 32 << 20;

/// [`READ_AHEAD`], for JavaScript: the size of the windows [`JsSource`] asks for (the worker's
/// read-ahead thread fills slots of this size).
#[wasm_bindgen(js_name = readAheadBytes)]
pub fn read_ahead_bytes() -> usize {
    READ_AHEAD
}

/// A [`ReadAt`] over a JavaScript function `read(offset, length) -> Uint8Array`, reading ahead
/// [`READ_AHEAD`] bytes at a time. The read-ahead window stays a JavaScript array (the browser's
/// own buffer): bytes are copied once, from it into the core's buffer in wasm memory, and the
/// window does not add to the module's memory. An array is used only until the next call of `read`
/// (the worker's read-ahead thread relies on that: it refills a slot only then).
pub struct JsSource {
    read: Function,
    size: u64,
    /// Start offset and bytes of the read-ahead window.
    window: RefCell<(u64, Option<Uint8Array>)>,
}

impl JsSource {
    /// A source of `size` bytes read through `read`.
    pub fn new(read: Function, size: f64) -> Result<JsSource, JsError> {
        Ok(JsSource {
            read,
            size: to_u64(size, "file size")?,
            window: RefCell::new((0, None)),
        })
    }

    /// `len` bytes at `offset` with one call of the JavaScript function.
    fn fetch(&self, offset: u64, len: usize) -> Result<Uint8Array, SourceError> {
        let got = self
            .read
            .call2(
                &JsValue::NULL,
                &JsValue::from_f64(offset as f64),
                &JsValue::from_f64(len as f64),
            )
            .map_err(|e| backend(offset, len, js_text(&e)))?;
        let arr: Uint8Array = got
            .dyn_into()
            .map_err(|_| backend(offset, len, "read did not return bytes".into()))?;
        if arr.length() as usize != len {
            return Err(backend(offset, len, format!("got {} bytes", arr.length())));
        }
        Ok(arr)
    }
}

fn backend(offset: u64, len: usize, what: String) -> SourceError {
    SourceError::Backend {
        offset,
        len: len as u64,
        source: std::io::Error::other(what),
    }
}

impl ReadAt for JsSource {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        bitlens_tensors::source::check_bounds(offset, buf.len(), self.size)?;
        let mut w = self.window.borrow_mut();
        let (mut pos, mut done) = (offset, 0);
        while done < buf.len() {
            let want = buf.len() - done;
            let inside = w.1.as_ref().and_then(|arr| {
                let end = w.0 + arr.length() as u64;
                (pos >= w.0 && pos < end).then(|| (arr, (pos - w.0) as u32, end))
            });
            let n = match inside {
                // Served (in part) from the window.
                Some((arr, at, end)) => {
                    let n = want.min((end - pos) as usize);
                    arr.subarray(at, at + n as u32)
                        .copy_to(&mut buf[done..done + n]);
                    n
                }
                // A fetch invalidates the window: the JavaScript side may reuse its memory.
                None => {
                    w.1 = None;
                    if want >= READ_AHEAD {
                        // Larger than a window: straight into the buffer.
                        self.fetch(pos, want)?.copy_to(&mut buf[done..]);
                        want
                    } else {
                        let len = (self.size - pos).min(READ_AHEAD as u64) as usize;
                        *w = (pos, Some(self.fetch(pos, len)?));
                        continue;
                    }
                }
            };
            pos += n as u64;
            done += n;
        }
        Ok(())
    }
}

/// Text of a thrown JavaScript value.
fn js_text(e: &JsValue) -> String {
    e.as_string()
        .or_else(|| {
            js_sys::Reflect::get(e, &"message".into())
                .ok()
                .and_then(|m| m.as_string())
        })
        .unwrap_or_else(|| format!("{e:?}"))
}

/// A [`Write`] that hands chunks of at most [`CHUNK_BYTES`] to a JavaScript function.
struct JsSink {
    on_chunk: Function,
    buf: Vec<u8>,
    written: u64,
}

impl JsSink {
    fn new(on_chunk: Function) -> Self {
        JsSink {
            on_chunk,
            buf: Vec::with_capacity(CHUNK_BYTES),
            written: 0,
        }
    }

    fn emit(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let arr = Uint8Array::from(self.buf.as_slice());
        self.on_chunk
            .call1(&JsValue::NULL, &arr)
            .map_err(|e| std::io::Error::other(js_text(&e)))?;
        self.written += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }
}

impl Write for JsSink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let mut rest = data;
        while !rest.is_empty() {
            let n = rest.len().min(CHUNK_BYTES - self.buf.len());
            self.buf.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if self.buf.len() == CHUNK_BYTES {
                self.emit()?;
            }
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.emit()
    }
}

/// Reads and validates a safetensors header through a source.
fn read_header(src: &JsSource) -> Result<Header, JsError> {
    let mut first8 = [0u8; 8];
    src.read_exact_at(0, &mut first8)?;
    let needed = Header::needed_prefix(first8, src.size)?;
    let mut prefix = vec![0u8; needed as usize];
    src.read_exact_at(0, &mut prefix)?;
    Ok(Header::parse(&prefix, src.size)?)
}

/// One tensor's codec choice as the page sends it.
#[derive(Deserialize, Clone, Copy)]
struct ChoiceJson<'a> {
    /// Codec family name (`lmc`, `neuzip`, `bitsnap`, `bitsnap-quant`, `stored`).
    codec: &'a str,
    /// NeuZip kept mantissa bits (lossy when below the format's).
    #[serde(default)]
    mantissa_bits: Option<u32>,
}

impl ChoiceJson<'_> {
    fn parse(&self, has_base: bool) -> Result<CodecChoice, ChoiceError> {
        let kind: CodecKind = self.codec.parse()?;
        let mut choice = CodecChoice::new(kind);
        choice.mantissa_bits = self.mantissa_bits;
        choice.check(has_base)?;
        Ok(choice)
    }
}

/// Compression options: one choice for the file and per-tensor overrides.
#[derive(Deserialize)]
struct OptionsJson<'a> {
    #[serde(borrow, flatten)]
    whole: ChoiceJson<'a>,
    #[serde(borrow, default)]
    overrides: HashMap<String, ChoiceJson<'a>>,
}

/// An error report as JSON.
#[derive(Serialize)]
struct ErrorJson {
    values: u64,
    mse: f64,
    max_abs: f64,
    max_rel: f64,
    mean_rel: f64,
}

impl From<ErrorReport> for ErrorJson {
    fn from(r: ErrorReport) -> Self {
        ErrorJson {
            values: r.values,
            mse: r.mse,
            max_abs: r.max_abs,
            max_rel: r.max_rel,
            mean_rel: r.mean_rel,
        }
    }
}

/// One entry of a snapshot as JSON.
#[derive(Serialize)]
struct EntryJson<'a> {
    name: &'a str,
    codec: &'static str,
    lossy: bool,
    delta: bool,
    bytes: u64,
    stored_bytes: u64,
    ratio: f64,
    error: Option<ErrorJson>,
}

fn entries_json(entries: &[Entry]) -> Vec<EntryJson<'_>> {
    entries
        .iter()
        .map(|e| {
            let stored = e.stored_len();
            EntryJson {
                name: &e.name,
                codec: e.codec.name(),
                lossy: e.codec.is_lossy(),
                delta: e.delta,
                bytes: e.raw_len,
                stored_bytes: stored,
                ratio: if e.raw_len == 0 {
                    1.0
                } else {
                    stored as f64 / e.raw_len as f64
                },
                error: e.error.map(ErrorJson::from),
            }
        })
        .collect()
}

/// The JSON document [`compress_snapshot`] returns.
#[derive(Serialize)]
struct CompressJson<'a> {
    in_bytes: u64,
    out_bytes: u64,
    lossy: bool,
    delta: bool,
    entries: Vec<EntryJson<'a>>,
}

/// Compresses the safetensors file behind `read` (`size` bytes) into a snapshot written to
/// `on_chunk`, calling `on_progress(input bytes done)` after every batch of frames.
///
/// `options` is JSON `{codec, mantissa_bits?, overrides?: {tensor: {codec, mantissa_bits?}}}`.
/// With `base_read` (and `base_size`), tensors the base also has are stored as XOR deltas.
/// Returns JSON `{in_bytes, out_bytes, lossy, delta, entries: [{name, codec, lossy, delta, bytes,
/// stored_bytes, ratio, error: {values, mse, max_abs, max_rel, mean_rel} | null}]}`.
#[wasm_bindgen(js_name = compressSnapshot)]
pub fn compress_snapshot(
    read: Function,
    size: f64,
    options: &str,
    base_read: Option<Function>,
    base_size: f64,
    on_chunk: Function,
    on_progress: Function,
) -> Result<String, JsError> {
    let src = JsSource::new(read, size)?;
    let header = read_header(&src)?;
    let base = match base_read {
        Some(f) => {
            let b = JsSource::new(f, base_size)?;
            let h = read_header(&b)?;
            Some((b, h))
        }
        None => None,
    };
    let base_src = base
        .as_ref()
        .map(|(src, header)| BaseSource { src, header });
    let opts: OptionsJson =
        serde_json::from_str(options).map_err(|e| JsError::new(&format!("options: {e}")))?;
    let has_base = base_src.is_some();
    let whole = opts.whole.parse(has_base)?;
    let mut overrides: HashMap<&str, CodecChoice> = HashMap::new();
    for (name, c) in &opts.overrides {
        let choice = c
            .parse(has_base)
            .map_err(|e| JsError::new(&format!("tensor `{name}`: {e}")))?;
        overrides.insert(name.as_str(), choice);
    }
    let codec_for = |t: &TensorInfo| -> Codec {
        overrides
            .get(t.name.as_str())
            .unwrap_or(&whole)
            .codec_for(t.dtype)
    };
    let mut progress = |done: u64| {
        let _ = on_progress.call1(&JsValue::NULL, &JsValue::from_f64(done as f64));
    };
    let (mut sink, entries) = bitlens_snapshot::compress(
        &src,
        &header,
        base_src.as_ref(),
        &codec_for,
        JsSink::new(on_chunk),
        &mut progress,
    )?;
    sink.flush()
        .map_err(|e| JsError::new(&format!("output: {e}")))?;
    to_json(&CompressJson {
        in_bytes: src.size,
        out_bytes: sink.written,
        lossy: entries.iter().any(|e| e.codec.is_lossy()),
        delta: entries.iter().any(|e| e.delta),
        entries: entries_json(&entries),
    })
}

/// The JSON document [`open_snapshot`] returns.
#[derive(Serialize)]
struct InfoJson<'a> {
    size: u64,
    original_size: u64,
    lossy: bool,
    delta: bool,
    base_file_size: Option<u64>,
    entries: Vec<EntryJson<'a>>,
}

/// Reads a snapshot's trailer and index. Returns JSON `{size, original_size, lossy, delta,
/// base_file_size, entries: [...]}` (entries as in [`compress_snapshot`]).
#[wasm_bindgen(js_name = openSnapshot)]
pub fn open_snapshot(read: Function, size: f64) -> Result<String, JsError> {
    let src = JsSource::new(read, size)?;
    let total = src.size;
    let reader = SnapshotReader::open(src)?;
    to_json(&InfoJson {
        size: total,
        original_size: reader.original_size(),
        lossy: reader.is_lossy(),
        delta: reader.base.is_some(),
        base_file_size: reader.base.map(|b| b.file_size),
        entries: entries_json(&reader.entries),
    })
}

/// Decodes the snapshot behind `read` into the original file, written to `on_chunk`; with
/// `base_read` for a delta snapshot. `on_progress(output bytes done)` follows the output. Every
/// checksum (tensors, stored header, base) is verified; a mismatch is the core's typed error.
#[wasm_bindgen(js_name = decompressSnapshot)]
pub fn decompress_snapshot(
    read: Function,
    size: f64,
    base_read: Option<Function>,
    base_size: f64,
    on_chunk: Function,
    on_progress: Function,
) -> Result<f64, JsError> {
    let reader = SnapshotReader::open(JsSource::new(read, size)?)?;
    let base = match base_read {
        Some(f) => {
            let b = JsSource::new(f, base_size)?;
            let h = read_header(&b)?;
            Some((b, h))
        }
        None => None,
    };
    let base_src = base
        .as_ref()
        .map(|(src, header)| BaseSource { src, header });
    let mut sink = JsSink::new(on_chunk);
    let mut done = 0u64;
    let mut last_report = 0u64;
    reader.decode_all(base_src.as_ref(), &mut |bytes| {
        sink.write_all(bytes)
            .map_err(|e| SnapshotError::Misuse(format!("output: {e}")))?;
        done += bytes.len() as u64;
        if done - last_report >= 16 << 20 {
            last_report = done;
            let _ = on_progress.call1(&JsValue::NULL, &JsValue::from_f64(done as f64));
        }
        Ok(())
    })?;
    sink.flush()
        .map_err(|e| JsError::new(&format!("output: {e}")))?;
    let _ = on_progress.call1(&JsValue::NULL, &JsValue::from_f64(done as f64));
    Ok(sink.written as f64)
}

/// True when `first8` is the snapshot magic `BITLENS\0`.
#[wasm_bindgen(js_name = isSnapshot)]
pub fn is_snapshot(first8: &[u8]) -> bool {
    first8 == bitlens_snapshot::format::MAGIC
}

/// The JSON document [`codec_roundtrip`] returns.
#[derive(Serialize)]
struct RoundtripJson {
    codec: &'static str,
    lossy: bool,
    bytes: u64,
    stored_bytes: u64,
    ratio: f64,
    encode_seconds: f64,
    decode_seconds: f64,
    error: Option<ErrorJson>,
}

/// Compresses and decompresses one tensor's bytes (`dtype`) with a codec choice (JSON
/// `{codec, mantissa_bits?}`), frame by frame as in a snapshot, timing both with `now()`
/// (`performance.now`, milliseconds). Lossless codecs must give the bytes back exactly; lossy ones
/// report their error. Returns JSON `{codec, lossy, bytes, stored_bytes, ratio, encode_seconds,
/// decode_seconds, error}`.
#[wasm_bindgen(js_name = codecRoundtrip)]
pub fn codec_roundtrip(
    choice: &str,
    dtype: &str,
    data: &[u8],
    now: Function,
) -> Result<String, JsError> {
    let c: ChoiceJson =
        serde_json::from_str(choice).map_err(|e| JsError::new(&format!("choice: {e}")))?;
    let dtype: Dtype = crate::convert::to_dtype(dtype)?;
    let codec = c.parse(false)?.codec_for(dtype);
    let clock = || {
        now.call0(&JsValue::NULL)
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    let frame = bitlens_snapshot::FRAME_BYTES;
    let t0 = clock();
    let mut payloads = Vec::new();
    for raw in data.chunks(frame) {
        let mut out = Vec::new();
        codec.encode_frame(raw, None, &mut out);
        payloads.push(out);
    }
    let t1 = clock();
    let mut decoded = Vec::with_capacity(data.len());
    for (p, raw) in payloads.iter().zip(data.chunks(frame)) {
        let d = codec
            .decode_frame(p, raw.len(), None)
            .map_err(|e| JsError::new(&format!("{} decode: {e}", codec.name())))?;
        decoded.extend_from_slice(&d);
    }
    let t2 = clock();
    let stored: u64 = payloads.iter().map(|p| p.len() as u64).sum();
    let error = if codec.is_lossy() {
        Some(value_error(dtype, data, &decoded)?)
    } else {
        if decoded != data {
            return Err(JsError::new(&format!(
                "{} did not give the bytes back",
                codec.name()
            )));
        }
        None
    };
    to_json(&RoundtripJson {
        codec: codec.name(),
        lossy: codec.is_lossy(),
        bytes: data.len() as u64,
        stored_bytes: stored,
        ratio: if data.is_empty() {
            1.0
        } else {
            stored as f64 / data.len() as f64
        },
        encode_seconds: (t1 - t0) / 1e3,
        decode_seconds: (t2 - t1) / 1e3,
        error,
    })
}

/// Error of lossy float values, by the shared rules of [`bitlens_snapshot::ErrorStats`].
fn value_error(dtype: Dtype, a: &[u8], b: &[u8]) -> Result<ErrorJson, JsError> {
    let mut stats = bitlens_snapshot::ErrorStats::default();
    stats
        .add_bytes(dtype, a, b)
        .map_err(|e| JsError::new(&e.to_string()))?;
    Ok(stats.report().into())
}

/// Compresses and decompresses `data` with a peer codec compiled into the module (`lz4`: lz4_flex
/// block format; `deflate`: miniz_oxide level 6; `zstd`: ruzstd at its fastest level, the only one
/// it implements), timing both with `now()` (milliseconds), checking the bytes come back. Returns
/// the same JSON as [`codec_roundtrip`].
#[wasm_bindgen(js_name = peerCodecRoundtrip)]
pub fn peer_codec_roundtrip(name: &str, data: &[u8], now: Function) -> Result<String, JsError> {
    let clock = || {
        now.call0(&JsValue::NULL)
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0)
    };
    let t0 = clock();
    let (label, packed): (&'static str, Vec<u8>) = match name {
        "lz4" => ("lz4_flex", lz4_flex::block::compress_prepend_size(data)),
        "deflate" => ("deflate", miniz_oxide::deflate::compress_to_vec(data, 6)),
        "zstd" => (
            "zstd",
            ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest),
        ),
        _ => return Err(JsError::new(&format!("unknown peer codec `{name}`"))),
    };
    let t1 = clock();
    let unpacked = match name {
        "lz4" => lz4_flex::block::decompress_size_prepended(&packed)
            .map_err(|e| JsError::new(&format!("lz4_flex: {e}")))?,
        "deflate" => miniz_oxide::inflate::decompress_to_vec(&packed)
            .map_err(|e| JsError::new(&format!("deflate: {e:?}")))?,
        _ => {
            use std::io::Read;
            let mut src: &[u8] = &packed;
            let mut dec = ruzstd::decoding::StreamingDecoder::new(&mut src)
                .map_err(|e| JsError::new(&format!("zstd: {e}")))?;
            let mut out = Vec::with_capacity(data.len());
            dec.read_to_end(&mut out)
                .map_err(|e| JsError::new(&format!("zstd: {e}")))?;
            out
        }
    };
    let t2 = clock();
    if unpacked != data {
        return Err(JsError::new(&format!(
            "{label} did not give the bytes back"
        )));
    }
    to_json(&RoundtripJson {
        codec: label,
        lossy: false,
        bytes: data.len() as u64,
        stored_bytes: packed.len() as u64,
        ratio: if data.is_empty() {
            1.0
        } else {
            packed.len() as f64 / data.len() as f64
        },
        encode_seconds: (t1 - t0) / 1e3,
        decode_seconds: (t2 - t1) / 1e3,
        error: None,
    })
}
