"""docs/REPORTS.md lists every field of every JSON document bitlens prints: each command is run on
real weights and the format fixtures (safetensors, GGUF block types, PyTorch, NumPy, `.bls` of
every kind, a chain, `auto`, Inshrinkerator, bench), and every key of its output must appear in the
document as `key`. Keys that are data, not schema (metadata's own keys, `auto`'s candidate names)
are not checked."""
import json
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT, run, run_json

DOC = ROOT / "docs" / "REPORTS.md"
FIXTURES = ROOT / "tests" / "fixtures"
# Objects whose keys are data: a file's metadata, `auto`'s predictions by candidate name.
DATA_OBJECTS = {"metadata", "predicted"}


def keys_of(value, out, parent=""):
    """Every object key of a JSON value, with the key of the object holding it."""
    if isinstance(value, dict):
        for k, v in value.items():
            out.add((parent, k))
            if k not in DATA_OBJECTS:
                keys_of(v, out, k)
    elif isinstance(value, list):
        for v in value:
            keys_of(v, out, parent)


def documented():
    return set(re.findall(r"`([a-z_0-9]+)`", DOC.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def documents(weights, tmp_path_factory):
    """The JSON of every command, by a name for the failure message."""
    tmp = tmp_path_factory.mktemp("reports")
    bf16 = weights / "minilm-bf16.safetensors"
    f16 = weights / "minilm-f16.safetensors"
    gguf = sorted((FIXTURES / "gguf").glob("*.gguf"))
    docs = {
        "inspect safetensors": run_json("inspect", bf16),
        "inspect gguf": run_json("inspect", *gguf),
        "inspect pytorch": run_json("inspect", FIXTURES / "torch" / "adam.pt"),
        "inspect numpy": run_json("inspect", *(FIXTURES / "numpy" / n for n in
                                               ["minilm_f16_v2.npy", "minilm_compressed.npz"])),
        "diff": run_json("diff", bf16, f16),
        "diff gguf": run_json("diff", FIXTURES / "gguf" / "q8_0.gguf", FIXTURES / "gguf" / "q8_0.gguf"),
        "auto": run_json("compress", bf16, "-o", tmp / "auto.bls", "--codec", "auto"),
        "bench": run_json("bench", bf16, "--codecs", "lmc,neuzip-k3,zstd-1", "--repeat", "1"),
    }
    run("compress", bf16, "-o", tmp / "k3.bls", "--codec", "neuzip", "--mantissa-bits", "3")
    run("compress", FIXTURES / "gguf" / "q8_0.gguf", "-o", tmp / "q8.bls")
    docs["inspect snapshots"] = run_json("inspect", tmp / "auto.bls", tmp / "k3.bls")
    docs["inspect gguf snapshot"] = run_json("inspect", tmp / "q8.bls")
    # A small checkpoint for the Inshrinkerator search and a chain of two steps.
    small = tmp / "small"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "train_digits.py"), "train", "--out", str(small),
                    "--hidden", "32", "--steps", "20", "--every", "10"], check=True, capture_output=True)
    steps = sorted(p for p in small.iterdir() if p.name.startswith("step-"))
    model = steps[-1] / "model.safetensors"
    docs["inshrink"] = run_json("compress", model, "-o", tmp / "i.bls", "--codec", "inshrink",
                                "--max-error", "0.2", "--optimizer", steps[-1] / "optimizer.safetensors")
    docs["inshrink delta"] = run_json("compress", steps[0] / "model.safetensors", "-o", tmp / "i0.bls",
                                      "--codec", "inshrink", "--max-error", "0.2", "--base", tmp / "i.bls")
    docs["inspect inshrink"] = run_json("inspect", tmp / "i.bls", tmp / "i0.bls")
    run("compress", "--chain", small, "-o", tmp / "chain")
    docs["inspect chain"] = run_json("inspect", tmp / "chain")
    run("sidecar", bf16, "--dir", tmp)
    docs["sidecar"] = json.loads((tmp / "minilm-bf16.safetensors.bitlens.json").read_text())
    return docs


def test_every_printed_field_is_documented(documents):
    names = documented()
    missing = {}
    for doc, value in documents.items():
        found = set()
        keys_of(value, found)
        for parent, key in sorted(found):
            if key not in names:
                missing.setdefault(doc, []).append(f"{parent}.{key}" if parent else key)
    assert not missing, f"fields missing from docs/REPORTS.md: {json.dumps(missing, indent=1)}"


def test_the_documents_cover_the_gguf_and_inshrinkerator_fields(documents):
    """The fields a reader of a quantized tensor or a lossy snapshot looks for are really printed
    (so the first test checks them)."""
    keys = set()
    for value in documents.values():
        keys_of(value, keys)
    for key in ["element_type", "dequantized", "quant", "code_entropy", "piece", "inshrink", "error",
                "optimizer", "delta_tensors", "trend", "achieved_bytes"]:
        assert key in {k for _, k in keys}, key


def test_the_catalogue_record_is_documented(weights, tmp_path):
    """A catalogue run's record of a file (measured, with a snapshot) and of a failed one."""
    from package_helpers import import_bitlens
    bitlens = import_bitlens()
    names = documented()
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\0" * 16)
    for item in bitlens._bitlens.catalogue_files([weights / "minilm-bf16.safetensors", bad]):
        record = bitlens._bitlens.catalogue_file(item["checkpoint"], item["file"], str(tmp_path),
                                                 compress="lmc")
        found = set()
        keys_of(record, found)
        missing = sorted(f"{p}.{k}" for p, k in found if k not in names)
        assert not missing, f"catalogue fields missing from docs/REPORTS.md: {missing}"
