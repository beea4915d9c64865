// End-to-end tests of remote checkpoints in the app (headless Chromium): the real weights are
// served by the Range + CORS data server (tests/e2e/range-server.mjs, another origin than the app)
// and opened with `?url=`. The table equals `bitlens inspect URL --json` after two small requests
// per file; statistics equal the CLI's; a selected tensor of a large file reads only its bytes; a
// shard index loads its shards; servers without Range or CORS and a 404 give their messages; a
// link restores the view; two URLs compare as `bitlens diff` does.
//
//   node --test tests/e2e/remote.test.mjs   (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { useApp } from './harness.mjs';
import { startRangeServer } from './range-server.mjs';
import { ROOT, WEIGHTS, SHOTS, BITLENS, bigBf16, collectErrors, inspect, diff, perturb, shardSet } from './fixtures.mjs';

const BF16 = 'minilm-bf16.safetensors';
const BIG = 'big-bf16.safetensors';
const QUERY = 'encoder.layer.0.attention.self.query.weight';

const app = useApp();
let data;

before(async () => {
  data = await startRangeServer(WEIGHTS);
});
after(() => data?.close());

/** `bitlens inspect --json URL`, run without blocking (the data server lives in this process). */
async function inspectUrl(url) {
  const { stdout } = await promisify(execFile)(BITLENS, ['inspect', '--json', url], { maxBuffer: 1 << 28 });
  return JSON.parse(stdout);
}

/** A page of the app opened with `query` (`?url=…`), console errors collected. */
async function openWith(query, base = app.url) {
  const page = await app.context.newPage();
  collectErrors(page);
  await page.goto(base + query);
  return page;
}

/** `?url=A&url=B…` plus other pairs. */
function query(urls, extra = {}) {
  const p = new URLSearchParams();
  for (const u of urls) p.append('url', u);
  for (const [k, v] of Object.entries(extra)) p.append(k, v);
  return `?${p}`;
}

/** The tensor table's rows as their data attributes. */
async function rows(page) {
  return page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
}

function close(a, b, what, tol = 1e-9) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: page ${a} vs CLI ${b}`);
}

/** A table row's statistics against the CLI's tensor report. */
function sameStats(r, t) {
  assert.equal(r.dtype, t.dtype, t.name);
  assert.deepEqual(JSON.parse(r.shape), t.shape, t.name);
  close(Number(r.byteEntropy), t.byte_entropy, `${t.name} byte entropy`);
  JSON.parse(r.groups).forEach((g, i) => close(g, t.byte_group_entropy[i], `${t.name} group ${i}`));
  if (t.exponent_entropy == null) assert.equal(r.exp, undefined, t.name);
  else close(Number(r.exp), t.exponent_entropy, `${t.name} exponent entropy`);
  close(Number(r.predRatio), t.predicted_ratio, `${t.name} predicted ratio`, 1e-6);
}

/** The served data directory plus a temp directory of test files, on a server of its own. */
async function serveTemp(files, options = {}) {
  const dir = fs.mkdtempSync(path.join(app.tmp, 'served-'));
  for (const [name, src] of Object.entries(files)) fs.symlinkSync(src, path.join(dir, name));
  return { dir, server: await startRangeServer(dir, options) };
}

test('?url= of a 1.09 GB file: the table after two small requests; a selected tensor reads only its bytes', { timeout: 300_000 }, async () => {
  const big = bigBf16();
  const url = data.url + BIG;
  const ref = await inspectUrl(url);
  data.reset();
  const page = await openWith(query([url]));
  await page.waitForSelector('#tensor-table tbody tr');
  const size = fs.statSync(big).size;
  const tableBytes = data.served(`/${BIG}`);
  // Two requests of the file (the page also looks for its sidecar next to it: none here).
  assert.equal(data.requests.filter((r) => r.path === `/${BIG}`).length, 2, JSON.stringify(data.requests));
  assert.ok(tableBytes < size / 100, `${tableBytes} bytes served for the table of a ${size}-byte file`);
  const got = await rows(page);
  const want = ref.files[0].tensors;
  assert.equal(got.length, want.length);
  const byName = new Map(got.map((r) => [r.name, r]));
  for (const t of want) {
    const r = byName.get(t.name);
    assert.ok(r, t.name);
    assert.equal(r.dtype, t.dtype, t.name);
    assert.deepEqual(JSON.parse(r.shape), t.shape, t.name);
    assert.equal(Number(r.bytes), t.bytes, t.name);
  }
  // Larger than auto_stats: nothing more is read until asked.
  await page.waitForSelector('#stats-all');
  assert.match(await page.textContent('#stats-all'), new RegExp(`Compute statistics for all ${want.length} tensors`));
  await page.waitForTimeout(500);
  assert.equal(data.served(), tableBytes);
  // Selecting a tensor computes its statistics at once, reading about its bytes alone.
  const pick = want.find((t) => t.name.endsWith(QUERY)) ?? want[0];
  await page.click(`#tensor-table tbody tr[data-name="${pick.name}"]`);
  await page.waitForSelector('[data-chart=bit-set-ratio]', { timeout: 60_000 });
  const read = data.served() - tableBytes;
  assert.ok(read >= pick.bytes && read <= pick.bytes + 65_536, `served ${read} bytes for a ${pick.bytes}-byte tensor`);
  const bits = await page.$$eval('[data-chart=bit-set-ratio] rect.bar', (els) => els.map((e) => Number(e.dataset.value)));
  bits.forEach((v, i) => close(v, pick.bit_set_ratio[15 - i], `bit ${15 - i}`, 1e-12));
  await page.click('[data-tab=tensors]');
  sameStats((await rows(page)).find((r) => r.name === pick.name), pick);
  // The view is in the page URL.
  const link = new URL(page.url());
  assert.deepEqual(link.searchParams.getAll('url'), [url]);
  assert.equal(link.searchParams.get('tensor'), pick.name);
  await page.screenshot({ path: path.join(SHOTS, 'remote-big-table.png') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('whole-file statistics of a remote file equal the CLI', { timeout: 180_000 }, async () => {
  const ref = inspect(path.join(WEIGHTS, BF16));
  const page = await openWith(query([data.url + BF16]));
  await page.waitForSelector('.progress[data-state=done]', { timeout: 120_000 });
  const byName = new Map((await rows(page)).map((r) => [r.name, r]));
  assert.equal(byName.size, ref.files[0].tensors.length);
  for (const t of ref.files[0].tensors) sameStats(byName.get(t.name), t);
  await page.click('[data-tab=summary]');
  const entropy = await page.textContent('[data-card=entropy] .card-value');
  assert.match(entropy, new RegExp(`^${ref.summary.byte_entropy.toFixed(3)} bits/byte`));
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a remote shard index loads its shards (read in parallel) as one checkpoint', { timeout: 120_000 }, async () => {
  const dir = path.join(app.tmp, 'remote-shards');
  fs.mkdirSync(dir, { recursive: true });
  const set = shardSet(path.join(ROOT, 'web/demo/minilm-demo-step0.safetensors'), dir);
  const server = await startRangeServer(dir);
  try {
    const page = await openWith(query([server.url + path.basename(set.index)]));
    await page.waitForSelector('.progress[data-state=done]', { timeout: 60_000 });
    assert.equal(await page.locator('.checkpoint').count(), 1);
    assert.match(await page.textContent('.checkpoint .meta'), /^2 files/);
    assert.equal(await page.locator('#tensor-table tbody tr').count(), set.tensors);
    for (const f of set.files) assert.ok(server.served(`/${path.basename(f)}`) > 0, f);
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    server.close();
  }
});

test('no Range, no CORS, 404: each a message naming the URL; a small file may be read whole', { timeout: 120_000 }, async () => {
  const demo = path.join(ROOT, 'web/demo/minilm-demo-step0.safetensors');
  const { server: plain } = await serveTemp({ 'small.safetensors': demo, [BIG]: path.join(WEIGHTS, BIG) }, { range: false });
  const { server: closed } = await serveTemp({ 'small.safetensors': demo }, { cors: false });
  try {
    const cases = [
      [plain.url + 'small.safetensors', /ignores Range requests/],
      [plain.url + BIG, /ignores Range requests/],
      [closed.url + 'small.safetensors', /a network failure .* or a CORS refusal \(no Access-Control-Allow-Origin allowing this page\) — the browser does not say which/],
      [data.url + 'missing.safetensors', /HTTP 404 Not Found/],
    ];
    const page = await openWith(query(cases.map(([u]) => u)));
    await page.waitForSelector('.error >> nth=3', { timeout: 60_000 });
    const errors = await page.$$eval('.error', (es) => es.map((e) => ({ file: e.dataset.file, text: e.textContent, whole: !!e.querySelector('.download-whole') })));
    for (const [url, message] of cases) {
      const e = errors.find((x) => x.file === url);
      assert.ok(e, `no error for ${url}: ${JSON.stringify(errors)}`);
      assert.match(e.text, message, url);
    }
    // Only the small file is offered whole.
    assert.deepEqual(errors.filter((e) => e.whole).map((e) => e.file), [plain.url + 'small.safetensors']);
    await page.screenshot({ path: path.join(SHOTS, 'remote-errors.png') });
    await page.click('.download-whole');
    await page.waitForSelector('#tensor-table tbody tr');
    assert.equal(await page.locator('.checkpoint').count(), 1);
    assert.equal(await page.textContent('.checkpoint .name'), 'small.safetensors');
    await page.close();
  } finally {
    plain.close();
    closed.close();
  }
});

test('a shared link restores the view in a fresh page; the URL box opens a URL', { timeout: 120_000 }, async () => {
  const url = data.url + BF16;
  const first = await openWith(query([url], { tab: 'detail', tensor: QUERY }));
  await first.waitForSelector('[data-chart=bit-set-ratio]', { timeout: 60_000 });
  assert.equal(await first.inputValue('#tensor-select'), QUERY);
  assert.equal(await first.getAttribute('.tab.current', 'data-tab'), 'detail');
  // Another tensor and tab, written back into the page URL...
  await first.click('[data-tab=tensors]');
  const other = 'encoder.layer.1.output.dense.weight';
  await first.click(`#tensor-table tbody tr[data-name="${other}"]`);
  await first.waitForSelector('[data-chart=bit-set-ratio]', { timeout: 60_000 });
  const link = first.url();
  assert.equal(new URL(link).searchParams.get('tensor'), other);
  // ...and a fresh page opened with it shows the same.
  const second = await openWith(link.slice(app.url.length));
  await second.waitForSelector('[data-chart=bit-set-ratio]', { timeout: 60_000 });
  assert.equal(await second.inputValue('#tensor-select'), other);
  assert.equal(await second.getAttribute('.tab.current', 'data-tab'), 'detail');
  // The compact layout: no header, no welcome.
  const embed = await openWith(query([url], { embed: '1', tab: 'summary' }));
  await embed.waitForSelector('.app.embed [data-card]');
  assert.equal(await embed.locator('header.top').count(), 0);
  await embed.screenshot({ path: path.join(SHOTS, 'remote-embed.png') });
  // The codecs work on local files: on a remote checkpoint Compress says to download it first.
  await second.click('[data-tab=codecs]');
  await second.click('#compress-button');
  const refusal = await second.waitForSelector(`.error[data-file="${url}"]`);
  assert.match(await refusal.textContent(), /remote: the codecs work on local files, so download the file first/);
  second.errors = [];
  // The URL box of the welcome screen.
  const boxed = await app.openApp();
  await boxed.fill('#url-input-big', url);
  await boxed.press('#url-input-big', 'Enter');
  await boxed.waitForSelector('#tensor-table tbody tr');
  assert.deepEqual(new URL(boxed.url()).searchParams.getAll('url'), [url]);
  for (const p of [first, second, embed, boxed]) {
    assert.deepEqual(p.errors, []);
    await p.close();
  }
});

test('a remote .bls snapshot goes to the codec panel', { timeout: 120_000 }, async () => {
  const snapshot = path.join(app.tmp, 'demo.bls');
  await promisify(execFile)(BITLENS, ['compress', path.join(ROOT, 'web/demo/minilm-demo-step0.safetensors'), '-o', snapshot]);
  const { server } = await serveTemp({ 'demo.bls': snapshot });
  try {
    const url = server.url + 'demo.bls';
    const page = await openWith(query([url]));
    await page.waitForSelector('.tab.current[data-tab=codecs], .error', { timeout: 60_000 });
    // Only its first bytes were read to tell it is a snapshot (its preview is the codec panel's).
    assert.ok(server.served('/demo.bls') < fs.statSync(snapshot).size, 'the snapshot was not downloaded whole');
    assert.equal(await page.locator('#tensor-table').count(), 0);
    await page.close();
  } finally {
    server.close();
  }
});

test('two ?url= compare as bitlens diff does', { timeout: 180_000 }, async () => {
  const later = perturb(path.join(WEIGHTS, BF16), 0.1, path.join(app.tmp, 'minilm-bf16-later.safetensors'));
  const ref = diff(path.join(WEIGHTS, BF16), later);
  const { server } = await serveTemp({ 'later.safetensors': later });
  try {
    const page = await openWith(query([data.url + BF16, server.url + 'later.safetensors']));
    await page.waitForSelector('.checkpoint >> nth=1');
    await page.waitForSelector('.progress[data-state=done]', { timeout: 120_000 });
    await page.click('[data-tab=compare]');
    await page.waitForSelector('[data-view=compare]');
    close(Number(await page.getAttribute('[data-changed-fraction]', 'data-changed-fraction')), ref.overall.changed_fraction, 'changed fraction', 1e-12);
    const bf16 = ref.overall.by_dtype.find((d) => d.dtype === 'BF16');
    const flips = await page.$$eval('[data-chart="model-flips-BF16"] rect.bar', (els) => els.map((e) => Number(e.dataset.value)));
    assert.equal(flips.length, 16);
    flips.forEach((v, i) => close(v, bf16.bit_flip_ratio[15 - i], `flip bit ${15 - i}`, 1e-12));
    assert.equal(new URL(page.url()).searchParams.getAll('url').length, 2);
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    server.close();
  }
});
