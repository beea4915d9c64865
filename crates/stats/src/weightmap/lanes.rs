//! How a tensor's stored bytes become the lanes a weight map aggregates: the [`Unit`] of storage
//! (one plain value; two F4 values in a byte; one ggml block of several values) and what a lane
//! contributes to its cell for each [`Layer`] — its value (ggml blocks dequantized), one bit of
//! its pattern, or its exponent field.

use super::{Layer, MapError};
use crate::values::decoder;
use bitlens_tensors::format::gguf::{can_dequantize, dequantize};
use bitlens_tensors::format::{ElementType, GgmlType};
use bitlens_tensors::Dtype;

/// The smallest piece of storage that decodes on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// One value of a byte-aligned dtype (a complex C64 value is two F32 lanes).
    Plain(Dtype),
    /// A byte of two F4 values (low nibble first).
    Nibbles,
    /// One ggml block.
    Block {
        /// The block type.
        ty: GgmlType,
        /// Bytes per block.
        bytes: usize,
        /// Values per block.
        values: usize,
    },
}

impl Unit {
    /// The unit of element type `ty`, and the lanes per element (2 for C64, else 1).
    pub(crate) fn of(ty: ElementType) -> Result<(Unit, u64), MapError> {
        Ok(match ty {
            ElementType::Dtype(Dtype::C64) => (Unit::Plain(Dtype::F32), 2),
            ElementType::Dtype(Dtype::F4) => (Unit::Nibbles, 1),
            ElementType::Dtype(d) if d.bits() % 8 == 0 => (Unit::Plain(d), 1),
            ElementType::Dtype(d) => return Err(MapError::Unsupported(d.name().to_string())),
            ElementType::Ggml(g) => {
                let name = g.name().unwrap_or("an unknown ggml type");
                match (g.block_bytes(), g.block_elems()) {
                    (Some(bytes), Some(values)) if can_dequantize(g) => (
                        Unit::Block {
                            ty: g,
                            bytes: bytes as usize,
                            values: values as usize,
                        },
                        1,
                    ),
                    _ => return Err(MapError::Unsupported(name.to_string())),
                }
            }
        })
    }

    /// Bytes per unit.
    pub(crate) fn bytes(self) -> usize {
        match self {
            Unit::Plain(d) => (d.bits() / 8) as usize,
            Unit::Nibbles => 1,
            Unit::Block { bytes, .. } => bytes,
        }
    }

    /// Lanes per unit.
    pub(crate) fn lanes(self) -> usize {
        match self {
            Unit::Plain(_) => 1,
            Unit::Nibbles => 2,
            Unit::Block { values, .. } => values,
        }
    }

    /// Checks that `layer` means something for this unit: bits and exponents are a plain
    /// dtype's (an F4 nibble's too), not a ggml block's.
    pub(crate) fn check(self, layer: Layer) -> Result<(), MapError> {
        let plain_float =
            matches!(self, Unit::Plain(d) if exponent_field(d).is_some()) || self == Unit::Nibbles;
        let ok = match layer {
            Layer::Values | Layer::Changes => true,
            Layer::BitPlane { bit } => {
                !matches!(self, Unit::Block { .. }) && u32::from(bit) < self.lane_bits()
            }
            Layer::Exponent => plain_float,
        };
        if ok {
            Ok(())
        } else {
            Err(MapError::Layer {
                layer,
                ty: self.name(),
            })
        }
    }

    /// Bits per lane of a plain unit (ggml blocks: 32, the dequantized f32's).
    pub(crate) fn lane_bits(self) -> u32 {
        match self {
            Unit::Plain(d) => d.bits(),
            Unit::Nibbles => 4,
            Unit::Block { .. } => 32,
        }
    }

    /// The unit's type name.
    pub(crate) fn name(self) -> String {
        match self {
            Unit::Plain(d) => d.name().to_string(),
            Unit::Nibbles => "F4".to_string(),
            Unit::Block { ty, .. } => ty.name().unwrap_or("?").to_string(),
        }
    }
}

/// Decodes units to the lanes' samples for one [`Layer`] (the values, a bit, the exponent), with
/// the tables it needs built once.
pub(crate) struct Sampler {
    unit: Unit,
    layer: Layer,
    /// Values of every pattern of an 8- or 16-bit lane.
    table: Vec<f32>,
    /// Lane bit patterns of the current piece (bit layers).
    bits: Vec<u64>,
}

impl Sampler {
    /// A sampler of `layer` over `unit`s (the layer already checked).
    pub(crate) fn new(unit: Unit, layer: Layer) -> Sampler {
        let table = match (unit, layer) {
            // bf16 widens by a shift (`Sampler::values`): no table.
            (Unit::Plain(d), Layer::Values | Layer::Changes)
                if d.bits() <= 16 && d != Dtype::BF16 =>
            {
                lookup_table(d)
            }
            (Unit::Nibbles, Layer::Values | Layer::Changes) => lookup_table(Dtype::F4),
            _ => Vec::new(),
        };
        Sampler {
            unit,
            layer,
            table,
            bits: Vec::new(),
        }
    }

    /// Appends the samples of the whole units in `bytes` to `out`, one per lane, and for
    /// [`Layer::Changes`] the lanes' bit patterns to `patterns` (to tell an unchanged lane from a
    /// changed one of equal value, such as -0 and +0).
    pub(crate) fn samples(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<f32>,
        patterns: Option<&mut Vec<u64>>,
    ) -> Result<(), MapError> {
        match self.layer {
            Layer::Values | Layer::Changes => {
                self.values(bytes, out)?;
                if let Some(p) = patterns {
                    p.clear();
                    lane_patterns(self.unit, bytes, p);
                }
            }
            Layer::BitPlane { bit } => {
                self.bits.clear();
                lane_patterns(self.unit, bytes, &mut self.bits);
                out.extend(self.bits.iter().map(|&b| ((b >> bit) & 1) as f32));
            }
            Layer::Exponent => {
                self.bits.clear();
                lane_patterns(self.unit, bytes, &mut self.bits);
                let (mantissa, width, bias) = match self.unit {
                    Unit::Plain(d) => exponent_field(d).unwrap_or((0, 0, 0)),
                    _ => exponent_field(Dtype::F4).unwrap_or((0, 0, 0)),
                };
                let mask = (1u64 << width) - 1;
                out.extend(
                    self.bits
                        .iter()
                        .map(|&b| (((b >> mantissa) & mask) as i64 - bias) as f32),
                );
            }
        }
        Ok(())
    }

    /// Appends the values of the units in `bytes`.
    fn values(&self, bytes: &[u8], out: &mut Vec<f32>) -> Result<(), MapError> {
        let start = out.len();
        out.resize(
            start + bytes.len() / self.unit.bytes() * self.unit.lanes(),
            0.0,
        );
        let to = &mut out[start..];
        // Each arm writes into the slots made above (a loop over zipped slices, which the
        // compiler vectorizes where it can; an iterator extended onto the vector it does not).
        match self.unit {
            Unit::Plain(Dtype::F32) => fill(to, bytes, |c: [u8; 4]| f32::from_le_bytes(c)),
            Unit::Plain(Dtype::BF16) => fill(to, bytes, |c: [u8; 2]| {
                f32::from_bits(u32::from(u16::from_le_bytes(c)) << 16)
            }),
            Unit::Plain(Dtype::F64) => fill(to, bytes, |c: [u8; 8]| f64::from_le_bytes(c) as f32),
            Unit::Plain(Dtype::I32) => fill(to, bytes, |c: [u8; 4]| i32::from_le_bytes(c) as f32),
            Unit::Plain(Dtype::U32) => fill(to, bytes, |c: [u8; 4]| u32::from_le_bytes(c) as f32),
            // Through f64, as the elements' exact values are (one rounding to f32 from there).
            Unit::Plain(Dtype::I64) => {
                fill(to, bytes, |c: [u8; 8]| i64::from_le_bytes(c) as f64 as f32)
            }
            Unit::Plain(Dtype::U64) => {
                fill(to, bytes, |c: [u8; 8]| u64::from_le_bytes(c) as f64 as f32)
            }
            Unit::Plain(d) if d.bits() == 16 => fill(to, bytes, |c: [u8; 2]| {
                self.table[usize::from(u16::from_le_bytes(c))]
            }),
            Unit::Plain(d) if d.bits() == 8 => {
                fill(to, bytes, |[b]: [u8; 1]| self.table[usize::from(b)])
            }
            Unit::Plain(d) => return Err(MapError::Unsupported(d.name().to_string())),
            Unit::Nibbles => {
                for (pair, &b) in to.chunks_exact_mut(2).zip(bytes) {
                    pair[0] = self.table[usize::from(b & 0x0F)];
                    pair[1] = self.table[usize::from(b >> 4)];
                }
            }
            Unit::Block { ty, .. } => dequantize(ty, bytes, to)?,
        }
        Ok(())
    }
}

/// Sets `to[i]` to `decode` of the `i`-th `N`-byte value of `bytes`.
fn fill<const N: usize>(to: &mut [f32], bytes: &[u8], decode: impl Fn([u8; N]) -> f32) {
    for (o, c) in to.iter_mut().zip(bytes.chunks_exact(N)) {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        *o = decode(a);
    }
}

/// The value of every bit pattern of an 8- or 16-bit `dtype` (F4: its 16 nibbles).
fn lookup_table(dtype: Dtype) -> Vec<f32> {
    let n = if dtype.bits() <= 8 { 256 } else { 65536 };
    match decoder(dtype) {
        Some(decode) => (0..n as u64).map(|v| decode(v) as f32).collect(),
        None => vec![f32::NAN; n],
    }
}

/// Appends each lane's bit pattern (little-endian) of the units in `bytes`.
pub(crate) fn lane_patterns(unit: Unit, bytes: &[u8], out: &mut Vec<u64>) {
    match unit {
        Unit::Plain(d) => {
            let w = (d.bits() / 8) as usize;
            out.extend(bytes.chunks_exact(w).map(|c| {
                let mut b = [0u8; 8];
                b[..w].copy_from_slice(c);
                u64::from_le_bytes(b)
            }));
        }
        Unit::Nibbles => {
            out.extend(
                bytes
                    .iter()
                    .flat_map(|&b| [u64::from(b & 0x0F), u64::from(b >> 4)]),
            );
        }
        Unit::Block { .. } => {
            // Only the values layers use ggml blocks: their patterns are the dequantized f32's,
            // which `Sampler::samples` compares by value.
        }
    }
}

/// (mantissa bits, exponent bits, bias) of a float dtype: the field widths of
/// [`Dtype::float_layout`], the bias `2^(e−1) − 1` (one more for the "fnuz" 8-bit types; E8M0, a
/// bare exponent, 127).
pub(crate) fn exponent_field(dtype: Dtype) -> Option<(u32, u32, i64)> {
    let layout = dtype.float_layout()?;
    let e = layout.exponent_bits;
    let fnuz = matches!(dtype, Dtype::F8_E4M3FNUZ | Dtype::F8_E5M2FNUZ);
    let bias = (1i64 << (e - 1)) - 1 + i64::from(fnuz);
    Some((layout.mantissa_bits, e, bias))
}
