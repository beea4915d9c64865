"""What the tests of the `bitlens` Python package share: the installed package (a failure when
BITLENS_REQUIRE_PACKAGE=1, as scripts/test.sh sets after building the wheel; else the tests skip),
and the CLI's message for a command that fails."""
import os

import pytest

from conftest import run


def import_bitlens():
    """The installed `bitlens` package."""
    if os.environ.get("BITLENS_REQUIRE_PACKAGE") == "1":
        import bitlens
        return bitlens
    return pytest.importorskip(
        "bitlens", reason="the bitlens package is not installed (scripts/test.sh builds it)")


def cli_error(*args):
    """The CLI's message for a failing command: its stderr line after `bitlens: `."""
    proc = run(*args, check=False)
    assert proc.returncode == 1, f"bitlens {args} did not fail: {proc.stdout[:200]}"
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("bitlens: "), line
    return line[len("bitlens: "):]
