// End-to-end tests of the codec features in headless Chromium: compressing real weights in the page
// (lossless LMC, lossy NeuZip with its error shown, an XOR delta against a second checkpoint, a
// per-tensor codec override), decompressing snapshots made by the CLI, a corrupt snapshot's typed
// error, and the codec comparison on one tensor. Every download is checked against the native CLI
// byte for byte (`bitlens decompress` of the page's snapshot, the page's restore of the CLI's).
//
//   node --test tests/e2e/        (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { useApp, THREADED, CORES, FORCE_THREADS } from './harness.mjs';
import { WEIGHTS, SHOTS, bigBf16, perturb } from './fixtures.mjs';
import { cli, sameBytes, download, selectByText, compress, decompressFirst } from './steps.mjs';

const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
const F32 = path.join(WEIGHTS, 'minilm-f32.safetensors');
const QUERY = 'encoder.layer.0.attention.self.query.weight';

const app = useApp();
const openApp = app.openApp;

test('compress a real file in the page (LMC): the CLI restores it byte for byte', { timeout: 300_000 }, async () => {
  const page = await openApp({ query: FORCE_THREADS });
  await page.setInputFiles('#file-input', BF16);
  await page.waitForSelector('#tensor-table tbody tr');
  await page.click('[data-tab=codecs]');
  // The progress bar shows while the worker runs.
  await page.click('#compress-button');
  await page.waitForSelector('#compress-result', { timeout: 300_000 });
  const r = await page.$eval('#compress-result', (e) => ({ ...e.dataset }));
  assert.equal(r.preset, 'lmc');
  assert.equal(Number(r.in), fs.statSync(BF16).size);
  // Cross-origin isolated and forced: the threaded build ran it (when scripts/build-web.sh made one).
  assert.equal(r.build, THREADED ? 'threads' : 'single');
  if (THREADED) assert.equal(Number(r.threads), CORES);
  const { out, suggested } = await download(page, '#compress-download', path.join(app.tmp, 'page-lmc.bls'));
  assert.equal(suggested, 'minilm-bf16.bls');
  assert.equal(fs.statSync(out).size, Number(r.out));
  assert.ok(Number(r.ratio) < 0.9 && Number(r.ratio) > 0.3, `ratio ${r.ratio}`);
  await page.screenshot({ path: path.join(SHOTS, 'codecs-compress-lmc.png'), fullPage: true });
  // The CLI decompresses the page's snapshot to the original bytes...
  const restored = path.join(app.tmp, 'restored-lmc.safetensors');
  cli('decompress', out, '-o', restored);
  sameBytes(restored, BF16, 'CLI restore of the page snapshot');
  // ...and writes the very same snapshot itself.
  const native = path.join(app.tmp, 'cli-lmc.bls');
  cli('compress', BF16, '-o', native, '--codec', 'lmc');
  sameBytes(out, native, 'page snapshot vs CLI snapshot');
  // The tensor table's achieved ratio column matches `bitlens inspect --json` of the snapshot.
  const ref = JSON.parse(cli('inspect', out, '--json')).snapshots[0].tensors;
  await page.click('[data-tab=tensors]');
  const rows = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  const byName = new Map(rows.map((x) => [x.name, x]));
  for (const t of ref) {
    const row = byName.get(t.name);
    assert.ok(row, t.name);
    assert.equal(row.codec, t.codec, t.name);
    assert.ok(Math.abs(Number(row.achieved) - t.ratio) < 1e-12, `${t.name}: ${row.achieved} vs ${t.ratio}`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'tensors-achieved-ratio.png') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('lossy NeuZip (3 mantissa bits) shows each tensor error; the CLI reads the snapshot', { timeout: 300_000 }, async () => {
  const page = await openApp();
  await page.setInputFiles('#file-input', BF16);
  await page.waitForSelector('#tensor-table tbody tr');
  const r = await compress(page, 'neuzip-k3');
  assert.equal(r.lossy, 'true');
  const errs = await page.$$eval('#error-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  assert.ok(errs.length > 0, 'lossy tensors listed');
  assert.ok(errs.some((e) => Number(e.maxRel) > 0), 'some values changed');
  const ref = JSON.parse(cli('inspect', (await download(page, '#compress-download', path.join(app.tmp, 'page-k3.bls'))).out, '--json')).snapshots[0];
  assert.equal(ref.lossy, true);
  const refByName = new Map(ref.tensors.map((t) => [t.name, t]));
  for (const e of errs) {
    const t = refByName.get(e.name);
    assert.ok(t && t.error, e.name);
    assert.ok(Number(e.maxRel) >= 0 && Number(e.maxRel) < 0.1, `${e.name} max rel ${e.maxRel}`);
    assert.ok(Math.abs(Number(e.mse) - t.error.mse) <= 1e-9 * Math.max(1, t.error.mse), `${e.name} mse`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'codecs-compress-neuzip-k3.png'), fullPage: true });
  // The tensor table shows the error too.
  await page.click('[data-tab=tensors]');
  const q = await page.$eval(`#tensor-table tbody tr[data-name="${QUERY}"]`, (tr) => ({ ...tr.dataset }));
  assert.ok(Number(q.maxRel) > 0, 'max rel error in the table');
  const restored = path.join(app.tmp, 'restored-k3.safetensors');
  cli('decompress', path.join(app.tmp, 'page-k3.bls'), '-o', restored);
  assert.equal(fs.statSync(restored).size, fs.statSync(BF16).size);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a CLI snapshot decompresses in the page byte for byte; a corrupt one shows its error', { timeout: 300_000 }, async () => {
  const bls = path.join(app.tmp, 'cli-f32.bls');
  cli('compress', F32, '-o', bls);
  const page = await openApp();
  await page.setInputFiles('#file-input', bls);
  await page.waitForSelector('.snapshot[data-delta=false] .decompress-button');
  const { out, suggested } = await decompressFirst(page, path.join(app.tmp, 'page-f32.safetensors'));
  assert.equal(suggested, 'cli-f32.safetensors');
  sameBytes(out, F32, 'page restore of the CLI snapshot');
  await page.screenshot({ path: path.join(SHOTS, 'codecs-decompress.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
  // One flipped byte in a frame: the typed checksum / frame error, named after the tensor.
  const bytes = fs.readFileSync(bls);
  bytes[bytes.length >> 1] ^= 0xff;
  const corrupt = path.join(app.tmp, 'corrupt.bls');
  fs.writeFileSync(corrupt, bytes);
  let cliMessage = '';
  try {
    cli('decompress', corrupt, '-o', path.join(app.tmp, 'corrupt.out'));
  } catch (e) {
    cliMessage = String(e.stderr);
  }
  const page2 = await openApp();
  await page2.setInputFiles('#file-input', corrupt);
  await page2.waitForSelector('.snapshot .decompress-button');
  await page2.click('.snapshot .decompress-button');
  await page2.waitForSelector('.snapshot-error', { timeout: 300_000 });
  const text = await page2.textContent('.snapshot-error');
  assert.match(text, /tensor `[^`]+`: (checksum mismatch|frame)/);
  assert.ok(cliMessage.includes(text), `page: ${text}\nCLI: ${cliMessage}`);
  assert.equal(await page2.locator('.snapshot .decompress-download').count(), 0);
  // A cut trailer: the snapshot cannot even be opened.
  const cut = path.join(app.tmp, 'cut.bls');
  fs.writeFileSync(cut, bytes.subarray(0, bytes.length - 10));
  await page2.setInputFiles('#file-input', cut);
  await page2.waitForSelector('.snapshot[data-name="cut.bls"] .snapshot-error');
  assert.match(await page2.textContent('.snapshot[data-name="cut.bls"] .snapshot-error'), /not a bitlens snapshot|truncated|corrupt/);
  await page2.screenshot({ path: path.join(SHOTS, 'codecs-corrupt.png'), fullPage: true });
  await page2.close();
});

test('XOR delta against a second loaded checkpoint, both ways through the CLI', { timeout: 300_000 }, async () => {
  const later = perturb(BF16, 0.1, path.join(app.tmp, 'minilm-bf16-later.safetensors'));
  const page = await openApp();
  await page.setInputFiles('#file-input', [BF16, later]);
  await page.waitForSelector('.checkpoint >> nth=1');
  await page.click('.checkpoint:has(.name:has-text("later")) .select');
  const r = await compress(page, 'lmc', 'minilm-bf16.safetensors');
  assert.equal(r.delta, 'true');
  const { out } = await download(page, '#compress-download', path.join(app.tmp, 'page-delta.bls'));
  const restored = path.join(app.tmp, 'restored-delta.safetensors');
  cli('decompress', out, '-o', restored, '--base', BF16);
  sameBytes(restored, later, 'CLI restore of the page delta');
  // A delta is much smaller than the whole file.
  const whole = path.join(app.tmp, 'later-whole.bls');
  cli('compress', later, '-o', whole);
  assert.ok(fs.statSync(out).size < fs.statSync(whole).size, 'delta smaller than whole');
  await page.screenshot({ path: path.join(SHOTS, 'codecs-delta.png'), fullPage: true });
  await page.close();
  // The CLI's delta, restored in the page with the base picked among the loaded checkpoints.
  const cliDelta = path.join(app.tmp, 'cli-delta.bls');
  cli('compress', later, '-o', cliDelta, '--base', BF16);
  const page2 = await openApp();
  await page2.setInputFiles('#file-input', [BF16, cliDelta]);
  await page2.waitForSelector('.snapshot[data-delta=true] .snapshot-base');
  await selectByText(page2, '.snapshot .snapshot-base', 'minilm-bf16.safetensors');
  const got = await decompressFirst(page2, path.join(app.tmp, 'page-delta-restored.safetensors'));
  sameBytes(got.out, later, 'page restore of the CLI delta');
  assert.deepEqual(page2.errors, []);
  await page2.close();
});

test('codec comparison on one tensor, and a per-tensor codec override', { timeout: 300_000 }, async () => {
  const page = await openApp();
  await page.setInputFiles('#file-input', BF16);
  await page.waitForSelector('#tensor-table tbody tr');
  await page.click(`#tensor-table tbody tr[data-name="${QUERY}"]`);
  await page.waitForSelector('#compare-codecs');
  await page.click('#compare-codecs');
  await page.waitForSelector('#codec-comparison', { timeout: 300_000 });
  const rows = await page.$$eval('#codec-comparison tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  const labels = rows.map((r) => r.label);
  const HUB = "bg4-lz4 (the hub's Xet chunks)";
  for (const l of ['bitlens LMC', 'NeuZip lossless', 'NeuZip k=3', 'NeuZip k=1', 'NeuZip k=0', 'BitSnap quantized', 'lz4_flex', HUB]) {
    assert.ok(labels.includes(l), `${l} in ${labels}`);
  }
  for (const r of rows) {
    assert.ok(Number(r.ratio) > 0 && Number(r.encMbps) > 0 && Number(r.decMbps) > 0, JSON.stringify(r));
    if (r.lossy === 'true') assert.ok(Number(r.maxRel) > 0, `${r.label} error shown`);
    else assert.equal(r.maxRel, undefined, r.label);
  }
  const lmc = rows.find((r) => r.label === 'bitlens LMC');
  const lz4 = rows.find((r) => r.label === 'lz4_flex');
  assert.ok(Number(lmc.ratio) < Number(lz4.ratio), 'LMC beats lz4 on bf16 weights');
  // The hub's scheme (issue 28): its byte grouping beats plain LZ4 on bf16, LMC's entropy coding
  // beats both. It runs the code of the CLI's `bench --codecs bg4-lz4` (crates/peers), by that name.
  const hub = rows.find((r) => r.label === HUB);
  assert.ok(Number(hub.ratio) < Number(lz4.ratio) && Number(lmc.ratio) < Number(hub.ratio), JSON.stringify(hub));
  assert.equal(hub.codec, 'bg4-lz4');
  assert.equal(hub.lossy, 'false');
  assert.equal(await page.locator('[data-chart=codec-ratio] rect.bar').count(), rows.length);
  await page.screenshot({ path: path.join(SHOTS, 'detail-codec-comparison.png'), fullPage: true });
  // Override: this tensor lossy NeuZip k=3, the rest LMC.
  await page.selectOption('#override-select', 'neuzip-k3');
  await compress(page, 'lmc');
  assert.equal(await page.getAttribute('[data-overrides]', 'data-overrides'), '1');
  await page.click('[data-tab=tensors]');
  const table = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  const q = table.find((t) => t.name === QUERY);
  assert.match(q.codec, /^neuzip/);
  assert.ok(Number(q.maxRel) > 0);
  assert.ok(table.filter((t) => t.name !== QUERY).every((t) => t.codec === 'lmc' && t.maxRel === undefined));
  assert.deepEqual(page.errors, []);
  await page.close();
});

// The fixtures make the file when missing (bigBf16, a few seconds); the test takes
// about 10 s (two passes over 1.09 GB at ~200 MB/s, the first one cancelled).
test('a 1.09 GB file: progress, Cancel, then a full run in bounded wasm memory', { timeout: 600_000 }, async () => {
  const big = bigBf16();
  const page = await openApp();
  await page.setInputFiles('#file-input', big);
  await page.waitForSelector('#tensor-table tbody tr');
  await page.click('#cancel-button').catch(() => {}); // statistics are not needed here
  await page.click('[data-tab=codecs]');
  await page.click('#compress-button');
  await page.waitForFunction(() => Number(document.querySelector('.codec-progress')?.dataset.done) > 0, null, { timeout: 120_000 });
  await page.screenshot({ path: path.join(SHOTS, 'codecs-progress.png') });
  await page.click('#codec-cancel');
  await page.waitForSelector('.codec-progress', { state: 'detached' });
  assert.equal(await page.locator('#compress-result').count(), 0, 'no result after Cancel');
  await page.click('#compress-button');
  await page.waitForSelector('#compress-result', { timeout: 600_000 });
  const r = await page.$eval('#compress-result', (e) => ({ ...e.dataset }));
  assert.equal(Number(r.in), fs.statSync(big).size);
  const mib = Number(r.memory) / (1 << 20);
  assert.ok(mib <= 256, `codec worker wasm memory ${mib} MiB`);
  console.log(`# 1.09 GB LMC in the page (${r.build}, ${r.threads} threads): ${Number(r.mbps).toFixed(0)} MB/s, ratio ${Number(r.ratio).toFixed(4)}, worker wasm memory ${mib.toFixed(0)} MiB`);
  await page.close();
});
