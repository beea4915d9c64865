"""The XOR delta of two checkpoints of one training run as a safetensors file (issue 28's
benchmark set): the newer file's header and, in place of each tensor's bytes, their XOR with the
older file's bytes of that tensor — what `bitlens compress NEW --base OLD` codes with LMC, as a
file any peer (ZipNN, bg4-lz4) can compress the same way.

usage: make_xor_delta.py OLD NEW OUT
"""
import json
import struct
import sys

import numpy as np


def read(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = f.read(n)
        return head, json.loads(head), f.read()


def main(old, new, out):
    _, h_old, d_old = read(old)
    head, h_new, d_new = read(new)
    body = np.frombuffer(d_new, np.uint8).copy()
    for name, t in h_new.items():
        if name == "__metadata__":
            continue
        o = h_old.get(name)
        if not o or o["dtype"] != t["dtype"] or o["shape"] != t["shape"]:
            raise SystemExit(f"{old} has no tensor {name} of {t['dtype']} {t['shape']}")
        a, b = t["data_offsets"]
        c, d = o["data_offsets"]
        body[a:b] ^= np.frombuffer(d_old, np.uint8, b - a, c)
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + body.tobytes())


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
