//! The weight map's logic that needs no browser: what a pixel shows ([`Aggregate`] of a
//! [`Layer`]'s cells, [`Quantity`]), where the view is ([`viewport::Viewport`]: zoom and pan
//! over the tensor's grid, and the finer window to ask for once the map's base tile is too
//! coarse), the pixels made from the tiles a worker computed ([`raster`]), the colour scales
//! with their legend ([`colour`]), and a window cut into row bands for several workers and the
//! bands' tiles put back together ([`bands`]).

pub mod bands;
pub mod colour;
pub mod raster;
pub mod viewport;

use bitlens_stats::weightmap::{Layer, Tile};

/// Most cells of the map's base tile: the whole tensor in blocks this fine is computed once, and
/// zooming in is drawn from it until a pixel covers less than one of its blocks.
pub const BASE_CELLS: u64 = 1 << 20;

/// What a pixel shows when it covers a block of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregate {
    /// The mean of the block's finite values.
    Mean,
    /// The largest absolute value.
    AbsMax,
    /// The spread: largest minus smallest value.
    Range,
    /// The fraction of zeros (for changes: of lanes that changed).
    Zeros,
}

impl Aggregate {
    /// Every aggregate, in the order offered.
    pub const ALL: [Aggregate; 4] = [
        Aggregate::Mean,
        Aggregate::AbsMax,
        Aggregate::Range,
        Aggregate::Zeros,
    ];

    /// Its name in the page's controls and `data-*` attributes.
    pub fn name(self) -> &'static str {
        match self {
            Aggregate::Mean => "mean",
            Aggregate::AbsMax => "absmax",
            Aggregate::Range => "range",
            Aggregate::Zeros => "zeros",
        }
    }

    /// The aggregate of a name.
    pub fn from_name(name: &str) -> Option<Aggregate> {
        Aggregate::ALL.into_iter().find(|a| a.name() == name)
    }

    /// Its label for `layer`.
    pub fn label(self, layer: Layer) -> &'static str {
        match (self, layer) {
            (Aggregate::Mean, Layer::BitPlane { .. }) => "fraction of values with the bit set",
            (Aggregate::Mean, Layer::Changes) => "mean change",
            (Aggregate::Mean, _) => "mean",
            (Aggregate::AbsMax, Layer::Changes) => "largest absolute change",
            (Aggregate::AbsMax, _) => "absolute max",
            (Aggregate::Range, _) => "max − min",
            (Aggregate::Zeros, Layer::Changes) => "fraction changed",
            (Aggregate::Zeros, _) => "fraction of zeros",
        }
    }
}

/// How values map to the colour scale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scale {
    /// Proportional to the value.
    Linear,
    /// Symmetric log: linear near zero, logarithmic beyond a threshold.
    SymLog,
    /// By rank among the pixels shown (each colour step holds as many pixels).
    Quantile,
}

impl Scale {
    /// Every scale, in the order offered.
    pub const ALL: [Scale; 3] = [Scale::Linear, Scale::SymLog, Scale::Quantile];

    /// Its name in the page's controls.
    pub fn name(self) -> &'static str {
        match self {
            Scale::Linear => "linear",
            Scale::SymLog => "symlog",
            Scale::Quantile => "quantile",
        }
    }

    /// The scale of a name.
    pub fn from_name(name: &str) -> Option<Scale> {
        Scale::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// What the colours of a map mean: an aggregate of a layer, diverging around zero or sequential
/// over its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantity {
    /// The layer the cells aggregate.
    pub layer: Layer,
    /// What a pixel shows.
    pub aggregate: Aggregate,
}

impl Quantity {
    /// True when the colours diverge around zero (signed quantities), false when they run over
    /// the range shown (fractions, magnitudes, exponents).
    pub fn diverging(&self) -> bool {
        matches!(
            (self.layer, self.aggregate),
            (Layer::Values | Layer::Changes, Aggregate::Mean)
        )
    }

    /// A fixed range the colours span, where the quantity has one (fractions: 0..1).
    pub fn fixed_range(&self) -> Option<(f32, f32)> {
        match (self.layer, self.aggregate) {
            (_, Aggregate::Zeros) | (Layer::BitPlane { .. }, Aggregate::Mean) => Some((0.0, 1.0)),
            _ => None,
        }
    }

    /// The quantity of cell `i` of `tile` on its own.
    pub fn of_cell(&self, tile: &Tile, i: usize) -> f32 {
        match self.aggregate {
            Aggregate::Mean => tile.mean.0[i],
            Aggregate::AbsMax => tile.min.0[i].abs().max(tile.max.0[i].abs()),
            Aggregate::Range => tile.max.0[i] - tile.min.0[i],
            Aggregate::Zeros => self.zeros_shown(tile.zeros.0[i]),
        }
    }

    /// The zero fraction as shown: for changes, the fraction changed.
    pub fn zeros_shown(&self, zeros: f32) -> f32 {
        if self.layer == Layer::Changes {
            1.0 - zeros
        } else {
            zeros
        }
    }

    /// Its label.
    pub fn label(&self) -> String {
        let of = match self.layer {
            Layer::Values => "values".to_string(),
            Layer::BitPlane { bit } => format!("bit {bit}"),
            Layer::Exponent => "exponents (unbiased)".to_string(),
            Layer::Changes => "changes (second − first)".to_string(),
        };
        format!("{} of {of}", self.aggregate.label(self.layer))
    }
}

/// A `rows × cols` f32 matrix at offset 0 of its bytes, with zeros at every 13th value: (bytes,
/// entry, values), for the tests of the map's modules.
#[cfg(test)]
pub(crate) fn test_matrix(
    rows: u64,
    cols: u64,
) -> (Vec<u8>, bitlens_tensors::format::Entry, Vec<f32>) {
    use bitlens_tensors::format::{Data, ElementType, Entry};
    let values: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 64.0 * if i % 13 == 0 { 0.0 } else { 1.0 })
        .collect();
    let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let entry = Entry {
        name: "w".into(),
        ty: ElementType::Dtype(bitlens_tensors::Dtype::F32),
        shape: vec![rows, cols],
        data: Data::Range {
            offset: 0,
            len: rows * cols * 4,
        },
    };
    (bytes, entry, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_quantities_know_their_colours() {
        for a in Aggregate::ALL {
            assert_eq!(Aggregate::from_name(a.name()), Some(a));
        }
        for s in Scale::ALL {
            assert_eq!(Scale::from_name(s.name()), Some(s));
        }
        let q = |layer, aggregate| Quantity { layer, aggregate };
        assert!(q(Layer::Values, Aggregate::Mean).diverging());
        assert!(!q(Layer::Values, Aggregate::AbsMax).diverging());
        assert_eq!(
            q(Layer::BitPlane { bit: 3 }, Aggregate::Mean).fixed_range(),
            Some((0.0, 1.0))
        );
        assert_eq!(q(Layer::Changes, Aggregate::Zeros).zeros_shown(0.25), 0.75);
        assert_eq!(
            q(Layer::Changes, Aggregate::Zeros).label(),
            "fraction changed of changes (second − first)"
        );
    }
}
