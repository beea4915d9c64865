// A `.bls` snapshot at parity with checkpoints, in headless Chromium: the <bitlens-view> element
// with a snapshot `src` (three origins as on the web: the data on the Range + CORS server that logs
// every request, range-server.mjs; the embed's files; the example host page), and a snapshot given
// to the app page. Snapshots made by the CLI from the real MiniLM weights: lossless LMC and lossy
// NeuZip (3 mantissa bits, so each tensor has its error).
//
// The element shows the snapshot's index in Summary and Tensors (dtype, shape, codec, stored and
// original bytes, ratio, lossy error: the CLI's numbers), its `tensor` is decoded from its frames
// alone and shown in Detail with the CLI's statistics, `await el.inspect()` resolves to
// `bitlens inspect --json` of the snapshot plus that tensor's statistics, `view` applies, and the
// Codecs view has no compress panel.
//
//   BITLENS_BIN=$PWD/target/release/bitlens node --test tests/e2e/snapshot-embed.test.mjs
//   (after scripts/build-web.sh)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { startServer } from './serve.mjs';
import { startRangeServer } from './range-server.mjs';
import { launch } from './browser.mjs';
import { useApp } from './harness.mjs';
import { ROOT, SHOTS, WEIGHTS, BITLENS, collectErrors, inspect, tempDir } from './fixtures.mjs';
import { cli } from './steps.mjs';

const EMBED = path.join(ROOT, process.env.DIST ?? 'dist', 'embed');
const EXAMPLES = path.join(ROOT, 'web/examples');
const BF16 = path.join(WEIGHTS, 'minilm-bf16.safetensors');
const LMC = 'minilm-lmc.bls';
const LOSSY = 'minilm-k3.bls';
/** A tensor of one frame in the middle of the file. */
const TENSOR = 'encoder.layer.2.attention.self.query.weight';
/** The window a reader fetches for the small reads that open a snapshot (crates/wasm http_source). */
const WINDOW = 65536;

const app = useApp();
const s = { dir: null, data: null, embed: null, host: null, context: null, original: null };

/** Runs the CLI without blocking this process, whose range server must answer it. */
async function cliAsync(...args) {
  const { stdout } = await promisify(execFile)(BITLENS, args, { maxBuffer: 1 << 28 });
  return stdout;
}

before(async () => {
  assert.ok(fs.existsSync(path.join(EMBED, 'bitlens-embed.js')), `${EMBED} has no embed: run scripts/build-web.sh`);
  s.dir = tempDir();
  cli('compress', BF16, '-o', path.join(s.dir, LMC), '--codec', 'lmc');
  cli('compress', BF16, '-o', path.join(s.dir, LOSSY), '--codec', 'neuzip', '--mantissa-bits', '3');
  s.original = inspect(BF16).files[0];
  s.data = await startRangeServer(s.dir);
  s.embed = await startServer(EMBED, 0, { isolate: false, cors: true });
  s.host = await startServer(EXAMPLES, 0, { isolate: false });
  s.context = await launch();
  fs.mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await s.context?.close();
  for (const server of [s.data, s.embed, s.host]) server?.close();
  if (s.dir) fs.rmSync(s.dir, { recursive: true, force: true });
});

const dataUrl = (name) => `${s.data.url}${name}`;

/** The example host page with the element on `file` and other attributes, once mounted. */
async function openHost(file, attrs = {}) {
  const page = await s.context.newPage();
  collectErrors(page);
  const q = new URLSearchParams({ embed: `http://127.0.0.1:${s.embed.address().port}/bitlens-embed.js` });
  q.append('src', dataUrl(file));
  for (const [k, v] of Object.entries(attrs)) q.set(k, v);
  await page.goto(`http://127.0.0.1:${s.host.address().port}/host.html?${q}`);
  await page.waitForFunction(() => document.querySelector('#view')?.shadowRoot?.querySelector('.bitlens-root > *'));
  return page;
}

/** `await el.inspect()`, polled until `done(report)`. */
async function inspectWhen(page, done, what) {
  for (let i = 0; i < 1200; i++) {
    const r = await page.evaluate(() => document.getElementById('view').inspect());
    if (done(r)) return r;
    await page.waitForTimeout(100);
  }
  throw new Error(`inspect(): ${what} never arrived`);
}

/** The report's tensor `name` once it has statistics. */
const decoded = (name) => (r) => r.snapshots?.[0]?.tensors.find((t) => t.name === name)?.statistics !== undefined;

/**
 * The page's document equals the CLI's field by field, but for the statistics the page adds to the
 * tensors it decoded (returned by name).
 */
function sameAsCli(page, cliDoc) {
  assert.deepEqual(Object.keys(page), Object.keys(cliDoc));
  assert.equal(page.snapshots.length, cliDoc.snapshots.length);
  const stats = new Map();
  page.snapshots.forEach((snap, i) => {
    const ref = cliDoc.snapshots[i];
    const { tensors, ...fields } = snap;
    const { tensors: refTensors, ...refFields } = ref;
    for (const k of new Set([...Object.keys(fields), ...Object.keys(refFields)])) {
      assert.deepEqual(fields[k], refFields[k], `snapshot field ${k}`);
    }
    assert.equal(tensors.length, refTensors.length);
    tensors.forEach((t, j) => {
      const { statistics, ...rest } = t;
      if (statistics !== undefined) stats.set(t.name, statistics);
      for (const k of new Set([...Object.keys(rest), ...Object.keys(refTensors[j])])) {
        assert.deepEqual(rest[k], refTensors[j][k], `${t.name}: ${k}`);
      }
    });
  });
  return stats;
}

/** A tensor's statistics as `bitlens inspect --json` prints them: every field but the header's. */
function statsOf(t) {
  const { name, shape, data_offsets, params, ...stats } = t;
  return stats;
}

/** Byte range [start, end) of tensor `name`'s frames in the snapshot `file`. */
function framesOf(file, name) {
  const bytes = fs.readFileSync(file);
  // Frames follow the 24-byte preamble, the stored header and its 8-byte checksum, tensor by tensor.
  let at = 24 + Number(bytes.readBigUInt64LE(16)) + 8;
  for (const t of inspect(file).snapshots[0].tensors) {
    if (t.name === name) return [at, at + t.stored_bytes];
    at += t.stored_bytes;
  }
  throw new Error(`no ${name} in ${file}`);
}

/**
 * What the server sent of `file` were the tensor's frames and the index: every request is the
 * loader's 8-byte probe, one of the two 64 KiB windows a reader opens the snapshot with (its
 * preamble and stored header at the start; its index and trailer at the end), or lies inside the
 * tensor's frames, which were all fetched.
 */
function onlyFramesOf(file, name) {
  const [start, end] = framesOf(file, name);
  const size = fs.statSync(file).size;
  const log = s.data.requests.filter((r) => r.path === `/${path.basename(file)}` && r.method === 'GET');
  let frames = 0;
  for (const r of log) {
    const m = /^bytes=(\d+)-(\d+)$/.exec(r.range ?? '');
    assert.ok(m, `a request without an exact range: ${JSON.stringify(r)}`);
    const [a, b] = [Number(m[1]), Number(m[2]) + 1];
    const head = a === 0 && b <= WINDOW;
    const tail = b === size && b - a <= WINDOW;
    const inside = a >= start && b <= end;
    assert.ok(head || tail || inside, `${JSON.stringify(r)} is neither the index nor the frames [${start}, ${end}) of ${name}`);
    if (inside) frames += b - a;
  }
  assert.equal(frames, end - start, `the frames of ${name} were fetched once: ${JSON.stringify(log)}`);
  return { served: s.data.served(`/${path.basename(file)}`), size, requests: log.length };
}

/** The tensor table's rows in the element (data attributes). */
async function tableRows(page) {
  await page.waitForSelector('#view >> #tensor-table tbody tr');
  return page.$$eval('#view >> #tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
}

/** Rows show the index as the CLI reports it: dtype, shape, codec, stored / original, ratio, error. */
function rowsMatch(rows, ref) {
  assert.deepEqual(rows.map((r) => r.name), ref.tensors.map((t) => t.name));
  rows.forEach((r, i) => {
    const t = ref.tensors[i];
    assert.equal(r.dtype, t.dtype, t.name);
    assert.deepEqual(JSON.parse(r.shape), t.shape, t.name);
    assert.equal(r.codec, t.codec, t.name);
    assert.equal(Number(r.stored), t.stored_bytes, t.name);
    assert.equal(Number(r.bytes), t.bytes, t.name);
    assert.equal(Number(r.achieved), t.ratio, t.name);
    assert.equal(r.maxRel === undefined ? null : Number(r.maxRel), t.error?.max_rel ?? null, t.name);
    assert.equal(r.mse === undefined ? null : Number(r.mse), t.error?.mse ?? null, t.name);
  });
}

test('an embed of a remote .bls with `tensor`: inspect() is the CLI\'s document plus the tensor\'s statistics, from only its frames', { timeout: 300_000 }, async () => {
  const file = path.join(s.dir, LMC);
  const url = dataUrl(LMC);
  const cliDoc = JSON.parse(await cliAsync('inspect', '--json', url));
  s.data.reset();
  // (The example host page's element says view="table"; this one asks for the detail.)
  const page = await openHost(LMC, { tensor: TENSOR, view: 'detail' });
  const r = await inspectWhen(page, decoded(TENSOR), `the statistics of ${TENSOR}`);
  const stats = sameAsCli(r, cliDoc);
  assert.deepEqual([...stats.keys()], [TENSOR], 'only the selected tensor was decoded');
  const original = s.original.tensors.find((t) => t.name === TENSOR);
  assert.deepEqual(stats.get(TENSOR), statsOf(original), 'statistics of the decoded tensor vs bitlens inspect of the original');
  const events = await page.evaluate(() => window.bitlensEvents);
  const load = events.find((e) => e.type === 'bitlens-load');
  assert.deepEqual(load?.detail, { type: 'load', urls: [url], files: 1, tensors: cliDoc.snapshots[0].tensors.length });
  assert.deepEqual(events.filter((e) => e.type === 'bitlens-select').map((e) => e.detail.tensor), [TENSOR]);
  const fetched = onlyFramesOf(file, TENSOR);
  assert.ok(fetched.served < fetched.size / 20, `served ${fetched.served} of ${fetched.size}`);

  // Detail shows the tensor, with its charts from the decoded bytes.
  await page.waitForSelector(`#view >> .detail[data-tensor="${TENSOR}"] [data-chart=bit-set-ratio]`);
  const stored = await page.$eval('#view >> [data-panel=snapshot-tensor]', (e) => ({ ...e.dataset }));
  const refT = cliDoc.snapshots[0].tensors.find((t) => t.name === TENSOR);
  assert.equal(stored.codec, refT.codec);
  assert.equal(Number(stored.stored), refT.stored_bytes);
  assert.equal(Number(stored.original), refT.bytes);
  const bits = await page.$$eval('#view >> .detail [data-chart=bit-set-ratio] rect[data-value]', (rs) => rs.map((x) => Number(x.dataset.value)));
  assert.deepEqual(bits.map((v) => v.toFixed(12)), [...original.bit_set_ratio].reverse().map((v) => v.toFixed(12)));
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-embed-detail.png'), fullPage: true });

  // `view` applies: the table of the index, the summary, the Codecs view without a compress panel.
  await page.evaluate(() => document.getElementById('view').setAttribute('view', 'table'));
  rowsMatch(await tableRows(page), cliDoc.snapshots[0]);
  const row = await page.$eval(`#view >> #tensor-table tr[data-name="${TENSOR}"]`, (tr) => ({ ...tr.dataset }));
  assert.equal(Number(row.byteEntropy), original.byte_entropy, 'the decoded row has its statistics');
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-embed-table.png'), fullPage: true });

  await page.evaluate(() => document.getElementById('view').setAttribute('view', 'summary'));
  const summary = await page.waitForSelector('#view >> .snapshot-summary');
  assert.equal(Number(await summary.getAttribute('data-size')), cliDoc.snapshots[0].snapshot_size);
  assert.equal(Number(await summary.getAttribute('data-original')), cliDoc.snapshots[0].original_size);
  const codecs = await page.$$eval('#view >> .codec-mix tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  for (const c of codecs) {
    const of = cliDoc.snapshots[0].tensors.filter((t) => t.codec === c.codec);
    assert.equal(Number(c.tensors), of.length, c.codec);
    assert.equal(Number(c.stored), of.reduce((n, t) => n + t.stored_bytes, 0), c.codec);
    assert.equal(Number(c.bytes), of.reduce((n, t) => n + t.bytes, 0), c.codec);
  }
  assert.equal(await page.textContent('#view >> [data-card=tensors] .card-value'), String(cliDoc.snapshots[0].tensors.length));
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-embed-summary.png'), fullPage: true });

  await page.evaluate(() => document.getElementById('view').setAttribute('view', 'codecs'));
  await page.waitForSelector('#view >> [data-view=codecs]');
  assert.equal(await page.locator('#view >> [data-panel=compress]').count(), 0, 'no compress panel in an embed');
  const text = await page.textContent('#view >> [data-view=codecs]');
  assert.ok(!text.includes('.safetensors checkpoint to compress'), text);
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-embed-codecs.png'), fullPage: true });

  // Nothing of the views read more of the file.
  onlyFramesOf(file, TENSOR);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('an embed of a lossy remote .bls on the table view: the error column, and the tensor decoded as the CLI decodes it', { timeout: 300_000 }, async () => {
  const file = path.join(s.dir, LOSSY);
  const url = dataUrl(LOSSY);
  const cliDoc = JSON.parse(await cliAsync('inspect', '--json', url));
  assert.ok(cliDoc.snapshots[0].lossy);
  const tensorFile = path.join(s.dir, 'cli-tensor.safetensors');
  await cliAsync('decompress', url, '--tensor', TENSOR, '-o', tensorFile);
  const ref = inspect(tensorFile).files[0].tensors[0];
  s.data.reset();
  const page = await openHost(LOSSY, { tensor: TENSOR, view: 'table' });
  const rows = await tableRows(page);
  rowsMatch(rows, cliDoc.snapshots[0]);
  assert.ok(rows.some((r) => r.maxRel !== undefined), 'lossy tensors show their error');
  const r = await inspectWhen(page, decoded(TENSOR), `the statistics of ${TENSOR}`);
  const stats = sameAsCli(r, cliDoc);
  assert.deepEqual(stats.get(TENSOR), statsOf(ref), 'decoded statistics vs bitlens inspect of bitlens decompress --tensor');
  onlyFramesOf(file, TENSOR);
  // The view asked for stays: the tensor was selected, not opened.
  assert.equal(await page.locator('#view >> [data-view=tensors]').count(), 1);
  await page.waitForSelector(`#view >> #tensor-table tr[data-name="${TENSOR}"]:not(.pending)`);
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-embed-lossy-table.png'), fullPage: true });
  // A click on another row decodes that one, from its frames.
  const other = 'encoder.layer.4.output.dense.weight';
  s.data.reset();
  await page.click(`#view >> #tensor-table tr[data-name="${other}"]`);
  await inspectWhen(page, decoded(other), `the statistics of ${other}`);
  onlyFramesOf(file, other);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a .bls given to the app page: Tensors and Detail from its index and decoded tensors; ?tensor= selects', { timeout: 300_000 }, async () => {
  const file = path.join(s.dir, LMC);
  const ref = inspect(file).snapshots[0];
  const page = await app.openApp();
  await page.setInputFiles('#file-input', file);
  // It opens in Codecs (where it is restored), with its index listed.
  await page.waitForSelector('.snapshot[data-name] .decompress-button');
  await page.click('[data-tab=tensors]');
  rowsMatch(await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset }))), ref);
  await page.click(`#tensor-table tr[data-name="${TENSOR}"]`);
  await page.waitForSelector(`.detail[data-tensor="${TENSOR}"] [data-chart=bit-set-ratio]`);
  const original = s.original.tensors.find((t) => t.name === TENSOR);
  const bits = await page.$$eval('.detail [data-chart=bit-set-ratio] rect[data-value]', (rs) => rs.map((x) => Number(x.dataset.value)));
  assert.deepEqual(bits.map((v) => v.toFixed(12)), [...original.bit_set_ratio].reverse().map((v) => v.toFixed(12)));
  assert.ok(await page.locator('#snapshot-tensor-download').count(), 'the decoded tensor can be downloaded');
  await page.screenshot({ path: path.join(SHOTS, 'snapshot-app-detail.png'), fullPage: true });
  // Its compress panel says it is a snapshot; the decompress button still restores it.
  await page.click('[data-tab=codecs]');
  await page.waitForSelector('[data-note=snapshot-active]');
  assert.equal(await page.locator('#compress-button').count(), 0);
  assert.deepEqual(page.errors, []);
  await page.close();

  // A remote snapshot opened by link with ?tensor=: Detail on that tensor.
  const linked = await app.openApp();
  await linked.goto(`${app.url}?url=${encodeURIComponent(dataUrl(LMC))}&tensor=${encodeURIComponent(TENSOR)}`);
  await linked.waitForSelector(`.detail[data-tensor="${TENSOR}"] [data-chart=bit-set-ratio]`, { timeout: 60_000 });
  const row = await linked.$eval('[data-panel=snapshot-tensor]', (e) => ({ ...e.dataset }));
  assert.equal(Number(row.stored), ref.tensors.find((t) => t.name === TENSOR).stored_bytes);
  await linked.close();
});
