//! The page's views. Each is a function of the parts of the app's state it shows (its arguments, or
//! a `Props` struct of references) returning `Html`; charts inside are components that re-render
//! only when handed new data.
//!
//! - [`chrome`]: header and buttons, error list, progress bar, welcome panel, checkpoint list, tabs.
//! - [`summary`]: whole-checkpoint summary.
//! - [`table`]: the sortable, filterable tensor table.
//! - [`detail`]: one tensor's charts.
//! - [`quant`]: a block-quantized tensor's scales and codes (part of its detail).
//! - [`values`]: a tensor's values as a zoomable weight map, and its first values.
//! - [`compare`]: flips between checkpoints.
//! - [`codecs`]: compress checkpoints into snapshots, decompress snapshots.
//! - [`learn`]: the teaching lessons (`#learn/float`, `#learn/huffman`, `#learn/ans`).
//! - [`snapshot`]: what Summary and Detail add for a `.bls` snapshot (codecs, sizes, decoding).
//! - [`bitcharts`]: bit-position bars and bands shared by detail, summary and compare.

pub mod bitcharts;
pub mod chrome;
pub mod codecs;
pub mod compare;
pub mod detail;
pub mod learn;
pub mod quant;
pub mod snapshot;
pub mod summary;
pub mod table;
pub mod values;
