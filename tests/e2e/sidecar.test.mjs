// Sidecars (`<file>.bitlens.json`, docs/REPORTS.md "sidecar"; written here by `bitlens sidecar`) in
// headless Chromium. The <bitlens-view> element on the example host page, from three origins as
// in embed.test.mjs: with a sidecar next to a remote 1.09 GB file, the whole-model statistics,
// the tensor table's statistics and a tensor's charts show at once while the data server served
// only the file's header (its two small ranges) — and `inspect()` resolves to the sidecar's
// document; a sidecar named by the `stats` attribute is used the same way; a sidecar of another
// file is ignored with a note and the statistics are read from the file. The app's `?url=` uses
// the sidecar too.
//
//   node --test tests/e2e/sidecar.test.mjs   (after scripts/build-web.sh and `cargo build --release -p bitlens-cli`)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { startRangeServer } from './range-server.mjs';
import { launch } from './browser.mjs';
import { BITLENS, ROOT, SHOTS, WEIGHTS, bigBf16, collectErrors, inspect, tempDir } from './fixtures.mjs';

const DIST = path.join(ROOT, process.env.DIST ?? 'dist');
const EMBED = path.join(DIST, 'embed');
const EXAMPLES = path.join(ROOT, 'web/examples');
const BIG = 'big-bf16.safetensors'; // 1.09 GB (made when missing: fixtures' bigBf16)
const SMALL = 'minilm-bf16.safetensors'; // 45 MB
const F32 = 'minilm-f32.safetensors'; // 91 MB

const s = { data: null, embed: null, host: null, app: null, context: null, dir: null, sidecars: null };

/** `bitlens sidecar FILE --dir DIR`: the sidecar of a weights file, parsed. */
function sidecarOf(name, dir) {
  execFileSync(BITLENS, ['sidecar', path.join(WEIGHTS, name), '--dir', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
  return JSON.parse(fs.readFileSync(path.join(dir, `${name}.bitlens.json`), 'utf8'));
}

before(async () => {
  assert.ok(fs.existsSync(path.join(EMBED, 'bitlens-embed.js')), `${EMBED} has no embed: run scripts/build-web.sh`);
  s.dir = tempDir();
  bigBf16();
  for (const f of [BIG, SMALL]) fs.symlinkSync(path.join(WEIGHTS, f), path.join(s.dir, f));
  // BIG's sidecar next to it; SMALL's next to it is F32's (another file); SMALL's own elsewhere.
  s.sidecars = { big: sidecarOf(BIG, s.dir), small: sidecarOf(SMALL, path.join(s.dir, 'stats')) };
  sidecarOf(F32, s.dir);
  fs.renameSync(path.join(s.dir, `${F32}.bitlens.json`), path.join(s.dir, `${SMALL}.bitlens.json`));
  s.data = await startRangeServer(s.dir);
  s.embed = await startServer(EMBED, 0, { isolate: false, cors: true });
  s.host = await startServer(EXAMPLES, 0, { isolate: false });
  s.app = await startServer(DIST, 0);
  s.context = await launch();
  fs.mkdirSync(SHOTS, { recursive: true });
});

after(async () => {
  await s.context?.close();
  for (const server of [s.data, s.embed, s.host, s.app]) server?.close();
  if (s.dir) fs.rmSync(s.dir, { recursive: true, force: true });
});

const dataUrl = (name) => `${s.data.url}${name}`;

/** A new page collecting console errors in `page.errors`. */
const newPage = async () => collectErrors(await s.context.newPage());

/** The example host page with the element's `src` and other attributes, mounted. */
async function openHost(files, attrs = {}) {
  const page = await newPage();
  const q = new URLSearchParams({ embed: `http://127.0.0.1:${s.embed.address().port}/bitlens-embed.js` });
  for (const f of files) q.append('src', dataUrl(f));
  for (const [k, v] of Object.entries(attrs)) q.set(k, v);
  await page.goto(`http://127.0.0.1:${s.host.address().port}/host.html?${q}`);
  await page.waitForFunction(() => document.querySelector('#view')?.shadowRoot?.querySelector('.bitlens-root > *'));
  return page;
}

/** `await element.inspect()`. */
const report = (page) => page.evaluate(() => document.getElementById('view').inspect());

/** Polls `inspect()` until `done(report)`. */
async function reportWhen(page, done, what) {
  for (let i = 0; i < 1200; i++) {
    const r = await report(page);
    if (done(r)) return r;
    await page.waitForTimeout(100);
  }
  throw new Error(`${what} never arrived`);
}

/** The document without its files' paths (the sidecar names the file as it was given). */
const withoutPaths = (doc) => ({ ...doc, files: doc.files.map((f) => ({ ...f, path: null })) });

/** The bytes of `name` served and the ranges asked, since the last reset. */
function servedOf(name) {
  const requests = s.data.requests.filter((r) => r.path === `/${name}`);
  return { bytes: s.data.served(`/${name}`), ranges: requests.map((r) => r.range) };
}

/** The length of a safetensors file's JSON header. */
const headerLen = (name) => Number(fs.readFileSync(path.join(WEIGHTS, name)).readBigUInt64LE(0));

const allMeasured = (r) => r.files.length === 1 && r.files[0].tensors.every((t) => t.byte_entropy !== undefined);

test('with a sidecar, a 1.09 GB file shows whole-model statistics at once from its header bytes alone', { timeout: 180_000 }, async () => {
  const sidecar = s.sidecars.big;
  s.data.reset();
  const page = await openHost([BIG], { view: 'summary' });
  const host = page.locator('#view');
  const want = `${sidecar.report.summary.byte_entropy.toFixed(3)} bits/byte`;
  await host.locator('[data-card=entropy] .card-value', { hasText: want }).waitFor({ timeout: 60_000 });
  const note = await host.locator('.sidecar-note').textContent();
  assert.equal(note, `statistics from ${dataUrl(BIG)}.bitlens.json (matches size and header)`);
  // inspect() is the sidecar's document (the file named by its URL), every tensor measured.
  const r = await report(page);
  assert.ok(allMeasured(r));
  assert.equal(r.files[0].path, dataUrl(BIG));
  assert.deepEqual(withoutPaths(r), withoutPaths(sidecar.report));
  // The data server answered the probe and the header, nothing else; nothing waits for the visitor.
  const n = headerLen(BIG);
  assert.deepEqual(servedOf(BIG), { bytes: 8 + 8 + n, ranges: ['bytes=0-7', `bytes=0-${8 + n - 1}`] });
  assert.equal(await host.locator('#stats-all').count(), 0);
  // The table's statistics and a tensor's charts, still without a tensor byte.
  await page.evaluate(() => document.getElementById('view').setAttribute('view', 'table'));
  await host.locator('#tensor-table tbody tr').first().waitFor();
  const rows = await host.locator('#tensor-table tbody tr').evaluateAll((trs) => trs.map((tr) => ({ ...tr.dataset })));
  const byName = new Map(sidecar.report.files[0].tensors.map((t) => [t.name, t]));
  assert.equal(rows.length, byName.size);
  for (const row of rows) assert.equal(Number(row.byteEntropy), byName.get(row.name).byte_entropy, row.name);
  // big-bf16's tensors are MiniLM's embedding matrix 24 times (`copy.000.weight`, …).
  const pick = sidecar.report.files[0].tensors[0];
  await page.evaluate((name) => document.getElementById('view').setAttribute('tensor', name), pick.name);
  await page.evaluate(() => document.getElementById('view').setAttribute('view', 'detail'));
  await host.locator('[data-chart=bit-set-ratio] rect.bar').first().waitFor({ timeout: 30_000 });
  const bits = await host.locator('[data-chart=bit-set-ratio] rect.bar').evaluateAll((els) => els.map((e) => Number(e.dataset.value)));
  assert.deepEqual(bits, [...pick.bit_set_ratio].reverse());
  await page.waitForTimeout(500);
  assert.equal(servedOf(BIG).bytes, 8 + 8 + n, 'the detail read no tensor byte');
  await page.screenshot({ path: path.join(SHOTS, 'sidecar-embed.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a sidecar of another file is ignored with a note; one named by `stats` is used', { timeout: 300_000 }, async () => {
  const ref = inspect(path.join(WEIGHTS, SMALL));
  const size = fs.statSync(path.join(WEIGHTS, SMALL)).size;
  s.data.reset();
  const page = await openHost([SMALL], { view: 'summary' });
  const host = page.locator('#view');
  const note = host.locator('.sidecar-note');
  await note.waitFor({ timeout: 60_000 });
  const text = await note.textContent();
  assert.ok(text.startsWith(`${dataUrl(SMALL)}.bitlens.json ignored: it describes a file of`), text);
  assert.ok(text.includes(`the file has ${size}`) && text.endsWith('statistics are computed from the file'), text);
  // The statistics come from the file itself, as the CLI's.
  const r = await reportWhen(page, allMeasured, 'the statistics of the file');
  assert.deepEqual(withoutPaths(r), withoutPaths(ref));
  assert.ok(servedOf(SMALL).bytes >= size - 8 - headerLen(SMALL), `${servedOf(SMALL).bytes} bytes read`);
  await page.screenshot({ path: path.join(SHOTS, 'sidecar-ignored.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();

  // The `stats` attribute names the file's own sidecar elsewhere: used, header bytes alone read.
  s.data.reset();
  const named = await openHost([SMALL], { view: 'summary', stats: dataUrl('stats/minilm-bf16.safetensors.bitlens.json') });
  const r2 = await reportWhen(named, allMeasured, 'the sidecar statistics');
  assert.deepEqual(withoutPaths(r2), withoutPaths(s.sidecars.small.report));
  assert.match(await named.locator('#view .sidecar-note').textContent(), /^statistics from .*stats\/minilm-bf16\.safetensors\.bitlens\.json \(matches size and header\)$/);
  assert.equal(servedOf(SMALL).bytes, 8 + 8 + headerLen(SMALL));
  assert.deepEqual(named.errors, []);
  await named.close();
});

test('the app opened with ?url= fills its table from the sidecar', { timeout: 120_000 }, async () => {
  const sidecar = s.sidecars.big;
  s.data.reset();
  const page = await newPage();
  await page.goto(`http://127.0.0.1:${s.app.address().port}/?url=${encodeURIComponent(dataUrl(BIG))}&tab=tensors`);
  await page.waitForSelector('#tensor-table tbody tr[data-byte-entropy]');
  const rows = await page.$$eval('#tensor-table tbody tr', (trs) => trs.map((tr) => ({ ...tr.dataset })));
  const byName = new Map(sidecar.report.files[0].tensors.map((t) => [t.name, t]));
  assert.equal(rows.length, byName.size);
  for (const row of rows) assert.equal(Number(row.predRatio), byName.get(row.name).predicted_ratio, row.name);
  assert.match(await page.textContent('.sidecar-note'), /matches size and header/);
  assert.equal(servedOf(BIG).bytes, 8 + 8 + headerLen(BIG));
  assert.deepEqual(page.errors, []);
  await page.close();
});
