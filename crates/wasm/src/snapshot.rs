//! Compressed snapshots in the worker: [`compress_snapshot`] turns a safetensors file into a `.bls`
//! snapshot, [`open_snapshot`] reads a snapshot's index, [`decompress_snapshot`] writes the original
//! file back (every checksum verified), and [`codec_roundtrip`] / [`peer_codec_roundtrip`] time one
//! codec on one tensor.
//!
//! Files are never held whole in wasm memory: they are read through a [`JsSource`] (in a worker,
//! `FileReaderSync` over `Blob.slice`, or the read-ahead helper of `web/worker.js`), and the output
//! goes to `on_chunk` in chunks of at most [`CHUNK_BYTES`](crate::sink::CHUNK_BYTES), which the
//! worker posts to the page. Errors are the core crate's typed messages.

use crate::convert::{now, to_dtype};
use crate::error::Failure;
use crate::sink::ChunkSink;
use crate::source::JsSource;
use bitlens_protocol::js::{from_js, to_js};
use bitlens_protocol::{
    Choice, CompressOptions, Compressed, EntryInfo, PeerCodec, Roundtrip, SnapshotInfo,
};
use bitlens_snapshot::{
    AutoChoice, BaseSource, ChoiceError, Codec, CodecChoice, CodecKind, Entry, ErrorReport,
    SnapshotError, SnapshotReader,
};
use bitlens_tensors::format::{self, Format};
use bitlens_tensors::{Dtype, ReadAt, TensorInfo};
use std::collections::HashMap;
use std::io::Write;
use wasm_bindgen::prelude::*;

/// Where the bytes of a compression or decompression go, chunk by chunk.
pub type OnChunk<'a> = &'a mut dyn FnMut(&[u8]) -> std::io::Result<()>;

/// The core's codec choice for the page's, checked (`has_base`: a base checkpoint is given).
pub fn codec_choice(c: &Choice, has_base: bool) -> Result<CodecChoice, ChoiceError> {
    let mut choice = CodecChoice::new(c.codec);
    choice.mantissa_bits = c.mantissa_bits;
    choice.check(has_base)?;
    Ok(choice)
}

/// The entries of a snapshot as the page reads them (with `auto`'s choices, when it chose).
fn entries_info(entries: &[Entry], auto: Option<&[AutoChoice]>) -> Vec<EntryInfo> {
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let stored = e.stored_len();
            EntryInfo {
                name: e.name.clone(),
                codec: e.codec.name().to_owned(),
                lossy: e.codec.is_lossy(),
                delta: e.delta,
                bytes: e.raw_len,
                stored_bytes: stored,
                ratio: if e.raw_len == 0 {
                    1.0
                } else {
                    stored as f64 / e.raw_len as f64
                },
                error: e.error,
                auto: auto.and_then(|a| a.get(i)).map(AutoChoice::info),
            }
        })
        .collect()
}

/// A base file's source with its header, read and validated.
pub fn with_header(
    base: Option<&JsSource>,
) -> Result<Option<(&JsSource, bitlens_tensors::Header)>, Failure> {
    base.map(|b| Ok((b, b.header()?))).transpose()
}

/// Compresses the safetensors file `src` into a snapshot written to `on_chunk`, calling
/// `on_progress(input bytes done)` after every batch of frames. With a `base`, tensors it also has
/// are stored as XOR deltas. Options are checked before anything is written. With
/// `options.inshrink`, Inshrinkerator under its error budget
/// ([`compress_inshrink`](crate::inshrink::compress_inshrink)).
pub fn compress_snapshot(
    src: &JsSource,
    base: Option<&JsSource>,
    options: &CompressOptions,
    on_chunk: OnChunk,
    on_progress: &mut dyn FnMut(u64),
) -> Result<Compressed, Failure> {
    if let Some(budget) = options.inshrink {
        return crate::inshrink::compress_inshrink(
            src,
            base,
            options,
            budget,
            on_chunk,
            on_progress,
        );
    }
    if !is_safetensors(src)? {
        return compress_other_format(src, base, options, on_chunk, on_progress);
    }
    let header = src.header()?;
    let base = with_header(base)?;
    let base_src = base_source(&base);
    let has_base = base_src.is_some();
    let whole = codec_choice(&options.whole, has_base)?;
    if whole.kind == CodecKind::Auto {
        if !options.overrides.is_empty() {
            return Err(Failure(
                "auto chooses every tensor's codec: per-tensor choices apply to the other codecs"
                    .into(),
            ));
        }
        let (sink, entries, choices) = bitlens_snapshot::compress_auto(
            src,
            &header,
            base_src.as_ref(),
            ChunkSink::new(on_chunk),
            on_progress,
        )?;
        return finished(src, sink, &entries, Some(&choices));
    }
    let codecs = Codecs::new(whole, options, has_base)?;
    let (sink, entries) = bitlens_snapshot::compress(
        src,
        &header,
        base_src.as_ref(),
        &|t| codecs.codec_for(t),
        ChunkSink::new(on_chunk),
        on_progress,
    )?;
    finished(src, sink, &entries, None)
}

/// Each tensor's codec for the page's options (a choice other than auto): the whole file's, or a
/// tensor's own.
pub struct Codecs<'o> {
    whole: CodecChoice,
    overrides: HashMap<&'o str, CodecChoice>,
}

impl<'o> Codecs<'o> {
    /// The whole file's choice `whole` and `options`' per-tensor ones, each checked (auto is a
    /// choice for the whole file only).
    pub fn new(
        whole: CodecChoice,
        options: &'o CompressOptions,
        has_base: bool,
    ) -> Result<Self, Failure> {
        let mut overrides = HashMap::new();
        for (name, c) in &options.overrides {
            let choice =
                codec_choice(c, has_base).map_err(|e| Failure(format!("tensor `{name}`: {e}")))?;
            if choice.kind == CodecKind::Auto {
                return Err(Failure(format!(
                    "tensor `{name}`: auto is a choice for the whole file"
                )));
            }
            overrides.insert(name.as_str(), choice);
        }
        Ok(Codecs { whole, overrides })
    }

    /// The codec of tensor `t`.
    pub fn codec_for(&self, t: &TensorInfo) -> Codec {
        self.overrides
            .get(t.name.as_str())
            .unwrap_or(&self.whole)
            .codec_for(t.dtype)
    }
}

/// True when the file's first bytes are a safetensors header (other formats are read as layouts).
pub(crate) fn is_safetensors(src: &dyn ReadAt) -> Result<bool, Failure> {
    let size = src.size();
    let mut first = [0u8; format::DETECT_BYTES];
    let first = &mut first[..size.min(format::DETECT_BYTES as u64) as usize];
    src.read_exact_at(0, first)?;
    Ok(format::detect(first, size) == Some(Format::Safetensors))
}

/// [`compress_snapshot`] of a GGUF / PyTorch / NumPy file: its pieces (tensor data, and every
/// other byte verbatim) into a version 3 snapshot, as `bitlens compress FILE` writes it. Deltas
/// and per-tensor overrides are the CLI's for these formats; the page says so.
fn compress_other_format(
    src: &JsSource,
    base: Option<&JsSource>,
    options: &CompressOptions,
    on_chunk: OnChunk,
    on_progress: &mut dyn FnMut(u64),
) -> Result<Compressed, Failure> {
    if base.is_some() {
        return Err(Failure(
            "deltas of GGUF, PyTorch and NumPy files are made by the CLI: \
             bitlens compress FILE --base BASE -o OUT.bls"
                .into(),
        ));
    }
    if !options.overrides.is_empty() {
        return Err(Failure(
            "per-tensor codec choices apply to safetensors checkpoints; this file takes one codec"
                .into(),
        ));
    }
    let layout = format::open(src).map_err(|e| Failure(e.to_string()))?;
    let pieces = bitlens_snapshot::layout::pieces(&layout)?;
    let whole = codec_choice(&options.whole, false)?;
    if whole.kind == CodecKind::Auto {
        let (sink, entries, choices) = bitlens_snapshot::compress_pieces_auto(
            src,
            &pieces,
            None,
            ChunkSink::new(on_chunk),
            on_progress,
        )?;
        return finished(src, sink, &entries, Some(&choices));
    }
    let (sink, entries) = bitlens_snapshot::compress_pieces(
        src,
        &pieces,
        None,
        &whole,
        ChunkSink::new(on_chunk),
        on_progress,
    )?;
    finished(src, sink, &entries, None)
}

/// What a compress job reports once its snapshot is written (with `auto`'s choices, when it
/// chose): flushes the last chunk.
pub(crate) fn finished<F: FnMut(&[u8]) -> std::io::Result<()>>(
    src: &JsSource,
    mut sink: ChunkSink<F>,
    entries: &[Entry],
    auto: Option<&[AutoChoice]>,
) -> Result<Compressed, Failure> {
    sink.flush().map_err(|e| Failure(format!("output: {e}")))?;
    Ok(Compressed {
        in_bytes: src.size(),
        out_bytes: sink.written(),
        lossy: entries.iter().any(|e| e.codec.is_lossy()),
        delta: entries.iter().any(|e| e.delta),
        entries: entries_info(entries, auto),
        inshrink: None,
    })
}

/// Reads a snapshot's trailer and index (and an Inshrinkerator snapshot's plan, from its annex).
pub fn open_snapshot<R: bitlens_snapshot::Source>(src: R) -> Result<SnapshotInfo, Failure> {
    snapshot_info(src, false)
}

/// [`open_snapshot`]; with `streams`, an Inshrinkerator snapshot's per-tensor errors too, from
/// every tensor's stream headers (every frame is read).
pub fn snapshot_info<R: bitlens_snapshot::Source>(
    src: R,
    streams: bool,
) -> Result<SnapshotInfo, Failure> {
    let total = src.size();
    info_of(&SnapshotReader::open(src)?, total, streams)
}

/// [`snapshot_info`] of an opened snapshot of `total` bytes, with what `bitlens inspect --json`
/// says of it (`bitlens_snapshot::report::report_of`, from the same Inshrinkerator read).
pub fn info_of<R: bitlens_snapshot::Source>(
    reader: &SnapshotReader<R>,
    total: u64,
    streams: bool,
) -> Result<SnapshotInfo, Failure> {
    let inshrink = bitlens_snapshot::inshrink::read_inshrink_info(reader, streams)?;
    let report = bitlens_snapshot::report::report_of("", total, reader, inshrink.clone());
    Ok(SnapshotInfo {
        size: total,
        original_size: reader.original_size(),
        lossy: reader.is_lossy(),
        delta: reader.base.is_some(),
        base_file_size: reader.base.map(|b| b.file_size),
        entries: entries_info(&reader.entries, None),
        inshrink: inshrink.map(Box::new),
        report: Some(Box::new(report)),
    })
}

/// Decodes the snapshot `src` into the original file, written to `on_chunk`; with `base` for a
/// delta snapshot. `on_progress(output bytes done)` follows the output. Every checksum (tensors,
/// stored header, base) is verified; a mismatch is the core's typed error. Returns the bytes
/// written.
pub fn decompress_snapshot<R: bitlens_snapshot::Source>(
    src: R,
    base: Option<&JsSource>,
    on_chunk: OnChunk,
    on_progress: &mut dyn FnMut(u64),
) -> Result<u64, Failure> {
    decompress_opened(SnapshotReader::open(src)?, base, on_chunk, on_progress)
}

/// [`decompress_snapshot`] of an opened snapshot.
pub fn decompress_opened<R: bitlens_snapshot::Source>(
    reader: SnapshotReader<R>,
    base: Option<&JsSource>,
    on_chunk: OnChunk,
    on_progress: &mut dyn FnMut(u64),
) -> Result<u64, Failure> {
    let base = with_header(base)?;
    let base_src = base_source(&base);
    let mut out = Restored::new(on_chunk, on_progress);
    reader.decode_all(base_src.as_ref(), &mut |bytes| out.write(bytes))?;
    out.finish()
}

/// The core's view of a base file read with its header ([`with_header`]).
pub fn base_source<'a>(
    base: &'a Option<(&JsSource, bitlens_tensors::Header)>,
) -> Option<BaseSource<'a>> {
    base.as_ref()
        .map(|(src, header)| BaseSource { src: *src, header })
}

/// The original bytes of a decompression on their way out: through a [`ChunkSink`] into
/// `on_chunk`, with `on_progress(output bytes done)` every 16 MiB and at the end.
pub struct Restored<'a> {
    sink: ChunkSink<OnChunk<'a>>,
    done: u64,
    last_report: u64,
    on_progress: &'a mut dyn FnMut(u64),
}

impl<'a> Restored<'a> {
    /// Nothing written yet.
    pub fn new(on_chunk: OnChunk<'a>, on_progress: &'a mut dyn FnMut(u64)) -> Self {
        Restored {
            sink: ChunkSink::new(on_chunk),
            done: 0,
            last_report: 0,
            on_progress,
        }
    }

    /// Hands on the next original bytes (as the core's decoding sink).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        self.sink
            .write_all(bytes)
            .map_err(|e| SnapshotError::Misuse(format!("output: {e}")))?;
        self.done += bytes.len() as u64;
        if self.done - self.last_report >= 16 << 20 {
            self.last_report = self.done;
            (self.on_progress)(self.done);
        }
        Ok(())
    }

    /// Flushes the output; returns the bytes written.
    pub fn finish(mut self) -> Result<u64, Failure> {
        self.sink
            .flush()
            .map_err(|e| Failure(format!("output: {e}")))?;
        (self.on_progress)(self.done);
        Ok(self.sink.written())
    }
}

/// True when `first8` is the snapshot magic `BITLENS\0`.
#[wasm_bindgen(js_name = isSnapshot)]
pub fn is_snapshot(first8: &[u8]) -> bool {
    first8 == bitlens_snapshot::format::MAGIC
}

/// [`codec_roundtrip`] for JavaScript (benchmarks, embeds): `choice` is `{codec, mantissa_bits?}`,
/// `dtype` a safetensors dtype name; timed with `performance.now()`. Returns the
/// [`Roundtrip`] as an object.
#[wasm_bindgen(js_name = codecRoundtrip)]
pub fn codec_roundtrip_js(choice: JsValue, dtype: &str, data: &[u8]) -> Result<JsValue, JsError> {
    let choice: Choice = from_js(choice).map_err(|e| Failure(format!("choice: {e}")))?;
    let row = codec_roundtrip(&choice, to_dtype(dtype)?, data, &now)?;
    Ok(to_js(&row)?)
}

/// Compresses and decompresses one tensor's bytes (`dtype`) with a codec choice, frame by frame as
/// in a snapshot, timing both with `clock` (milliseconds). Lossless codecs must give the bytes back
/// exactly; lossy ones report their error.
pub fn codec_roundtrip(
    choice: &Choice,
    dtype: Dtype,
    data: &[u8],
    clock: &dyn Fn() -> f64,
) -> Result<Roundtrip, Failure> {
    let codec = codec_choice(choice, false)?.codec_for(dtype);
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
            .map_err(|e| Failure(format!("{} decode: {e}", codec.name())))?;
        decoded.extend_from_slice(&d);
    }
    let t2 = clock();
    let stored: u64 = payloads.iter().map(|p| p.len() as u64).sum();
    let error = if codec.is_lossy() {
        Some(value_error(dtype, data, &decoded)?)
    } else {
        if decoded != data {
            return Err(Failure(format!(
                "{} did not give the bytes back",
                codec.name()
            )));
        }
        None
    };
    Ok(Roundtrip {
        codec: codec.name().to_owned(),
        lossy: codec.is_lossy(),
        bytes: data.len() as u64,
        stored_bytes: stored,
        ratio: ratio(stored, data.len()),
        encode_seconds: (t1 - t0) / 1e3,
        decode_seconds: (t2 - t1) / 1e3,
        error,
    })
}

/// Error of lossy float values, by the shared rules of [`bitlens_snapshot::ErrorStats`].
fn value_error(dtype: Dtype, a: &[u8], b: &[u8]) -> Result<ErrorReport, Failure> {
    let mut stats = bitlens_snapshot::ErrorStats::default();
    stats
        .add_bytes(dtype, a, b)
        .map_err(|e| Failure(e.to_string()))?;
    Ok(stats.report())
}

/// Compresses and decompresses `data` with a peer codec compiled into the module (`lz4`: lz4_flex
/// block format; `deflate`: miniz_oxide level 6; `zstd`: ruzstd at its fastest level, the only one
/// it implements; `bg4-lz4`: the hub's Xet chunks, `bitlens_peers`, the code the CLI's `bench`
/// runs), timing both with `clock` (milliseconds), checking the bytes come back.
pub fn peer_codec_roundtrip(
    peer: PeerCodec,
    data: &[u8],
    clock: &dyn Fn() -> f64,
) -> Result<Roundtrip, Failure> {
    let label = peer.name();
    let t0 = clock();
    let packed = match peer {
        PeerCodec::Lz4 => lz4_flex::block::compress_prepend_size(data),
        PeerCodec::Deflate => miniz_oxide::deflate::compress_to_vec(data, 6),
        PeerCodec::Zstd => {
            ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
        }
        PeerCodec::Bg4Lz4 => {
            let mut out = Vec::new();
            bitlens_peers::compress_into(data, &mut out).map_err(|e| Failure(e.to_string()))?;
            out
        }
    };
    let t1 = clock();
    let unpacked = match peer {
        PeerCodec::Lz4 => lz4_flex::block::decompress_size_prepended(&packed)
            .map_err(|e| Failure(format!("lz4_flex: {e}")))?,
        PeerCodec::Deflate => miniz_oxide::inflate::decompress_to_vec(&packed)
            .map_err(|e| Failure(format!("deflate: {e:?}")))?,
        PeerCodec::Zstd => {
            use std::io::Read;
            let mut src: &[u8] = &packed;
            let mut dec = ruzstd::decoding::StreamingDecoder::new(&mut src)
                .map_err(|e| Failure(format!("zstd: {e}")))?;
            let mut out = Vec::with_capacity(data.len());
            dec.read_to_end(&mut out)
                .map_err(|e| Failure(format!("zstd: {e}")))?;
            out
        }
        PeerCodec::Bg4Lz4 => {
            let mut out = Vec::with_capacity(data.len());
            bitlens_peers::decompress_into(&packed, &mut out)
                .map_err(|e| Failure(e.to_string()))?;
            out
        }
    };
    let t2 = clock();
    if unpacked != data {
        return Err(Failure(format!("{label} did not give the bytes back")));
    }
    Ok(Roundtrip {
        codec: label.to_owned(),
        lossy: false,
        bytes: data.len() as u64,
        stored_bytes: packed.len() as u64,
        ratio: ratio(packed.len() as u64, data.len()),
        encode_seconds: (t1 - t0) / 1e3,
        decode_seconds: (t2 - t1) / 1e3,
        error: None,
    })
}

/// Stored bytes per original byte (1 for no bytes).
fn ratio(stored: u64, original: usize) -> f64 {
    if original == 0 {
        1.0
    } else {
        stored as f64 / original as f64
    }
}
