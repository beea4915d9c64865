#!/usr/bin/env bash
# Regenerates the web app's demo checkpoints in web/demo/ from the real MiniLM bf16 weights
# (all-MiniLM-L6-v2, Apache-2.0; see web/demo/README.md). Deterministic: re-running gives the same
# bytes. The output is committed, so this only needs to run when the demo should change.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[ -s .cache/weights/minilm-bf16.safetensors ] || scripts/setup.sh
.venv/bin/python tests/python/make_demo.py .cache/weights/minilm-bf16.safetensors web/demo
ls -l web/demo/*.safetensors
du -cb web/demo/*.safetensors | tail -n 1
