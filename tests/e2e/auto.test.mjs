// End-to-end tests of `--codec auto` in the page (issue 17): the codec menu's "auto" compresses
// real weights in the worker; the tensor table names each tensor's winning codec with its predicted
// and achieved size, and these equal `bitlens compress --codec auto --json` on the same file (the
// snapshot is the CLI's byte for byte); the page restores its own snapshot byte for byte; and
// against a base (the demo's consecutive steps) the deltas match the CLI's too.
//
//   node --test tests/e2e/auto.test.mjs   (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { useApp } from './harness.mjs';
import { ROOT, WEIGHTS, SHOTS } from './fixtures.mjs';
import { cli, sameBytes, download, compress, decompressFirst } from './steps.mjs';

const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
const STEP0 = path.join(ROOT, 'web/demo/minilm-demo-step0.safetensors');
const STEP1 = path.join(ROOT, 'web/demo/minilm-demo-step1.safetensors');

const app = useApp();

/** The tensor table's rows after a compression, by tensor name. */
async function tableRows(page) {
  await page.click('[data-tab=tensors]');
  const rows = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  return new Map(rows.map((r) => [r.name, r]));
}

/** Every tensor of the CLI's report has the same codec, choice, prediction and size in the table. */
function sameAsCli(rows, report) {
  const tensors = report.files[0].tensors;
  assert.equal(rows.size, tensors.length);
  for (const t of tensors) {
    const r = rows.get(t.name);
    assert.ok(r, t.name);
    assert.equal(r.codec, t.codec, t.name);
    assert.equal(r.delta, String(t.delta), t.name);
    assert.equal(Number(r.stored), t.achieved_bytes, t.name);
    assert.equal(r.autoChosen, t.chosen, t.name);
    assert.equal(Number(r.autoPredicted), t.predicted_bytes, t.name);
  }
  return tensors;
}

test('auto in the page: the CLI\'s choices and sizes, its snapshot, and a byte-exact restore', { timeout: 300_000 }, async () => {
  const page = await app.openApp();
  await page.setInputFiles('#file-input', BF16);
  await page.waitForSelector('#tensor-table tbody tr');
  const r = await compress(page, 'auto');
  assert.equal(r.preset, 'auto');
  assert.equal(r.lossy, 'false');
  const { out } = await download(page, '#compress-download', path.join(app.tmp, 'page-auto.bls'));
  const native = path.join(app.tmp, 'cli-auto.bls');
  const report = JSON.parse(cli('compress', BF16, '-o', native, '--codec', 'auto', '--json'));
  const tensors = sameAsCli(await tableRows(page), report);
  // Both codecs win some tensors of the bf16 weights, and the table shows the winner.
  const chosen = new Set(tensors.map((t) => t.chosen));
  assert.ok(chosen.has('lmc') && chosen.has('neuzip'), [...chosen].join());
  const cell = await page.textContent('#tensor-table tbody tr[data-auto-chosen=neuzip] .auto');
  assert.match(cell, /neuzip · predicted .* achieved /);
  await page.$eval('.table-scroll', (e) => { e.scrollLeft = e.scrollWidth; });
  await page.screenshot({ path: path.join(SHOTS, 'tensors-auto.png') });
  sameBytes(out, native, 'page auto snapshot vs CLI auto snapshot');
  assert.deepEqual(page.errors, []);
  await page.close();
  // The page restores its own snapshot byte for byte.
  const page2 = await app.openApp();
  await page2.setInputFiles('#file-input', out);
  await page2.waitForSelector('.snapshot[data-delta=false] .decompress-button');
  const got = await decompressFirst(page2, path.join(app.tmp, 'page-auto-restored.safetensors'));
  sameBytes(got.out, BF16, 'page restore of the page auto snapshot');
  assert.deepEqual(page2.errors, []);
  await page2.close();
});

test('auto against a base: the demo\'s next step as deltas, as the CLI chooses them', { timeout: 300_000 }, async () => {
  const page = await app.openApp();
  await page.setInputFiles('#file-input', [STEP0, STEP1]);
  await page.waitForSelector('.checkpoint >> nth=1');
  await page.click('.checkpoint:has(.name:has-text("step1")) .select');
  const r = await compress(page, 'auto', 'minilm-demo-step0.safetensors');
  assert.equal(r.delta, 'true');
  const { out } = await download(page, '#compress-download', path.join(app.tmp, 'page-auto-delta.bls'));
  const native = path.join(app.tmp, 'cli-auto-delta.bls');
  const report = JSON.parse(cli('compress', STEP1, '--base', STEP0, '-o', native, '--codec', 'auto', '--json'));
  const tensors = sameAsCli(await tableRows(page), report);
  assert.ok(tensors.some((t) => t.delta), 'some tensor is a delta');
  sameBytes(out, native, 'page auto delta vs CLI auto delta');
  const restored = path.join(app.tmp, 'restored-auto-delta.safetensors');
  cli('decompress', out, '-o', restored, '--base', STEP0);
  sameBytes(restored, STEP1, 'CLI restore of the page auto delta');
  assert.deepEqual(page.errors, []);
  await page.close();
});
