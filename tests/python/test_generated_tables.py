"""The checked-in tables that scripts/gen/ generates are exactly what their generators write today
with the packages pinned in requirements.txt: each generator is run and its output compared byte
for byte with the committed file.

A generator whose pinned package is not installed is skipped, saying which one; an installed
package of another version fails (its output would differ from the committed table's).
"""
import difflib
import pathlib
import subprocess
import sys
from importlib import metadata

import pytest
from conftest import ROOT

GEN = ROOT / "scripts" / "gen"
REQUIREMENTS = pathlib.Path(__file__).with_name("requirements.txt")

# generator in scripts/gen → (the checked-in table, the packages it imports)
TABLES = {
    "gguf_dequant_tables.py": ("crates/tensors/src/format/gguf/dequant/tables.rs", ("gguf", "numpy")),
    "fp8_ml_dtypes.py": ("crates/lessons/src/anatomy/fp8_ml_dtypes.txt", ("ml_dtypes", "numpy")),
}


def pins():
    """`name==version` lines of requirements.txt, by normalised name."""
    out = {}
    for line in REQUIREMENTS.read_text().splitlines():
        name, sep, version = line.split("#")[0].strip().partition("==")
        if sep:
            out[name.lower().replace("_", "-")] = version
    return out


def require_pinned(packages):
    """Skips when a package is missing; fails when it is not its pinned version."""
    pinned = pins()
    for package in packages:
        want = pinned.get(package.lower().replace("_", "-"))
        assert want, f"{package} is not pinned in {REQUIREMENTS.name}"
        try:
            have = metadata.version(package)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{package}=={want} is not installed (scripts/python-env.sh installs {REQUIREMENTS.name})")
        assert have == want, f"{package} {have} is installed; the tables are generated with {want}"


def table_path(place):
    """The checked-in table."""
    return ROOT / place


@pytest.mark.parametrize("generator", sorted(TABLES))
def test_checked_in_table_is_what_its_generator_writes(generator):
    places, packages = TABLES[generator]
    require_pinned(packages)
    table = table_path(places)
    proc = subprocess.run([sys.executable, str(GEN / generator)], capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    want = table.read_bytes()
    if proc.stdout != want:
        diff = difflib.unified_diff(
            want.decode().splitlines(), proc.stdout.decode().splitlines(), str(table), generator, n=1, lineterm=""
        )
        pytest.fail(
            f"{table.relative_to(ROOT)} differs from what scripts/gen/{generator} writes "
            f"(regenerate: .venv/bin/python scripts/gen/{generator} {table.relative_to(ROOT)}):\n"
            + "\n".join(list(diff)[:20])
        )
