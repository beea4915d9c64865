//! Catalogue runs from Python (`bitlens.catalogue`, over Ray or a process pool): the files a run
//! covers and one file's record, as `bitlens_engine::catalogue` makes them (LMC §3's statistics
//! kept in sidecars, LMC §4's snapshots when asked). The orchestration — tasks, Parquet — is the
//! Python half's; every rule is the engine's.

use crate::call::{document, run};
use bitlens_engine::catalogue::{list, run_file, CatalogueOptions};
use bitlens_report::catalogue::CatalogueFile;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(catalogue_files, m)?)?;
    m.add_function(wrap_pyfunction!(catalogue_file, m)?)?;
    Ok(())
}

/// The files the `sources` name (`bitlens_engine::catalogue::list`), as `CatalogueFile` dicts.
#[pyfunction]
fn catalogue_files<'py>(py: Python<'py>, sources: Vec<PathBuf>) -> PyResult<Bound<'py, PyAny>> {
    let files = run(py, None, |_| list(&sources))?;
    document(py, &files)
}

/// One file's `FileRecord`: measured, or its sidecar reused, its snapshot written with
/// `compress`; a failure is the record's `error`, never an exception.
#[pyfunction]
#[pyo3(signature = (checkpoint, file, out, *, beside=false, compress=None, threads=None))]
fn catalogue_file<'py>(
    py: Python<'py>,
    checkpoint: String,
    file: String,
    out: PathBuf,
    beside: bool,
    compress: Option<String>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let item = CatalogueFile { checkpoint, file };
    let options = CatalogueOptions {
        out,
        beside,
        compress,
    };
    let record = run(py, threads, |progress| {
        Ok(run_file(&item, &options, progress))
    })?;
    document(py, &record)
}
