//! What a weight map computes for a [`Window`]: per cell, the mean, minimum and maximum of its
//! lanes' samples, the fraction of zeros (for [`Layer::Changes`]: of unchanged lanes), and how
//! many lanes and finite samples it holds ([`Tile`]).
//!
//! The per-cell figures are [`Cells`]: `f32`s that cross a worker boundary as one byte string
//! (serde `bytes`, a `Uint8Array` in JavaScript), not as a list of numbers.

use super::grid::{Grid, Window};
use super::Layer;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// One `f32` per cell, row-major over the window's cells; NaN where a cell has no finite sample.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cells(pub Vec<f32>);

impl Serialize for Cells {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = vec![0u8; self.0.len() * 4];
        for (b, v) in bytes.chunks_exact_mut(4).zip(&self.0) {
            b.copy_from_slice(&v.to_le_bytes());
        }
        s.serialize_bytes(&bytes)
    }
}

impl<'de> Deserialize<'de> for Cells {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Cells, D::Error> {
        d.deserialize_byte_buf(CellsVisitor)
    }
}

/// Reads [`Cells`] from a byte string (or a sequence of bytes, as JSON gives it).
struct CellsVisitor;

impl CellsVisitor {
    fn cells<E: de::Error>(bytes: &[u8]) -> Result<Cells, E> {
        if !bytes.len().is_multiple_of(4) {
            return Err(E::invalid_length(bytes.len(), &"a multiple of 4 bytes"));
        }
        let mut cells = vec![0.0f32; bytes.len() / 4];
        for (v, c) in cells.iter_mut().zip(bytes.chunks_exact(4)) {
            *v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(Cells(cells))
    }
}

impl<'de> Visitor<'de> for CellsVisitor {
    type Value = Cells;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("little-endian f32 values as bytes")
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Cells, E> {
        Self::cells(v)
    }

    fn visit_byte_buf<E: de::Error>(self, v: Vec<u8>) -> Result<Cells, E> {
        Self::cells(&v)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Cells, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1 << 20));
        while let Some(b) = seq.next_element::<u8>()? {
            bytes.push(b);
        }
        Self::cells(&bytes)
    }
}

/// A window of a tensor's weight map: one cell per block of lanes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tile {
    /// The tensor's grid.
    pub grid: Grid,
    /// The region and block size the cells cover.
    pub window: Window,
    /// What each lane contributed.
    pub layer: Layer,
    /// Mean of each cell's finite samples.
    pub mean: Cells,
    /// Smallest finite sample of each cell.
    pub min: Cells,
    /// Largest finite sample of each cell.
    pub max: Cells,
    /// Fraction of each cell's lanes whose sample is zero ([`Layer::Changes`]: lanes whose bits
    /// did not change).
    pub zeros: Cells,
    /// Finite samples per cell (NaN and ±Inf are left out of mean, min and max).
    pub finite: Cells,
    /// Lanes per cell (fewer at the region's edges and past a wrapped vector's end).
    pub lanes: Cells,
    /// Bytes read to compute it (both tensors' for [`Layer::Changes`]).
    pub bytes_read: u64,
}
