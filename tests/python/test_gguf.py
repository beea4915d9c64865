"""Cross-checks of the GGUF reader's fixtures against the reference `gguf` package (gguf-py).

The Rust side (`cargo test -p bitlens-tensors`, module `format::gguf::tests`) reads the committed
fixtures in tests/fixtures/gguf/ and compares every key/value and tensor info with what gguf-py's
`GGUFReader` read (expected.json) and every dequantized value, bit for bit, with gguf-py's
`dequantize` (`<type>.f32`). This suite proves those fixtures are what gguf-py writes and reads
today: it regenerates them with the pinned gguf-py into a temporary directory and requires the
same bytes; it also checks the Rust type table against gguf-py's own (the IQ tables:
test_generated_tables.py).
"""
import pathlib
import re

import gguf
import numpy as np
import pytest
from conftest import ROOT
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

import make_gguf_fixtures

FIXTURES = ROOT / "tests" / "fixtures" / "gguf"
GGUF_SRC = ROOT / "crates" / "tensors" / "src" / "format" / "gguf"


def test_pinned_gguf_version():
    from importlib.metadata import version

    assert version("gguf") == "0.19.0", "fixtures were written with gguf 0.19.0"


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory, weights):
    out = tmp_path_factory.mktemp("gguf")
    make_gguf_fixtures.main(out)
    return out


def same_values(a, b):
    """f32 arrays equal bit for bit, except that any NaN equals any NaN (numpy's f16 → f32 cast
    may quiet a signalling NaN on one CPU and not on another)."""
    a, b = np.asarray(a, dtype="<f4"), np.asarray(b, dtype="<f4")
    return a.shape == b.shape and bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


def test_fixtures_are_what_gguf_py_writes_and_reads(regenerated):
    committed = sorted(p.name for p in FIXTURES.iterdir())
    assert committed == sorted(p.name for p in regenerated.iterdir())
    for name in committed:
        old, new = FIXTURES / name, regenerated / name
        if name.endswith(".f32"):
            assert same_values(np.fromfile(old, "<f4"), np.fromfile(new, "<f4")), name
        else:
            assert old.read_bytes() == new.read_bytes(), name


def test_every_dequantizable_type_has_a_fixture():
    # Every type gguf-py dequantizes (beyond F32/F16, which `dequantize` handles inline).
    traits = {t for t in GGMLQuantizationType if t in gguf.quants._type_traits}
    written = {GGMLQuantizationType[p.stem.upper()] for p in FIXTURES.glob("*.f32")}
    assert traits | {GGMLQuantizationType.F32, GGMLQuantizationType.F16} == written


def test_fixture_values_are_gguf_py_dequantize():
    for f32 in FIXTURES.glob("*.f32"):
        r = gguf.GGUFReader(str(f32.with_suffix(".gguf")))
        want = np.concatenate([gguf.quants.dequantize(t.data, t.tensor_type).reshape(-1) for t in r.tensors])
        got = np.fromfile(f32, dtype="<f4")
        assert same_values(got, want), f32.name


def test_rust_type_table_matches_gguf_py():
    src = (GGUF_SRC / "types.rs").read_text()
    rows = {}
    for m in re.finditer(r'Row\((\d+), "(\w+)", (\d+), ([\d +/*]+)\)', src):
        rows[int(m[1])] = (m[2], int(m[3]), eval(m[4]))  # noqa: S307 — arithmetic on literals
    assert len(rows) == len(GGMLQuantizationType)
    for t in GGMLQuantizationType:
        name, block, size = rows[int(t)]
        assert name == t.name
        want = GGML_QUANT_SIZES[t]
        if t == GGMLQuantizationType.Q8_1:
            # gguf-py still says 4 + 4 + 32 (two f32); ggml's block_q8_1 is two f16 + 32 int8.
            assert want == (32, 40) and (block, size) == (32, 36)
        else:
            assert (block, size) == want, t.name
