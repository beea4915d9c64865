#!/usr/bin/env bash
# Runs Miri (the Rust interpreter that checks every memory access against the rules `unsafe` code
# must keep) over bitlens' `unsafe` code:
# - the Huffman decode kernels' unchecked loads and stores (crates/codecs/src/huffman/
#   decode_kernels.rs), on the tests that drive them with real and with hostile tables, on the
#   portable kernels (BITLENS_CPU=baseline: the AVX2 build is the same code compiled with other
#   target features, which Miri does not execute);
# - the CLI's huge-page allocator (crates/hugepages), with its system calls replaced by an aligned
#   allocation under Miri (Miri models mmap but not the partial munmap that aligns a mapping, nor
#   madvise): Miri checks sizes, the reuse cache, resizing and zeroing; the native tests check the
#   mapping itself.
#
# Needs a nightly toolchain with the miri component; where there is none (the machines promise
# only one toolchain) it tries `rustup component add miri` once and otherwise says so and exits 0.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if ! rustup toolchain list | grep -q '^nightly'; then
  echo "miri: no nightly toolchain here; Miri skipped" >&2
  exit 0
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  timeout 600 rustup component add miri --toolchain nightly >/dev/null 2>&1 || true
fi
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri: the nightly toolchain has no miri component and rustup could not add it; Miri skipped" >&2
  exit 0
fi
BITLENS_CPU=baseline cargo +nightly miri test --locked -p bitlens-codecs --lib -- \
  huffman::decode_kernels::tests huffman::decode::tests::lanes_left_behind_still_decode_in_rounds
# The reuse cache keeps freed mappings for the process's lifetime by design: not a leak.
MIRIFLAGS="${MIRIFLAGS:-} -Zmiri-ignore-leaks" cargo +nightly miri test --locked -p bitlens-hugepages
