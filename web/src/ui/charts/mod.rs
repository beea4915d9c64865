//! SVG chart components drawn with Yew: labelled axes with units, legends, and hover values (every
//! mark carries a `data-tip` read by one delegated handler per chart, plus a native `<title>`).
//!
//! - [`frame`]: the figure, axes (linear, and log₁₀ for errors), grid and hover plumbing shared by
//!   all charts.
//! - [`bars`]: vertical bars with optional labelled bands (bit-position charts, histograms), and
//!   the bars of an equal-width histogram ([`binned_bars`]).
//! - [`lines`]: line series over a numeric x axis (block entropy profile, flips over steps).
//! - [`heatmap`]: a rows × columns colour grid (tensors × bit positions).
//! - [`hbars`]: horizontal bars, one per named row (changed fraction per tensor).

pub mod bars;
pub mod frame;
pub mod hbars;
pub mod heatmap;
pub mod lines;

pub use bars::{binned_bars, Band, Bar, BarChart};
pub use hbars::{HBarChart, HBarRow};
pub use heatmap::Heatmap;
pub use lines::{LineChart, Series};
