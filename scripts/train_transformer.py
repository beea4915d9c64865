#!/usr/bin/env python3
"""A small transformer trained for a few hundred AdamW steps, in NumPy only (no torch).

The fp32 fixture of issue 29 (Inshrinkerator under a tight `--max-error` budget) and, with its
AdamW moments in fp32 and bf16, of issue 28: weights whose matrices are Gaussian-like as a real
transformer's are, which the digits MLP of train_digits.py is not (few, small matrices).

Model: a pre-LayerNorm decoder, 6.65 M parameters with the defaults —

    embed_tokens.weight (V x D)               token embedding, tied with the output head
    embed_positions.weight (C x D)            learned positions
    layers.{l}.attn.{q,k,v,o}_proj.{weight,bias}   causal multi-head attention (H heads)
    layers.{l}.mlp.{fc1,fc2}.{weight,bias}    GELU (tanh) MLP, D -> F -> D
    layers.{l}.{ln1,ln2}.{weight,bias}        LayerNorms before attention and MLP
    norm.weight, norm.bias                    final LayerNorm

Weights are (out, in) as torch stores them. The task is next-token prediction on sequences of a
fixed random sparse Markov chain over V tokens (each token has 4 likely successors), so the loss
falls well below log V in a few hundred steps. AdamW and the file writing are train_digits.py's
(β = 0.9 / 0.999, ε = 1e-8, weight decay 0.01 on matrices). Deterministic for a seed.

Writes to OUT (default .cache/runs/transformer):

    model.safetensors            the weights, fp32
    optimizer.safetensors        AdamW's moments `exp_avg.<name>` / `exp_avg_sq.<name>`, fp32
    model-bf16.safetensors       the weights cast to bf16
    optimizer-bf16.safetensors   the moments cast to bf16
    log.jsonl                    the loss every 10 steps

Usage:
    train_transformer.py [--out DIR] [--steps 300] [--layers 8] [--dim 256] [--ff 1024]
                         [--heads 4] [--vocab 1024] [--context 256] [--seq 32] [--batch 8]
                         [--lr 1e-3] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# One BLAS thread: the matrices are small, and on a shared 2-core machine threaded BLAS made a
# step ~20x slower (measured: ~30 s against ~1 s per step).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from train_digits import adamw_step, layer_norm, layer_norm_back, write_safetensors  # noqa: E402

GELU_C = np.float32(np.sqrt(2.0 / np.pi))


def init_params(a) -> dict[str, np.ndarray]:
    """Normal(0, 0.02) matrices (output projections scaled by 1/sqrt(2L)), zero biases, unit gains."""
    rng = np.random.default_rng(a.seed)
    d, f = a.dim, a.ff

    def normal(shape, std=0.02):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    p = {
        "embed_tokens.weight": normal((a.vocab, d)),
        "embed_positions.weight": normal((a.context, d)),
    }
    out_std = 0.02 / np.sqrt(2 * a.layers)
    for l in range(a.layers):
        pre = f"layers.{l}"
        p[f"{pre}.ln1.weight"] = np.ones(d, np.float32)
        p[f"{pre}.ln1.bias"] = np.zeros(d, np.float32)
        for n in "qkv":
            p[f"{pre}.attn.{n}_proj.weight"] = normal((d, d))
            p[f"{pre}.attn.{n}_proj.bias"] = np.zeros(d, np.float32)
        p[f"{pre}.attn.o_proj.weight"] = normal((d, d), out_std)
        p[f"{pre}.attn.o_proj.bias"] = np.zeros(d, np.float32)
        p[f"{pre}.ln2.weight"] = np.ones(d, np.float32)
        p[f"{pre}.ln2.bias"] = np.zeros(d, np.float32)
        p[f"{pre}.mlp.fc1.weight"] = normal((f, d))
        p[f"{pre}.mlp.fc1.bias"] = np.zeros(f, np.float32)
        p[f"{pre}.mlp.fc2.weight"] = normal((d, f), out_std)
        p[f"{pre}.mlp.fc2.bias"] = np.zeros(d, np.float32)
    p["norm.weight"] = np.ones(d, np.float32)
    p["norm.bias"] = np.zeros(d, np.float32)
    return p


def markov_batches(a):
    """Token sequences of a fixed sparse Markov chain: (batch, seq + 1) int arrays, forever."""
    rng = np.random.default_rng(a.seed + 1)
    succ = rng.integers(0, a.vocab, size=(a.vocab, 4))
    prob = np.array([0.55, 0.25, 0.15, 0.05])
    while True:
        x = np.empty((a.batch, a.seq + 1), np.int64)
        x[:, 0] = rng.integers(0, a.vocab, size=a.batch)
        for t in range(a.seq):
            pick = rng.choice(4, size=a.batch, p=prob)
            x[:, t + 1] = succ[x[:, t], pick]
        yield x


def linear(h, p, name):
    return h @ p[f"{name}.weight"].T + p[f"{name}.bias"]


def linear_back(dy, h, p, name, g):
    g[f"{name}.weight"] = dy.reshape(-1, dy.shape[-1]).T @ h.reshape(-1, h.shape[-1])
    g[f"{name}.bias"] = dy.reshape(-1, dy.shape[-1]).sum(axis=0)
    return dy @ p[f"{name}.weight"]


def ln(x, p, name):
    """LayerNorm over the last axis of (B, T, D) with train_digits' 2-D helpers."""
    b, t, d = x.shape
    y, cache = layer_norm(x.reshape(-1, d), p[f"{name}.weight"], p[f"{name}.bias"])
    return y.reshape(b, t, d), cache


def ln_back(dy, p, name, cache, g):
    b, t, d = dy.shape
    dx, dg, db = layer_norm_back(dy.reshape(-1, d), p[f"{name}.weight"], cache)
    g[f"{name}.weight"], g[f"{name}.bias"] = dg, db
    return dx.reshape(b, t, d)


def forward_backward(p, tokens, a):
    """Mean next-token cross-entropy of `tokens` (B, T + 1) and the gradient of every parameter."""
    x_in, y = tokens[:, :-1], tokens[:, 1:]
    b, t = x_in.shape
    h, dh = a.heads, a.dim // a.heads
    x = p["embed_tokens.weight"][x_in] + p["embed_positions.weight"][None, :t]
    mask = np.triu(np.full((t, t), -1e9, np.float32), 1)
    caches = []
    for l in range(a.layers):
        pre = f"layers.{l}"
        n1, c1 = ln(x, p, f"{pre}.ln1")
        q, k, v = (linear(n1, p, f"{pre}.attn.{n}_proj").reshape(b, t, h, dh).transpose(0, 2, 1, 3) for n in "qkv")
        s = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(dh)) + mask
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        att = s / s.sum(axis=-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, t, a.dim)
        x = x + linear(ctx, p, f"{pre}.attn.o_proj")
        n2, c2 = ln(x, p, f"{pre}.ln2")
        u = linear(n2, p, f"{pre}.mlp.fc1")
        th = np.tanh(GELU_C * (u + 0.044715 * u**3))
        gel = 0.5 * u * (1 + th)
        x = x + linear(gel, p, f"{pre}.mlp.fc2")
        caches.append((n1, c1, q, k, v, att, ctx, n2, c2, u, th, gel))
    nf, cf = ln(x, p, "norm")
    logits = nf @ p["embed_tokens.weight"].T
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    bi, ti = np.meshgrid(np.arange(b), np.arange(t), indexing="ij")
    loss = float(-logp[bi, ti, y].mean())
    g: dict[str, np.ndarray] = {}
    dlog = np.exp(logp)
    dlog[bi, ti, y] -= 1
    dlog /= b * t
    g["embed_tokens.weight"] = dlog.reshape(-1, a.vocab).T @ nf.reshape(-1, a.dim)
    dx = ln_back(dlog @ p["embed_tokens.weight"], p, "norm", cf, g)
    for l in reversed(range(a.layers)):
        pre = f"layers.{l}"
        n1, c1, q, k, v, att, ctx, n2, c2, u, th, gel = caches[l]
        dgel = linear_back(dx, gel, p, f"{pre}.mlp.fc2", g)
        du = dgel * (0.5 * (1 + th) + 0.5 * u * (1 - th**2) * GELU_C * (1 + 3 * 0.044715 * u**2))
        dx = dx + ln_back(linear_back(du, n2, p, f"{pre}.mlp.fc1", g), p, f"{pre}.ln2", c2, g)
        dctx = linear_back(dx, ctx, p, f"{pre}.attn.o_proj", g).reshape(b, t, h, dh).transpose(0, 2, 1, 3)
        datt = dctx @ v.transpose(0, 1, 3, 2)
        dv = att.transpose(0, 1, 3, 2) @ dctx
        ds = att * (datt - (datt * att).sum(axis=-1, keepdims=True)) / np.float32(np.sqrt(dh))
        dq = ds @ k
        dk = ds.transpose(0, 1, 3, 2) @ q
        dn1 = 0
        for n, dd in (("q", dq), ("k", dk), ("v", dv)):
            dd = dd.transpose(0, 2, 1, 3).reshape(b, t, a.dim)
            dn1 = dn1 + linear_back(dd, n1, p, f"{pre}.attn.{n}_proj", g)
        dx = dx + ln_back(dn1, p, f"{pre}.ln1", c1, g)
    np.add.at(g["embed_tokens.weight"], x_in.reshape(-1), dx.reshape(-1, a.dim))
    g["embed_positions.weight"] = np.zeros_like(p["embed_positions.weight"])
    g["embed_positions.weight"][:t] = dx.sum(axis=0)
    return loss, {k: v.astype(np.float32) for k, v in g.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / ".cache" / "runs" / "transformer")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--dim", type=int, default=256)
    ap.add_argument("--ff", type=int, default=1024)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--context", type=int, default=256)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    p = init_params(a)
    m = {k: np.zeros_like(w) for k, w in p.items()}
    v = {k: np.zeros_like(w) for k, w in p.items()}
    a.out.mkdir(parents=True, exist_ok=True)
    batches = markov_batches(a)
    config = {k: (str(x) if isinstance(x, Path) else x) for k, x in vars(a).items() if k != "out"}
    with open(a.out / "log.jsonl", "w") as log:
        for step in range(1, a.steps + 1):
            loss, g = forward_backward(p, next(batches), a)
            adamw_step(p, g, m, v, step, a.lr)
            if step % 10 == 0 or step == 1:
                log.write(json.dumps({"step": step, "loss": loss}) + "\n")
                log.flush()
                print(f"step {step} loss {loss:.4f}", file=sys.stderr)
    meta = {"step": str(a.steps), "config": json.dumps(config, sort_keys=True)}
    moments = {f"exp_avg.{k}": m[k] for k in p} | {f"exp_avg_sq.{k}": v[k] for k in p}
    for bf16, suffix in ((False, ""), (True, "-bf16")):
        write_safetensors(a.out / f"model{suffix}.safetensors", p, bf16, meta)
        write_safetensors(a.out / f"optimizer{suffix}.safetensors", moments, bf16, meta)
    n = sum(w.size for w in p.values())
    print(f"{n} parameters, final loss {loss:.4f}, written to {a.out}")


if __name__ == "__main__":
    main()
