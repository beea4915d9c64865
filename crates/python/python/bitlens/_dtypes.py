"""NumPy's names for the safetensors dtypes bitlens stores: NumPy's own dtypes, and the
``ml_dtypes`` dtypes (what JAX and others use) for bfloat16 and the fp8 formats. A conversion
table only: a tensor's byte length and layout are checked by bitlens's reader."""
from typing import Dict

import ml_dtypes
import numpy as np

from ._errors import UsageError

#: The NumPy dtype of each safetensors dtype an array can hold.
TO_NUMPY: Dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "U8": np.dtype(np.uint8),
    "I8": np.dtype(np.int8),
    "U16": np.dtype(np.uint16),
    "I16": np.dtype(np.int16),
    "F16": np.dtype(np.float16),
    "BF16": np.dtype(ml_dtypes.bfloat16),
    "U32": np.dtype(np.uint32),
    "I32": np.dtype(np.int32),
    "F32": np.dtype(np.float32),
    "C64": np.dtype(np.complex64),
    "U64": np.dtype(np.uint64),
    "I64": np.dtype(np.int64),
    "F64": np.dtype(np.float64),
    "F8_E4M3": np.dtype(ml_dtypes.float8_e4m3fn),
    "F8_E5M2": np.dtype(ml_dtypes.float8_e5m2),
    "F8_E4M3FNUZ": np.dtype(ml_dtypes.float8_e4m3fnuz),
    "F8_E5M2FNUZ": np.dtype(ml_dtypes.float8_e5m2fnuz),
    "F8_E8M0": np.dtype(ml_dtypes.float8_e8m0fnu),
}

_FROM_NUMPY = {dtype: name for name, dtype in TO_NUMPY.items()}


def numpy_dtype(name: str) -> np.dtype:
    """The NumPy dtype of the safetensors dtype ``name``; ``UsageError`` when NumPy has none
    (the packed F4 / F6 types hold several values per byte)."""
    try:
        return TO_NUMPY[name]
    except KeyError:
        raise UsageError(
            f"dtype {name}: no NumPy array holds it (packed sub-byte values)") from None


def safetensors_dtype(dtype: np.dtype) -> str:
    """The safetensors name of a NumPy dtype (either byte order); ``UsageError`` for others."""
    native = dtype.newbyteorder("=") if dtype.byteorder in "<>" else dtype
    try:
        return _FROM_NUMPY[native]
    except KeyError:
        known = ", ".join(str(d) for d in _FROM_NUMPY)
        raise UsageError(f"dtype {dtype}: bitlens stores {known}") from None


def as_bytes(array: np.ndarray) -> np.ndarray:
    """The bytes of ``array`` in C order and little-endian, as a one-dimensional ``uint8`` array
    (the array itself when it is already so; a copy otherwise)."""
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    return np.require(array, requirements="C").reshape(-1).view(np.uint8)


def from_bytes(raw: np.ndarray, dtype: str, shape) -> np.ndarray:
    """The array of a tensor's bytes (``raw``, ``uint8``), viewed with its dtype and shape."""
    return raw.view(numpy_dtype(dtype)).reshape(tuple(shape))
