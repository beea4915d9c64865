"""Shared fixtures: the bitlens binary and the real weights (see scripts/fetch-weights.sh)."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("BITLENS_BIN", ROOT / "target" / "release" / "bitlens"))
WEIGHTS = ROOT / ".cache" / "weights"


def run(*args, check=True):
    """Runs bitlens; returns the CompletedProcess (text mode)."""
    proc = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"bitlens {args} failed ({proc.returncode}): {proc.stderr}")
    return proc


def run_json(*args):
    return json.loads(run(*args, "--json").stdout)


@pytest.fixture(scope="session")
def weights():
    missing = [d for d in ("f32", "bf16", "f16") if not (WEIGHTS / f"minilm-{d}.safetensors").exists()]
    if missing:
        raise AssertionError(f"real weights missing ({missing}); run scripts/fetch-weights.sh")
    return WEIGHTS
