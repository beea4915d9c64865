//! The engine's errors as Python exceptions, one class per [`ErrorKind`] (defined in
//! `bitlens/__init__.py`): `UsageError`, `FormatError`, `CorruptError` (all `ValueError`s),
//! `RemoteError` (an `OSError`); a local I/O error is the builtin `OSError` subclass of its errno
//! (`FileNotFoundError`, `PermissionError`…) with `errno` set. The text is always the CLI's line
//! after `bitlens: ` ([`bitlens_engine::Error::message`]); `filename` and `strerror` stay unset
//! because `OSError.__str__` would put them in place of that text.

use bitlens_engine::{Error, ErrorKind};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyType;

/// The name of the package's exception class for an error class (`None` for I/O errors).
fn class_name(kind: ErrorKind) -> Option<&'static str> {
    match kind {
        ErrorKind::Invalid => Some("UsageError"),
        ErrorKind::Format => Some("FormatError"),
        ErrorKind::Corrupt => Some("CorruptError"),
        ErrorKind::Remote => Some("RemoteError"),
        ErrorKind::Io => None,
    }
}

/// The package's exception for an engine error.
pub fn to_py(py: Python<'_>, e: &Error) -> PyErr {
    let message = e.message();
    let made = match class_name(e.kind()) {
        Some(name) => package_error(py, name, &message),
        None => os_error(
            py,
            e.io_error().and_then(std::io::Error::raw_os_error),
            &message,
        ),
    };
    made.unwrap_or_else(|failed| failed)
}

/// `bitlens.<name>(message)`.
fn package_error(py: Python<'_>, name: &str, message: &str) -> PyResult<PyErr> {
    let class = py.import("bitlens")?.getattr(name)?.cast_into::<PyType>()?;
    Ok(PyErr::from_type(class, message.to_owned()))
}

/// The builtin `OSError` subclass of `errno` (what `OSError(errno, …)` is), holding `message`
/// with `errno` set.
fn os_error(py: Python<'_>, errno: Option<i32>, message: &str) -> PyResult<PyErr> {
    let Some(errno) = errno else {
        return Ok(PyOSError::new_err(message.to_owned()));
    };
    let os_error = py.get_type::<PyOSError>();
    let class = os_error.call1((errno, ""))?.get_type();
    let exception = class.call1((message,))?;
    exception.setattr("errno", errno)?;
    Ok(PyErr::from_value(exception))
}

/// An error of the caller's arguments (a `bitlens.UsageError`), made here rather than by the
/// engine: an array that is not bytes, a dtype NumPy has no name for.
pub fn usage(message: impl Into<String>) -> Error {
    Error::invalid(message)
}
