"""Writes the PyTorch fixtures of crates/tensors/tests/pytorch.rs into tests/fixtures/torch/.

Run once by hand when the fixtures change (the test suite reads the committed files and never
needs torch). torch is a multi-GB install, so use a throwaway venv, never the repo's .venv:

    python3 -m venv /tmp/v13t
    /tmp/v13t/bin/pip install torch numpy safetensors   # or --index-url .../whl/cpu
    /tmp/v13t/bin/python tests/python/make_torch_fixtures.py [--hand-made]

Written by torch (`torch.save`, both the zip format and `_use_new_zipfile_serialization=False`):
  state_{f32,f16,bf16}[_legacy].pt  a state dict of slices of real MiniLM tensors
                                    (.cache/weights/minilm-f32.safetensors)
  adam[_legacy].pt                  {"model": ..., "optimizer": Adam state_dict after one step,
                                    "epoch", "lr", "note"}
  views[_legacy].pt                 a transposed tensor, a column, rows: views sharing one
                                    storage; an nn.Parameter
  dtypes[_legacy].pt                every storage type, a 0-d and an empty tensor
  v3[_legacy].pt                    float8 and uint16/32/64 (`_rebuild_tensor_v3`, untyped storages)
Each with <name>.json: tensors (name, dtype, shape, sha256 of `t.contiguous()`'s bytes) and the
metadata leaves (dotted keys; None skipped; lists of scalars as arrays).

Hand-made bytes (no torch): hostile/*.pt (pickles calling os.system, builtins.eval,
subprocess.Popen through GLOBAL/STACK_GLOBAL + REDUCE, in both containers) and malformed/*.pt
(one broken rule each; the Rust test maps each file to its error).
"""

import hashlib
import io
import json
import os
import struct
import sys
import zipfile


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "torch")
WEIGHTS = os.path.join(ROOT, ".cache", "weights", "minilm-f32.safetensors")


def dtype_names():
    return {
        torch.float32: "F32",
        torch.float16: "F16",
        torch.bfloat16: "BF16",
        torch.float64: "F64",
        torch.int64: "I64",
        torch.int32: "I32",
        torch.int16: "I16",
        torch.int8: "I8",
        torch.uint8: "U8",
        torch.bool: "BOOL",
        torch.complex64: "C64",
        torch.uint16: "U16",
        torch.uint32: "U32",
        torch.uint64: "U64",
        torch.float8_e4m3fn: "F8_E4M3",
        torch.float8_e5m2: "F8_E5M2",
    }


def tensor_bytes(t):
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def flatten(obj, path, tensors, meta):
    """The Rust reader's naming rules: dotted names, None skipped, scalar lists as arrays."""
    name = path or "root"
    if isinstance(obj, torch.Tensor):
        tensors.append(
            {
                "name": name,
                "dtype": dtype_names()[obj.dtype],
                "shape": list(obj.shape),
                "contiguous": obj.is_contiguous(),
                "sha256": hashlib.sha256(tensor_bytes(obj)).hexdigest(),
            }
        )
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{path}.{k}" if path else str(k), tensors, meta)
    elif isinstance(obj, (list, tuple)):
        if all(isinstance(v, (bool, int, float, str)) for v in obj):
            meta[name] = list(obj)
        else:
            for i, v in enumerate(obj):
                flatten(v, f"{path}.{i}" if path else str(i), tensors, meta)
    elif obj is None:
        pass
    elif isinstance(obj, (bool, int, float, str)):
        meta[name] = obj
    else:
        raise TypeError(f"{name}: {type(obj)}")


def save(name, obj):
    for legacy in (False, True):
        fname = name + ("_legacy" if legacy else "") + ".pt"
        path = os.path.join(OUT, fname)
        torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
        tensors, meta = [], {}
        flatten(obj, "", tensors, meta)
        with open(path[:-3] + ".json", "w") as f:
            json.dump(
                {"format": "legacy" if legacy else "zip", "tensors": tensors, "metadata": meta},
                f,
                indent=1,
            )
        size = os.path.getsize(path)
        assert size <= 200_000, (fname, size)
        print(f"{fname}: {size} bytes, {len(tensors)} tensors", file=sys.stderr)


def real_fixtures():
    global torch
    import torch
    from safetensors.numpy import load_file

    w = {k: torch.from_numpy(v) for k, v in load_file(WEIGHTS).items()}
    state = {
        "embeddings.word_embeddings.weight": w["embeddings.word_embeddings.weight"][:48].clone(),
        "embeddings.LayerNorm.weight": w["embeddings.LayerNorm.weight"].clone(),
        "embeddings.LayerNorm.bias": w["embeddings.LayerNorm.bias"].clone(),
        "encoder.layer.0.attention.self.query.weight": w[
            "encoder.layer.0.attention.self.query.weight"
        ][:32].clone(),
        "encoder.layer.0.attention.self.query.bias": w[
            "encoder.layer.0.attention.self.query.bias"
        ].clone(),
    }
    for dt, tag in ((torch.float32, "f32"), (torch.float16, "f16"), (torch.bfloat16, "bf16")):
        sd = torch.nn.Module().state_dict()  # an OrderedDict with _metadata, as models give
        for k, v in state.items():
            sd[k] = v.to(dt)
        save(f"state_{tag}", sd)

    # A small model with real weights, one Adam step.
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(24, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    with torch.no_grad():
        model[0].weight.copy_(w["encoder.layer.0.attention.self.key.weight"][:16, :24])
        model[0].bias.copy_(w["encoder.layer.0.attention.self.key.bias"][:16])
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = w["embeddings.position_embeddings.weight"][:8, :24]
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
    save(
        "adam",
        {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "epoch": 3,
            "lr": 1e-3,
            "note": "one Adam step on MiniLM slices",
        },
    )

    base = w["encoder.layer.1.attention.self.value.weight"][:16, :24].clone()
    save(
        "views",
        {
            "base": base,
            "transposed": base.t(),
            "column": base[:, 3],
            "rows": base[2:5],
            "param": torch.nn.Parameter(w["encoder.layer.1.attention.self.value.bias"][:40].clone()),
        },
    )

    g = torch.Generator().manual_seed(1)
    f = torch.randn(6, 5, generator=g)
    save(
        "dtypes",
        {
            "f64": f.double(),
            "i64": torch.arange(-5, 7),
            "i32": torch.arange(-3, 9, dtype=torch.int32).reshape(3, 4),
            "i16": torch.arange(-4, 4, dtype=torch.int16),
            "i8": torch.arange(-6, 6, dtype=torch.int8),
            "u8": torch.arange(0, 250, 10, dtype=torch.uint8),
            "bool": f > 0,
            "c64": torch.complex(f, -f),
            "scalar": torch.tensor(2.5),
            "empty": torch.zeros(0, 3),
        },
    )

    # Dtypes without a legacy storage class: _rebuild_tensor_v3 over an untyped storage.
    save(
        "v3",
        {
            "f8_e4m3": f.to(torch.float8_e4m3fn),
            "f8_e5m2_t": f.to(torch.float8_e5m2).t(),
            "u16": torch.arange(0, 12, dtype=torch.int32).to(torch.uint16).reshape(3, 4),
            "u32": torch.arange(0, 5, dtype=torch.int64).to(torch.uint32),
            "u64": torch.arange(0, 3, dtype=torch.int64).to(torch.uint64),
        },
    )


# ---- hand-made pickles ------------------------------------------------------------------------

def su(s):
    """SHORT_BINUNICODE."""
    b = s.encode()
    return b"\x8c" + bytes([len(b)]) + b


LEGACY_PREFIX = (
    b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + b"."
    + b"\x80\x02M\xe9\x03."
    + b"\x80\x02}(" + su("protocol_version") + b"M\xe9\x03" + su("little_endian") + b"\x88u."
)

# The file the hostile payloads would create if anything ran them.
PWNED = "/tmp/bitlens_hostile_pickle_ran"

HOSTILE = {
    # GLOBAL 'os system' + ('touch …',) + REDUCE
    "os_system": b"\x80\x02cos\nsystem\n" + su(f"touch {PWNED}") + b"\x85R.",
    # STACK_GLOBAL 'builtins' 'eval' + REDUCE
    "builtins_eval": b"\x80\x04"
    + su("builtins")
    + su("eval")
    + b"\x93"
    + su(f"open('{PWNED}', 'w')")
    + b"\x85R.",
    # subprocess.Popen(['touch', …]) inside a state dict
    "subprocess_popen": b"\x80\x02}("
    + su("weight")
    + b"csubprocess\nPopen\n]("
    + su("touch")
    + su(PWNED)
    + b"e\x85Ru.",
}


def tensor_pickle(pid_extra=b"", key="0", numel=4, offset=0, size=(4,), stride=(1,)):
    """A state dict {'w': _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())}."""
    def ints(v):
        return b"(" + b"".join(b"K" + bytes([x]) for x in v) + b"t"

    pid = b"(" + su("storage") + b"ctorch\nFloatStorage\n" + su(key) + su("cpu") + b"K" + bytes([numel]) + pid_extra + b"tQ"
    return (
        b"\x80\x02}(" + su("w") + b"ctorch._utils\n_rebuild_tensor_v2\n("
        + pid + b"K" + bytes([offset]) + ints(size) + ints(stride)
        + b"\x89ccollections\nOrderedDict\n)RtRu."
    )


def legacy_file(main, keys=(b"0",), storages=((4, 16),)):
    out = LEGACY_PREFIX + main
    out += b"\x80\x02](" + b"".join(su(k.decode()) for k in keys) + b"e."
    for numel, nbytes in storages:
        out += struct.pack("<q", numel) + bytes(range(nbytes))
    return out


def zip_file(pkl, members=(("data/0", bytes(16)),), compress=False, byteorder="little"):
    buf = io.BytesIO()
    def info(name):  # a fixed date, so the files are the same on every run
        return zipfile.ZipInfo("archive/" + name, date_time=(2020, 1, 1, 0, 0, 0))

    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(info("data.pkl"), pkl)
        z.writestr(info("byteorder"), byteorder)
        z.writestr(info("version"), "3\n")
        for name, data in members:
            z.writestr(
                info(name),
                data,
                compress_type=zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED,
            )
    return buf.getvalue()


def hand_made():
    os.makedirs(os.path.join(OUT, "hostile"), exist_ok=True)
    for name, p in HOSTILE.items():
        with open(os.path.join(OUT, "hostile", name + "_legacy.pt"), "wb") as f:
            f.write(LEGACY_PREFIX + p)
        with open(os.path.join(OUT, "hostile", name + ".pt"), "wb") as f:
            f.write(zip_file(p))

    good = tensor_pickle()
    # Legacy persistent ids carry a sixth item, the view metadata (None).
    good_legacy = tensor_pickle(pid_extra=b"N")
    deep = b"\x80\x02" + b"]" * 200 + b"a" * 199 + b"."
    bad = {
        "truncated_pickle": legacy_file(good_legacy)[: len(LEGACY_PREFIX) + len(good_legacy) // 2],
        "unknown_opcode": legacy_file(good_legacy.replace(b"}(", b"}\xff", 1)),
        "stack_underflow": legacy_file(b"\x80\x02K\x01s."),
        "memo_missing": legacy_file(b"\x80\x02h\x07."),
        "oversized_count": legacy_file(b"\x80\x02X\xff\xff\xff\x7f" + b"abc."),
        "deep_nesting": legacy_file(deep),
        # a 4 KB string memoized once, then referenced 100 times: 400 KB of values from 4 KB
        "shared_blowup": legacy_file(
            b"\x80\x02X" + struct.pack("<I", 4096) + b"s" * 4096 + b"q\x00(" + b"h\x00" * 100 + b"l."
        ),
        "recursive": legacy_file(b"\x80\x02}q\x00" + su("self") + b"h\x00s."),
        "bad_persistent_id": legacy_file(tensor_pickle(pid_extra=b"K\x00K\x00")),
        "unknown_storage_type": legacy_file(
            good_legacy.replace(b"ctorch\nFloatStorage\n", b"ctorch\nQInt8Storage\n")
        ),
        "storage_header_mismatch": legacy_file(good_legacy, storages=((5, 20),)),
        "storage_beyond_file": legacy_file(good_legacy)[:-3],
        "storage_key_missing": legacy_file(good_legacy, keys=(b"1",)),
        "view_out_of_bounds": legacy_file(tensor_pickle(pid_extra=b"N", offset=1)),
        "zip_storage_missing": zip_file(good, members=(("data/7", bytes(16)),)),
        "zip_storage_too_small": zip_file(good, members=(("data/0", bytes(12)),)),
        "zip_compressed_storage": zip_file(good, compress=True),
        "zip_view_out_of_bounds": zip_file(tensor_pickle(size=(2, 2), stride=(1, 3))),
        "zip_big_endian": zip_file(good, byteorder="big"),
    }
    os.makedirs(os.path.join(OUT, "malformed"), exist_ok=True)
    for name, data in bad.items():
        with open(os.path.join(OUT, "malformed", name + ".pt"), "wb") as f:
            f.write(data)
    # The good hand-made files, so the test proves the malformed ones differ in one rule only.
    with open(os.path.join(OUT, "malformed", "ok_legacy.pt"), "wb") as f:
        f.write(legacy_file(good_legacy))
    with open(os.path.join(OUT, "malformed", "ok_zip.pt"), "wb") as f:
        f.write(zip_file(good))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    hand_made()
    # `--hand-made` rewrites only the hand-made files (no torch needed; the torch-written files
    # carry a random serialization id, so rewriting them changes their bytes).
    if "--hand-made" not in sys.argv:
        real_fixtures()
