//! Inshrinkerator (paper 002, `../shared/papers/`): lossy in-training checkpoint compression
//! under a quality budget, with its quantization-aware delta. This crate is the codec's core,
//! without I/O: tensors come in as `f32` values (see [`values`]) and go out as byte streams.
//!
//! Pipeline, per checkpoint:
//! 1. [`search::Prepared::new`] ranks every tensor ([`importance`]: magnitude, and sensitivity
//!    from Adam's second moment when given) and sketches the importances per layer type
//!    ([`sketch`], §4.3).
//! 2. [`search::search`] finds a [`config::Plan`] (one setting for embeddings, one for the rest,
//!    §5) that maximises the ratio while a [`search::Quality`] check passes: guided exhaustive
//!    search at the first checkpoint, delta-neighbourhood search after.
//! 3. Each tensor is partitioned ([`partition`], §4.2) and quantized ([`quantize`], §4.4) into
//!    [`levels::Quantized`]; [`stream::encode`] writes it, as a delta ([`delta`], §6) against the
//!    previous checkpoint's levels when one is given. [`stream::decode`] inverts it.
//!
//! [`report`]: the search in the words of `bitlens_report::inshrink` (what the CLI prints and a
//! snapshot's annex stores).
//!
//! The lossy lesson's view of the non-uniform bins against uniform ones (Table 7) is
//! `bitlens_lessons::bins`.

pub mod config;
pub mod delta;
pub mod importance;
pub mod levels;
pub mod partition;
pub mod quantize;
pub mod report;
pub mod search;
pub mod sketch;
pub mod stream;
pub mod values;

pub use config::{Configuration, Group, Metric, Plan, Setting};
pub use importance::LayerKind;
pub use levels::{ProtectStorage, Quantized};
pub use quantize::{Codebook, NonUniform, Quantizer, Uniform};
pub use search::{search, L2Budget, Prepared, Quality, SearchReport, TensorInput};
pub use sketch::Sketch;
pub use stream::{decode, encode, DecodeError, Decoded, EncodeError, Meta};
