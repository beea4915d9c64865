// GGUF, PyTorch and NumPy files dropped in the page: the tensor table (names, element types incl.
// ggml block types, shapes, sizes), the file's metadata in Summary, and every tensor's statistics
// equal `bitlens inspect --json` on the same file; a hostile pickle shows the error naming its
// global. The GGUF (F16 + Q8_0, gguf-py), `.npy` and `.npz` (numpy) are written at test time from
// random values; the PyTorch files are the committed fixtures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { useApp } from './harness.mjs';
import { startRangeServer } from './range-server.mjs';
import { ROOT, PYTHON, inspect, tempDir } from './fixtures.mjs';
import { cli, sameBytes, download } from './steps.mjs';

const app = useApp();

const WRITE = `
import sys, numpy as np, gguf
d = sys.argv[1]
rng = np.random.default_rng(13)
w = gguf.GGUFWriter(d + '/tiny.gguf', 'llama')
w.add_uint32('bitlens.test.u32', 7)
w.add_string('bitlens.test.name', 'tiny')
w.add_array('bitlens.test.array', [1, 2, 3])
w.add_tensor('tok.f16', rng.standard_normal((8, 64)).astype(np.float16))
q = rng.standard_normal((4, 256)).astype(np.float32)
w.add_tensor('blk.q8', gguf.quants.quantize(q, gguf.GGMLQuantizationType.Q8_0), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
np.save(d + '/arr.npy', rng.standard_normal((16, 24)).astype(np.float32))
np.savez_compressed(d + '/pair.npz', a=rng.standard_normal((32, 8)).astype(np.float32), b=np.arange(100, dtype=np.int16))
`;

function close(a, b, what, tol = 1e-9) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: page ${a} vs CLI ${b}`);
}

/** Drops `file` in a fresh page (or opens `url`, the same file served) and checks its table and
 * statistics against the CLI's on the file. */
async function checkFile(file, url) {
  const ref = inspect(file).files[0];
  const page = await app.openApp();
  if (url) await page.goto(`${app.url}?url=${encodeURIComponent(url)}`);
  else await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#tensor-table tbody tr');
  assert.equal(await page.locator('#tensor-table tbody tr').count(), ref.tensors.length, file);
  await page.waitForSelector('.progress[data-state=done]', { timeout: 60_000 });
  const rows = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  const byName = new Map(rows.map((r) => [r.name, r]));
  for (const t of ref.tensors) {
    const r = byName.get(t.name);
    const what = `${path.basename(file)} ${t.name}`;
    assert.ok(r, `row for ${what}`);
    assert.equal(r.dtype, t.element_type ?? t.dtype, what);
    assert.deepEqual(JSON.parse(r.shape), t.shape, what);
    assert.equal(Number(r.params), t.params, what);
    assert.equal(Number(r.bytes), t.bytes, what);
    close(Number(r.byteEntropy), t.byte_entropy, `${what} byte entropy`);
    JSON.parse(r.groups).forEach((g, i) => close(g, t.byte_group_entropy[i], `${what} group ${i}`));
    JSON.parse(r.bits).forEach((b, i) => close(b, t.bit_set_ratio[i], `${what} bit ${i}`));
    const values = t.values ?? t.dequantized?.values;
    assert.ok(values, `${what}: the CLI reports values`);
    close(Number(r.min), values.min, `${what} min`);
    close(Number(r.max), values.max, `${what} max`);
  }
  // The file's format and metadata in Summary.
  await page.click('[data-tab=summary]');
  const meta = page.locator('table.metadata');
  assert.equal(await meta.getAttribute('data-kind'), ref.kind, file);
  const keys = await meta.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.dataset.key));
  assert.deepEqual(keys, Object.keys(ref.metadata ?? {}), file);
  assert.deepEqual(page.errors, []);
  await page.close();
  return rows;
}

test('GGUF, PyTorch and NumPy files: table, metadata and statistics equal bitlens inspect --json', { timeout: 180_000 }, async () => {
  const dir = tempDir();
  execFileSync(PYTHON, ['-c', WRITE, dir]);
  const gguf = await checkFile(path.join(dir, 'tiny.gguf'));
  assert.deepEqual(gguf.map((r) => r.dtype).sort(), ['F16', 'Q8_0']);
  await checkFile(path.join(ROOT, 'tests/fixtures/torch/state_f32.pt'));
  await checkFile(path.join(ROOT, 'tests/fixtures/torch/views_legacy.pt'));
  await checkFile(path.join(dir, 'arr.npy'));
  await checkFile(path.join(dir, 'pair.npz'));
  // By URL: the layout and the statistics read with range requests in the workers.
  const server = await startRangeServer(dir);
  try {
    await checkFile(path.join(dir, 'tiny.gguf'), server.url + 'tiny.gguf');
    await checkFile(path.join(dir, 'pair.npz'), server.url + 'pair.npz');
  } finally {
    server.close();
  }
});

test('a hostile pickle is refused with an error naming its global', { timeout: 60_000 }, async () => {
  const page = await app.openApp();
  await page.setInputFiles('#file-input', path.join(ROOT, 'tests/fixtures/torch/hostile/os_system.pt'));
  await page.waitForSelector('.error');
  const errors = await page.$$eval('.error', (es) => es.map((e) => ({ file: e.dataset.file, text: e.textContent })));
  const e = errors.find((x) => x.file === 'os_system.pt');
  assert.ok(e, JSON.stringify(errors));
  assert.match(e.text, /`os\.system`/);
  assert.match(e.text, /nothing was executed/);
  await page.close();
});

test('in a folder of safetensors files, a pickle (training_args.bin) stays ignored; a lone .pt folder loads', { timeout: 60_000 }, async () => {
  const dir = tempDir();
  const run = path.join(dir, 'run');
  fs.mkdirSync(path.join(run, 'hf'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'web/demo/minilm-demo-step0.safetensors'), path.join(run, 'hf', 'model.safetensors'));
  fs.copyFileSync(path.join(ROOT, 'tests/fixtures/torch/hostile/os_system.pt'), path.join(run, 'hf', 'training_args.bin'));
  fs.mkdirSync(path.join(run, 'torch'));
  fs.copyFileSync(path.join(ROOT, 'tests/fixtures/torch/state_f32.pt'), path.join(run, 'torch', 'model.pt'));
  const page = await app.openApp();
  await page.setInputFiles('#dir-input', run);
  await page.waitForSelector('.checkpoint >> nth=1');
  await page.waitForSelector('.progress[data-state=done]', { timeout: 60_000 });
  const names = await page.$$eval('.checkpoint .name', (n) => n.map((x) => x.textContent));
  assert.deepEqual(names.sort(), ['hf', 'model.pt'], JSON.stringify(names));
  assert.equal(await page.locator('.error').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a GGUF and a PyTorch file compressed in the page: the CLI restores them byte for byte', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  execFileSync(PYTHON, ['-c', WRITE, dir]);
  for (const file of [path.join(dir, 'tiny.gguf'), path.join(ROOT, 'tests/fixtures/torch/state_f32.pt')]) {
    const name = path.basename(file);
    const page = await app.openApp();
    await page.setInputFiles('#file-input', file);
    await page.waitForSelector('#tensor-table tbody tr');
    await page.click('[data-tab=codecs]');
    await page.click('#compress-button');
    await page.waitForSelector('#compress-result', { timeout: 60_000 });
    const { out, suggested } = await download(page, '#compress-download', path.join(dir, `page-${name}.bls`));
    assert.equal(suggested, `${name}.bls`);
    // The CLI reads the page's snapshot as one of the original format and restores the file.
    const info = JSON.parse(cli('inspect', out, '--json')).snapshots[0];
    assert.ok(info.original_format, `${name}: ${JSON.stringify(Object.keys(info))}`);
    const restored = path.join(dir, `restored-${name}`);
    cli('decompress', out, '-o', restored);
    sameBytes(restored, file, `CLI restore of the page snapshot of ${name}`);
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});
