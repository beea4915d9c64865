//! The container tests' files and round trips (`container.rs`, `rejections.rs`).
// Helpers unwrap: a failure here is a test failure. Each test file uses some of them.
#![allow(clippy::unwrap_used, dead_code)]

use bitlens_snapshot::{compress, BaseSource, Codec, SnapshotError, SnapshotReader};
use bitlens_tensors::{read_header, Dtype, Header};
use bitlens_test_support::floats::{bf16_bits, BF16};
use bitlens_test_support::rng;
use bitlens_test_support::safetensors::Builder;

/// A safetensors file builder, with the `__metadata__` of a PyTorch export at step 100 if
/// `metadata`.
pub fn builder(metadata: bool) -> Builder {
    let builder = Builder::new();
    if metadata {
        builder.metadata("format", "pt").metadata("step", "100")
    } else {
        builder
    }
}

pub fn pack(file: &[u8], codec: Codec, base: Option<&[u8]>) -> Vec<u8> {
    let header = read_header(&file.to_vec()).unwrap();
    let base_header = base.map(|b| read_header(&b.to_vec()).unwrap());
    let base_vec = base.map(|b| b.to_vec());
    let base_source = match (&base_vec, &base_header) {
        (Some(src), Some(h)) => Some(BaseSource { src, header: h }),
        _ => None,
    };
    let src = file.to_vec();
    let (out, _) = compress(
        &src,
        &header,
        base_source.as_ref(),
        &|t| match codec {
            Codec::Lmc { .. } => Codec::lmc_for_width(t.dtype.lane_bytes()),
            other => other,
        },
        Vec::new(),
        &mut |_| {},
    )
    .unwrap();
    out
}

pub fn unpack(snapshot: &[u8], base: Option<&[u8]>) -> Result<Vec<u8>, SnapshotError> {
    let reader = SnapshotReader::open(snapshot.to_vec())?;
    let base_vec = base.map(|b| b.to_vec());
    let base_header: Option<Header> = base_vec.as_ref().map(|b| read_header(b).unwrap());
    let base_source = match (&base_vec, &base_header) {
        (Some(src), Some(h)) => Some(BaseSource { src, header: h }),
        _ => None,
    };
    let mut out = Vec::new();
    reader.decode_all(base_source.as_ref(), &mut |b| {
        out.extend_from_slice(b);
        Ok(())
    })?;
    Ok(out)
}

/// bf16 values of a normal-ish distribution, with NaN / Inf / subnormal patterns sprinkled in.
pub fn weights_bf16(seed: u64, n: usize) -> Vec<u8> {
    let noise = rng::bytes(seed, 2 * n);
    let mut out = Vec::with_capacity(2 * n);
    for (i, c) in noise.chunks(2).enumerate() {
        let v = ((c[0] as f32 - 128.0) * (c[1] as f32 - 128.0)) / 4e5;
        let bits = match i % 97 {
            0 => BF16.nan,
            1 => BF16.inf,
            2 => BF16.neg_inf,
            3 => BF16.min_subnormal,
            _ => u32::from(bf16_bits(v)),
        };
        out.extend_from_slice(&bits.to_le_bytes()[..2]);
    }
    out
}

/// A file with a tensor of every kind of dtype, a scalar, an empty and a constant tensor, and
/// metadata.
pub fn zoo(seed: u64) -> Vec<u8> {
    let i64s: Vec<u8> = (0..4i64).flat_map(|v| v.to_le_bytes()).collect();
    builder(true)
        .tensor("bf16", Dtype::BF16, &[300, 7], &weights_bf16(seed, 2100))
        .tensor("f32", Dtype::F32, &[1000], &rng::bytes(seed + 1, 4000))
        .tensor("f16", Dtype::F16, &[3], &rng::bytes(seed + 2, 6))
        .tensor("f64", Dtype::F64, &[5], &rng::bytes(seed + 3, 40))
        .tensor("i64", Dtype::I64, &[4], &i64s)
        .tensor("u8", Dtype::U8, &[17], &rng::bytes(seed + 4, 17))
        .tensor("f8", Dtype::F8_E4M3, &[33], &rng::bytes(seed + 5, 33))
        .tensor("f4", Dtype::F4, &[6], &rng::bytes(seed + 6, 3))
        .tensor("c64", Dtype::C64, &[2], &rng::bytes(seed + 7, 16))
        .tensor("scalar", Dtype::F32, &[], &1.5f32.to_le_bytes())
        .tensor("empty", Dtype::BF16, &[0, 5], &[])
        .tensor(
            "const",
            Dtype::BF16,
            &[70_000],
            &[0x80, 0x3F].repeat(70_000),
        )
        .build()
}
