//! How every call into the engine runs: with the GIL released (other Python threads run, and
//! several threads can be inside bitlens at once), on the caller's rayon pool — the global pool,
//! one thread per core — or on a pool of `threads` threads, as the CLI's `--threads` does. That
//! pool is made at the calling thread's first call with that many threads and kept for its next
//! ones ([`pool`]): a pipeline calling `threads=1` per file no longer starts a thread per call.
//! Each call is a new run for remote files (their probes are made again). The engine's warnings
//! are collected and raised as `bitlens.BitlensWarning`s once the call is over; its errors become
//! the package's exceptions ([`crate::errors`]).

use crate::errors;
use bitlens_engine::{Error, Progress};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

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
            Some(n) => pool(n)?.install(|| f(&warnings)),
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

thread_local! {
    /// The pools this thread's calls ran on: (process id, threads, pool).
    static POOLS: RefCell<Vec<(u32, usize, Arc<rayon::ThreadPool>)>> =
        const { RefCell::new(Vec::new()) };
}

/// The calling thread's pool of `n` threads (at least 1), made at its first call with `n` and
/// kept until the thread ends. Making one per call started its threads each time, and each
/// started thread took its own allocator arena, whose memory the call then faulted in afresh:
/// `threads=1` calls on a tiny file took 0.17 ms instead of 0.07, on a 13 MB one 3–6 % longer
/// (BENCHMARKS.md, "The main thread works"). Each Python thread has its own pools, so calls from
/// several threads still run at once. A pool made before a `fork` has no threads in the child:
/// the child makes its own, and forgets (never drops) the parent's, whose locks may have been
/// held by a parent thread at the fork.
fn pool(n: usize) -> Result<Arc<rayon::ThreadPool>, Error> {
    let pid = std::process::id();
    POOLS.with(|pools| {
        let mut pools = pools.borrow_mut();
        if pools.iter().any(|&(at, _, _)| at != pid) {
            for inherited in std::mem::take(&mut *pools) {
                std::mem::forget(inherited);
            }
        }
        if let Some((_, _, p)) = pools.iter().find(|&&(_, k, _)| k == n) {
            return Ok(p.clone());
        }
        let p = Arc::new(
            rayon::ThreadPoolBuilder::new()
                .num_threads(n.max(1))
                .build()
                .map_err(|e| Error::invalid(format!("threads={n}: {e}")))?,
        );
        pools.push((pid, n, p.clone()));
        Ok(p)
    })
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
