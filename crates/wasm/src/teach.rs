//! The computations of the teaching lessons (issue 14), for the page: each function calls the
//! core crates and returns their result as JSON text, as the rest of the embed API does; the
//! lesson views only draw it.
//!
//! - `float` lesson: [`teach_decompose`], [`teach_encode`], [`teach_encode_all`], [`teach_flip`]
//!   ([`bitlens_lessons::anatomy`]: fp32, bf16, fp16, fp8 E4M3 / E5M2).
//! - `huffman` lesson (LMC paper §3–4): [`teach_huffman_block`] explains one block of one byte
//!   group of a tensor (the encoder's blocks: [`teach_block_bytes`]), [`teach_huffman_tables`]
//!   compares one global table with a table per block over the group
//!   ([`bitlens_lessons::huffman`]).
//! - `ans` lesson (NeuZip §2.2): [`teach_exponents`] takes the first exponents of a tensor,
//!   [`teach_rans_trace`] traces the rANS coder on them ([`bitlens_lessons::rans`]).
//! - `grouping` lesson (LMC paper §3–4): [`teach_bit_ratios`], [`teach_layouts`] and
//!   [`teach_layout_sizes`] ([`bitlens_lessons::grouping`]; the peers are the codec
//!   comparison's: deflate by miniz_oxide, zstd by ruzstd).
//! - `delta` lesson (BitSnap §3, LMC's XOR deltas): [`teach_delta_flips`], [`teach_delta_point`]
//!   ([`bitlens_lessons::delta`]).
//! - `lossy` lesson (NeuZip §2.3, BitSnap §3.4): [`teach_lossy_survey`] encodes and decodes a
//!   tensor with every lossy setting the lesson offers ([`bitlens_lessons::lossy::survey`]).

use crate::convert::{to_dtype, to_json, to_u64};
use crate::error::Failure;
use bitlens_codecs::float::FloatFormat;
use bitlens_codecs::lmc::{Params, Width};
use bitlens_codecs::Transform;
use bitlens_lessons::anatomy::{self, Format, Overflow};
use bitlens_lessons::{delta, grouping, huffman, lossy, rans};
use bitlens_protocol::PeerCodec;
use bitlens_tensors::Dtype;
use wasm_bindgen::prelude::*;

fn format(name: &str) -> Result<Format, Failure> {
    Format::from_name(name).ok_or_else(|| {
        Failure(format!(
            "unknown float format `{name}` (f32, bf16, f16, e4m3, e5m2)"
        ))
    })
}

/// Bit pattern `bits` of `format` (`f32`, `bf16`, `f16`, `e4m3`, `e5m2`) taken apart: JSON of
/// [`anatomy::Decomposed`]. Bits above the format's width are ignored.
#[wasm_bindgen(js_name = teachDecompose)]
pub fn teach_decompose(format_name: &str, bits: u32) -> Result<String, JsError> {
    Ok(to_json(&anatomy::decompose(bits, format(format_name)?))?)
}

/// `value` rounded into `format` (to nearest, ties to even; `saturate`: the OFP8 saturation
/// mode instead of ±∞ / NaN on overflow): JSON of [`anatomy::Encoded`].
#[wasm_bindgen(js_name = teachEncode)]
pub fn teach_encode(format_name: &str, value: f64, saturate: bool) -> Result<String, JsError> {
    Ok(to_json(&anatomy::encode(
        value,
        format(format_name)?,
        overflow(saturate),
    ))?)
}

/// `value` rounded into every format, widest first: a JSON array of [`anatomy::Encoded`].
#[wasm_bindgen(js_name = teachEncodeAll)]
pub fn teach_encode_all(value: f64, saturate: bool) -> Result<String, JsError> {
    let all: Vec<anatomy::Encoded> = Format::ALL
        .iter()
        .map(|&f| anatomy::encode(value, f, overflow(saturate)))
        .collect();
    Ok(to_json(&all)?)
}

fn overflow(saturate: bool) -> Overflow {
    if saturate {
        Overflow::Saturating
    } else {
        Overflow::NonSaturating
    }
}

/// Bit `bit` (0 = lowest mantissa bit) of pattern `bits` of `format` flipped: JSON of
/// [`anatomy::Flipped`]. Fails for a bit the format does not have.
#[wasm_bindgen(js_name = teachFlip)]
pub fn teach_flip(format_name: &str, bits: u32, bit: u32) -> Result<String, JsError> {
    let f = format(format_name)?;
    let flipped = anatomy::flip_bit(bits, bit, f).ok_or_else(|| {
        Failure(format!(
            "{format_name} has bits 0..{}, not bit {bit}",
            f.bits()
        ))
    })?;
    Ok(to_json(&flipped)?)
}

/// The LMC parameters of a tensor of `dtype`: its element width (1 for sub-byte and 1-byte
/// types), and the default transform, block size and code-length limit for that width.
fn lmc_params(dtype: &str) -> Result<Params, Failure> {
    let dtype = to_dtype(dtype)?;
    let width = Width::from_bytes((dtype.bits() / 8) as usize).unwrap_or(Width::W1);
    Ok(Params::new(width))
}

/// The LMC encoder's block size in bytes for a tensor of `dtype` (128 KiB for 2-byte types,
/// else 64 KiB): blocks of a byte group at multiples of it are the encoder's blocks, in the LMC
/// stream and in every PLMC segment (the default segments hold whole blocks).
#[wasm_bindgen(js_name = teachBlockBytes)]
pub fn teach_block_bytes(dtype: &str) -> Result<f64, JsError> {
    Ok(lmc_params(dtype)?.block_bytes() as f64)
}

/// Byte group `group` of a tensor's bytes `data` (`dtype`, a safetensors name), as the LMC
/// encoder groups them by default.
fn group_of(data: &[u8], dtype: &str, group: usize) -> Result<(Vec<u8>, Params), Failure> {
    let params = lmc_params(dtype)?;
    let bytes = huffman::group_bytes(data, params.width, params.transform, group)?;
    Ok((bytes, params))
}

/// Huffman explained on bytes `offset..offset + len` of byte group `group` of a tensor's bytes
/// `data` of `dtype` (grouped as the LMC encoder does by default: sign rotation, byte `group`
/// of every element), under the LMC encoder's code-length limit, with a tree of the `top` most
/// frequent symbols: JSON of [`huffman::BlockExplanation`]. Its `encoder.coded_bytes` is what
/// the LMC encoder writes for that block (when `offset` and `len` are a block of the encoder's
/// layout: a multiple of its block size, `Params::block_bytes`, and that size or the group's
/// end).
#[wasm_bindgen(js_name = teachHuffmanBlock)]
pub fn teach_huffman_block(
    data: &[u8],
    dtype: &str,
    group: usize,
    offset: f64,
    len: f64,
    top: usize,
) -> Result<String, JsError> {
    let params = lmc_params(dtype)?;
    let w = params.width.bytes();
    let offset = to_u64(offset, "offset")? as usize;
    let len = to_u64(len, "length")? as usize;
    let elements = data.len() / w;
    // Only the elements of the block are grouped: grouping works element by element.
    let end = offset.checked_add(len).filter(|&end| end <= elements);
    let Some(end) = end else {
        return Err(Failure(format!(
            "bytes {offset}..{} are past the group's {elements} bytes",
            offset.saturating_add(len)
        ))
        .into());
    };
    let block = huffman::group_bytes(
        &data[offset * w..end * w],
        params.width,
        params.transform,
        group,
    )?;
    let e = huffman::explain_block(&block, u32::from(params.code_limit), top)?;
    Ok(to_json(&e)?)
}

/// One global Huffman table against a table per block of `2^block_log2` bytes over byte group
/// `group` of a tensor's bytes `data` of `dtype`: JSON of [`huffman::TableComparison`]
/// (`block_log2` 0: the encoder's default block size for the dtype).
#[wasm_bindgen(js_name = teachHuffmanTables)]
pub fn teach_huffman_tables(
    data: &[u8],
    dtype: &str,
    group: usize,
    block_log2: u8,
) -> Result<String, JsError> {
    let (bytes, params) = group_of(data, dtype, group)?;
    let log2 = if block_log2 == 0 {
        params.block_log2
    } else {
        block_log2
    };
    let c = huffman::compare_tables(&bytes, log2, u32::from(params.code_limit))?;
    Ok(to_json(&c)?)
}

/// The biased exponents of the first `count` elements of a tensor's bytes `data` of `dtype`
/// (`BF16`, `F16` or `F32`): the symbols NeuZip codes with rANS.
#[wasm_bindgen(js_name = teachExponents)]
pub fn teach_exponents(data: &[u8], dtype: &str, count: usize) -> Result<Vec<u8>, JsError> {
    Ok(rans::exponents(data, float_format(dtype)?, count))
}

/// The NeuZip / BitSnap float format of a safetensors dtype name (`BF16`, `F16`, `F32`).
fn float_format(dtype: &str) -> Result<FloatFormat, Failure> {
    Ok(match to_dtype(dtype)? {
        Dtype::BF16 => FloatFormat::Bf16,
        Dtype::F16 => FloatFormat::F16,
        Dtype::F32 => FloatFormat::F32,
        other => {
            return Err(Failure(format!(
                "{other} has no NeuZip float format (BF16, F16, F32)"
            )))
        }
    })
}

/// The rANS coder traced on `symbols` (at most [`rans::MAX_TRACE_SYMBOLS`]): JSON of
/// [`rans::Trace`], its encoding and decoding steps, bytes and sizes.
#[wasm_bindgen(js_name = teachRansTrace)]
pub fn teach_rans_trace(symbols: &[u8]) -> Result<String, JsError> {
    Ok(to_json(&rans::trace(symbols)?)?)
}

/// The transform of a name: `rotate` (LMC's default sign rotation) or `none`.
fn transform(name: &str) -> Result<Transform, Failure> {
    match name {
        "rotate" => Ok(Transform::SignRotate),
        "none" => Ok(Transform::None),
        other => Err(Failure(format!(
            "unknown transform `{other}` (rotate, none)"
        ))),
    }
}

/// The share of elements of a tensor's bytes `data` of `dtype` with each bit set, bit 0 first.
#[wasm_bindgen(js_name = teachBitRatios)]
pub fn teach_bit_ratios(data: &[u8], dtype: &str) -> Result<Vec<f64>, JsError> {
    Ok(grouping::bit_set_ratios(data, lmc_params(dtype)?.width))
}

/// The order-0 entropies of a tensor's bytes `data` of `dtype`, interleaved and in byte groups
/// (`transform`: `rotate` or `none`), whole and per 64 KiB block: JSON of
/// [`grouping::Layouts`].
#[wasm_bindgen(js_name = teachLayouts)]
pub fn teach_layouts(data: &[u8], dtype: &str, transform_name: &str) -> Result<String, JsError> {
    let w = lmc_params(dtype)?.width;
    Ok(to_json(&grouping::layouts(
        data,
        w,
        transform(transform_name)?,
    ))?)
}

/// The bytes LMC, deflate (miniz_oxide, level 6) and zstd (ruzstd, fastest) write for a tensor's
/// bytes `data` of `dtype`, interleaved and in byte groups (`transform`): JSON of a list of
/// [`grouping::CodecSizes`]. The peers run as the codec comparison runs them (and are checked
/// to decode back).
#[wasm_bindgen(js_name = teachLayoutSizes)]
pub fn teach_layout_sizes(
    data: &[u8],
    dtype: &str,
    transform_name: &str,
) -> Result<String, JsError> {
    let w = lmc_params(dtype)?.width;
    let t = transform(transform_name)?;
    let failed = std::cell::RefCell::new(None);
    let peer = |p: PeerCodec| {
        let failed = &failed;
        move |d: &[u8]| match crate::snapshot::peer_codec_roundtrip(p, d, &|| 0.0) {
            Ok(r) => r.stored_bytes as usize,
            Err(e) => {
                failed.replace(Some(e));
                0
            }
        }
    };
    let (deflate, zstd) = (peer(PeerCodec::Deflate), peer(PeerCodec::Zstd));
    let sizes = grouping::sizes(data, w, t, &[("deflate", &deflate), ("zstd", &zstd)]);
    if let Some(e) = failed.into_inner() {
        return Err(e.into());
    }
    Ok(to_json(&sizes)?)
}

/// The bits that flip between two versions `base` and `new` of a tensor of `dtype`: JSON of
/// [`delta::Flips`].
#[wasm_bindgen(js_name = teachDeltaFlips)]
pub fn teach_delta_flips(base: &[u8], new: &[u8], dtype: &str) -> Result<String, JsError> {
    let w = lmc_params(dtype)?.width;
    Ok(to_json(
        &delta::flips(base, new, w).map_err(|e| Failure(e.to_string()))?,
    )?)
}

/// Point `percent` of the delta curve of `base` → `new` (`dtype`): the BitSnap bitmask and
/// XOR + LMC sizes of the mixed tensor, JSON of [`delta::DeltaPoint`].
#[wasm_bindgen(js_name = teachDeltaPoint)]
pub fn teach_delta_point(
    base: &[u8],
    new: &[u8],
    dtype: &str,
    percent: u32,
) -> Result<String, JsError> {
    let w = lmc_params(dtype)?.width;
    let p = delta::point(base, new, w, percent).map_err(|e| Failure(e.to_string()))?;
    Ok(to_json(&p)?)
}

/// Every lossy setting of the `lossy` lesson measured on a tensor's bytes `data` of `dtype`
/// (`BF16`, `F16` or `F32`): lossy NeuZip (k 0 / 1 / 3 × normalization blocks 32..512) on the
/// values as they are, BitSnap cluster quantization (K 1..16) and naive uint8 on them widened to
/// f32 — each a real encode, decoded back and compared: JSON of [`lossy::Survey`]. Work grows
/// with the length of `data`: the page passes a bounded prefix.
#[wasm_bindgen(js_name = teachLossySurvey)]
pub fn teach_lossy_survey(data: &[u8], dtype: &str) -> Result<String, JsError> {
    Ok(to_json(&lossy::survey(data, float_format(dtype)?)?)?)
}
