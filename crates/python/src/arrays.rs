//! Tensors as NumPy arrays of bytes: [`TensorFile`] reads a `.bls` snapshot's (the container of
//! LMC §4, any codec) or a checkpoint's tensors (`bitlens_engine::arrays`), each handed over as a
//! one-dimensional `uint8` array that owns the decoded bytes (no copy; the Python half views it
//! with the tensor's dtype and shape); `save` compresses arrays into a snapshot through the
//! safetensors file the reference writer would make of them
//! (`bitlens_tensors::format::safetensors::write`), read in place.

use crate::call::{document, run};
use crate::errors::usage;
use bitlens_engine::arrays::{ArrayInfo, TensorFile as EngineFile};
use bitlens_engine::plan::{self, CompressArgs, Run};
use bitlens_tensors::format::safetensors::write::{Image, TensorBytes};
use bitlens_tensors::Dtype;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use std::path::PathBuf;

/// Registers the class and the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TensorFile>()?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    Ok(())
}

/// An array's name, dtype (the safetensors name: `BF16`, `F8_E4M3`…) and shape.
type Described = (String, &'static str, Vec<u64>);

fn described(a: &ArrayInfo) -> Described {
    (a.name.clone(), a.dtype.name(), a.shape.clone())
}

/// A snapshot or checkpoint opened for reading its tensors as arrays.
#[pyclass(frozen, module = "bitlens._bitlens")]
pub struct TensorFile {
    file: EngineFile,
}

#[pymethods]
impl TensorFile {
    /// Opens `path` (a file or URL); `base` is the checkpoint a delta snapshot was made against.
    #[new]
    #[pyo3(signature = (path, base=None))]
    fn new(py: Python<'_>, path: PathBuf, base: Option<PathBuf>) -> PyResult<TensorFile> {
        let file = run(py, None, |_| EngineFile::open(&path, base.as_deref()))?;
        Ok(TensorFile { file })
    }

    /// Every tensor that is an array: `(name, dtype, shape)` in file order.
    fn arrays(&self) -> Vec<Described> {
        self.file.arrays().iter().map(described).collect()
    }

    /// Tensor `name` as an array: `(name, dtype, shape)`, or why it is none.
    fn array(&self, py: Python<'_>, name: &str) -> PyResult<Described> {
        let info = run(py, None, |_| self.file.array(name))?;
        Ok(described(&info))
    }

    /// The safetensors `__metadata__` as `(key, value)` pairs in file order, or `None`.
    fn metadata(&self) -> Option<Vec<(String, String)>> {
        self.file.metadata()
    }

    /// The bytes of the tensors `names`, each a `uint8` array, decoded in one pass.
    #[pyo3(signature = (names, threads=None))]
    fn read<'py>(
        &self,
        py: Python<'py>,
        names: Vec<String>,
        threads: Option<usize>,
    ) -> PyResult<Vec<Bound<'py, PyArray1<u8>>>> {
        let bytes = run(py, threads, |_| self.file.read_all(&names))?;
        Ok(bytes
            .into_iter()
            .map(|b| PyArray1::from_vec(py, b))
            .collect())
    }
}

/// One array to save: name, dtype name, shape and its bytes as a C-contiguous `uint8` array.
type Given<'py> = (String, String, Vec<u64>, PyReadonlyArray1<'py, u8>);

/// Compresses `tensors` (with `metadata`) into the snapshot `output` by `codec` and its options,
/// checked as `bitlens compress` checks them; the document of what was written.
#[pyfunction]
#[pyo3(signature = (
    tensors, output, *, metadata=None, codec="lmc", base=None, mantissa_bits=None,
    norm_block=512, clusters=16, threads=None
))]
#[allow(clippy::too_many_arguments)]
fn save<'py>(
    py: Python<'py>,
    tensors: Vec<Given<'py>>,
    output: PathBuf,
    metadata: Option<Vec<(String, String)>>,
    codec: &str,
    base: Option<PathBuf>,
    mantissa_bits: Option<u32>,
    norm_block: usize,
    clusters: u8,
    threads: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let slices = tensors
        .iter()
        .map(|(name, dtype, shape, data)| {
            let data = data
                .as_slice()
                .map_err(|e| usage(format!("tensor `{name}`: {e}")))?;
            Ok((name.as_str(), dtype.as_str(), shape.as_slice(), data))
        })
        .collect::<Result<Vec<_>, bitlens_engine::Error>>();
    // The name messages and `auto`'s report give the arrays' file.
    let input = PathBuf::from("<arrays>");
    let compressed = run(py, threads, |progress| {
        let bytes = slices?
            .into_iter()
            .map(|(name, dtype, shape, data)| {
                let dtype: Dtype = dtype
                    .parse()
                    .map_err(|_| usage(format!("tensor `{name}`: unknown dtype `{dtype}`")))?;
                Ok(TensorBytes {
                    name,
                    dtype,
                    shape,
                    data,
                })
            })
            .collect::<Result<Vec<_>, bitlens_engine::Error>>()?;
        let image = Image::new(&bytes, metadata.as_deref()).map_err(|e| usage(e.to_string()))?;
        let args = CompressArgs {
            codec: codec.parse()?,
            mantissa_bits,
            norm_block,
            clusters,
            base: base.clone(),
            ..CompressArgs::new(input.clone(), output.clone())
        };
        let Run::Snapshot(choice) = plan::plan(&args)? else {
            return Err(usage(format!(
                "codec `{codec}`: save_file takes the container's codecs; write a safetensors \
                 file and use compress_file for inshrink"
            )));
        };
        bitlens_engine::compress::compress_image(
            &input,
            &image,
            image.header(),
            &output,
            choice,
            base.as_deref(),
            progress,
        )
    })?;
    document(py, &compressed.report(&input, &output))
}
