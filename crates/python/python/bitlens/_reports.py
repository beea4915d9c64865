"""The documents bitlens returns, as ``TypedDict``\\ s named after their Rust types (crate
``bitlens-report``; docs/REPORTS.md is the schema, with units): the objects ``json.loads``
makes of the CLI's ``--json`` output. Sizes are bytes, ratios stored ÷ original, entropies bits
per symbol, bit positions from the least significant bit. Nested objects described in
docs/REPORTS.md and not spelled out here are ``Dict[str, Any]``."""
from typing import Any, Dict, List, Optional, Tuple, TypedDict


class Summary(TypedDict):
    """Totals over the tensors with statistics (of a file, or of every file)."""
    tensors: int
    params: int
    bytes: int
    byte_entropy: float
    predicted_bytes: int
    predicted_ratio: float
    by_dtype: List[Dict[str, Any]]


class ValueStats(TypedDict):
    """Value statistics of a tensor's finite values."""
    count: int
    finite: int
    zeros: int
    nan: int
    pos_inf: int
    neg_inf: int
    min: Optional[float]
    max: Optional[float]
    mean: Optional[float]
    std: Optional[float]
    histogram: Optional[Dict[str, Any]]


class TensorReport(TypedDict, total=False):
    """One tensor of a checkpoint: its header entry, then (once measured) its statistics
    (``TensorStats``, flattened into the same object)."""
    name: str
    shape: List[int]
    data_offsets: Tuple[int, int]
    params: int
    dtype: str
    bytes: int
    lanes: int
    bit_set_counts: List[int]
    bit_set_ratio: List[float]
    byte_entropy: float
    byte_group_entropy: List[float]
    byte_group_hist: List[List[int]]
    block_bytes: int
    block_entropy: List[List[float]]
    block_entropy_bits: float
    predicted_bytes: int
    predicted_ratio: float
    exponent_entropy: Optional[float]
    float: Optional[Dict[str, Any]]
    values: Optional[ValueStats]
    element_type: str
    dequantized: Dict[str, Any]
    quant: Dict[str, Any]


class FileReport(TypedDict, total=False):
    """One file of a checkpoint (``format`` and ``kind`` only for formats other than
    safetensors)."""
    path: str
    format: str
    kind: str
    file_size: int
    header_len: int
    metadata: Optional[Dict[str, Any]]
    tensors: List[TensorReport]
    summary: Summary


class InspectReport(TypedDict):
    """``inspect`` of checkpoints: every file of every input, and totals."""
    files: List[FileReport]
    summary: Summary


class TensorDiff(TypedDict, total=False):
    """Two tensors of the same name, type and shape compared."""
    name: str
    dtype: str
    element_type: str
    shape: List[int]
    lanes: int
    changed_lanes: int
    changed_fraction: float
    bit_flip_counts: List[int]
    bit_flip_ratio: List[float]
    delta_byte_group_entropy: List[float]
    delta_predicted_bytes: int
    dequantized: Optional[Dict[str, Any]]


class DiffReport(TypedDict):
    """``diff`` of two checkpoints: tensors matched by name, element type and shape."""
    a: str
    b: str
    tensors: List[TensorDiff]
    mismatched: List[Dict[str, Any]]
    only_in_a: List[str]
    only_in_b: List[str]
    overall: Dict[str, Any]


class ErrorReport(TypedDict):
    """How far a lossily stored tensor is from its original."""
    values: int
    mse: float
    max_abs: float
    max_rel: float
    mean_rel: float


class SnapshotTensor(TypedDict, total=False):
    """One tensor (for another format: one piece of the file) of a ``.bls`` snapshot."""
    name: str
    dtype: str
    shape: List[int]
    codec: str
    delta: bool
    bytes: int
    stored_bytes: int
    ratio: float
    frames: int
    error: Optional[ErrorReport]
    inshrink: Dict[str, Any]
    piece: Tuple[str, str]


class SnapshotReport(TypedDict, total=False):
    """One ``.bls`` snapshot: its sizes, flags and tensors."""
    path: str
    snapshot_size: int
    original_size: int
    ratio: float
    lossy: bool
    delta: bool
    metadata: Optional[List[Tuple[str, str]]]
    tensors: List[SnapshotTensor]
    original_format: str
    inshrink: Dict[str, Any]


class SnapshotsReport(TypedDict):
    """``inspect`` of ``.bls`` snapshots."""
    snapshots: List[SnapshotReport]


class ChainReport(TypedDict):
    """A chain directory (a key, then deltas against the previous step)."""
    path: str
    codec: str
    key_every: Optional[int]
    steps: List[Dict[str, Any]]
    totals: Dict[str, Any]
    trend: List[Dict[str, Any]]


class ChainsReport(TypedDict):
    """``inspect`` of chain directories."""
    chains: List[ChainReport]


class AutoReport(TypedDict):
    """``codec="auto"``: each tensor's predicted sizes, the choice and its achieved size."""
    files: List[Dict[str, Any]]
    totals: Dict[str, Any]


class CompressReport(TypedDict, total=False):
    """``codec="inshrink"``: the Inshrinkerator search and what was written."""
    quality: Dict[str, Any]
    groups: List[Dict[str, Any]]
    optimizer: Optional[Dict[str, Any]]
    protect_dtype: str
    base: Optional[Dict[str, Any]]
    times: Optional[Dict[str, Any]]
    input_bytes: int
    output_bytes: int
    ratio: float
    tensors: List[Dict[str, Any]]


class CompressedTensor(TypedDict):
    """One tensor as it was stored."""
    name: str
    codec: str
    delta: bool
    bytes: int
    stored_bytes: int
    ratio: float
    error: Optional[ErrorReport]


class CompressedReport(TypedDict):
    """A checkpoint (or arrays) compressed into a snapshot: sizes and every tensor's codec."""
    input: str
    output: str
    input_bytes: int
    output_bytes: int
    ratio: float
    lossy: bool
    tensors: List[CompressedTensor]
    auto: Optional[AutoReport]


class DecompressedReport(TypedDict):
    """A snapshot restored (the sizes are ``None`` for a chain directory)."""
    input: str
    output: str
    input_bytes: Optional[int]
    output_bytes: Optional[int]
