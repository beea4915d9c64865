//! Every JSON document bitlens prints or hands over, one serde type each, documented field by
//! field (docs/REPORTS.md is the schema a reader of the JSON needs, with units), shared by the CLI,
//! the wasm layer, the page and the Python package:
//!
//! | document | type | printed by |
//! | --- | --- | --- |
//! | checkpoint statistics | [`inspect::InspectReport`] | `bitlens inspect --json`, the embed's `inspect()` |
//! | what an embed has loaded | [`view::ViewReport`] | the embed's `inspect()` (checkpoints and `.bls` snapshots) |
//! | two checkpoints compared | [`diff::DiffReport`] | `bitlens diff --json` |
//! | `.bls` snapshots | [`snapshot::SnapshotsReport`] | `bitlens inspect --json` on snapshots |
//! | checkpoint chains | [`chain::ChainsReport`] | `bitlens inspect --json` on chain directories |
//! | `--codec auto` choices | [`auto::AutoReport`] | `bitlens compress --codec auto --json` |
//! | Inshrinkerator search | [`inshrink::CompressReport`] | `bitlens compress --codec inshrink --json` |
//! | codecs beside peers | [`bench::BenchReport`] | `bitlens bench --json` |
//! | a compression / decompression | [`transfer::CompressedReport`], [`transfer::DecompressedReport`] | `bitlens.compress_file()`, `bitlens.decompress_file()` |
//! | a file's precomputed statistics | [`sidecar::Sidecar`] | `bitlens sidecar` (`<file>.bitlens.json`) |
//! | a catalogue run's files and records | [`catalogue::CatalogueFile`], [`catalogue::FileRecord`] | `bitlens.catalogue_files()`, `bitlens.catalogue_file()` |
//!
//! Types only, with the constructors that need nothing but the format layer (a file's report from
//! its parsed header or layout). The logic that fills the others stays in the crate that owns it:
//! `bitlens_snapshot` reads a snapshot's, a chain's and `auto`'s reports, `bitlens_inshrink`
//! names its settings and search. This crate never depends on the codecs, snapshot or
//! Inshrinkerator crates, so the page compiles types, not codecs.
#![forbid(unsafe_code)]

pub mod auto;
pub mod bench;
pub mod catalogue;
pub mod chain;
pub mod codec;
pub mod diff;
pub mod inshrink;
pub mod inspect;
pub mod sidecar;
pub mod snapshot;
pub mod transfer;
pub mod view;

pub use codec::{CodecKind, ErrorReport, UnknownCodec};
