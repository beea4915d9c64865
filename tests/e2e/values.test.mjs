// The Values view (weight map) on real weights, checked against NumPy
// (tests/python/weightmap_reference.py): each pixel's aggregate (mean, absolute max, max − min,
// fraction of zeros) equals the same aggregate over the lanes of its cells, its colour on the
// canvas is the one the readout reports, the hover's exact value and bits equal the element's;
// zooming in computes a finer window; the bit-plane and changes layers; the table of first values;
// and a remote 1 GiB tensor's map reads only that tensor's bytes (and the header).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { useApp } from './harness.mjs';
import { startRangeServer } from './range-server.mjs';
import { ROOT, PYTHON, SHOTS, WEIGHTS, perturb, tensorRange } from './fixtures.mjs';

const app = useApp();
const F32 = path.join(WEIGHTS, 'minilm-f32.safetensors');
const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
const EMBED = 'embeddings.word_embeddings.weight';
const LAYER = 'encoder.layer.0.intermediate.dense.weight';

/** NumPy's figures for `query` (see tests/python/weightmap_reference.py). */
function reference(query) {
  const script = path.join(ROOT, 'tests/python/weightmap_reference.py');
  return JSON.parse(execFileSync(PYTHON, [script, JSON.stringify(query)], { maxBuffer: 1 << 26 }));
}

/** Opens the Values view on `tensor` and waits for its map. */
async function openValues(page, tensor) {
  await page.click('[data-tab=values]');
  await page.selectOption('#tensor-select', tensor);
  await page.waitForSelector(`#values[data-tensor="${tensor}"] #values-map[data-ready="1"]`, { timeout: 60_000 });
}

/** The map's `data-*` attributes. */
const mapState = (page) => page.$eval('#values-map', (c) => ({ ...c.dataset, width: c.width, height: c.height }));

/** Waits until the map has drawn more than `draws` pictures and no detail tile is pending. */
async function redrawn(page, draws) {
  await page.waitForFunction(
    (n) => {
      const c = document.querySelector('#values-map');
      return Number(c.dataset.draws) > n && c.dataset.detailPending === '0';
    },
    draws,
    { timeout: 60_000 },
  );
}

/** Hovers canvas pixel (x, y) and returns the readout once the exact value came. */
async function hoverAt(page, x, y) {
  const box = await page.locator('#values-map').boundingBox();
  await page.mouse.move(box.x + 200, box.y + 1000);
  await page.mouse.move(box.x + x + 0.5, box.y + y + 0.5);
  await page.waitForFunction(
    ([x, y]) => {
      const h = document.querySelector('#values-hover');
      return h && h.dataset.x === String(x) && h.dataset.y === String(y) && (h.dataset.value ?? '') !== '';
    },
    [x, y],
    // As `redrawn`: in the whole suite the exact value waits behind the statistics of the two
    // 91 MB files just opened (35 s once on two cores).
    { timeout: 60_000 },
  );
  const h = await page.$eval('#values-hover', (e) => ({ ...e.dataset }));
  const m = /^(\d+)\.\.(\d+) × (\d+)\.\.(\d+)$/.exec(h.cells);
  assert.ok(m, `cells of the readout: ${h.cells}`);
  h.region = m.slice(1).map(Number);
  h.drawn = await page.$eval('#values-map', (c, [x, y]) => [...c.getContext('2d').getImageData(x, y, 1, 1).data].slice(0, 3).join(','), [x, y]);
  return h;
}

function close(got, want, what, rtol = 1e-5) {
  assert.ok(Math.abs(got - want) <= rtol * Math.max(Math.abs(want), 1e-6), `${what}: page ${got} vs NumPy ${want}`);
}

/** Hovers `points` and checks each pixel's `aggregate` and value against NumPy. */
async function checkPixels(page, file, tensor, points, { aggregate, layer = 'values', other = null }) {
  const seen = [];
  for (const [x, y] of points) seen.push(await hoverAt(page, x, y));
  const ref = reference({ file, tensor, layer, other, regions: seen.map((h) => h.region), lanes: seen.map((h) => Number(h.lane)) });
  seen.forEach((h, i) => {
    const what = `${tensor} ${layer} ${aggregate} at (${h.x}, ${h.y}) over ${h.cells}`;
    const r = ref.regions[i];
    const want = aggregate === 'zeros' && layer === 'changes' ? 1 - r.zeros : r[aggregate];
    close(Number(h.pixel), want, what, aggregate === 'mean' ? 1e-5 : 1e-6);
    assert.equal(h.color, h.drawn, `${what}: the canvas shows the readout's colour`);
    if (layer === 'values') {
      assert.equal(Number(h.value), ref.lanes[i].value, `${what}: exact value`);
    }
    // The readout's exact lane is the shown tensor's (for changes, the reference's first file may
    // be the other checkpoint).
    if (layer !== 'changes') assert.equal(h.hex, ref.lanes[i].hex, `${what}: bits`);
    assert.equal(Number(h.lane), Number(h.row) * ref.grid[1] + Number(h.col), `${what}: lane index`);
  });
  return seen;
}

test('the weight map of a real f32 matrix equals NumPy block aggregates, zoomed out and in', async () => {
  const page = await app.openApp();
  await page.setInputFiles('#file-input', F32);
  await page.waitForSelector('#tensor-table tbody tr');
  await openValues(page, EMBED);
  const state = await mapState(page);
  assert.deepEqual([Number(state.rows), Number(state.cols)], [30522, 384]);
  assert.match(state.baseBlock, /^([2-9]|\d\d+)x1$/, `the base tile is in blocks of rows: ${state.baseBlock}`);
  const points = [[5, 5], [Math.floor(state.width / 2) - 3, 200], [Math.floor(state.width / 2) + 2, 411]];
  // Zoomed out, a pixel covers several cells: the whole matrix is ≈ 30522 rows on 420 pixels.
  for (const aggregate of ['mean', 'absmax', 'range', 'zeros']) {
    const draws = Number((await mapState(page)).draws);
    await page.selectOption('#values-aggregate', aggregate);
    await page.waitForFunction((n) => Number(document.querySelector('#values-map').dataset.draws) > n, draws);
    const seen = await checkPixels(page, F32, EMBED, points.slice(1), { aggregate });
    assert.ok(seen.every((h) => h.region[1] - h.region[0] > 10), 'zoomed out, a pixel spans many rows');
  }
  // Zoom in past the base tile's blocks: a detail tile of the visible lanes at screen resolution.
  let before = Number((await mapState(page)).draws);
  await page.selectOption('#values-aggregate', 'mean');
  await page.waitForFunction((n) => Number(document.querySelector('#values-map').dataset.draws) > n, before);
  await page.screenshot({ path: path.join(SHOTS, 'values-f32-fit.png'), fullPage: true });
  const single = (m) => m.detailBlock === '1x1' && Number(m.rowScale) < 1 && Number(m.colScale) < 1;
  for (let i = 0; i < 60 && !single(await mapState(page)); i++) {
    const draws = Number((await mapState(page)).draws);
    await page.click('#values-zoom-in');
    await redrawn(page, draws);
  }
  const zoomed = await mapState(page);
  assert.ok(single(zoomed), `zoomed in, cells are single values and a pixel spans less than one: ${JSON.stringify(zoomed)}`);
  const seen = await checkPixels(page, F32, EMBED, [[40, 40], [300, 100]], { aggregate: 'mean' });
  // A pixel spans less than a value: its cells are the one or two values under it.
  assert.ok(seen.every((h) => h.region[1] - h.region[0] <= 2 && h.region[3] - h.region[2] <= 2), 'a value or two per pixel');
  await page.screenshot({ path: path.join(SHOTS, 'values-f32-zoomed.png'), fullPage: true });
  // The table of first values, and another range.
  const table = async () => page.$$eval('#values-table tbody tr', (trs) => trs.map((t) => ({ ...t.dataset })));
  let rows = await table();
  let ref = reference({ file: F32, tensor: EMBED, lanes: rows.map((r) => Number(r.index)) });
  assert.deepEqual(rows.map((r) => Number(r.index)), [...Array(32).keys()]);
  rows.forEach((r, i) => {
    assert.equal(Number(r.value), ref.lanes[i].value, `value ${r.index}`);
    assert.equal(r.hex, ref.lanes[i].hex, `bits ${r.index}`);
  });
  await page.fill('#values-from', '1000000');
  await page.dispatchEvent('#values-from', 'change');
  await page.waitForSelector('#values-table tbody tr[data-index="1000000"]');
  rows = await table();
  ref = reference({ file: F32, tensor: EMBED, lanes: rows.map((r) => Number(r.index)) });
  rows.forEach((r, i) => assert.equal(Number(r.value), ref.lanes[i].value, `value ${r.index}`));
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('bit planes, the dequantized changes between two checkpoints, and a bf16 tensor', async () => {
  const later = perturb(F32, 0.2, path.join(app.tmp, 'minilm-f32-later.safetensors'));
  const page = await app.openApp();
  await page.setInputFiles('#file-input', [F32, later]);
  await page.waitForSelector('#tensor-table tbody tr');
  await openValues(page, LAYER);
  const mid = Math.floor((await mapState(page)).width / 2);
  // The sign bit: a pixel's mean is the share of negative values under it.
  let draws = Number((await mapState(page)).draws);
  await page.selectOption('#values-layer', 'bits');
  await redrawn(page, draws);
  await checkPixels(page, F32, LAYER, [[mid, 100], [mid + 7, 300]], { aggregate: 'mean', layer: 'bits:31' });
  draws = Number((await mapState(page)).draws);
  await page.fill('#values-bit', '23');
  await page.dispatchEvent('#values-bit', 'change');
  await redrawn(page, draws);
  await checkPixels(page, F32, LAYER, [[mid, 150]], { aggregate: 'mean', layer: 'bits:23' });
  // Changes: the second checkpoint (in the page's order, as the option names them) minus the first,
  // and the fraction of values that changed.
  const steps = await page.$eval('#values-layer option[value=changes]', (o) => o.textContent);
  const [a, b] = steps.replace(/^Changes /, '').split(' → ').map((label) => (label.includes('later') ? later : F32));
  assert.notEqual(a, b, `two checkpoints in ${steps}`);
  draws = Number((await mapState(page)).draws);
  await page.selectOption('#values-layer', 'changes');
  await redrawn(page, draws);
  await checkPixels(page, a, LAYER, [[mid, 120], [mid - 9, 260]], { aggregate: 'mean', layer: 'changes', other: b });
  draws = Number((await mapState(page)).draws);
  await page.selectOption('#values-aggregate', 'zeros');
  await page.waitForFunction((n) => Number(document.querySelector('#values-map').dataset.draws) > n, draws);
  const changed = await checkPixels(page, a, LAYER, [[mid, 200]], { aggregate: 'zeros', layer: 'changes', other: b });
  assert.ok(Number(changed[0].pixel) > 0.05 && Number(changed[0].pixel) < 0.5, `about a fifth changed: ${changed[0].pixel}`);
  await page.screenshot({ path: path.join(SHOTS, 'values-changes.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();

  const bf = await app.openApp();
  await bf.setInputFiles('#file-input', BF16);
  await bf.waitForSelector('#tensor-table tbody tr');
  await openValues(bf, EMBED);
  await checkPixels(bf, BF16, EMBED, [[100, 100], [250, 333]], { aggregate: 'mean' });
  assert.deepEqual(bf.errors, []);
  await bf.close();
});

test('a GGUF Q8_0 tensor is mapped by its dequantized values (gguf-py dequantizes the same)', async () => {
  const dir = fs.mkdtempSync(path.join(app.tmp, 'values-gguf-'));
  const file = path.join(dir, 'q8.gguf');
  const write = `
import sys, json, numpy as np, gguf
rng = np.random.default_rng(5)
q = rng.standard_normal((64, 256)).astype(np.float32)
raw = gguf.quants.quantize(q, gguf.GGMLQuantizationType.Q8_0)
w = gguf.GGUFWriter(sys.argv[1], 'llama')
w.add_tensor('blk.q8', raw, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
np.save(sys.argv[1] + '.npy', gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.Q8_0).astype(np.float32))
`;
  execFileSync(PYTHON, ['-c', write, file]);
  const page = await app.openApp();
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#tensor-table tbody tr');
  await openValues(page, 'blk.q8');
  const h = await hoverAt(page, 300, 200);
  const check = `
import sys, json, numpy as np
v = np.load(sys.argv[1] + '.npy').astype(np.float64)
a, b, c, d, lane = map(int, sys.argv[2:7])
print(json.dumps({"value": float(v.reshape(-1)[lane]), "mean": float(v[a:b, c:d].mean())}))
`;
  const ref = JSON.parse(execFileSync(PYTHON, ['-c', check, file, ...h.region.map(String), h.lane]).toString());
  assert.equal(Number(h.value), ref.value, 'the dequantized value under the pointer');
  close(Number(h.pixel), ref.mean, 'the pixel mean of dequantized values');
  assert.deepEqual(page.errors, []);
  await page.close();
});

const remote = { dir: null, server: null };
before(() => {
  remote.dir = fs.mkdtempSync(path.join(app.tmp ?? '/tmp', 'values-remote-'));
});
after(() => {
  remote.server?.close();
  if (remote.dir) fs.rmSync(remote.dir, { recursive: true, force: true });
});

test('a remote 1 GiB tensor is mapped from its own bytes only', async () => {
  const file = path.join(remote.dir, 'big.safetensors');
  // 1 398 102 rows × 384 bf16 values: 1.07 GB in one tensor, between two small ones.
  execFileSync(PYTHON, [path.join(ROOT, 'tests/python/make_big_matrix.py'), BF16, file, '1398102']);
  remote.server = await startRangeServer(remote.dir);
  const { start, end, headerEnd } = tensorRange(file, 'big.weight');
  assert.ok(end - start > 1 << 30);

  const page = await app.openApp();
  const url = `${remote.server.url}big.safetensors`;
  await page.goto(`${app.url}?url=${encodeURIComponent(url)}&tab=values&tensor=big.weight`);
  await page.waitForSelector('#values[data-tensor="big.weight"] #values-map[data-ready="1"]', { timeout: 180_000 });
  const h = await hoverAt(page, 50, 50);
  const ref = reference({ file, tensor: 'big.weight', regions: [h.region], lanes: [Number(h.lane)] });
  close(Number(h.pixel), ref.regions[0].mean, 'remote pixel mean');
  assert.equal(Number(h.value), ref.lanes[0].value, 'remote hover value');
  // Every byte fetched from the file lies in its header or in big.weight.
  const reads = remote.server.requests.filter((r) => r.path === '/big.safetensors' && r.range);
  assert.ok(reads.length > 0);
  for (const r of reads) {
    const [, a, b] = /^bytes=(\d+)-(\d+)$/.exec(r.range).map(Number);
    const inHeader = b < headerEnd;
    const inTensor = a >= start && b < end;
    assert.ok(inHeader || inTensor, `read ${r.range} lies outside the header (0..${headerEnd}) and big.weight (${start}..${end})`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'values-remote-1g.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});
