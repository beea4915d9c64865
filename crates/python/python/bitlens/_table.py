"""The rows of :func:`bitlens.inspect_table`: each measured tensor of an ``inspect`` document as
flat typed columns (``pyarrow`` is imported only here)."""
from typing import Any, Dict, List

import pyarrow as pa


def rows_schema() -> pa.Schema:
    """The table's columns and their types."""
    floats = pa.list_(pa.float64())
    return pa.schema([
        ("file", pa.string()),
        ("name", pa.string()),
        ("dtype", pa.string()),
        ("lane_dtype", pa.string()),
        ("shape", pa.list_(pa.int64())),
        ("params", pa.int64()),
        ("bytes", pa.int64()),
        ("bit_set_ratio", floats),
        ("byte_group_entropy", floats),
        ("exponent_entropy", pa.float64()),
        ("predicted_ratio", pa.float64()),
        ("value_min", pa.float64()),
        ("value_max", pa.float64()),
        ("value_mean", pa.float64()),
        ("value_std", pa.float64()),
        ("zeros", pa.int64()),
        ("nans", pa.int64()),
        ("infs", pa.int64()),
        ("error", pa.string()),
    ])


def tensor_rows(path: str, report: Dict[str, Any]) -> List[Dict[str, Any]]:
    """One row per measured tensor of an ``inspect`` document of checkpoints; one error row for
    a document of snapshots or chains, which have no tensor statistics."""
    if "files" not in report:
        kind = "snapshot" if "snapshots" in report else "chain"
        return [{"file": path, "error": f"{path}: a {kind}; inspect_table takes checkpoints"}]
    rows = []
    for f in report["files"]:
        for t in f["tensors"]:
            if "bytes" not in t:  # not measured (``tensors=`` left it out)
                continue
            values = t.get("values") or (t.get("dequantized") or {}).get("values") or {}
            rows.append({
                "file": f["path"],
                "name": t["name"],
                "dtype": t.get("element_type", t["dtype"]),
                "lane_dtype": t["dtype"],
                "shape": t["shape"],
                "params": t["params"],
                "bytes": t["bytes"],
                "bit_set_ratio": t["bit_set_ratio"],
                "byte_group_entropy": t["byte_group_entropy"],
                "exponent_entropy": t["exponent_entropy"],
                "predicted_ratio": t["predicted_ratio"],
                "value_min": values.get("min"),
                "value_max": values.get("max"),
                "value_mean": values.get("mean"),
                "value_std": values.get("std"),
                "zeros": values.get("zeros"),
                "nans": values.get("nan"),
                "infs": (values["pos_inf"] + values["neg_inf"]) if values else None,
                "error": None,
            })
    return rows
