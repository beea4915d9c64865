"""The malformed corpus through the package: every hostile, malformed or fuzzed file of
tests/fixtures (PyTorch pickles, NumPy files, broken safetensors headers, damaged snapshots)
raises the documented exception of its class — `FormatError` for a file breaking its format's
rules, `CorruptError` for a damaged snapshot, `UsageError` for a request that cannot be
carried out, the builtin `OSError` of its errno for a local file that cannot be opened — and its
text is exactly the CLI's message for the same file."""
import errno
import json

import pytest

from conftest import ROOT
from package_helpers import cli_error, import_bitlens

bitlens = import_bitlens()
FIXTURES = ROOT / "tests" / "fixtures"
TORCH = sorted((FIXTURES / "torch").glob("[hmf]*/*.pt"))
NUMPY_BAD = [p for p in sorted((FIXTURES / "numpy").glob("*.np[yz]"))
             if "error" in json.loads((FIXTURES / "numpy" / "expected.json").read_text())
             .get(p.name, {})]


def fails_as_the_cli(path, exception):
    """`bitlens.inspect(path)` raises `exception` with the CLI's message; `load_file` too."""
    message = cli_error("inspect", path)
    with pytest.raises(exception) as e:
        bitlens.inspect(path)
    assert str(e.value) == message
    with pytest.raises(exception):
        bitlens.load_file(path)


@pytest.mark.parametrize("path", [p for p in TORCH if not p.name.startswith("ok_")],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_bad_pytorch_files_are_format_errors(path):
    fails_as_the_cli(path, bitlens.FormatError)


@pytest.mark.parametrize("path", NUMPY_BAD, ids=lambda p: p.name)
def test_numpy_files_bitlens_does_not_read_are_format_errors(path):
    fails_as_the_cli(path, bitlens.FormatError)


HEADERS = {
    "too_small": b"\x01\x00",
    "huge_header": (10 ** 9).to_bytes(8, "little") + b"{}",
    "past_the_end": (64).to_bytes(8, "little") + b"{}",
    "not_json": (4).to_bytes(8, "little") + b"{{{{",
    "bad_offsets": (lambda h: len(h).to_bytes(8, "little") + h + b"\0" * 8)(
        b'{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}}'),
    "unknown_dtype": (lambda h: len(h).to_bytes(8, "little") + h + b"\0" * 4)(
        b'{"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}}'),
}


@pytest.mark.parametrize("name", HEADERS)
def test_broken_safetensors_headers_are_format_errors(tmp_path, name):
    path = tmp_path / f"{name}.safetensors"
    path.write_bytes(HEADERS[name])
    fails_as_the_cli(path, bitlens.FormatError)


def test_damaged_snapshots_are_corrupt_errors(weights, tmp_path):
    snap = tmp_path / "m.bls"
    bitlens.compress_file(weights / "minilm-bf16.safetensors", snap)
    data = bytearray(snap.read_bytes())
    data[len(data) // 2] ^= 0x40  # inside a frame
    damaged = tmp_path / "damaged.bls"
    damaged.write_bytes(bytes(data))
    message = cli_error("decompress", damaged, "-o", tmp_path / "cli.safetensors")
    with pytest.raises(bitlens.CorruptError) as e:
        bitlens.decompress_file(damaged, tmp_path / "py.safetensors")
    assert str(e.value) == message
    with pytest.raises(bitlens.CorruptError):
        bitlens.load_file(damaged)
    truncated = tmp_path / "truncated.bls"
    truncated.write_bytes(bytes(data[:-100]))
    message = cli_error("inspect", truncated)
    with pytest.raises(bitlens.BitlensError) as e:
        bitlens.inspect(truncated)
    assert str(e.value) == message and isinstance(e.value, ValueError)
    assert not (tmp_path / "py.safetensors").exists()


def test_missing_files_are_the_builtin_os_error_of_their_errno(tmp_path):
    missing = tmp_path / "missing.safetensors"
    with pytest.raises(FileNotFoundError) as e:
        bitlens.inspect(missing)
    assert type(e.value) is FileNotFoundError and e.value.errno == errno.ENOENT
    assert str(e.value) == cli_error("inspect", missing)
    with pytest.raises(FileNotFoundError):
        bitlens.load_file(missing)
    with pytest.raises(FileNotFoundError):
        bitlens.compress_file(missing, tmp_path / "x.bls")


def test_the_exception_classes():
    for cls in (bitlens.FormatError, bitlens.CorruptError, bitlens.UsageError):
        assert issubclass(cls, bitlens.BitlensError) and issubclass(cls, ValueError)
    assert issubclass(bitlens.RemoteError, bitlens.BitlensError)
    assert issubclass(bitlens.RemoteError, OSError)
    assert issubclass(bitlens.BitlensWarning, UserWarning)
