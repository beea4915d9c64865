// Test inputs made from the real weights: reference JSON from the CLI, a perturbed "later
// checkpoint", a shard set with its index, a directory of checkpoints, and malformed files.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
export const WEIGHTS = path.join(ROOT, '.cache/weights');
export const BITLENS = process.env.BITLENS_BIN ?? path.join(ROOT, 'target/release/bitlens');
export const PYTHON = path.join(ROOT, '.venv/bin/python');
export const SHOTS = process.env.SCREENSHOTS ?? path.join(ROOT, 'target/e2e/screenshots');

/**
 * True when a console message is one of the page's errors — not the browser's line about a
 * sidecar that is not there: the page looks for `<file>.bitlens.json` next to every remote file
 * (docs/EMBED.md), and a 404 for it is normal, yet Chromium logs every failed fetch.
 */
function countsAsError(m) {
  if (m.type() !== 'error') return false;
  const url = (m.location()?.url ?? '').split(/[?#]/)[0];
  return !(url.endsWith('.bitlens.json') && m.text().includes('404'));
}

/** Collects a page's uncaught exceptions and console errors in `page.errors`; returns the page. */
export function collectErrors(page) {
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  page.on('console', (m) => {
    if (countsAsError(m)) page.errors.push(m.text());
  });
  return page;
}

/**
 * The 1.09 GB bf16 checkpoint of MiniLM's tensors repeated (tests/python/make_big_bf16.py), made
 * the first time a test asks for it (a few seconds; written under another name and renamed, so a
 * test file running beside this one never reads half of it); its path.
 */
export function bigBf16() {
  const big = path.join(WEIGHTS, 'big-bf16.safetensors');
  if (!fs.existsSync(big)) {
    const part = `${big}.part-${process.pid}`;
    execFileSync(PYTHON, [path.join(ROOT, 'tests/python/make_big_bf16.py'), path.join(WEIGHTS, 'minilm-bf16.safetensors'), part]);
    fs.renameSync(part, big);
  }
  return big;
}

/**
 * A bf16 checkpoint of `count` tensors of `elems` values each, cut in turn from MiniLM's real
 * bf16 weights (wrapping around): a table far longer than the first rows the page draws while
 * statistics run. Written to `dir`; its path.
 */
export function manyTensors(dir, count = 1500, elems = 16384) {
  const weights = readSafetensors(path.join(WEIGHTS, 'minilm-bf16.safetensors')).data;
  const size = 2 * elems;
  const out = path.join(dir, `many-${count}.safetensors`);
  writeSafetensors(out, Array.from({ length: count }, (_, i) => {
    const from = (i * size) % (weights.length - size);
    return [`block.${i}.weight`, { dtype: 'BF16', shape: [elems] }, weights.subarray(from, from + size)];
  }));
  return out;
}

/** A fresh temporary directory. */
export function tempDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'bitlens-e2e-'));
}

/**
 * Where tensor `name` lies in safetensors `file`, read from its header alone: absolute byte range
 * `[start, end)`, the header's end, dtype and shape.
 */
export function tensorRange(file, name) {
  const fd = fs.openSync(file, 'r');
  const b = Buffer.alloc(8);
  fs.readSync(fd, b, 0, 8, 0);
  const n = Number(b.readBigUInt64LE(0));
  const head = Buffer.alloc(n);
  fs.readSync(fd, head, 0, n, 8);
  fs.closeSync(fd);
  const t = JSON.parse(head.toString('utf8'))[name];
  const [start, end] = t.data_offsets.map((o) => o + 8 + n);
  return { start, end, headerEnd: 8 + n, dtype: t.dtype, shape: t.shape };
}

/** `bitlens inspect --json FILE` parsed. */
export function inspect(file) {
  return JSON.parse(execFileSync(BITLENS, ['inspect', '--json', file], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }));
}

/** `bitlens diff --json A B` parsed. */
export function diff(a, b) {
  return JSON.parse(execFileSync(BITLENS, ['diff', '--json', a, b], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }));
}

/** A copy of `src` with `fraction` of the float values changed (tests/python/perturb.py). */
export function perturb(src, fraction, out) {
  execFileSync(PYTHON, [path.join(ROOT, 'tests/python/perturb.py'), src, String(fraction), out]);
  return out;
}

function readSafetensors(file) {
  const buf = fs.readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  return { header, data: buf.subarray(8 + n) };
}

function writeSafetensors(file, entries) {
  const header = {};
  const parts = [];
  let off = 0;
  for (const [name, info, bytes] of entries) {
    header[name] = { dtype: info.dtype, shape: info.shape, data_offsets: [off, off + bytes.length] };
    parts.push(bytes);
    off += bytes.length;
  }
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  // Part by part: a file of many parts is never concatenated in memory.
  const fd = fs.openSync(file, 'w');
  try {
    for (const part of [len, json, ...parts]) {
      for (let at = 0; at < part.length; ) at += fs.writeSync(fd, part, at);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** Splits a safetensors file into `model-0000k-of-00002.safetensors` shards plus an index. */
export function shardSet(src, dir) {
  const { header, data } = readSafetensors(src);
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  const half = Math.ceil(names.length / 2);
  const shards = [names.slice(0, half), names.slice(half)];
  const weightMap = {};
  const files = [];
  shards.forEach((group, i) => {
    const shard = `model-0000${i + 1}-of-00002.safetensors`;
    writeSafetensors(path.join(dir, shard), group.map((n) => {
      const [s, e] = header[n].data_offsets;
      weightMap[n] = shard;
      return [n, header[n], data.subarray(s, e)];
    }));
    files.push(path.join(dir, shard));
  });
  const index = path.join(dir, 'model.safetensors.index.json');
  fs.writeFileSync(index, JSON.stringify({ metadata: { total_size: data.length }, weight_map: weightMap }));
  return { index, files, tensors: names.length };
}

/** Malformed inputs: a huge declared header length, and a file whose data is cut short. */
export function malformed(dir, valid) {
  const huge = path.join(dir, 'not-a-checkpoint.safetensors');
  fs.writeFileSync(huge, Buffer.concat([Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]), Buffer.from('hello world')]));
  const cut = path.join(dir, 'truncated.safetensors');
  const bytes = fs.readFileSync(valid);
  fs.writeFileSync(cut, bytes.subarray(0, bytes.length - 1000));
  return { huge, cut };
}
