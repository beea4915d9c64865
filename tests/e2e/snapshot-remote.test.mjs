// End-to-end tests of the preview of a snapshot on a server, in headless Chromium: `.bls` files made
// by the CLI from real weights (lossless LMC, lossy NeuZip) are served by the Range + CORS test
// server (tests/e2e/range-server.mjs, its own origin, counting the bytes it sends). The page opens
// one by URL, reads its index by range, lists its tensors exactly as `bitlens inspect --json` does,
// and decodes one tensor in the codec worker: the download is byte-exact to
// `bitlens decompress URL --tensor NAME`, the statistics equal `bitlens inspect` of that file, and
// the server sent only about that tensor's frames. A corrupted frame, a missing file and a server
// without CORS headers each give their message.
//
// The page opens the snapshot as a link would: `?url=<snapshot URL>`.
//
//   BITLENS_BIN=$PWD/target/release/bitlens node --test tests/e2e/snapshot-remote.test.mjs
//   (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { useApp } from './harness.mjs';
import { startRangeServer } from './range-server.mjs';
import { WEIGHTS, SHOTS, BITLENS, inspect, perturb, tempDir } from './fixtures.mjs';
import { cli, sameBytes, download } from './steps.mjs';

const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
const F32 = path.join(WEIGHTS, 'minilm-f32.safetensors');
/** Bytes a decode may fetch besides the tensor's frames: the preamble and index windows (64 KiB each) and slack. */
const SLACK = 3 * 65536;

const app = useApp();
const data = { dir: null, server: null, noCors: null, flaky: null };

/** Runs the CLI without blocking this process, whose range server must answer it. */
async function cliAsync(...args) {
  return promisify(execFile)(BITLENS, args, { maxBuffer: 1 << 28 });
}

before(() => {
  data.dir = tempDir();
  data.local = tempDir();
  cli('compress', BF16, '-o', path.join(data.dir, 'minilm-lmc.bls'), '--codec', 'lmc');
  cli('compress', F32, '-o', path.join(data.dir, 'minilm-f32-k3.bls'), '--codec', 'neuzip', '--mantissa-bits', '3');
  // A later checkpoint stored as an XOR delta against the bf16 weights.
  const later = perturb(BF16, 0.01, path.join(data.local, 'later.safetensors'));
  cli('compress', later, '-o', path.join(data.dir, 'delta.bls'), '--base', BF16);
});

before(async () => {
  data.server = await startRangeServer(data.dir);
  data.noCors = await startRangeServer(data.dir, { cors: false });
  data.flaky = await startRangeServer(data.dir, { fail5xx: 1 });
});

after(() => {
  data.server?.close();
  data.noCors?.close();
  data.flaky?.close();
  for (const d of [data.dir, data.local]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

/** A page of the app opened on `?url=<url>` (cross-origin isolated unless `isolated: false`). */
async function openUrl(url, { isolated = true } = {}) {
  const page = await app.openApp({ isolated });
  await page.goto(`${isolated ? app.url : app.plainUrl}?url=${encodeURIComponent(url)}`);
  return page;
}

/** Waits for the remote snapshot's tensor list; returns its rows' data attributes. */
async function listing(page) {
  await page.waitForSelector('#snapshot-preview .preview-table tbody tr', { timeout: 60_000 });
  return page.$$eval('#snapshot-preview .preview-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
}

/** Decodes `name` in the page; resolves to the preview's data attributes once done (or failed). */
async function decode(page, name) {
  await page.click(`#snapshot-preview tr[data-tensor="${name}"] .decode-tensor`);
  await page.waitForSelector(`#snapshot-preview .tensor-preview[data-tensor="${name}"]:is([data-state=done], [data-state=failed])`, { timeout: 120_000 });
  return page.$eval('#snapshot-preview .tensor-preview', (e) => ({ ...e.dataset }));
}

function close(a, b, what, tol = 1e-9) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
}

/** The listing equals `bitlens inspect --json` of the snapshot: names in order, codecs, sizes. */
function sameListing(rows, file) {
  const ref = inspect(file).snapshots[0].tensors;
  assert.deepEqual(rows.map((r) => r.tensor), ref.map((t) => t.name));
  const byName = new Map(rows.map((r) => [r.tensor, r]));
  for (const t of ref) {
    const r = byName.get(t.name);
    assert.ok(r, t.name);
    assert.equal(r.codec, t.codec, t.name);
    assert.equal(Number(r.stored), t.stored_bytes, t.name);
    assert.equal(Number(r.original), t.bytes, t.name);
    close(Number(r.ratio), t.ratio, `${t.name} ratio`, 1e-12);
  }
  return ref;
}

/** The page's statistics of the decoded tensor equal `bitlens inspect --json` of the CLI's file. */
async function sameStats(page, shown, file) {
  const t = inspect(file).files[0].tensors[0];
  assert.equal(shown.dtype, t.dtype);
  assert.equal(Number(shown.lanes), t.lanes);
  assert.equal(Number(shown.predictedBytes), t.predicted_bytes);
  close(Number(shown.byteEntropy), t.byte_entropy, 'byte entropy');
  for (const k of ['min', 'max', 'mean', 'std']) close(Number(shown[k]), t.values[k], k);
  assert.equal(Number(shown.zeros), t.values.zeros);
  assert.equal(Number(shown.nan), t.values.nan);
  close(Number(shown.signEntropy), t.float.sign_entropy, 'sign entropy');
  close(Number(shown.exponentEntropy), t.float.exponent_entropy, 'exponent entropy');
  close(Number(shown.mantissaEntropy), t.float.mantissa_entropy, 'mantissa entropy');
  // The Detail view's charts, drawn from the same statistics.
  const bits = await page.$$eval('#snapshot-preview [data-chart=bit-set-ratio] rect[data-value]', (r) => r.map((x) => Number(x.dataset.value)));
  assert.deepEqual(bits.map((v) => v.toFixed(12)), [...t.bit_set_ratio].reverse().map((v) => v.toFixed(12)));
  assert.ok(await page.locator('#snapshot-preview [data-chart=block-entropy]').count());
}

test('a remote LMC snapshot: listing, one tensor decoded byte-exact from only its frames, its statistics', { timeout: 300_000 }, async (ctx) => {
  const file = path.join(data.dir, 'minilm-lmc.bls');
  const url = `${data.server.url}minilm-lmc.bls`;
  const size = fs.statSync(file).size;
  data.server.reset();
  const page = await openUrl(url);
  const ref = sameListing(await listing(page), file);
  // The index took two small requests (preamble and the end of the file), not the file.
  const indexBytes = data.server.served('/minilm-lmc.bls');
  assert.ok(indexBytes <= 2 * 65536 + 8, `index read ${indexBytes} bytes: ${JSON.stringify(data.server.requests)}`);
  // Sortable: by stored size, largest first on the second click.
  await page.click('#snapshot-preview th[data-sort=stored]');
  await page.click('#snapshot-preview th[data-sort=stored]');
  const sorted = await page.$$eval('#snapshot-preview tbody tr', (trs) => trs.map((tr) => Number(tr.dataset.stored)));
  assert.deepEqual(sorted, [...sorted].sort((a, b) => b - a));
  // The largest tensor: the bytes it serves are its frames, far below the snapshot.
  const t = ref.reduce((a, b) => (b.stored_bytes > a.stored_bytes ? b : a));
  data.server.reset();
  const shown = await decode(page, t.name);
  assert.equal(shown.state, 'done', await page.textContent('#snapshot-preview'));
  const served = data.server.served('/minilm-lmc.bls');
  assert.ok(served >= t.stored_bytes && served <= t.stored_bytes + SLACK, `served ${served} for ${t.stored_bytes} stored bytes`);
  assert.ok(served < size * 0.6, `served ${served} of ${size}`);
  assert.equal(Number(shown.fetched), served);
  ctx.diagnostic(`index: ${indexBytes} bytes served; ${t.name}: ${served} served for ${t.stored_bytes} stored bytes, of a ${size}-byte snapshot`);
  assert.equal(shown.codec, t.codec);
  assert.equal(Number(shown.stored), t.stored_bytes);
  assert.equal(Number(shown.original), t.bytes);
  const { out, suggested } = await download(page, '#tensor-download', path.join(app.tmp, 'page-tensor.safetensors'));
  assert.equal(suggested, `${t.name}.safetensors`);
  const ref2 = path.join(app.tmp, 'cli-tensor.safetensors');
  await cliAsync('decompress', url, '--tensor', t.name, '-o', ref2);
  sameBytes(out, ref2, 'page preview download vs bitlens decompress URL --tensor');
  assert.equal(Number(shown.fileBytes), fs.statSync(ref2).size);
  await sameStats(page, shown, ref2);
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-remote-preview.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a remote lossy NeuZip snapshot of f32 weights: listing and one tensor as the CLI decodes it', { timeout: 300_000 }, async () => {
  const file = path.join(data.dir, 'minilm-f32-k3.bls');
  const url = `${data.server.url}minilm-f32-k3.bls`;
  const page = await openUrl(url);
  const ref = sameListing(await listing(page), file);
  assert.equal(await page.getAttribute('#snapshot-preview', 'data-lossy'), 'true');
  const t = ref.find((x) => x.name === 'encoder.layer.3.output.dense.weight');
  assert.ok(t && t.codec.startsWith('neuzip'), JSON.stringify(t));
  data.server.reset();
  const shown = await decode(page, t.name);
  assert.equal(shown.state, 'done', await page.textContent('#snapshot-preview'));
  const served = data.server.served('/minilm-f32-k3.bls');
  assert.ok(served <= t.stored_bytes + SLACK && served < fs.statSync(file).size / 10,
    `served ${served} for ${t.stored_bytes} stored bytes: ${JSON.stringify(data.server.requests)}`);
  const { out } = await download(page, '#tensor-download', path.join(app.tmp, 'page-k3.safetensors'));
  const cliOut = path.join(app.tmp, 'cli-k3.safetensors');
  await cliAsync('decompress', url, '--tensor', t.name, '-o', cliOut);
  sameBytes(out, cliOut, 'lossy tensor: page vs CLI');
  await sameStats(page, shown, cliOut);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a remote delta snapshot: refused without its base, decoded with the base checkpoint chosen', { timeout: 300_000 }, async () => {
  const url = `${data.server.url}delta.bls`;
  const page = await openUrl(url);
  const rows = await listing(page);
  assert.equal(await page.getAttribute('#snapshot-preview', 'data-delta'), 'true');
  const name = 'encoder.layer.0.attention.self.query.weight';
  assert.equal(rows.find((r) => r.tensor === name)?.delta, 'true');
  const refused = await decode(page, name);
  assert.equal(refused.state, 'failed');
  assert.match(await page.textContent('#snapshot-preview .preview-error'), /delta against a base checkpoint/);
  // The base: open the checkpoint the delta was made against and choose it.
  await page.setInputFiles('#file-input', BF16);
  await page.click('[data-tab=codecs]');
  await page.waitForSelector('#snapshot-preview .snapshot-base option:nth-child(2)', { state: 'attached' });
  const id = await page.$eval('#snapshot-preview .snapshot-base', (s) => [...s.options].find((o) => o.textContent.includes('minilm-bf16'))?.value);
  assert.ok(id !== undefined);
  await page.selectOption('#snapshot-preview .snapshot-base', id);
  const shown = await decode(page, name);
  assert.equal(shown.state, 'done', await page.textContent('#snapshot-preview'));
  const { out } = await download(page, '#tensor-download', path.join(app.tmp, 'page-delta.safetensors'));
  const cliOut = path.join(app.tmp, 'cli-delta.safetensors');
  await cliAsync('decompress', url, '--base', BF16, '--tensor', name, '-o', cliOut);
  sameBytes(out, cliOut, 'delta tensor: page vs CLI');
  await page.close();
});

test('a 503 during a decode is retried after a pause, with and without SharedArrayBuffer', { timeout: 300_000 }, async () => {
  const url = `${data.flaky.url}minilm-lmc.bls`;
  const name = 'encoder.layer.1.attention.self.key.weight';
  const cliOut = path.join(app.tmp, 'cli-retry.safetensors');
  await cliAsync('decompress', url, '--tensor', name, '-o', cliOut);
  for (const isolated of [true, false]) {
    const page = await openUrl(url, { isolated });
    await listing(page);
    // The next request of the file fails once with 503: the worker waits (Atomics.wait when the
    // page is cross-origin isolated, else on the clock) and asks again.
    data.flaky.reset();
    const shown = await decode(page, name);
    assert.equal(shown.state, 'done', await page.textContent('#snapshot-preview'));
    const log = data.flaky.requests.filter((r) => r.path === '/minilm-lmc.bls');
    assert.equal(log[0].status, 503);
    assert.equal(log[1].range, log[0].range, JSON.stringify(log));
    assert.equal(log[1].status, 206);
    const { out } = await download(page, '#tensor-download', path.join(app.tmp, `page-retry-${isolated}.safetensors`));
    sameBytes(out, cliOut, 'decoded after a retry');
    await page.close();
  }
});

test('a corrupted frame gives the checksum error naming the tensor; a vanished file its 404', { timeout: 300_000 }, async () => {
  const bytes = fs.readFileSync(path.join(data.dir, 'minilm-lmc.bls'));
  const file = path.join(data.dir, 'corrupt.bls');
  // Frames follow the 24-byte preamble, the stored header and its 8-byte checksum, tensor by tensor.
  const ref = inspect(path.join(data.dir, 'minilm-lmc.bls')).snapshots[0].tensors;
  const pick = ref.findIndex((x) => x.name === 'encoder.layer.2.intermediate.dense.weight');
  assert.ok(pick > 0);
  let at = 24 + Number(bytes.readBigUInt64LE(16)) + 8;
  for (const x of ref.slice(0, pick)) at += x.stored_bytes;
  bytes[at + (ref[pick].stored_bytes >> 1)] ^= 0x55;
  fs.writeFileSync(file, bytes);
  const name = ref[pick].name;
  let cliMessage = '';
  try {
    cli('decompress', file, '--tensor', name, '-o', path.join(app.tmp, 'corrupt.out'));
  } catch (e) {
    cliMessage = String(e.stderr);
  }
  assert.ok(cliMessage.includes(`tensor \`${name}\``), cliMessage);
  const url = `${data.server.url}corrupt.bls`;
  const page = await openUrl(url);
  await listing(page);
  const failed = await decode(page, name);
  assert.equal(failed.state, 'failed');
  const text = await page.textContent('#snapshot-preview .preview-error');
  assert.match(text, new RegExp(`tensor \`${name.replaceAll('.', '\\.')}\`: (checksum mismatch|frame)`));
  assert.ok(text.startsWith(url), text);
  assert.equal(await page.locator('#tensor-download').count(), 0);
  // Another tensor of the same snapshot still decodes.
  assert.equal((await decode(page, ref[0].name)).state, 'done');
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-remote-corrupt.png'), fullPage: true });
  // The file goes away after its index was read: the worker's range request gets a 404.
  fs.renameSync(file, `${file}.gone`);
  const gone = await decode(page, name);
  assert.equal(gone.state, 'failed');
  const goneText = await page.textContent('#snapshot-preview .preview-error');
  assert.ok(goneText.includes(`${url}: HTTP 404 Not Found`), goneText);
  await page.close();
});

test('a missing snapshot URL and a server without CORS headers give their messages', { timeout: 120_000 }, async () => {
  const missing = `${data.server.url}nope.bls`;
  const page = await openUrl(missing);
  await page.waitForSelector('.errors .error');
  const text404 = await page.textContent('.errors');
  assert.ok(text404.includes(missing) && text404.includes('HTTP 404 Not Found'), text404);
  await page.close();
  const blocked = `${data.noCors.url}minilm-lmc.bls`;
  const page2 = await openUrl(blocked);
  await page2.waitForSelector('.errors .error');
  const text = await page2.textContent('.errors');
  assert.ok(text.includes(blocked) && text.includes('CORS'), text);
  assert.equal(await page2.locator('#snapshot-preview').count(), 0);
  await page2.close();
});
