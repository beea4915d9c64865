//! Weight maps: a tensor's values as an image, one cell per block of values, computed by
//! streaming only the bytes of the region shown.
//!
//! The tensor's lanes are laid on a 2-D [`Grid`] (a matrix as rows × columns, an N-D tensor by its
//! last dimension, a vector wrapped); a [`Window`] picks a region of it and a block size; each
//! block of lanes becomes one cell of a [`Tile`], holding the mean, minimum and maximum of what
//! its lanes contribute for the [`Layer`] — their values (ggml blocks dequantized), one bit of
//! their patterns, their exponent field, or, between two checkpoints of the tensor, how each lane
//! changed — with the fraction of zeros (unchanged lanes) and the lane counts. A viewer draws the
//! cells with whichever aggregate it shows, and asks for a finer window when it zooms in; the
//! bytes read are those of the region's rows (row by row when the region is a narrow part of
//! wide rows), in pieces of about 16 MiB.
//!
//! [`elements`] reads a few lanes exactly: index, value and bit pattern (a map's hover readout,
//! a table of the first values).
//!
//! This is the "where in the tensor" view beside LMC's per-bit statistics (LMC §3, Fig. 5–6): the
//! bit-plane layer is LMC's bit set ratio resolved by position, the changes layer BitSnap's
//! changed elements (§3.2) by position.

mod accumulate;
pub mod elements;
mod fold;
pub mod grid;
mod lanes;
mod read;
mod tile;

pub use elements::{elements, Element, MAX_ELEMENTS};
pub use fold::{MapFold, Piece};
pub use grid::{Grid, Window};
pub use read::{LOCAL_GAP, REMOTE_GAP};
pub use tile::{Cells, Tile};

use bitlens_tensors::format::bytes::BytesError;
use bitlens_tensors::format::gguf::DequantError;
use bitlens_tensors::format::Entry;
use bitlens_tensors::{ReadAt, SourceError};
use lanes::Unit;
use read::LaneReader;
use serde::{Deserialize, Serialize};

/// Most cells one [`Tile`] may have (about 28 bytes each while it is computed).
pub const MAX_CELLS: u64 = 1 << 22;

/// What each lane contributes to its cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Layer {
    /// Its value (a ggml block type's dequantized value).
    Values,
    /// Bit `bit` of its pattern (0 = least significant), as 0 or 1: a cell's mean is the
    /// fraction of its lanes with the bit set.
    BitPlane {
        /// The bit.
        bit: u8,
    },
    /// Its exponent field minus the bias (floats only).
    Exponent,
    /// Between two checkpoints: the second's value minus the first's; a lane whose bits did not
    /// change counts as a zero.
    Changes,
}

/// Why a weight map (or an element read) could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// The tensor's bytes could not be read.
    #[error(transparent)]
    Bytes(#[from] BytesError),
    /// Reading the source failed.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A ggml block did not dequantize.
    #[error(transparent)]
    Dequant(#[from] DequantError),
    /// The tensor's bytes lie past the file's end.
    #[error("the tensor's {len} bytes at offset {offset} lie past the file's end ({size} bytes)")]
    PastEnd {
        /// Offset of the tensor's bytes.
        offset: u64,
        /// Their length.
        len: u64,
        /// The file's size.
        size: u64,
    },
    /// The element type has no values to map here.
    #[error("the values of {0} tensors cannot be mapped")]
    Unsupported(String),
    /// The layer means nothing for the element type.
    #[error("the {layer:?} layer does not apply to {ty} tensors")]
    Layer {
        /// The layer asked for.
        layer: Layer,
        /// The tensor's element type.
        ty: String,
    },
    /// The window does not lie in the grid, or has empty blocks.
    #[error("window {window:?} does not fit a grid of {rows} × {cols}")]
    Window {
        /// The window asked for.
        window: Window,
        /// Rows of the grid.
        rows: u64,
        /// Columns of the grid.
        cols: u64,
    },
    /// The window has more cells than a tile may hold.
    #[error("the window has {cells} cells; at most {max} are computed at once")]
    TooManyCells {
        /// Cells of the window.
        cells: u64,
        /// The limit.
        max: u64,
    },
    /// The shape has more values than a `u64` counts.
    #[error("the shape {0:?} has more values than can be counted")]
    Shape(Vec<u64>),
    /// The changes layer needs two tensors of one element type and shape.
    #[error("{0}")]
    Pair(String),
    /// A streamed tensor ended before its shape says.
    #[error("the tensor's bytes end before its shape says")]
    ShortTensor,
    /// Spans were asked out of order of a streamed tensor (an internal error).
    #[error("a streamed tensor was read backwards")]
    Backwards,
}

/// The tile of `window` of `entry` (read from `src`) for `layer`; [`Layer::Changes`] needs
/// `other`, the same tensor in the checkpoint it changed to (same element type and shape).
/// Rows that skip at most `gap` bytes between them are read in one stretch ([`LOCAL_GAP`],
/// [`REMOTE_GAP`]), others row by row.
pub fn weight_map(
    src: &dyn ReadAt,
    entry: &Entry,
    other: Option<(&dyn ReadAt, &Entry)>,
    window: &Window,
    layer: Layer,
    gap: u64,
) -> Result<Tile, MapError> {
    let fold = MapFold::new(entry, other.map(|(_, e)| e), window, layer)?;
    read_and_fold(fold, src, entry, other, gap)
}

/// Reads `fold`'s pieces of `entry` (and of `other`'s tensor when it pairs) and folds them.
fn read_and_fold(
    mut fold: MapFold,
    src: &dyn ReadAt,
    entry: &Entry,
    other: Option<(&dyn ReadAt, &Entry)>,
    gap: u64,
) -> Result<Tile, MapError> {
    let unit = Unit::of(entry.ty)?.0;
    let mut a = LaneReader::new(src, entry, unit)?;
    let mut b = match other.filter(|_| fold.pairs()) {
        Some((src_b, entry_b)) => Some(LaneReader::new(src_b, entry_b, unit)?),
        None => None,
    };
    let seekable = a.seekable() && b.as_ref().is_none_or(|b| b.seekable());
    let (mut buf_a, mut buf_b) = (Vec::new(), Vec::new());
    for piece in fold.pieces(seekable, gap) {
        a.read(piece.start, piece.end, &mut buf_a)?;
        if let Some(b) = &mut b {
            b.read(piece.start, piece.end, &mut buf_b)?;
        }
        fold.fold(&piece, &buf_a, b.as_ref().map(|_| buf_b.as_slice()))?;
    }
    Ok(fold.finish())
}

/// The grid of `entry`, refused when its shape overflows.
fn grid_of(entry: &Entry, lanes_per_element: u64) -> Result<Grid, MapError> {
    Grid::lanes_of(&entry.shape, lanes_per_element)
        .map(|_| Grid::of_shape(&entry.shape, lanes_per_element))
        .ok_or_else(|| MapError::Shape(entry.shape.clone()))
}

#[cfg(test)]
mod tests;
