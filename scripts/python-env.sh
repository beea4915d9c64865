#!/usr/bin/env bash
# Creates (once) the project's Python virtualenv in .venv with the pinned packages that the
# cross-checks and weight fixtures need. Idempotent: re-running only installs what is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
req="$root/tests/python/requirements.txt"
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating Python virtualenv in .venv" >&2
  python3 -m venv "$venv"
fi
stamp="$venv/.requirements.sha"
want="$(sha256sum "$req" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages from tests/python/requirements.txt" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi
