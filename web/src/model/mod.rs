//! The app's data and logic that need no browser: they build and are unit-tested on the host.
//!
//! - [`format`](mod@format): human-readable numbers.
//! - [`scale`]: chart scales and tick positions.
//! - [`grouping`]: dropped / picked files → checkpoints (single files, shard sets, directories).
//! - [`checkpoint`]: a loaded checkpoint: its files, headers, tensor rows and statistics.
//! - [`codec`]: codec presets, compression options and the snapshot results of the codec panel.
//! - [`label`]: display labels that tell loaded checkpoints apart (path tails, steps, numbers).
//! - [`compare`]: two checkpoints matched tensor by tensor, and their flip statistics.
//! - [`table`]: sorting and filtering of the tensor table.
//! - [`table_html`]: the tensor table's rows as escaped HTML.
//! - [`plan`]: splitting the statistics and comparison work into worker tasks.
//! - [`redraw`]: how often the page redraws while the statistics run.
//! - [`bits`]: which bit positions are sign / exponent / mantissa.
//! - [`link`]: the view state a link carries (`?url=…&tab=…&tensor=…`), URLs read as paths.
//! - [`report`]: the loaded checkpoints as `bitlens inspect --json` reports them.
//! - [`quant`]: code sizes and scale bins of a block-quantized tensor's Quantization view.
//! - [`weightmap`]: the weight map's zoom, pan, pixels and colour scales.
//! - [`sidecar`]: whether a remote file's sidecar gives its statistics, or the note saying why not.
//! - [`snapshot`]: a `.bls` snapshot as a checkpoint (tensors from its index, bytes decoded).

pub mod bits;
pub mod checkpoint;
pub mod codec;
pub mod compare;
pub mod format;
pub mod grouping;
pub mod label;
pub mod link;
pub mod plan;
pub mod quant;
pub mod redraw;
pub mod report;
pub mod scale;
pub mod sidecar;
pub mod snapshot;
pub mod table;
pub mod table_html;
pub mod weightmap;
