//! A few lanes of a tensor read exactly: each lane's index, value (f64, exact for every dtype
//! read here; a ggml block type's dequantized f32) and bit pattern — the weight map's hover
//! readout and its table of first values.

use super::lanes::{lane_patterns, Sampler, Unit};
use super::read::LaneReader;
use super::{Layer, MapError};
use crate::values::decoder;
use bitlens_tensors::format::Entry;
use bitlens_tensors::{Dtype, ReadAt};
use serde::{Deserialize, Serialize};

/// Most lanes one [`elements`] call reads.
pub const MAX_ELEMENTS: u64 = 4096;

/// One lane, exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Element {
    /// Its index among the tensor's lanes (row-major; a complex value's real part, then its
    /// imaginary part).
    pub index: u64,
    /// Its value (NaN and ±Inf as they are).
    pub value: f64,
    /// Its bit pattern as stored (a ggml block type: the dequantized f32's), in hexadecimal with
    /// `width / 4` digits (a string: a 64-bit pattern does not fit a JavaScript number).
    pub hex: String,
    /// Bits in the pattern.
    pub width: u32,
}

/// Lanes `start..start + count` of `entry` (clipped to the tensor; at most [`MAX_ELEMENTS`]).
pub fn elements(
    src: &dyn ReadAt,
    entry: &Entry,
    start: u64,
    count: u64,
) -> Result<Vec<Element>, MapError> {
    let (unit, lanes_per_element) = Unit::of(entry.ty)?;
    let grid = super::grid_of(entry, lanes_per_element)?;
    let end = start
        .saturating_add(count.min(MAX_ELEMENTS))
        .min(grid.lanes);
    if start >= end {
        return Ok(Vec::new());
    }
    let mut reader = LaneReader::new(src, entry, unit)?;
    let mut buf = Vec::new();
    let first = reader.read(start, end, &mut buf)?;
    let (values, bits, width) = match unit {
        Unit::Block { .. } => {
            let mut v = Vec::new();
            Sampler::new(unit, Layer::Values).samples(&buf, &mut v, None)?;
            let bits = v.iter().map(|x| u64::from(x.to_bits())).collect();
            (v.into_iter().map(f64::from).collect(), bits, 32)
        }
        _ => {
            let mut bits = Vec::new();
            lane_patterns(unit, &buf, &mut bits);
            let lane = match unit {
                Unit::Plain(d) => d,
                _ => Dtype::F4,
            };
            let values: Vec<f64> = bits.iter().map(|&b| exact(lane, b)).collect();
            (values, bits, unit.lane_bits())
        }
    };
    Ok((start..end)
        .map(|i| {
            let k = (i - first) as usize;
            Element {
                index: i,
                value: values[k],
                hex: format!("{:0digits$x}", bits[k], digits = width.div_ceil(4) as usize),
                width,
            }
        })
        .collect())
}

/// The exact value of bit pattern `bits` of a lane of `dtype`.
fn exact(dtype: Dtype, bits: u64) -> f64 {
    match dtype {
        Dtype::F64 => f64::from_bits(bits),
        Dtype::F32 => f64::from(f32::from_bits(bits as u32)),
        Dtype::I32 => f64::from(bits as u32 as i32),
        Dtype::U32 => f64::from(bits as u32),
        Dtype::I64 => bits as i64 as f64,
        Dtype::U64 => bits as f64,
        d => decoder(d).map_or(f64::NAN, |decode| decode(bits)),
    }
}
