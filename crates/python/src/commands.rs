//! The commands of the CLI as Python functions over paths and URLs: `inspect` (checkpoints of
//! any format, `.bls` snapshots, chains — LMC §3's statistics, the container of LMC §4), `diff`,
//! `compress` (every codec and option of `bitlens compress`, checked by the engine's
//! `plan`) and `decompress`. Each returns its document as Python objects.

use crate::call::{document, run};
use bitlens_engine::plan::{self, CompressArgs, Outcome};
use bitlens_engine::{Inspection, Sidecars};
use bitlens_report::transfer::DecompressedReport;
use pyo3::prelude::*;
use std::path::PathBuf;

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(inspect, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(compress, m)?)?;
    m.add_function(wrap_pyfunction!(decompress, m)?)?;
    m.add_function(wrap_pyfunction!(state_dict_name, m)?)?;
    Ok(())
}

/// `bitlens inspect --json PATHS`, measuring only `tensors` when given; remote files' sidecars
/// are used unless `sidecars` is false (`--no-sidecar`).
#[pyfunction]
#[pyo3(signature = (paths, tensors=None, threads=None, sidecars=true))]
fn inspect<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    tensors: Option<Vec<String>>,
    threads: Option<usize>,
    sidecars: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let sidecars = if sidecars {
        Sidecars::Use
    } else {
        Sidecars::Skip
    };
    let inspection = run(py, threads, |progress| {
        bitlens_engine::inspect_with(&paths, tensors.as_deref(), sidecars, progress)
    })?;
    match &inspection {
        Inspection::Checkpoints(r) => document(py, r),
        Inspection::Snapshots(r) => document(py, r),
        Inspection::Chains(r) => document(py, r),
    }
}

/// `bitlens diff --json A B`.
#[pyfunction]
#[pyo3(signature = (a, b, threads=None))]
fn diff<'py>(
    py: Python<'py>,
    a: PathBuf,
    b: PathBuf,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let report = run(py, threads, |progress| {
        bitlens_engine::diff(&a, &b, progress)
    })?;
    document(py, &report)
}

/// `bitlens compress INPUT -o OUTPUT` with every option of the command line; the document of
/// what was written (a snapshot's, a chain's or an Inshrinkerator search's).
#[pyfunction]
#[pyo3(signature = (
    input, output, codec, *, mantissa_bits=None, norm_block=512, clusters=16, base=None,
    max_error=None, eval_cmd=None, max_degradation=None, optimizer=None,
    protect_dtype="original", no_delta=false, chain=false, more=Vec::new(), key=None,
    skip_full_size=false, threads=None
))]
#[allow(clippy::too_many_arguments)]
fn compress<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    codec: &str,
    mantissa_bits: Option<u32>,
    norm_block: usize,
    clusters: u8,
    base: Option<PathBuf>,
    max_error: Option<f64>,
    eval_cmd: Option<String>,
    max_degradation: Option<f64>,
    optimizer: Option<PathBuf>,
    protect_dtype: &str,
    no_delta: bool,
    chain: bool,
    more: Vec<PathBuf>,
    key: Option<usize>,
    skip_full_size: bool,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let outcome = run(py, threads, |progress| {
        let args = CompressArgs {
            codec: codec.parse()?,
            mantissa_bits,
            norm_block,
            clusters,
            base,
            max_error,
            eval_cmd,
            max_degradation,
            optimizer,
            protect: plan::protect_storage(protect_dtype)?,
            no_delta,
            chain,
            more,
            key,
            skip_full_size,
            ..CompressArgs::new(input.clone(), output.clone())
        };
        plan::execute(&args, progress)
    })?;
    match &outcome {
        Outcome::Snapshot(c) => document(py, &c.report(&input, &output)),
        Outcome::Chain(r) => document(py, r),
        Outcome::Inshrink(r) => document(py, r),
    }
}

/// `bitlens decompress INPUT -o OUTPUT [--base B] [--tensor T] [--step S]`.
#[pyfunction]
#[pyo3(signature = (input, output, *, base=None, tensor=None, step=None, threads=None))]
fn decompress<'py>(
    py: Python<'py>,
    input: PathBuf,
    output: PathBuf,
    base: Option<PathBuf>,
    tensor: Option<String>,
    step: Option<String>,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let totals = run(py, threads, |progress| {
        bitlens_engine::decompress::restore(
            &input,
            &output,
            base.as_deref(),
            tensor.as_deref(),
            step.as_deref(),
            progress,
        )
    })?;
    document(
        py,
        &DecompressedReport {
            input: input.to_string_lossy().into_owned(),
            output: output.to_string_lossy().into_owned(),
            input_bytes: totals.map(|t| t.input),
            output_bytes: totals.map(|t| t.output),
        },
    )
}

/// The name the PyTorch reader gives a value at `keys` in a nested state dict
/// (`bitlens_tensors::naming::state_dict_name`).
#[pyfunction]
fn state_dict_name(keys: Vec<String>) -> String {
    bitlens_tensors::naming::state_dict_name(&keys)
}
