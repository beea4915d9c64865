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
import { ROOT, PYTHON, SHOTS, WEIGHTS, inspect, diff, tempDir } from './fixtures.mjs';
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

// A GGUF of several element types: real MiniLM tensors quantized by gguf-py (Q4_0, Q8_0), the
// Q4_K blocks of the committed fixture (gguf-py cannot quantize K-quants), an F16 and an F32 one.
const WRITE_MIX = `
import sys, numpy as np, gguf
from safetensors.numpy import load_file
out, weights, fixture = sys.argv[1:4]
w32 = load_file(weights)
Q = gguf.GGMLQuantizationType
w = gguf.GGUFWriter(out, 'bert')
w.add_string('general.name', 'minilm mix')
emb = w32['embeddings.word_embeddings.weight'][:512]
w.add_tensor('token_embd.weight', gguf.quants.quantize(emb, Q.Q4_0), raw_dtype=Q.Q4_0)
qw = w32['encoder.layer.0.attention.self.query.weight']
w.add_tensor('blk.0.attn_q.weight', gguf.quants.quantize(qw, Q.Q8_0), raw_dtype=Q.Q8_0)
w.add_tensor('blk.0.attn_q.bias', w32['encoder.layer.0.attention.self.query.bias'])
w.add_tensor('blk.0.ffn_down.weight', w32['encoder.layer.0.output.dense.weight'][:64].astype(np.float16))
[k] = gguf.GGUFReader(fixture).tensors
w.add_tensor('blk.0.q4_k', np.asarray(k.data), raw_dtype=Q.Q4_K)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
`;

/** `mix.gguf` (WRITE_MIX) in `dir`. */
function writeMix(dir) {
  const out = path.join(dir, 'mix.gguf');
  execFileSync(PYTHON, ['-c', WRITE_MIX, out, path.join(WEIGHTS, 'minilm-f32.safetensors'), path.join(ROOT, 'tests/fixtures/gguf/q4_k.gguf')]);
  return out;
}

const barValues = (page, chart) => page.$$eval(`[data-chart="${chart}"] rect.bar`, (els) => els.map((e) => Number(e.dataset.value)));
const fact = async (page, k) => page.getAttribute(`[data-facts=quant] [data-k="${k}"]`, 'data-v');

test('a quantized GGUF tensor in Detail: scales, codes and dequantized values equal bitlens inspect --json; Summary groups by block type; the table sorts by type', { timeout: 180_000 }, async () => {
  const dir = tempDir();
  const file = writeMix(dir);
  const ref = inspect(file);
  const tensors = new Map(ref.files[0].tensors.map((t) => [t.name, t]));
  const page = await app.openApp();
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('.progress[data-state=done]', { timeout: 60_000 });
  // Table: element types as ggml names; sorting by type orders them by name; the range column is
  // of the dequantized values.
  await page.click('th[data-sort=dtype]');
  const rows = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  const types = rows.map((r) => r.dtype);
  assert.deepEqual(types, [...types].sort(), 'sorted by element type');
  assert.deepEqual(new Set(types), new Set(['Q4_0', 'Q8_0', 'Q4_K', 'F32', 'F16']));
  for (const r of rows) {
    const t = tensors.get(r.name);
    assert.equal(r.dtype, t.element_type ?? t.dtype, r.name);
    const v = t.values ?? t.dequantized.values;
    assert.equal(Number(r.min), v.min, `${r.name} min`);
    assert.equal(Number(r.max), v.max, `${r.name} max`);
  }
  await page.fill('#tensor-filter', 'attn_q');
  assert.deepEqual(await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => tr.dataset.dtype)).then((x) => x.sort()), ['F32', 'Q8_0']);
  await page.fill('#tensor-filter', '');
  // Detail of each quantized tensor.
  for (const name of ['blk.0.q4_k', 'token_embd.weight', 'blk.0.attn_q.weight']) {
    const t = tensors.get(name);
    const q = t.quant;
    await page.click('[data-tab=detail]');
    await page.selectOption('#tensor-select', name);
    await page.waitForSelector(`[data-section=quant][data-type="${t.element_type}"]`);
    assert.equal(Number(await fact(page, 'blocks')), q.blocks, `${name} blocks`);
    assert.equal(Number(await fact(page, 'code-bits')), q.code_bits, `${name} code bits`);
    assert.equal(Number(await fact(page, 'code-entropy')), q.code_entropy, `${name} code entropy`);
    assert.equal(Number(await fact(page, 'codes')), q.code_hist.reduce((a, b) => a + b, 0), `${name} codes`);
    for (const [k, key] of [['scale-min', 'scale_min'], ['scale-max', 'scale_max']]) {
      assert.equal(Math.fround(Number(await fact(page, k))), Math.fround(q[key]), `${name} ${k}`);
    }
    assert.equal(Number(await fact(page, 'scale-mean')), q.scale_mean, `${name} scale mean`);
    for (const [k, key] of [['scale-zero', 'scale_zero'], ['scale-negative', 'scale_negative'], ['scale-nonfinite', 'scale_nonfinite'], ['scales', 'scales']]) {
      assert.equal(Number(await fact(page, k)), q[key], `${name} ${k}`);
    }
    // The implied size: every byte but the codes as stored, the codes at their entropy.
    const codes = q.code_hist.reduce((a, b) => a + b, 0);
    const implied = t.bytes - (codes * q.code_bits) / 8 + (codes * q.code_entropy) / 8;
    assert.ok(Math.abs(Number(await fact(page, 'implied-bytes')) - implied) < 1e-6 * implied, `${name} implied size`);
    // Code histogram: one bar per code, the CLI's counts; its title gives the entropy.
    assert.deepEqual(await barValues(page, 'code-hist'), q.code_hist, `${name} code histogram`);
    const shown = (await page.textContent('[data-chart=code-hist] .chart-title')).match(/entropy ([\d.]+) bits per code/);
    close(Number(shown[1]), q.code_entropy, `${name} code entropy in the title`, 5e-4);
    // Scale histogram: the used bins of the CLI's, nothing left out; its table says the same.
    const scales = await barValues(page, 'scale-hist');
    const first = q.scale_hist.findIndex((c) => c > 0);
    const lo = Math.max(0, first - 1);
    assert.deepEqual(scales, q.scale_hist.slice(lo, lo + scales.length), `${name} scale histogram`);
    assert.equal(scales.reduce((a, b) => a + b, 0), q.scale_hist.reduce((a, b) => a + b, 0));
    const tableCounts = await page.$$eval('[data-table=scale-hist] tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.n)));
    assert.deepEqual(tableCounts, scales);
    // Dequantized values: histogram, facts and sign/exponent/mantissa as for an f32 tensor.
    const dq = t.dequantized;
    assert.deepEqual(await barValues(page, 'dq-value-hist'), dq.values.histogram.counts, `${name} dequantized histogram`);
    assert.deepEqual(await barValues(page, 'dq-sign-hist'), dq.float.sign_hist, `${name} dequantized signs`);
    assert.equal((await barValues(page, 'dq-exponent-hist')).reduce((a, b) => a + b, 0), t.params);
    assert.match(await page.textContent('[data-chart=dq-value-hist] .chart-title'), /^Dequantized values: /);
    // The stored bytes' charts say so, and are the CLI's U8 lanes.
    assert.match(await page.textContent('[data-chart=bit-set-ratio] .chart-title'), /^Stored block bytes/);
    (await barValues(page, 'bit-set-ratio')).forEach((v, i) => assert.equal(v, t.bit_set_ratio[7 - i], `${name} bit ${7 - i}`));
    // Hover readouts.
    await page.hover('[data-chart=code-hist] rect.hit >> nth=1');
    assert.match(await page.textContent('[data-chart=code-hist] .hover'), /^code 1: .+ codes \(/);
    await page.hover('[data-chart=scale-hist] rect.hit >> nth=1');
    assert.match(await page.textContent('[data-chart=scale-hist] .hover'), /\|scale\| in \[2\^-?[\d.]+, 2\^-?[\d.]+\) = /);
    if (name === 'blk.0.q4_k') {
      await page.screenshot({ path: path.join(SHOTS, 'detail-gguf-q4_k.png'), fullPage: true });
    }
  }
  await page.screenshot({ path: path.join(SHOTS, 'detail-gguf-q8_0-minilm.png'), fullPage: true });
  // Summary: one group per element type, as the CLI's summary.
  await page.click('[data-tab=summary]');
  const groups = await page.$$eval('.dtype-block', (bs) => bs.map((b) => ({ ...b.dataset })));
  const want = ref.summary.by_dtype;
  assert.deepEqual(groups.map((g) => g.group), want.map((d) => d.element_type ?? d.dtype));
  groups.forEach((g, i) => {
    assert.equal(Number(g.tensors), want[i].tensors, g.group);
    assert.equal(Number(g.bytes), want[i].bytes, g.group);
    if (want[i].code_entropy !== undefined) close(Number(g.codeEntropy), want[i].code_entropy, `${g.group} code entropy`, 1e-12);
    else assert.equal(g.codeEntropy, undefined);
  });
  const mix = await page.$$eval('[data-chart=dtype-mix] rect.bar', (bs) => bs.length);
  assert.equal(mix, want.length);
  await page.screenshot({ path: path.join(SHOTS, 'summary-gguf-types.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a folder of a GGUF, a .pt and an .npy named .bin (no safetensors): each a checkpoint, the arrays one named by the folder, equal to the CLI on the folder', { timeout: 120_000 }, async () => {
  const dir = tempDir();
  const run = path.join(dir, 'exports');
  fs.mkdirSync(run);
  fs.renameSync(writeMix(dir), path.join(run, 'mix.gguf'));
  fs.copyFileSync(path.join(ROOT, 'tests/fixtures/torch/state_f16.pt'), path.join(run, 'model.pt'));
  fs.copyFileSync(path.join(ROOT, 'tests/fixtures/numpy/minilm_f32_v1.npy'), path.join(run, 'weights.bin'));
  fs.writeFileSync(path.join(run, 'config.json'), '{}');
  const ref = inspect(run);
  assert.deepEqual(ref.files.map((f) => path.basename(f.path)), ['mix.gguf', 'model.pt', 'weights.bin']);
  const page = await app.openApp();
  await page.setInputFiles('#dir-input', run);
  await page.waitForSelector('.checkpoint >> nth=2');
  await page.waitForSelector('.progress[data-state=done]', { timeout: 60_000 });
  // A folder's .npy files are one checkpoint named by the folder, each array named as numpy.savez
  // names an archive's member: its file name without `.npy` (`weights.bin` keeps its whole name),
  // as the CLI names it.
  const checkpointOf = (f) => (f.format === 'npy' ? 'exports' : path.basename(f.path));
  const names = await page.$$eval('.checkpoint .name', (n) => n.map((x) => x.textContent));
  assert.deepEqual([...names].sort(), ['exports', 'mix.gguf', 'model.pt'], JSON.stringify(names));
  assert.deepEqual(ref.files.find((f) => f.format === 'npy').tensors.map((t) => t.name), ['weights.bin']);
  assert.equal(await page.locator('.error').count(), 0);
  for (const f of ref.files) {
    await page.click(`.checkpoint:has-text("${checkpointOf(f)}") button.select`);
    await page.click('[data-tab=tensors]');
    const rows = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
    assert.deepEqual(rows.map((r) => r.name), f.tensors.map((t) => t.name), f.path);
    rows.forEach((r, i) => {
      assert.equal(r.dtype, f.tensors[i].element_type ?? f.tensors[i].dtype);
      assert.equal(Number(r.byteEntropy), f.tensors[i].byte_entropy, `${f.path} ${r.name}`);
    });
  }
  await page.screenshot({ path: path.join(SHOTS, 'folder-gguf-pt-npy.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

// Two GGUF checkpoints with quantized blocks (Q8_0, Q4_0) and a plain F16 tensor, B a perturbed A
// (gguf-py quantizes both), for the Compare view's dequantized differences.
const WRITE_QUANT_PAIR = `
import sys, numpy as np, gguf
d = sys.argv[1]
T = gguf.GGMLQuantizationType
rng = np.random.default_rng(5)
base = {'blk.q8': rng.standard_normal((4, 256)).astype(np.float32),
        'blk.q4': rng.standard_normal((2, 512)).astype(np.float32),
        'tok.f16': rng.standard_normal((8, 64)).astype(np.float32)}
for name, scale in (('qa.gguf', 0.0), ('qb.gguf', 0.05)):
    w = gguf.GGUFWriter(d + '/' + name, 'llama')
    for k, v in base.items():
        v = v + scale * rng.standard_normal(v.shape).astype(np.float32) * (rng.random(v.shape) < 0.2)
        if k == 'tok.f16':
            w.add_tensor(k, v.astype(np.float16))
        else:
            q = T.Q8_0 if k == 'blk.q8' else T.Q4_0
            w.add_tensor(k, gguf.quants.quantize(v, q), raw_dtype=q)
    w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
`;

/** Drops A and B, opens Compare and checks it against `bitlens diff --json A B`. */
async function checkCompare(a, b) {
  const what = `${path.basename(a)} vs ${path.basename(b)}`;
  const ref = diff(a, b);
  assert.ok(ref.overall.changed_lanes > 0, `${what}: the pair differs`);
  const page = await app.openApp();
  await page.setInputFiles('#file-input', [a, b]);
  await page.waitForSelector('.checkpoint >> nth=1');
  await page.waitForSelector('.progress[data-state=done]', { timeout: 60_000 });
  await page.click('[data-tab=compare]');
  await page.waitForSelector('[data-view=compare]');
  assert.equal(await page.textContent('[data-card=compared] .card-value'), `${ref.tensors.length} of ${ref.tensors.length}`, what);
  close(Number(await page.getAttribute('[data-changed-fraction]', 'data-changed-fraction')), ref.overall.changed_fraction, `${what} changed fraction`, 1e-12);
  // Per tensor, in A's order.
  const changed = await barValues(page, 'changed-fraction');
  assert.equal(changed.length, ref.tensors.length, what);
  ref.tensors.forEach((t, i) => close(changed[i], t.changed_fraction, `${what} ${t.name} changed`, 1e-12));
  // Whole-model flip ratio per bit position, per lane type (most significant bit first).
  for (const d of ref.overall.by_dtype.filter((x) => x.changed_lanes > 0)) {
    const flips = await barValues(page, `model-flips-${d.dtype}`);
    assert.equal(flips.length, d.bit_flip_ratio.length, `${what} ${d.dtype}`);
    flips.forEach((v, i) => close(v, d.bit_flip_ratio[flips.length - 1 - i], `${what} ${d.dtype} bit`, 1e-12));
  }
  // Quantized tensors: the dequantized differences.
  const quantized = ref.tensors.filter((t) => t.dequantized);
  const rows = await page.$$eval('#dequantized-diff tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  assert.deepEqual(rows.map((r) => r.name), quantized.map((t) => t.name), what);
  for (const [r, t] of rows.map((r, i) => [r, quantized[i]])) {
    const q = t.dequantized;
    assert.equal(Number(r.values), q.values, t.name);
    assert.equal(Number(r.changed), q.changed, t.name);
    close(Number(r.maxAbs), q.max_abs_diff, `${t.name} max |d|`, 1e-12);
    close(Number(r.meanAbs), q.mean_abs_diff, `${t.name} mean |d|`, 1e-12);
    close(Number(r.relL2), q.relative_l2, `${t.name} relative L2`, 1e-12);
  }
  await page.screenshot({ path: path.join(SHOTS, `compare-${path.basename(a)}.png`), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
  return { ref, quantized };
}

test('Compare on deflated .npz members, PyTorch views and GGUF blocks equals bitlens diff --json', { timeout: 240_000 }, async () => {
  const fx = path.join(ROOT, 'tests/fixtures');
  // Every member of both .npz files is deflated; `transposed` and `column` of both .pt are views.
  await checkCompare(path.join(fx, 'numpy/minilm_compressed.npz'), path.join(fx, 'numpy/minilm_compressed_b.npz'));
  await checkCompare(path.join(fx, 'torch/views.pt'), path.join(fx, 'torch/views_b.pt'));
  const dir = tempDir();
  execFileSync(PYTHON, ['-c', WRITE_QUANT_PAIR, dir]);
  const { quantized } = await checkCompare(path.join(dir, 'qa.gguf'), path.join(dir, 'qb.gguf'));
  assert.deepEqual(quantized.map((t) => t.element_type).sort(), ['Q4_0', 'Q8_0']);
  assert.ok(quantized.every((t) => t.dequantized.changed > 0));
});

/** Runs the codec comparison on tensor `name` of `file`; its rows by label. */
async function codecRows(file, name) {
  const page = await app.openApp();
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#tensor-table tbody tr');
  await page.click(`#tensor-table tbody tr[data-name="${name}"]`);
  await page.waitForSelector('#compare-codecs');
  await page.click('#compare-codecs');
  await page.waitForSelector('#codec-comparison', { timeout: 120_000 });
  const rows = await page.$$eval('#codec-comparison tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  assert.deepEqual(page.errors, []);
  await page.close();
  return new Map(rows.map((r) => [r.label, r]));
}

test('codec comparison on a deflated .npz member and a PyTorch view: the sizes of the same array as a .npy', { timeout: 240_000 }, async () => {
  const dir = tempDir();
  const fx = path.join(ROOT, 'tests/fixtures');
  // The same values as plain `.npy` byte ranges: the member, and the view made contiguous.
  execFileSync(PYTHON, ['-c', `
import sys, zipfile, numpy as np
d, fx = sys.argv[1], sys.argv[2]
np.save(d + '/member.npy', np.load(fx + '/numpy/minilm_compressed.npz')['encoder.dense.float32'])
storage = np.frombuffer(zipfile.ZipFile(fx + '/torch/views.pt').read('views/data/0'), dtype='<f4')
np.save(d + '/transposed.npy', np.ascontiguousarray(storage[:16 * 24].reshape(16, 24).T))
`, dir, fx]);
  const cases = [
    [path.join(fx, 'numpy/minilm_compressed.npz'), 'encoder.dense.float32', path.join(dir, 'member.npy')],
    [path.join(fx, 'torch/views.pt'), 'transposed', path.join(dir, 'transposed.npy')],
  ];
  for (const [file, name, npy] of cases) {
    const got = await codecRows(file, name);
    const want = await codecRows(npy, 'array');
    assert.ok(got.size >= 5, `${name}: ${[...got.keys()]}`);
    assert.deepEqual([...got.keys()], [...want.keys()]);
    for (const [label, w] of want) {
      const g = got.get(label);
      // Same bytes in, same codec: the same compressed size (the timings differ).
      assert.equal(g.ratio, w.ratio, `${name} ${label} ratio`);
      assert.equal(g.lossy, w.lossy, `${name} ${label}`);
      assert.equal(g.maxRel, w.maxRel, `${name} ${label} error`);
      assert.ok(Number(g.encMbps) > 0 && Number(g.decMbps) > 0, `${name} ${label} timed`);
    }
  }
});

// A PyTorch zip with many large storages, written as torch lays one out (data.pkl with persistent
// storage ids and `torch._utils._rebuild_tensor_v2`, byteorder, version, stored data/N members),
// by a stand-in `torch` module: nothing of torch is needed.
const WRITE_PT = `
import collections, pickle, sys, types, zipfile, numpy as np
torch, utils = types.ModuleType('torch'), types.ModuleType('torch._utils')
sys.modules['torch'], sys.modules['torch._utils'] = torch, utils
def _rebuild_tensor_v2(*args): pass
_rebuild_tensor_v2.__module__ = 'torch._utils'; utils._rebuild_tensor_v2 = _rebuild_tensor_v2
class FloatStorage: pass
FloatStorage.__module__ = 'torch'; torch.FloatStorage = FloatStorage
class Storage:
    def __init__(self, key, n): self.key, self.n = key, n
class Tensor:
    def __init__(self, key, shape): self.key, self.shape = key, shape
    def __reduce__(self):
        n = self.shape[0] * self.shape[1]
        return (_rebuild_tensor_v2, (Storage(self.key, n), 0, self.shape, (self.shape[1], 1), False, collections.OrderedDict()))
class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return ('storage', FloatStorage, obj.key, 'cpu', obj.n) if isinstance(obj, Storage) else None
rng = np.random.default_rng(7)
state = collections.OrderedDict((f'layer.{i}.weight', Tensor(str(i), (96, 1024))) for i in range(40))
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    import io; buf = io.BytesIO(); Pickler(buf, protocol=2).dump(state)
    z.writestr('archive/data.pkl', buf.getvalue())
    z.writestr('archive/byteorder', 'little')
    for i in range(40):
        z.writestr(f'archive/data/{i}', (rng.standard_normal(96 * 1024) * 0.02).astype('<f4').tobytes())
    z.writestr('archive/version', '3')
`;

test('a remote PyTorch zip: the table from a few small requests (storages located from the central directory), equal to the CLI', { timeout: 180_000 }, async () => {
  const dir = tempDir();
  const file = path.join(dir, 'many.pt');
  execFileSync(PYTHON, ['-c', WRITE_PT, file]);
  const server = await startRangeServer(dir);
  try {
    await checkFile(file, server.url + 'many.pt');
    // Table reads are small (≤ 64 KiB windows); statistics read 8 MiB windows or whole tensors
    // (384 KiB each). Reading each storage's local header would be ≥ 40 small requests.
    const small = server.requests.filter((r) => r.path === '/many.pt' && r.bytes <= 64 * 1024);
    assert.ok(small.length <= 6, `table requests: ${JSON.stringify(small)}`);
  } finally {
    server.close();
  }
});
