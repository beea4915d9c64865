// End-to-end tests of shard sets in the Codecs view (headless Chromium, real MiniLM weights split
// into two shards): compressing a sharded checkpoint gives one snapshot per shard named as
// `bitlens compress INDEX -o DIR` names them, plus the index as it is; deltas take each shard
// against the base checkpoint's shard of the same name; several snapshots decompress in one go (a
// corrupt one fails alone).
// Every file is checked against the native CLI byte for byte, both ways.
//
//   node --test tests/e2e/        (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useApp } from './harness.mjs';
import { WEIGHTS, SHOTS, perturb, shardSet } from './fixtures.mjs';
import { cli, sameBytes, download, downloadAll, selectByText, compress } from './steps.mjs';

const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
const SHARDS = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
const INDEX = 'model.safetensors.index.json';

const app = useApp();

/** Every file name in `dir`, sorted. */
function names(dir) {
  return fs.readdirSync(dir).sort();
}

test('a sharded checkpoint compresses to one snapshot per shard, as the CLI writes them', { timeout: 300_000 }, async () => {
  const dir = path.join(app.tmp, 'sharded');
  fs.mkdirSync(dir, { recursive: true });
  const set = shardSet(BF16, dir);
  const page = await app.openApp();
  await page.setInputFiles('#file-input', [set.index, ...set.files]);
  await page.waitForSelector('#tensor-table tbody tr');
  const r = await compress(page, 'lmc');
  assert.equal(r.files, '2');
  assert.equal(Number(r.in), set.files.reduce((n, f) => n + fs.statSync(f).size, 0));
  const links = await page.$$eval('#compress-downloads a.compress-download', (as) => as.map((a) => a.dataset.name));
  assert.deepEqual(links, [...SHARDS.map((s) => `${s}.bls`), INDEX]);
  await page.screenshot({ path: path.join(SHOTS, 'codecs-compress-shards.png'), fullPage: true });
  // "Download all" saves the three files.
  const out = path.join(app.tmp, 'page-bls');
  await downloadAll(page, '#compress-downloads .compress-download-all', 3, out);
  assert.deepEqual(names(out), [INDEX, ...SHARDS.map((s) => `${s}.bls`)].sort());
  const total = SHARDS.reduce((n, s) => n + fs.statSync(path.join(out, `${s}.bls`)).size, 0);
  assert.equal(total, Number(r.out));
  // Each snapshot restores its shard through the CLI...
  for (const s of SHARDS) {
    const restored = path.join(app.tmp, `restored-${s}`);
    cli('decompress', path.join(out, `${s}.bls`), '-o', restored);
    sameBytes(restored, path.join(dir, s), `CLI restore of ${s}.bls`);
  }
  // ...the folder restores the checkpoint, index included...
  const restoredDir = path.join(app.tmp, 'restored-set');
  cli('decompress', out, '-o', restoredDir);
  for (const f of [...SHARDS, INDEX]) sameBytes(path.join(restoredDir, f), path.join(dir, f), `CLI restore of the folder: ${f}`);
  // ...and the CLI writes the very same files.
  const native = path.join(app.tmp, 'cli-bls');
  cli('compress', set.index, '-o', native, '--codec', 'lmc');
  assert.deepEqual(names(native), names(out));
  for (const f of names(native)) sameBytes(path.join(out, f), path.join(native, f), `page vs CLI: ${f}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('deltas of a shard set against the base shard of the same name; several snapshots decompress at once', { timeout: 300_000 }, async () => {
  // run/base and run/later: the same two shards and index, `later` with 10% of the values changed.
  const run = path.join(app.tmp, 'run');
  const base = path.join(run, 'base');
  const later = path.join(run, 'later');
  fs.mkdirSync(base, { recursive: true });
  fs.mkdirSync(later, { recursive: true });
  shardSet(BF16, base);
  shardSet(perturb(BF16, 0.1, path.join(app.tmp, 'later.safetensors')), later);
  const page = await app.openApp();
  await page.setInputFiles('#dir-input', run);
  await page.waitForSelector('.checkpoint >> nth=1');
  await page.click('.checkpoint:has(.name:has-text("later")) .select');
  const r = await compress(page, 'lmc', 'base');
  assert.equal(r.delta, 'true');
  assert.equal(r.files, '2');
  const out = path.join(app.tmp, 'page-delta-bls');
  await downloadAll(page, '#compress-downloads .compress-download-all', 3, out);
  // The CLI restores the page's delta set against the base set, and makes the same bytes itself.
  const restored = path.join(app.tmp, 'restored-delta-set');
  cli('decompress', out, '-o', restored, '--base', path.join(base, INDEX));
  for (const f of [...SHARDS, INDEX]) sameBytes(path.join(restored, f), path.join(later, f), `CLI restore of the page delta: ${f}`);
  const native = path.join(app.tmp, 'cli-delta-bls');
  cli('compress', path.join(later, INDEX), '-o', native, '--base', path.join(base, INDEX));
  for (const f of names(native)) sameBytes(path.join(out, f), path.join(native, f), `page vs CLI delta: ${f}`);
  assert.ok(Number(r.out) < fs.statSync(path.join(app.tmp, 'later.safetensors')).size / 2, 'deltas are small');
  await page.close();

  // The CLI's delta folder opened with its base set: "Decompress all" restores both shards (each
  // against the base shard of its name, chosen by the page) and offers the index as it is.
  const pick = path.join(app.tmp, 'pick');
  fs.mkdirSync(pick);
  fs.cpSync(base, path.join(pick, 'base'), { recursive: true });
  fs.cpSync(native, path.join(pick, 'snapshots'), { recursive: true });
  const page2 = await app.openApp();
  await page2.setInputFiles('#dir-input', pick);
  await page2.waitForSelector('.snapshot >> nth=1');
  await page2.waitForSelector('.snapshot[data-delta=true] >> nth=1');
  for (const s of SHARDS) {
    const chosen = await page2.$eval(`.snapshot[data-name="pick/snapshots/${s}.bls"] .snapshot-base`, (sel) => sel.selectedOptions[0].textContent);
    assert.equal(chosen, 'base', `base of ${s}.bls pre-selected`);
  }
  await selectByText(page2, `.snapshot[data-name="pick/snapshots/${SHARDS[0]}.bls"] .snapshot-base`, 'base');
  await page2.click('#decompress-all');
  await page2.waitForSelector('#decompress-downloads', { timeout: 300_000 });
  await page2.screenshot({ path: path.join(SHOTS, 'codecs-decompress-shards.png'), fullPage: true });
  const back = path.join(app.tmp, 'page-restored-set');
  const saved = await downloadAll(page2, '#decompress-downloads .restored-download-all', 3, back);
  assert.deepEqual(saved.sort(), [INDEX, ...SHARDS].sort());
  for (const f of [...SHARDS, INDEX]) sameBytes(path.join(back, f), path.join(later, f), `page restore of the CLI delta set: ${f}`);
  assert.deepEqual(page2.errors, []);
  await page2.close();
});

test('Decompress all goes on past a corrupt snapshot', { timeout: 300_000 }, async () => {
  const F16 = path.join(WEIGHTS, 'minilm-f16.safetensors');
  const good = path.join(app.tmp, 'good.bls');
  const bad = path.join(app.tmp, 'bad.bls');
  cli('compress', F16, '-o', good);
  cli('compress', BF16, '-o', bad);
  const bytes = fs.readFileSync(bad);
  bytes[bytes.length >> 1] ^= 0xff; // a frame byte: the snapshot opens, decoding fails
  fs.writeFileSync(bad, bytes);
  const page = await app.openApp();
  await page.setInputFiles('#file-input', [bad, good]);
  await page.waitForSelector('.snapshot[data-name="good.bls"] .decompress-button:not([disabled])');
  await page.waitForSelector('.snapshot[data-name="bad.bls"] .decompress-button:not([disabled])');
  // The bad one comes first, so the job has to go on after it fails.
  assert.deepEqual(await page.$$eval('.snapshot', (s) => s.map((e) => e.dataset.name)), ['bad.bls', 'good.bls']);
  await page.click('#decompress-all');
  await page.waitForSelector('.snapshot[data-name="good.bls"] .decompress-download', { timeout: 300_000 });
  assert.match(await page.textContent('.snapshot[data-name="bad.bls"] .snapshot-error'), /checksum mismatch|frame/);
  assert.equal(await page.locator('.snapshot[data-name="bad.bls"] .decompress-download').count(), 0);
  const { out } = await download(page, '.snapshot[data-name="good.bls"] .decompress-download', path.join(app.tmp, 'good.safetensors'));
  sameBytes(out, F16, 'the good snapshot, restored after the bad one failed');
  await page.close();
});
