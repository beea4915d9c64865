"""bitlens: look inside neural-network checkpoints and compress them, from Python.

The same engine as the ``bitlens`` command line (no second implementation), in the names a
``safetensors`` and NumPy user knows:

- :func:`inspect` / :func:`diff` — the ``inspect --json`` / ``diff --json`` documents as Python
  objects, for every format bitlens reads (safetensors, shard indexes and directories, GGUF,
  PyTorch, NumPy, ``.bls`` snapshots and chains; local paths or ``http(s)`` URLs read with Range
  requests); :func:`inspect_table` — one row per tensor as a ``pyarrow.Table``.
- :func:`save_file` / :func:`load_file` / :func:`safe_open` — NumPy arrays into and out of a
  ``.bls`` snapshot (bf16 and fp8 as ``ml_dtypes`` dtypes); ``get_tensor`` decodes only that
  tensor's frames (for a URL only their byte ranges are fetched).
- :func:`compress_file` / :func:`decompress_file` — every codec and option of ``bitlens
  compress`` / ``decompress``, byte-exact for lossless codecs, any format in.
- :mod:`bitlens.torch` — ``save_file`` / ``load_file`` of PyTorch state dicts (when torch is
  installed).

The GIL is released while bitlens works, so Python threads calling it run at once; ``threads=N``
runs a call on N threads (default: all cores), a pool each Python thread makes at its first call
with N and keeps for its next ones (a forked child makes its own). Errors are
:class:`BitlensError` subclasses (:class:`FormatError`, :class:`CorruptError`,
:class:`UsageError` are ``ValueError``\\ s, :class:`RemoteError` is an ``OSError``) or, for
local files, the builtin ``OSError`` of their errno (``FileNotFoundError``…); their text is the
CLI's message, naming the file and the rule.
"""
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _bitlens
from ._dtypes import as_bytes, from_bytes, safetensors_dtype
from ._errors import (BitlensError, BitlensWarning, CorruptError, FormatError, RemoteError,
                      UsageError)
from ._reports import (AutoReport, ChainReport, ChainsReport, CompressedReport,
                       CompressedTensor, CompressReport, DecompressedReport, DiffReport,
                       ErrorReport, FileReport, InspectReport, SnapshotReport, SnapshotsReport,
                       SnapshotTensor, Summary, TensorDiff, TensorReport, ValueStats)

__version__: str = _bitlens.__version__

__all__ = [
    "inspect", "inspect_table", "diff", "save_file", "load_file", "safe_open", "compress_file",
    "decompress_file",
    "BitlensError", "FormatError", "CorruptError", "UsageError", "RemoteError", "BitlensWarning",
    "InspectReport", "FileReport", "TensorReport", "Summary", "ValueStats", "DiffReport",
    "TensorDiff", "SnapshotsReport", "SnapshotReport", "SnapshotTensor", "ErrorReport",
    "ChainsReport", "ChainReport", "AutoReport", "CompressReport", "CompressedReport",
    "CompressedTensor", "DecompressedReport",
]

#: A local path (``str`` or ``os.PathLike``) or an ``http(s)`` URL.
PathOrUrl = Union[str, os.PathLike]


def _paths(path_or_paths: Union[PathOrUrl, Sequence[PathOrUrl]]) -> List[str]:
    if isinstance(path_or_paths, (str, os.PathLike)):
        return [os.fspath(path_or_paths)]
    return [os.fspath(p) for p in path_or_paths]


def _optional_path(path: Optional[PathOrUrl]) -> Optional[str]:
    return None if path is None else os.fspath(path)


def inspect(path_or_url: Union[PathOrUrl, Sequence[PathOrUrl]], *,
            tensors: Optional[Iterable[str]] = None,
            threads: Optional[int] = None,
            sidecars: bool = True) -> Union[InspectReport, SnapshotsReport, ChainsReport]:
    """Statistics of every tensor of a checkpoint: ``bitlens inspect --json`` as Python objects.

    ``path_or_url`` is a file of any format bitlens reads (safetensors, GGUF, PyTorch
    ``.pt``/``.bin``, NumPy ``.npy``/``.npz``, told by its first bytes), a
    ``*.safetensors.index.json``, a directory of shards, an ``http(s)`` URL of a file or index
    (read with Range requests only), or a list of them. ``.bls`` snapshots give what each says
    of itself (codecs, sizes, lossy error: a :class:`SnapshotsReport`), chain directories their
    steps (a :class:`ChainsReport`); checkpoints an :class:`InspectReport`: per tensor its dtype,
    shape, bit-set ratios, byte-group and exponent entropies, the compressed size they predict
    and value statistics, and totals per file and overall.

    ``tensors``: measure only these (the others are listed without statistics and left out of
    the totals; checkpoints only). ``threads``: worker threads (default: all cores).
    ``sidecars``: take a URL's statistics from its ``<url>.bitlens.json`` when one is there and
    matches the file's size and header bytes (as the CLI does; ``False`` is ``--no-sidecar``).
    Local files are always read.

    >>> report = bitlens.inspect("model.safetensors")
    >>> report["files"][0]["tensors"][0]["byte_group_entropy"]
    """
    names = None if tensors is None else list(tensors)
    return _bitlens.inspect(_paths(path_or_url), names, threads, sidecars)


def diff(a: PathOrUrl, b: PathOrUrl, *, threads: Optional[int] = None) -> DiffReport:
    """Bit flips and changed elements between two checkpoints: ``bitlens diff --json A B``.

    ``a`` and ``b`` are checkpoints of any format :func:`inspect` reads (files, indexes,
    directories, URLs). Tensors are matched by name, element type and shape; per tensor the
    fraction of elements that changed, each bit position's flip ratio, and the entropy and
    compressed-size bound of the XOR delta; tensors only in one side or of another shape are
    listed.
    """
    return _bitlens.diff(os.fspath(a), os.fspath(b), threads)


def save_file(tensors: Mapping[str, np.ndarray], path: PathOrUrl, *,
              metadata: Optional[Mapping[str, str]] = None, codec: str = "lmc",
              base: Optional[PathOrUrl] = None, mantissa_bits: Optional[int] = None,
              norm_block: int = 512, clusters: int = 16,
              threads: Optional[int] = None) -> CompressedReport:
    """Writes NumPy arrays to the ``.bls`` snapshot ``path``, like ``safetensors.numpy.save_file``.

    The snapshot holds the safetensors file ``safetensors.numpy.save_file(tensors, …,
    metadata)`` would write (tensors ordered by dtype, then name), compressed:
    :func:`decompress_file` gives that file back byte for byte for a lossless codec (with two or
    more metadata keys, the keys keep the order given, where safetensors' order varies).

    ``tensors``: arrays of bool, (u)int8–64, float16/32/64, complex64 or the ``ml_dtypes`` types
    ``bfloat16``, ``float8_e4m3fn``, ``float8_e5m2``, ``float8_e4m3fnuz``, ``float8_e5m2fnuz``,
    ``float8_e8m0fnu``; other arrays are copied to C order and little-endian first, other dtypes
    refused (:class:`UsageError`). ``metadata``: the file's ``__metadata__`` (strings).
    ``codec``: ``lmc`` (lossless, default), ``neuzip`` (lossless, or lossy with
    ``mantissa_bits`` 0, 1 or 3 and ``norm_block``), ``bitsnap`` (a delta against ``base``),
    ``bitsnap-quant`` (lossy, ``clusters``), ``stored`` or ``auto``, checked as ``bitlens
    compress`` checks them; ``base``: a safetensors checkpoint to store the arrays as deltas
    against. Returns what was written (sizes, each tensor's codec and, for lossy codecs, its
    error).

    >>> bitlens.save_file({"w": np.ones((4, 4), ml_dtypes.bfloat16)}, "w.bls")
    """
    given = []
    for name, array in tensors.items():
        array = np.asarray(array)
        dtype = safetensors_dtype(array.dtype)
        given.append((name, dtype, list(array.shape), as_bytes(array)))
    meta = None if metadata is None else list(metadata.items())
    return _bitlens.save(given, os.fspath(path), metadata=meta, codec=codec,
                         base=_optional_path(base), mantissa_bits=mantissa_bits,
                         norm_block=norm_block, clusters=clusters, threads=threads)


def load_file(path: PathOrUrl, *, base: Optional[PathOrUrl] = None,
              threads: Optional[int] = None) -> Dict[str, np.ndarray]:
    """Every tensor of a ``.bls`` snapshot (or of a checkpoint) as NumPy arrays, like
    ``safetensors.numpy.load_file``.

    Decodes the snapshot in one pass (every checksum verified); ``base`` is the checkpoint a
    delta snapshot was made against. Arrays have the tensor's dtype (bf16 and fp8 as
    ``ml_dtypes`` dtypes) and shape, and own their memory. ``path`` may be an ``http(s)`` URL.
    """
    f = _bitlens.TensorFile(os.fspath(path), _optional_path(base))
    arrays = f.arrays()
    raws = f.read([name for name, _, _ in arrays], threads)
    return {name: from_bytes(raw, dtype, shape)
            for (name, dtype, shape), raw in zip(arrays, raws)}


class safe_open:
    """A ``.bls`` snapshot (or a checkpoint) opened for reading tensors one at a time, like
    ``safetensors.safe_open``::

        with bitlens.safe_open("model.bls") as f:
            for name in f.keys():
                array = f.get_tensor(name)

    ``get_tensor`` decodes only that tensor's frames (verified against its checksum); for an
    ``http(s)`` URL only their byte ranges are fetched. A plain safetensors file (or any format
    :func:`inspect` reads) works too: then the tensor's byte range is read. ``framework``:
    ``"numpy"`` (``"np"``), or ``"pt"`` for torch tensors (:mod:`bitlens.torch`). ``base``: the
    checkpoint a delta snapshot was made against.
    """

    def __init__(self, filename: PathOrUrl, framework: str = "numpy", device: str = "cpu", *,
                 base: Optional[PathOrUrl] = None):
        if framework not in ("numpy", "np", "pt", "torch"):
            raise UsageError(f"framework {framework!r}: bitlens gives numpy or pt (torch)")
        self._torch = framework in ("pt", "torch")
        self._device = device
        self._file = _bitlens.TensorFile(os.fspath(filename), _optional_path(base))

    def __enter__(self) -> "safe_open":
        return self

    def __exit__(self, *exc: Any) -> None:
        self._file = None

    def _open(self) -> Any:
        if self._file is None:
            raise UsageError("the file is closed")
        return self._file

    def keys(self) -> List[str]:
        """The names of the tensors that are arrays, sorted (as safetensors gives them)."""
        return sorted(name for name, _, _ in self._open().arrays())

    def metadata(self) -> Optional[Dict[str, str]]:
        """The file's ``__metadata__``, or ``None``."""
        meta = self._open().metadata()
        return None if meta is None else dict(meta)

    def get_tensor(self, name: str) -> Any:
        """Tensor ``name`` as an array of its dtype and shape (a torch tensor with
        ``framework="pt"``), decoding only its frames."""
        f = self._open()
        _, dtype, shape = f.array(name)
        array = from_bytes(f.read([name])[0], dtype, shape)
        if self._torch:
            from .torch import to_torch
            return to_torch(array, self._device)
        return array


def compress_file(src: PathOrUrl, dst: PathOrUrl, *, codec: str = "lmc",
                  base: Optional[PathOrUrl] = None, mantissa_bits: Optional[int] = None,
                  norm_block: int = 512, clusters: int = 16, max_error: Optional[float] = None,
                  eval_cmd: Optional[str] = None, max_degradation: Optional[float] = None,
                  optimizer: Optional[PathOrUrl] = None, protect_dtype: str = "original",
                  no_delta: bool = False, chain: bool = False,
                  more: Sequence[PathOrUrl] = (), key: Optional[int] = None,
                  skip_full_size: bool = False,
                  threads: Optional[int] = None
                  ) -> Union[CompressedReport, ChainReport, CompressReport]:
    """``bitlens compress SRC -o DST``: a checkpoint into a ``.bls`` snapshot, with every codec
    and option of the CLI, checked by the same rules.

    ``src``: a file of any format (safetensors, GGUF, PyTorch, NumPy: decompressing gives the
    identical file), a shard index or directory (``dst`` is then a directory of one snapshot
    per shard), or an ``http(s)`` URL of one file. ``codec``: ``lmc`` (default), ``neuzip``
    (``mantissa_bits`` 0, 1, 3 for lossy, ``norm_block``), ``bitsnap`` (needs ``base``),
    ``bitsnap-quant`` (``clusters``), ``stored``, ``auto`` or ``inshrink`` (Inshrinkerator:
    ``max_error``, or ``eval_cmd`` with ``max_degradation``; ``optimizer``, ``protect_dtype``
    ``"original"``/``"bf16"``, ``base`` the previous snapshot, ``no_delta``). ``base``: the
    checkpoint to store deltas against. ``chain=True``: ``src`` and ``more`` are a run's steps
    (or ``src`` a run directory of ``step-*`` folders) into the chain directory ``dst``, ``key``
    every how many steps a full one, ``skip_full_size`` to skip measuring the deltas in full.

    Returns what was written: a :class:`CompressedReport` (sizes, every tensor's codec and
    lossy error, ``auto``'s choices), a :class:`ChainReport` for a chain, or a
    :class:`CompressReport` for Inshrinkerator.
    """
    return _bitlens.compress(
        os.fspath(src), os.fspath(dst), codec, mantissa_bits=mantissa_bits,
        norm_block=norm_block, clusters=clusters, base=_optional_path(base),
        max_error=max_error, eval_cmd=eval_cmd, max_degradation=max_degradation,
        optimizer=_optional_path(optimizer), protect_dtype=protect_dtype, no_delta=no_delta,
        chain=chain, more=[os.fspath(m) for m in more], key=key,
        skip_full_size=skip_full_size, threads=threads)


def decompress_file(src: PathOrUrl, dst: PathOrUrl, *, base: Optional[PathOrUrl] = None,
                    tensor: Optional[str] = None, step: Optional[str] = None,
                    threads: Optional[int] = None) -> DecompressedReport:
    """``bitlens decompress SRC -o DST``: a snapshot back to the original file, byte for byte
    for lossless codecs (every checksum verified).

    ``src``: a ``.bls`` file or ``http(s)`` URL, a directory of shard snapshots (``dst`` is then
    a directory), or a chain directory (every step into ``dst``, or only ``step``, its name or
    0-based index). ``base``: the checkpoint a delta was made against (an Inshrinkerator delta:
    the previous snapshot, when it is not next to ``src``). ``tensor``: write only that tensor,
    as a safetensors file of its own (for a URL only its frames are fetched).
    """
    return _bitlens.decompress(os.fspath(src), os.fspath(dst), base=_optional_path(base),
                               tensor=tensor, step=step, threads=threads)


def inspect_table(path_or_url: Union[PathOrUrl, Sequence[PathOrUrl]], *,
                  tensors: Optional[Iterable[str]] = None,
                  threads: Optional[int] = None) -> Any:
    """:func:`inspect` of each checkpoint as a ``pyarrow.Table``, one row per measured tensor,
    flat typed columns (needs ``pyarrow``).

    Columns: ``file``, ``name``, ``dtype`` (a GGUF block type's name, else the dtype),
    ``lane_dtype`` (the lanes measured), ``shape`` (list<int64>), ``params``, ``bytes``,
    ``bit_set_ratio`` (list<float64>, bit 0 least significant), ``byte_group_entropy``
    (list<float64>, least significant byte first), ``exponent_entropy``, ``predicted_ratio``,
    ``value_min``, ``value_max``, ``value_mean``, ``value_std`` (of the finite values; a GGUF
    block type's dequantized values), ``zeros``, ``nans``, ``infs``, and ``error``: a path that
    cannot be inspected is one row holding only ``file`` and the error's message.
    """
    from ._table import rows_schema, tensor_rows
    import pyarrow as pa

    rows = []
    for path in _paths(path_or_url):
        try:
            report = inspect(path, tensors=tensors, threads=threads)
        except (BitlensError, OSError) as e:
            rows.append({"file": path, "error": str(e)})
            continue
        rows.extend(tensor_rows(path, report))
    return pa.Table.from_pylist(rows, schema=rows_schema())
