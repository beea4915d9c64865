// End-to-end tests of the bitlens web app in headless Chromium, against the built app (dist/)
// served on 127.0.0.1 with COOP/COEP headers. Numbers shown by the page are checked against the
// native CLI (`bitlens inspect --json`, `bitlens diff --json`) on the same real weights.
//
//   node --test tests/e2e/        (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useApp } from './harness.mjs';
import { ROOT, WEIGHTS, SHOTS, bigBf16, inspect, diff, perturb, shardSet, malformed, manyTensors } from './fixtures.mjs';

const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
const F32 = path.join(WEIGHTS, 'minilm-f32.safetensors');
const QUERY = 'encoder.layer.0.attention.self.query.weight';

const app = useApp();
const openApp = app.openApp;

async function waitDone(page, timeout = 120_000) {
  await page.waitForSelector('.progress[data-state=done]', { timeout });
}

/** Numbers of the `data-value` attributes of a chart's marks. */
async function values(page, chart, mark = 'rect.bar') {
  return page.$$eval(`[data-chart="${chart}"] ${mark}`, (els) => els.map((e) => Number(e.dataset.value)));
}

function close(a, b, what, tol = 1e-9) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: page ${a} vs CLI ${b}`);
}

test('tensor table of a real file matches bitlens inspect --json', { timeout: 180_000 }, async () => {
  for (const file of [BF16, F32]) {
    const ref = inspect(file);
    const page = await openApp();
    await page.setInputFiles('#file-input', file);
    await page.waitForSelector('#tensor-table tbody tr');
    // The table is there before any statistics (header only): its first 64 rows while they run
    // (all of them once they are done; model::table::DRAWN_STEP).
    const early = await page.locator('#tensor-table tbody tr').count();
    assert.ok([Math.min(64, ref.files[0].tensors.length), ref.files[0].tensors.length].includes(early), `${early} rows`);
    await waitDone(page);
    const rows = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
    const byName = new Map(rows.map((r) => [r.name, r]));
    for (const t of ref.files[0].tensors) {
      const r = byName.get(t.name);
      assert.ok(r, `row for ${t.name}`);
      assert.equal(r.dtype, t.dtype, t.name);
      assert.deepEqual(JSON.parse(r.shape), t.shape, t.name);
      assert.equal(Number(r.params), t.params, t.name);
      assert.equal(Number(r.bytes), t.bytes, t.name);
      close(Number(r.byteEntropy), t.byte_entropy, `${t.name} byte entropy`);
      JSON.parse(r.groups).forEach((g, i) => close(g, t.byte_group_entropy[i], `${t.name} group ${i}`));
      if (t.exponent_entropy == null) assert.equal(r.exp, undefined, t.name);
      else close(Number(r.exp), t.exponent_entropy, `${t.name} exponent entropy`);
      close(Number(r.predRatio), t.predicted_ratio, `${t.name} predicted ratio`, 1e-6);
      assert.ok(Math.abs(Number(r.predBytes) - t.predicted_bytes) <= 1, `${t.name} predicted bytes`);
    }
    // Summary cards.
    await page.click('[data-tab=summary]');
    const cards = await page.$$eval('[data-card]', (cs) => Object.fromEntries(cs.map((c) => [c.dataset.card, c.querySelector('.card-value').textContent])));
    assert.equal(cards.tensors, String(ref.summary.tensors));
    assert.match(cards.entropy, new RegExp(`^${ref.summary.byte_entropy.toFixed(3)} bits/byte`));
    if (file === BF16) await page.screenshot({ path: path.join(SHOTS, 'summary-minilm-bf16.png'), fullPage: true });
    // Sorting and filtering.
    await page.click('[data-tab=tensors]');
    await page.click('th[data-sort=bytes]');
    const sorted = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.bytes)));
    assert.deepEqual(sorted, [...sorted].sort((a, b) => b - a));
    await page.fill('#tensor-filter', 'layer.3.');
    const names = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => tr.dataset.name));
    assert.ok(names.length > 0 && names.every((n) => n.includes('layer.3.')), 'filter');
    if (file === BF16) await page.screenshot({ path: path.join(SHOTS, 'tensors-minilm-bf16.png') });
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});

test('tensor detail charts render the tensor statistics', { timeout: 120_000 }, async () => {
  const ref = inspect(BF16).files[0].tensors.find((t) => t.name === QUERY);
  const page = await openApp();
  await page.setInputFiles('#file-input', BF16);
  await waitDone(page);
  await page.click(`#tensor-table tbody tr[data-name="${QUERY}"]`);
  await page.waitForSelector('[data-chart=bit-set-ratio]');
  // Bit-position set ratio: 16 bars, most significant first, with the three regions labelled.
  const bits = await values(page, 'bit-set-ratio');
  assert.equal(bits.length, 16);
  bits.forEach((v, i) => close(v, ref.bit_set_ratio[15 - i], `bit ${15 - i}`, 1e-12));
  const bands = await page.$$eval('[data-chart=bit-set-ratio] [data-band]', (b) => b.map((x) => x.dataset.band));
  assert.deepEqual(bands, ['sign', 'exponent', 'mantissa']);
  // Sign / exponent / mantissa histograms add up to the element count.
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  assert.deepEqual(await values(page, 'sign-hist'), ref.float.sign_hist);
  assert.equal(sum(await values(page, 'exponent-hist')), ref.params);
  const mant = await values(page, 'mantissa-hist');
  assert.equal(mant.length, 128);
  assert.deepEqual(mant, ref.float.mantissa_hist);
  assert.match(await page.textContent('[data-chart=exponent-hist] .chart-title'), new RegExp(ref.float.exponent_entropy.toFixed(2).slice(0, 3)));
  // Value histogram and facts.
  const vh = await values(page, 'value-hist');
  assert.deepEqual(vh, ref.values.histogram.counts);
  close(Number(await page.textContent('[data-k=min]')), ref.values.min, 'min', 1e-3);
  close(Number(await page.textContent('[data-k=max]')), ref.values.max, 'max', 1e-3);
  // Byte-group entropy (msb first) and the block profile (one series per byte group).
  const groups = await values(page, 'byte-group-entropy');
  groups.forEach((g, i) => close(g, ref.byte_group_entropy[1 - i], `group ${1 - i}`));
  const series = await page.$$eval('[data-chart=block-entropy] [data-series]', (s) => s.map((x) => Number(x.dataset.points)));
  assert.deepEqual(series, [ref.block_entropy[1].length, ref.block_entropy[0].length]);
  // Hover shows the value.
  await page.hover('[data-chart=bit-set-ratio] rect.hit >> nth=0');
  assert.match(await page.textContent('[data-chart=bit-set-ratio] .hover'), /^bit 15 \(sign\): set in \d/);
  await page.screenshot({ path: path.join(SHOTS, 'detail-minilm-bf16.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('two checkpoints: compare view matches bitlens diff --json', { timeout: 180_000 }, async () => {
  const later = perturb(BF16, 0.1, path.join(app.tmp, 'minilm-bf16-later.safetensors'));
  const ref = diff(BF16, later);
  const page = await openApp();
  await page.setInputFiles('#file-input', [BF16, later]);
  await page.waitForSelector('.checkpoint >> nth=1');
  await waitDone(page);
  await page.click('[data-tab=compare]');
  await page.waitForSelector('[data-view=compare]');
  close(Number(await page.getAttribute('[data-changed-fraction]', 'data-changed-fraction')), ref.overall.changed_fraction, 'changed fraction', 1e-12);
  const bf16 = ref.overall.by_dtype.find((d) => d.dtype === 'BF16');
  const flips = await values(page, 'model-flips-BF16');
  assert.equal(flips.length, 16);
  flips.forEach((v, i) => close(v, bf16.bit_flip_ratio[15 - i], `flip bit ${15 - i}`, 1e-12));
  const cells = await page.locator('[data-chart=flip-heatmap-BF16] rect.cell').count();
  assert.equal(cells, 16 * bf16.tensors);
  const changed = await values(page, 'changed-fraction');
  assert.equal(changed.length, ref.tensors.length);
  ref.tensors.forEach((t, i) => close(changed[i], t.changed_fraction, `${t.name} changed`, 1e-12));
  // Two checkpoints are one step: the over-steps chart asks for a third.
  assert.match(await page.textContent('[data-view=compare]'), /three or more checkpoints/);
  await page.screenshot({ path: path.join(SHOTS, 'compare-minilm-bf16.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('malformed files show a message naming the file; the rest keeps working', { timeout: 60_000 }, async () => {
  const demo0 = path.join(ROOT, 'web/demo/minilm-demo-step0.safetensors');
  const bad = malformed(app.tmp, demo0);
  const page = await openApp();
  await page.setInputFiles('#file-input', [bad.huge, demo0, bad.cut]);
  await page.waitForSelector('.error >> nth=1');
  const errors = await page.$$eval('.error', (es) => es.map((e) => ({ file: e.dataset.file, text: e.textContent })));
  const huge = errors.find((e) => e.file === 'not-a-checkpoint.safetensors');
  assert.ok(huge, JSON.stringify(errors));
  assert.match(huge.text, /exceeds the limit/);
  const cut = errors.find((e) => e.file === 'truncated.safetensors');
  assert.ok(cut, JSON.stringify(errors));
  assert.match(cut.text, /truncated or trailing data/);
  assert.equal(await page.locator('.checkpoint').count(), 1);
  await waitDone(page);
  assert.equal(await page.locator('#tensor-table tbody tr').count(), 11);
  await page.screenshot({ path: path.join(SHOTS, 'errors.png') });
  await page.close();
});

test('a long table draws its first rows while statistics run, more when scrolled to, all at the end', { timeout: 120_000 }, async () => {
  // 1500 tensors of 256 Ki values (786 MB): statistics for a second or more, on two workers here.
  const file = manyTensors(app.tmp, 1500, 1 << 18);
  const page = await openApp();
  await page.setInputFiles('#file-input', file);
  await page.waitForSelector('#tensor-table tbody tr');
  // What the table holds at one instant: the run's state, the rows drawn and what the line says.
  const now = () => page.evaluate(() => ({
    state: document.querySelector('.progress')?.dataset.state,
    rows: document.querySelectorAll('#tensor-table tbody tr').length,
    more: document.querySelector('.more-rows')?.textContent ?? null,
  }));
  const seen = [];
  let scrolled = null;
  for (let s = await now(); s.state !== 'done'; s = await now()) {
    seen.push(s);
    if (s.more !== null && scrolled === null) {
      // Scrolling the table to its end draws more rows while the run goes on.
      scrolled = s.rows;
      await page.locator('.more-rows').scrollIntoViewIfNeeded();
      await page.waitForFunction((n) => document.querySelectorAll('#tensor-table tbody tr').length > n
        || document.querySelector('.progress')?.dataset.state === 'done', scrolled);
      // One step: the new rows push the line out of view, and no more come until it is back.
      await page.waitForTimeout(300);
      const later = await now();
      if (later.state === 'running') {
        assert.equal(later.rows, scrolled + 64, JSON.stringify(later));
        await page.screenshot({ path: path.join(SHOTS, 'table-more-rows.png') });
      }
    }
  }
  const during = seen.filter((s) => s.more !== null);
  assert.ok(during.length > 0, `the run showed the line at least once: ${JSON.stringify(seen.slice(0, 5))}`);
  // (The line and the rows are drawn by separate components: one instant may catch one of them
  // a step ahead of the other.)
  for (const s of during) {
    assert.ok(s.rows < 1500 && s.rows % 64 === 0, JSON.stringify(s));
    assert.match(s.more, /^\d+ of 1500 rows drawn while the statistics run/);
  }
  assert.equal(during[0].rows, 64);
  assert.ok(seen.some((s) => s.rows > scrolled) || (await now()).state === 'done');
  // All rows once the statistics finish, each with its numbers, and no line.
  await waitDone(page);
  assert.equal(await page.locator('#tensor-table tbody tr').count(), 1500);
  assert.equal(await page.locator('#tensor-table tbody tr.pending').count(), 0);
  assert.equal(await page.locator('.more-rows').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a shard set with its index, and a directory of checkpoints', { timeout: 60_000 }, async () => {
  const demo = (i) => path.join(ROOT, `web/demo/minilm-demo-step${i}.safetensors`);
  const shardDir = path.join(app.tmp, 'sharded');
  fs.mkdirSync(shardDir, { recursive: true });
  const set = shardSet(demo(0), shardDir);
  const page = await openApp();
  await page.setInputFiles('#file-input', [set.index, ...set.files]);
  await page.waitForSelector('.checkpoint');
  assert.equal(await page.locator('.checkpoint').count(), 1);
  assert.match(await page.textContent('.checkpoint .meta'), /^2 files/);
  await waitDone(page);
  assert.equal(await page.locator('#tensor-table tbody tr').count(), set.tensors);
  assert.equal(await page.locator('#tensor-table thead th', { hasText: 'file' }).count(), 1);
  // A directory holding two checkpoint directories → two checkpoints, compared.
  const runs = path.join(app.tmp, 'run');
  for (const [i, step] of [[0, 'step-100'], [1, 'step-200']]) {
    fs.mkdirSync(path.join(runs, step), { recursive: true });
    fs.copyFileSync(demo(i), path.join(runs, step, 'model.safetensors'));
    fs.writeFileSync(path.join(runs, step, 'config.json'), '{}');
  }
  await page.click('text=Close all');
  await page.setInputFiles('#dir-input', runs);
  await page.waitForSelector('.checkpoint >> nth=1');
  const names = await page.$$eval('.checkpoint .name', (n) => n.map((x) => x.textContent));
  assert.deepEqual(names, ['step-100', 'step-200']);
  await waitDone(page);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('demo: drop, three steps, flips over steps; cancel and resume', { timeout: 120_000 }, async () => {
  const page = await openApp();
  await page.screenshot({ path: path.join(SHOTS, 'welcome.png') });
  // Drop the demo files (a synthetic drop of File objects, as a browser without the entries API).
  await page.evaluate(async () => {
    const dt = new DataTransfer();
    for (const i of [0, 1, 2]) {
      const name = `minilm-demo-step${i}.safetensors`;
      const blob = await (await fetch(`demo/${name}`)).blob();
      dt.items.add(new File([blob], name));
    }
    document.querySelector('.app').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await page.waitForSelector('.checkpoint >> nth=2');
  await waitDone(page);
  await page.click('[data-tab=compare]');
  const series = await page.$$eval('[data-chart=flips-over-steps] [data-series]', (s) => s.map((x) => Number(x.dataset.points)));
  assert.equal(series.length, 16);
  assert.ok(series.every((n) => n === 2));
  assert.equal(await page.locator('.step-button').count(), 2);
  await page.screenshot({ path: path.join(SHOTS, 'compare-demo.png'), fullPage: true });
  // The demo button loads the same set.
  await page.click('text=Close all');
  await page.click('#demo-button-big');
  await page.waitForSelector('.checkpoint >> nth=2');
  await waitDone(page);
  await page.click('[data-tab=detail]');
  await page.screenshot({ path: path.join(SHOTS, 'detail-demo.png'), fullPage: true });
  // Cancel a long run, then resume it.
  await page.click('text=Close all');
  await page.setInputFiles('#file-input', bigBf16());
  await page.waitForSelector('.progress[data-state=running]');
  await page.click('#cancel-button');
  await page.waitForSelector('.progress[data-state=cancelled]');
  const pending = await page.locator('#tensor-table tbody tr.pending').count();
  assert.ok(pending > 0, 'some tensors left without statistics');
  await page.click('#resume-button');
  await waitDone(page, 300_000);
  assert.equal(await page.locator('#tensor-table tbody tr.pending').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.close();
});
