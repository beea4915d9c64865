// End-to-end tests of checkpoint labels (headless Chromium, the demo's three MiniLM steps): three
// checkpoints that are all `model.bf16.safetensors` in `ckpt-000100/`, `ckpt-000120/` and
// `ckpt-000140/` must read differently in the checkpoint strip, the Compare view's step buttons
// and the Codecs view's base selector — by folder when the browser gives paths (folder picker),
// by the step in `__metadata__` or by number when it gives only the file names.
//
//   node --test tests/e2e/labels.test.mjs   (after scripts/build-web.sh)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useApp } from './harness.mjs';
import { ROOT, SHOTS } from './fixtures.mjs';

const STEPS = ['000100', '000120', '000140'];
const NAME = 'model.bf16.safetensors';

const app = useApp();

/** Copies demo step `i` to `file`, with `__metadata__.step` set when `step` is given. */
function demoCopy(i, file, step = null) {
  const buf = fs.readFileSync(path.join(ROOT, `web/demo/minilm-demo-step${i}.safetensors`));
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString('utf8'));
  if (step !== null) header.__metadata__ = { ...(header.__metadata__ ?? {}), step };
  const json = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, Buffer.concat([len, json, buf.subarray(8 + n)]));
  return file;
}

/** `run/ckpt-000100/model.bf16.safetensors`, ... under a fresh directory; returns the files. */
function threeFolders(dir, withSteps) {
  return STEPS.map((s, i) => demoCopy(i, path.join(dir, 'run', `ckpt-${s}`, NAME), withSteps ? String(Number(s)) : null));
}

/** Label texts of the strip, the Compare step buttons and the Codecs base selector. */
async function labels(page) {
  await page.waitForSelector('.checkpoint >> nth=2');
  const strip = await page.$$eval('.checkpoint .name', (n) => n.map((x) => x.textContent));
  await page.click('[data-tab=compare]');
  await page.waitForSelector('.step-button >> nth=1');
  const steps = await page.$$eval('.step-button', (b) => b.map((x) => x.textContent));
  await page.click('[data-tab=codecs]');
  const bases = await page.$$eval('#base-select option', (o) => o.map((x) => x.textContent.trim()).filter((t) => t.startsWith('XOR delta against ')));
  return { strip, steps, bases };
}

/** The strip shows `expected`; the step buttons and the base selector use the same labels. */
function assertShown({ strip, steps, bases }, expected) {
  assert.deepEqual(strip, expected);
  assert.equal(new Set(strip).size, 3, 'three distinct labels');
  assert.deepEqual(steps, [`#1 → #2  ${expected[0]} → ${expected[1]}`, `#2 → #3  ${expected[1]} → ${expected[2]}`]);
  // The base selector lists the checkpoints other than the active (first) one.
  assert.deepEqual(bases, expected.slice(1).map((l) => `XOR delta against ${l}`));
}

test('folders picked: each checkpoint is named by its folder', { timeout: 120_000 }, async () => {
  const dir = path.join(app.tmp, 'picked');
  threeFolders(dir, false);
  const page = await app.openApp();
  await page.setInputFiles('#dir-input', path.join(dir, 'run'));
  assertShown(await labels(page), STEPS.map((s) => `ckpt-${s}`));
  await page.screenshot({ path: path.join(SHOTS, 'labels-folders.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('same-named files without paths: told apart by number, or by the step in their metadata', { timeout: 120_000 }, async () => {
  const plain = threeFolders(path.join(app.tmp, 'plain'), false);
  const page = await app.openApp();
  await page.setInputFiles('#file-input', plain);
  assertShown(await labels(page), [1, 2, 3].map((n) => `${NAME} #${n}`));
  // With `__metadata__.step`, the step tells them apart.
  await page.click('text=Close all');
  const stepped = threeFolders(path.join(app.tmp, 'stepped'), true);
  await page.setInputFiles('#file-input', stepped);
  assertShown(await labels(page), ['100', '120', '140'].map((s) => `${NAME} · step ${s}`));
  await page.screenshot({ path: path.join(SHOTS, 'labels-steps.png'), fullPage: true });
  // Loaded one at a time, as three separate drops: earlier labels follow when a namesake arrives.
  await page.click('text=Close all');
  await page.setInputFiles('#file-input', plain[0]);
  await page.waitForSelector('.checkpoint');
  assert.equal(await page.textContent('.checkpoint .name'), NAME);
  for (const f of plain.slice(1)) await page.setInputFiles('#file-input', f);
  assertShown(await labels(page), [1, 2, 3].map((n) => `${NAME} #${n}`));
  assert.deepEqual(page.errors, []);
  await page.close();
});
