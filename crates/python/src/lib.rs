//! `bitlens._bitlens`, the native half of the `bitlens` Python package: the engine's commands
//! (`bitlens_engine`, what the CLI runs) as Python functions, with conversions and errors only —
//! no rule of its own. The public API, its docstrings and the exception classes are the Python
//! half's (`python/bitlens/__init__.py`); this module is private.
//!
//! - [`commands`]: `inspect`, `diff`, `compress`, `decompress` — paths in, the documents of
//!   `bitlens_report` out, as the objects `json.loads` makes of the CLI's `--json` output.
//! - [`arrays`]: `.bls` snapshots and checkpoints as NumPy arrays of bytes (`TensorFile`,
//!   `save`), the checkpoint formats' own rules applied by the engine.
//! - [`catalogue`]: the files of a catalogue run and one file's record (`bitlens.catalogue`).
//! - [`call`]: every call into the engine, with the GIL released, on the caller's rayon pool or a
//!   pool of `threads`, its warnings passed on as Python warnings.
//! - [`errors`]: the engine's error classes as the package's exceptions, with the CLI's message.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arrays;
pub mod call;
pub mod catalogue;
pub mod commands;
pub mod errors;

use pyo3::prelude::*;

/// The module `bitlens._bitlens`.
#[pymodule]
fn _bitlens(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    commands::register(m)?;
    arrays::register(m)?;
    catalogue::register(m)?;
    Ok(())
}
