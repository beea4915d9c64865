//! How every call into the engine runs: with the GIL released (other Python threads run, and
//! several threads can be inside bitlens at once), on the caller's rayon pool — the global pool,
//! one thread per core — or on a pool of `threads` threads made for the call, as the CLI's
//! `--threads` does. Each call is a new run for remote files (their probes are made again). The
//! engine's warnings are collected and raised as `bitlens.BitlensWarning`s once the call is over;
//! its errors become the package's exceptions ([`crate::errors`]).

use crate::errors;
use bitlens_engine::{Error, Progress};
use pyo3::prelude::*;
use std::ffi::CString;
use std::sync::Mutex;

/// The engine's warnings of one call.
#[derive(Default)]
struct Warnings(Mutex<Vec<String>>);

impl Progress for Warnings {
    fn warn(&self, message: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(message.to_owned());
    }
}

/// Runs `f` without the GIL, on a pool of `threads` threads (the global pool with `None`), and
/// turns its error into the package's exception and its warnings into Python warnings.
pub fn run<T: Send>(
    py: Python<'_>,
    threads: Option<usize>,
    f: impl FnOnce(&dyn Progress) -> Result<T, Error> + Send,
) -> PyResult<T> {
    let warnings = Warnings::default();
    let result = py.detach(|| {
        bitlens_engine::http::forget_probes();
        match threads {
            None => f(&warnings),
            Some(n) => rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .map_err(|e| Error::invalid(format!("threads={n}: {e}")))?
                .install(|| f(&warnings)),
        }
    });
    let warnings = warnings.0.into_inner().unwrap_or_else(|e| e.into_inner());
    if !warnings.is_empty() {
        let category = py.import("bitlens")?.getattr("BitlensWarning")?;
        for w in warnings {
            let text = CString::new(w.replace('\0', " ")).unwrap_or_default();
            PyErr::warn(py, &category, &text, 2)?;
        }
    }
    result.map_err(|e| errors::to_py(py, &e))
}

/// A document (`bitlens_report`) as the Python objects `json.loads` makes of the CLI's `--json`
/// output: the same text, parsed by the same parser, so the two are equal.
pub fn document<'py>(
    py: Python<'py>,
    value: &impl serde::Serialize,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value)
        .map_err(|e| errors::to_py(py, &Error::invalid(format!("report: {e}"))))?;
    py.import("json")?.getattr("loads")?.call1((text,))
}
