//! The format layer: every checkpoint format bitlens reads is turned into one [`Layout`] — its
//! tensors (name, element type, shape, where their bytes are) and its file-level metadata — by a
//! reader chosen from the file's first bytes ([`detect`]), never from its name. Statistics, diffs,
//! the page and the snapshot container consume layouts only.
//!
//! Readers read only what describes the tensors (a header, a zip's central directory and a
//! pickle, a GGUF's key/values and tensor infos), never a pass over the data, and every count,
//! size and offset they take from the file is checked against the file's size before it is used,
//! so a hostile file costs at most what its own size justifies.
//!
//! One module per format:
//! - [`safetensors`]: the header and the shard index of sharded checkpoints;
//! - [`gguf`]: llama.cpp's format, with the dequantization of its block-quantized types;
//! - [`pytorch`]: `torch.save` zips and legacy files, over its restricted [`pickle`] machine;
//! - [`numpy`]: `.npy` ([`npy`]) and `.npz` ([`npz`]);
//! - [`zip`]: the zip reader (with bounded inflate) that `.npz` and PyTorch zips share.
//!
//! And what is the same for every format: [`detect`] (which format a file is, module `detect`),
//! [`open`] (detect, then read: module `open`), the [`Layout`] readers produce (module `layout`),
//! [`bytes`] (a tensor's bytes in element order from any [`Data`]), [`coalesce`] (many small
//! reads as a few larger ones) and [`header_region`] (the bytes that describe a file's tensors,
//! which a sidecar's fingerprint covers: module `header_region`).

pub mod bytes;
pub mod coalesce;
mod detect;
pub mod gguf;
mod header_region;
mod layout;
pub mod numpy;
mod open;
pub mod pytorch;
pub mod safetensors;
pub mod zip;

pub use detect::{detect, Format, DETECT_BYTES};
pub use header_region::{header_region, safetensors_region, HeaderRegion};
pub use layout::{Data, ElementType, Entry, GgmlType, Layout, MetaValue};
pub use numpy::{npy, npz};
pub use open::{open, open_with, FormatError};
pub use pytorch::pickle;
