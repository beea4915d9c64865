//! bitlens' commands on this machine — what the `bitlens` CLI and the Python package share, so
//! neither holds a second implementation of anything:
//!
//! - where bytes come from: local files and `http(s)` URLs as `ReadAt` sources ([`source`],
//!   [`http`]: Range requests only, probed once, retried), and a user's path resolved to the
//!   files of one checkpoint of any format ([`checkpoint`]);
//! - the statistics of files on the rayon pool, large tensors split in parts ([`analyze`]);
//! - each command as a function from paths to its report (`bitlens_report`): [`inspect`]
//!   (checkpoints, `.bls` snapshots — [`snapshots`] —, chains), [`diff`], [`compress`] and
//!   [`decompress`] (the container of LMC §4 with every codec of the papers), [`chain`] (LMC
//!   §3.1's incremental snapshots), [`inshrink`] (paper 002), writing outputs safely
//!   ([`output`]); a `compress` request's options checked and run ([`plan`]);
//! - a snapshot's or checkpoint's tensors as arrays, one at a time or all in one pass
//!   ([`arrays`]: what the Python package's `safe_open` and `load_file` read);
//! - sidecars, a file's statistics computed once (`<file>.bitlens.json`): writing one, finding
//!   and checking one next to a remote file ([`sidecar`]); a catalogue run's files and each
//!   file's resumable record ([`catalogue`]).
//!
//! I/O and threads live here, at the edge; the rules live in the core crates (tensors, stats,
//! codecs, snapshot, inshrink). Errors are one [`Error`] whose variant is the class of the cause;
//! progress goes to a caller's [`Progress`]. The rayon pool is the caller's (the CLI's
//! `--threads`, or a pool the Python package installs per call).
#![forbid(unsafe_code)]

pub mod analyze;
pub mod arrays;
pub mod catalogue;
pub mod chain;
pub mod checkpoint;
pub mod compress;
pub mod decompress;
pub mod diff;
pub mod error;
pub mod http;
pub mod inshrink;
pub mod inspect;
pub mod output;
pub mod plan;
pub mod progress;
pub mod sidecar;
pub mod snapshots;
pub mod source;

pub use checkpoint::{Checkpoint, Model, ModelFile, Shard};
pub use compress::{compress, Compressed, Totals};
pub use decompress::decompress;
pub use diff::diff;
pub use error::{Context, Error, ErrorKind, Result};
pub use inspect::{inspect, inspect_with, Inspection, Sidecars};
pub use progress::{Progress, Silent};
pub use source::{FileSource, Source};
