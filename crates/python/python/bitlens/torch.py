"""PyTorch state dicts into and out of ``.bls`` snapshots (needs ``torch``; the rest of bitlens
does not).

:func:`save_file` flattens nested dicts and lists — an optimizer's ``state_dict()`` — naming each
tensor by its dotted path as bitlens's PyTorch reader names the tensors of a ``torch.save`` file
(``state.0.exp_avg``), and stores them with :func:`bitlens.save_file`; values that are not tensors
(an optimizer's hyperparameters) are left out, as in a safetensors file. :func:`load_file` gives
the tensors back as torch tensors on ``device``.
"""
from typing import Any, Dict, List, Mapping, Optional

import ml_dtypes
import numpy as np

try:
    import torch
except ImportError as e:  # pragma: no cover - torch is optional
    raise ImportError("bitlens.torch needs PyTorch (pip install torch)") from e

import bitlens

from . import _bitlens

__all__ = ["save_file", "load_file", "flatten", "to_numpy", "to_torch"]

# Torch dtypes NumPy has no array of: stored through an integer view of the same width.
_VIEWED = {
    torch.bfloat16: (torch.int16, ml_dtypes.bfloat16),
}
for _name, _np in (("float8_e4m3fn", ml_dtypes.float8_e4m3fn),
                   ("float8_e5m2", ml_dtypes.float8_e5m2),
                   ("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz),
                   ("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz),
                   ("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu)):
    if hasattr(torch, _name):
        _VIEWED[getattr(torch, _name)] = (torch.uint8, _np)
_BACK = {np.dtype(n): (t, v) for t, (v, n) in _VIEWED.items()}


def to_numpy(tensor: "torch.Tensor") -> np.ndarray:
    """A tensor as a NumPy array of the same dtype (bf16 and fp8 as ``ml_dtypes`` dtypes)."""
    tensor = tensor.detach().cpu().contiguous()
    if tensor.dtype in _VIEWED:
        view, dtype = _VIEWED[tensor.dtype]
        return tensor.view(view).numpy().view(dtype)
    return tensor.numpy()


def to_torch(array: np.ndarray, device: str = "cpu") -> "torch.Tensor":
    """A NumPy array as a torch tensor of the same dtype, on ``device``."""
    if array.dtype in _BACK:
        dtype, view = _BACK[array.dtype]
        integer = np.int16 if view == torch.int16 else np.uint8
        tensor = torch.from_numpy(array.view(integer)).view(dtype)
    else:
        tensor = torch.from_numpy(array)
    return tensor.to(device)


def flatten(state: Any) -> Dict[str, "torch.Tensor"]:
    """The tensors of a nested dict / list by dotted path (``state.0.exp_avg``; a tensor alone is
    ``root``), as bitlens's PyTorch reader names them."""
    out: Dict[str, torch.Tensor] = {}

    def walk(value: Any, keys: List[str]) -> None:
        if isinstance(value, torch.Tensor):
            out[_bitlens.state_dict_name(keys)] = value
        elif isinstance(value, Mapping):
            for k, v in value.items():
                if not isinstance(k, (str, int)):
                    raise bitlens.UsageError(
                        f"key {k!r} of {_bitlens.state_dict_name(keys)}: keys must be str or int")
                walk(v, keys + [str(k)])
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(v, keys + [str(i)])

    walk(state, [])
    return out


def save_file(state_dict: Mapping[str, Any], path: Any, *,
              metadata: Optional[Mapping[str, str]] = None, **options: Any) -> Any:
    """Writes a (possibly nested) state dict's tensors to the ``.bls`` snapshot ``path``;
    ``options`` are :func:`bitlens.save_file`'s (``codec``, ``base``, ``threads``…)."""
    arrays = {name: to_numpy(t) for name, t in flatten(state_dict).items()}
    return bitlens.save_file(arrays, path, metadata=metadata, **options)


def load_file(path: Any, device: str = "cpu", *, base: Any = None,
              threads: Optional[int] = None) -> Dict[str, "torch.Tensor"]:
    """Every tensor of a ``.bls`` snapshot (or checkpoint) as torch tensors on ``device``."""
    arrays = bitlens.load_file(path, base=base, threads=threads)
    return {name: to_torch(a, device) for name, a in arrays.items()}
