#!/usr/bin/env python3
"""A real, small training run for checkpoint-compression experiments, in NumPy only.

The data are scikit-learn's bundled handwritten digits (1,797 8x8 images, UCI ML digits; read from
the scikit-learn wheel by scripts/fetch-weights.sh into .cache/data/digits.csv.gz, so neither
scikit-learn nor scipy is installed). The model is a small MLP with the layer kinds the codecs
treat differently (Inshrinkerator §4.2 groups layers by type):

    embed.weight (17 x D)   an embedding of the 17 pixel intensities (0..16)
    pos.weight   (64 x D)   a learned embedding of each pixel's position, scaled by its intensity / 16
    fc1, fc2                linear layers (weight + bias), each followed by LayerNorm (ln1, ln2) and ReLU
    head                    the linear classifier (10 classes)

trained with AdamW (β = 0.9 / 0.999, ε = 1e-8, weight decay 0.01 on matrices) on mini-batches of
64, with softmax cross-entropy. Every `--every` steps a checkpoint is written as a `step-NNNNNN/`
folder holding, all through Python's `safetensors` package:

    model.safetensors            the weights, fp32
    optimizer.safetensors        AdamW's moments `exp_avg.<name>` / `exp_avg_sq.<name>`, fp32
                                 (metadata: `step`)
    model-bf16.safetensors       the same weights cast to bf16 (round to nearest even)
    optimizer-bf16.safetensors   the moments cast to bf16

The run is deterministic: batch `s` is drawn from a permutation seeded by (seed, epoch of s), so a
run resumed from a checkpoint at step s sees the same batches as the uninterrupted one.

Usage:
    train_digits.py train --out DIR [--steps 300] [--every 25] [--hidden 512] [--dim 8] [--seed 0]
                          [--lr 1e-3] [--resume STEP_DIR]
        --resume starts from STEP_DIR's model.safetensors + optimizer.safetensors (any file
        restored from a compressed snapshot) and continues to --steps.
    train_digits.py eval MODEL.safetensors [--optimizer-free]
        prints the validation accuracy, then the validation loss: the LAST number printed is the
        loss (what `bitlens compress --codec inshrink --eval-cmd` reads).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
from pathlib import Path

import numpy as np
from safetensors import TensorSpec, serialize_file

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
from cast_weights import f32_to_bf16_bits  # noqa: E402

DIGITS = ROOT / ".cache" / "data" / "digits.csv.gz"
BATCH = 64
BETAS = (0.9, 0.999)
EPS = 1e-8
WEIGHT_DECAY = 0.01
LN_EPS = 1e-5
VAL_FRACTION = 0.2
SPLIT_SEED = 1234


def load_digits(path: Path = DIGITS):
    """The digits as (pixels uint8 (N, 64) in 0..16, labels int64 (N,)), split train / validation."""
    if not path.exists():
        raise SystemExit(f"{path} is missing: run scripts/fetch-weights.sh")
    with gzip.open(path, "rt") as f:
        data = np.loadtxt(f, delimiter=",", dtype=np.int64)
    x, y = data[:, :64].astype(np.int64), data[:, 64]
    order = np.random.default_rng(SPLIT_SEED).permutation(len(y))
    n_val = int(len(y) * VAL_FRACTION)
    val, train = order[:n_val], order[n_val:]
    return (x[train], y[train]), (x[val], y[val])


def init_params(hidden: int, dim: int, seed: int) -> dict[str, np.ndarray]:
    """He-initialised weights, zero biases, unit LayerNorm gains, in file order."""
    rng = np.random.default_rng(seed)

    def linear(fan_in: int, fan_out: int) -> np.ndarray:
        return (rng.standard_normal((fan_out, fan_in)) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    p = {
        "embed.weight": (rng.standard_normal((17, dim)) * 0.5).astype(np.float32),
        "pos.weight": (rng.standard_normal((64, dim)) * 0.5).astype(np.float32),
        "fc1.weight": linear(64 * dim, hidden),
        "fc1.bias": np.zeros(hidden, np.float32),
        "ln1.weight": np.ones(hidden, np.float32),
        "ln1.bias": np.zeros(hidden, np.float32),
        "fc2.weight": linear(hidden, hidden),
        "fc2.bias": np.zeros(hidden, np.float32),
        "ln2.weight": np.ones(hidden, np.float32),
        "ln2.bias": np.zeros(hidden, np.float32),
        "head.weight": linear(hidden, 10),
        "head.bias": np.zeros(10, np.float32),
    }
    return p


def layer_norm(h, g, b):
    mu = h.mean(axis=1, keepdims=True)
    var = h.var(axis=1, keepdims=True)
    inv = 1.0 / np.sqrt(var + LN_EPS)
    xhat = (h - mu) * inv
    return xhat * g + b, (xhat, inv)


def layer_norm_back(dy, g, cache):
    xhat, inv = cache
    dg = (dy * xhat).sum(axis=0)
    db = dy.sum(axis=0)
    dxhat = dy * g
    n = dy.shape[1]
    dx = inv / n * (n * dxhat - dxhat.sum(axis=1, keepdims=True) - xhat * (dxhat * xhat).sum(axis=1, keepdims=True))
    return dx, dg, db


def forward(p, x, y, need_grad: bool):
    """Mean cross-entropy loss, accuracy and (if asked) gradients of every parameter."""
    n = x.shape[0]
    s = (x / 16.0).astype(np.float32)[:, :, None]
    e = p["embed.weight"][x] + s * p["pos.weight"][None, :, :]  # (n, 64, dim)
    h0 = e.reshape(n, -1)
    a1 = h0 @ p["fc1.weight"].T + p["fc1.bias"]
    n1, c1 = layer_norm(a1, p["ln1.weight"], p["ln1.bias"])
    h1 = np.maximum(n1, 0)
    a2 = h1 @ p["fc2.weight"].T + p["fc2.bias"]
    n2, c2 = layer_norm(a2, p["ln2.weight"], p["ln2.bias"])
    h2 = np.maximum(n2, 0)
    logits = h2 @ p["head.weight"].T + p["head.bias"]
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    loss = float(-logp[np.arange(n), y].mean())
    acc = float((logits.argmax(axis=1) == y).mean())
    if not need_grad:
        return loss, acc, None
    g = {}
    dlogits = np.exp(logp)
    dlogits[np.arange(n), y] -= 1
    dlogits /= n
    g["head.weight"] = dlogits.T @ h2
    g["head.bias"] = dlogits.sum(axis=0)
    dh2 = dlogits @ p["head.weight"]
    dn2 = dh2 * (n2 > 0)
    da2, g["ln2.weight"], g["ln2.bias"] = layer_norm_back(dn2, p["ln2.weight"], c2)
    g["fc2.weight"] = da2.T @ h1
    g["fc2.bias"] = da2.sum(axis=0)
    dh1 = da2 @ p["fc2.weight"]
    dn1 = dh1 * (n1 > 0)
    da1, g["ln1.weight"], g["ln1.bias"] = layer_norm_back(dn1, p["ln1.weight"], c1)
    g["fc1.weight"] = da1.T @ h0
    g["fc1.bias"] = da1.sum(axis=0)
    de = (da1 @ p["fc1.weight"]).reshape(e.shape)
    g["pos.weight"] = (de * s).sum(axis=0)
    g["embed.weight"] = np.zeros_like(p["embed.weight"])
    np.add.at(g["embed.weight"], x.reshape(-1), de.reshape(-1, e.shape[2]))
    return loss, acc, {k: v.astype(np.float32) for k, v in g.items()}


def batch_indices(n: int, step: int, seed: int) -> np.ndarray:
    """The examples of batch `step` (0-based): a function of (seed, step) only, so resuming repeats it."""
    per_epoch = n // BATCH
    epoch, k = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n)
    return order[k * BATCH:(k + 1) * BATCH]


def adamw_step(p, g, m, v, t: int, lr: float) -> None:
    b1, b2 = BETAS
    for name in p:
        m[name] = (b1 * m[name] + (1 - b1) * g[name]).astype(np.float32)
        v[name] = (b2 * v[name] + (1 - b2) * g[name] * g[name]).astype(np.float32)
        mhat = m[name] / (1 - b1 ** t)
        vhat = v[name] / (1 - b2 ** t)
        if p[name].ndim == 2:
            p[name] *= np.float32(1 - lr * WEIGHT_DECAY)
        p[name] -= (lr * mhat / (np.sqrt(vhat) + EPS)).astype(np.float32)


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], bf16: bool, metadata: dict[str, str]) -> None:
    """Writes `tensors` with Python's safetensors (fp32, or cast to bf16 round-to-nearest-even)."""
    specs, keep = {}, []
    for name, a in tensors.items():
        if bf16:
            a, dtype = f32_to_bf16_bits(a), "bfloat16"
        else:
            a, dtype = np.ascontiguousarray(a, dtype=np.float32), "float32"
        a = np.ascontiguousarray(a)
        keep.append(a)
        specs[name] = TensorSpec(dtype=dtype, shape=list(a.shape), data_ptr=a.ctypes.data, data_len=a.nbytes)
    tmp = path.with_suffix(".part")
    serialize_file(specs, str(tmp), metadata=metadata)
    os.replace(tmp, path)


def read_safetensors(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """A safetensors file's tensors as fp32 (bf16 and f16 widened) and its metadata.

    bf16 has no NumPy dtype, so the file's header is parsed here (the format is 8 bytes of header
    length, the JSON header, the data) rather than through `safe_open`.
    """
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None) or {}
    data = memoryview(raw)[8 + n:]
    kinds = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}
    out = {}
    for name, info in header.items():
        if info["dtype"] not in kinds:
            raise SystemExit(f"{path}: {name} is {info['dtype']}, not a float tensor")
        start, end = info["data_offsets"]
        a = np.frombuffer(data[start:end], dtype=kinds[info["dtype"]])
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = a.astype(np.float32).reshape(info["shape"])
    return out, meta


def save_checkpoint(out: Path, step: int, p, m, v, config: dict) -> Path:
    d = out / f"step-{step:06d}"
    d.mkdir(parents=True, exist_ok=True)
    meta = {"step": str(step), "config": json.dumps(config, sort_keys=True)}
    moments = {f"exp_avg.{k}": m[k] for k in p} | {f"exp_avg_sq.{k}": v[k] for k in p}
    for bf16, suffix in ((False, ""), (True, "-bf16")):
        write_safetensors(d / f"model{suffix}.safetensors", p, bf16, meta)
        write_safetensors(d / f"optimizer{suffix}.safetensors", moments, bf16, meta)
    return d


def train(args) -> None:
    (xt, yt), (xv, yv) = load_digits()
    config = {"hidden": args.hidden, "dim": args.dim, "seed": args.seed, "lr": args.lr}
    out = Path(args.out)
    if args.resume:
        src = Path(args.resume)
        p, meta = read_safetensors(src / "model.safetensors")
        opt, ometa = read_safetensors(src / "optimizer.safetensors")
        start = int(ometa.get("step", meta.get("step", "0")))
        m = {k: opt[f"exp_avg.{k}"] for k in p}
        v = {k: opt[f"exp_avg_sq.{k}"] for k in p}
    else:
        p = init_params(args.hidden, args.dim, args.seed)
        m = {k: np.zeros_like(a) for k, a in p.items()}
        v = {k: np.zeros_like(a) for k, a in p.items()}
        start = 0
        save_checkpoint(out, 0, p, m, v, config)
    log = []
    for step in range(start, args.steps):
        idx = batch_indices(len(yt), step, args.seed)
        loss, _, g = forward(p, xt[idx], yt[idx], True)
        adamw_step(p, g, m, v, step + 1, args.lr)
        done = step + 1
        if done % args.every == 0 or done == args.steps:
            val_loss, val_acc, _ = forward(p, xv, yv, False)
            save_checkpoint(out, done, p, m, v, config)
            log.append({"step": done, "train_loss": loss, "val_loss": val_loss, "val_accuracy": val_acc})
            print(f"step {done}: train loss {loss:.4f}, val loss {val_loss:.4f}, val accuracy {val_acc:.4f}", flush=True)
    with open(out / "log.jsonl", "a") as f:
        for row in log:
            f.write(json.dumps(row) + "\n")


def evaluate(path: str) -> None:
    _, (xv, yv) = load_digits()
    p, _ = read_safetensors(Path(path))
    loss, acc, _ = forward(p, xv, yv, False)
    print(f"accuracy {acc:.6f}")
    print(f"loss {loss:.9g}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--out", required=True)
    t.add_argument("--steps", type=int, default=300)
    t.add_argument("--every", type=int, default=25)
    t.add_argument("--hidden", type=int, default=512)
    t.add_argument("--dim", type=int, default=8)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--lr", type=float, default=1e-3)
    t.add_argument("--resume")
    e = sub.add_parser("eval")
    e.add_argument("model")
    args = ap.parse_args()
    if args.cmd == "train":
        train(args)
    else:
        evaluate(args.model)


if __name__ == "__main__":
    main()
