// The <bitlens-view> element (docs/EMBED.md) on the example host page, from three origins on
// 127.0.0.1 as on the web: the data on a Range + CORS server that counts the bytes it serves
// (range-server.mjs), the embed's files (dist/embed/) on a static server with CORS, and the host
// page (web/examples/host.html, with its aggressive CSS) on a third — no COOP/COEP anywhere, so the
// workers start through same-origin shims and run the single-threaded build.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer } from './serve.mjs';
import { startRangeServer } from './range-server.mjs';
import { launch } from './browser.mjs';
import { execFileSync } from 'node:child_process';
import { ROOT, PYTHON, SHOTS, WEIGHTS, bigBf16, collectErrors, inspect, tempDir, tensorRange } from './fixtures.mjs';

const EMBED = path.join(ROOT, process.env.DIST ?? 'dist', 'embed');
const EXAMPLES = path.join(ROOT, 'web/examples');
const BIG = 'big-bf16.safetensors'; // 1.09 GB (made when missing: fixtures' bigBf16)
const SMALL = 'minilm-bf16.safetensors'; // 45 MB
const F32 = 'minilm-f32.safetensors'; // 91 MB

const s = { data: null, embed: null, host: null, context: null, dir: null, ref: new Map() };

/** `bitlens inspect --json` of a data file, computed once. */
function reference(name) {
  if (!s.ref.has(name)) s.ref.set(name, inspect(path.join(WEIGHTS, name)));
  return s.ref.get(name);
}

before(async () => {
  assert.ok(fs.existsSync(path.join(EMBED, 'bitlens-embed.js')), `${EMBED} has no embed: run scripts/build-web.sh`);
  s.dir = tempDir();
  bigBf16();
  for (const f of [BIG, SMALL, F32]) fs.symlinkSync(path.join(WEIGHTS, f), path.join(s.dir, f));
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

/**
 * Opens the example host page with the element's `src` (one or more data files) and other
 * attributes; resolves once the element is mounted in its shadow root. `page.errors` collects
 * console errors.
 */
async function openHost(files, attrs = {}, { beforeLoad } = {}) {
  const page = await s.context.newPage();
  collectErrors(page);
  if (beforeLoad) await beforeLoad(page);
  const q = new URLSearchParams({ embed: `http://127.0.0.1:${s.embed.address().port}/bitlens-embed.js` });
  for (const f of files) q.append('src', dataUrl(f));
  for (const [k, v] of Object.entries(attrs)) q.set(k, v);
  await page.goto(`http://127.0.0.1:${s.host.address().port}/host.html?${q}`);
  await page.waitForFunction(() => document.querySelector('#view')?.shadowRoot?.querySelector('.bitlens-root > *'));
  return page;
}

/** Waits for an event the host page logged (`window.bitlensEvents`) and returns it. */
async function event(page, type, id = 'view', match = () => true) {
  for (let i = 0; i < 600; i++) {
    const events = await page.evaluate(() => window.bitlensEvents);
    const e = events.find((x) => x.type === type && x.id === id && match(x.detail));
    if (e) return e;
    await page.waitForTimeout(100);
  }
  throw new Error(`no ${type} on #${id}; events: ${JSON.stringify(await page.evaluate(() => window.bitlensEvents))}`);
}

/** `await element.inspect()` of the element `#id`. */
const report = (page, id = 'view') => page.evaluate((id) => document.getElementById(id).inspect(), id);

/** Polls `inspect()` until `done(report)`; returns that report. */
async function reportWhen(page, done, id = 'view', what = 'the statistics') {
  for (let i = 0; i < 1200; i++) {
    const r = await report(page, id);
    if (done(r)) return r;
    await page.waitForTimeout(100);
  }
  throw new Error(`#${id}: ${what} never arrived`);
}

/** What the header alone says of each tensor. */
const headerOf = (t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, data_offsets: t.data_offsets, params: t.params });

/** A tensor's statistics: every field but the header's. */
function statsOf(t) {
  const { name, shape, data_offsets, params, ...stats } = t;
  return stats;
}

test('the element shows the table of a remote 1.09 GB file as bitlens inspect --json, reading < 1 % of it', async () => {
  const ref = reference(BIG);
  s.data.reset();
  const page = await openHost([BIG]);
  const load = await event(page, 'bitlens-load');
  assert.deepEqual(load.detail.urls, [dataUrl(BIG)]);
  const count = (x) => (Array.isArray(x) ? x.length : x);
  assert.equal(count(load.detail.tensors), ref.files[0].tensors.length);
  assert.equal(count(load.detail.files), 1);

  const r = await report(page);
  assert.equal(r.files.length, 1);
  assert.equal(r.files[0].path, dataUrl(BIG));
  assert.equal(r.files[0].file_size, ref.files[0].file_size);
  assert.equal(r.files[0].header_len, ref.files[0].header_len);
  assert.deepEqual(r.files[0].metadata, ref.files[0].metadata);
  assert.deepEqual(r.files[0].tensors.map(headerOf), ref.files[0].tensors.map(headerOf));

  await page.waitForSelector('#view #tensor-table tbody tr');
  const rows = await page.$$eval('#view #tensor-table tbody tr', (trs) =>
    trs.map((tr) => ({ name: tr.dataset.name, dtype: tr.dataset.dtype, shape: JSON.parse(tr.dataset.shape) })),
  );
  const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  assert.deepEqual(
    rows.sort(byName),
    ref.files[0].tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape })).sort(byName),
  );

  // Above `auto-stats` (64 MB): no whole-model statistics until asked; the table took two small reads.
  await page.waitForTimeout(1000);
  const served = s.data.served(`/${BIG}`);
  const size = fs.statSync(path.join(WEIGHTS, BIG)).size;
  assert.ok(served < size / 100, `served ${served} bytes of ${size} for the table`);
  assert.ok(r.files[0].tensors.every((t) => t.byte_entropy === undefined), 'no statistics computed yet');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('setting `tensor` computes that tensor statistics equal to the CLI from its byte range alone', async () => {
  const ref = reference(BIG);
  const size = fs.statSync(path.join(WEIGHTS, BIG)).size;
  // A tensor in the middle of the file (not next to the header, not at the end).
  const tensors = ref.files[0].tensors;
  const target = tensors[Math.floor(tensors.length / 2)];

  const page = await openHost([BIG]);
  await event(page, 'bitlens-load');
  s.data.reset();
  // The host shows that tensor: its detail (the page's `view="table"` would keep the table).
  await page.evaluate((name) => {
    const view = document.getElementById('view');
    view.setAttribute('tensor', name);
    view.setAttribute('view', 'detail');
  }, target.name);
  const select = await event(page, 'bitlens-select', 'view', (d) => d.tensor === target.name);
  assert.equal(select.detail.tensor, target.name);

  const r = await reportWhen(page, (r) => r.files[0]?.tensors.some((t) => t.name === target.name && t.byte_entropy !== undefined));
  const got = r.files[0].tensors.find((t) => t.name === target.name);
  assert.deepEqual(statsOf(got), statsOf(target));
  // Only that tensor was measured, and only about its bytes were served.
  assert.equal(r.files[0].tensors.filter((t) => t.byte_entropy !== undefined).length, 1);
  const served = s.data.served(`/${BIG}`);
  assert.ok(served >= target.bytes, `served ${served} < the tensor's ${target.bytes} bytes`);
  assert.ok(served <= target.bytes + (1 << 20), `served ${served} bytes for a ${target.bytes}-byte tensor`);
  assert.ok(served < size / 10, `served ${served} bytes of ${size}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('view="values" maps the tensor inside the element from its bytes alone; its hover value is the element', async () => {
  const name = 'encoder.layer.2.attention.self.query.weight';
  const page = await openHost([F32], { view: 'values', tensor: name });
  const map = () => page.locator('#view').locator('#values-map');
  await page.waitForFunction(() => document.querySelector('#view').shadowRoot.querySelector('#values-map[data-ready="1"]'), null, { timeout: 60_000 });
  const box = await map().boundingBox();
  await page.mouse.move(box.x + 120.5, box.y + 80.5);
  await page.waitForFunction(() => (document.querySelector('#view').shadowRoot.querySelector('#values-hover').dataset.value ?? '') !== '');
  const h = await page.evaluate(() => ({ ...document.querySelector('#view').shadowRoot.querySelector('#values-hover').dataset }));
  const m = /^(\d+)\.\.(\d+) × (\d+)\.\.(\d+)$/.exec(h.cells);
  const query = { file: path.join(WEIGHTS, F32), tensor: name, regions: [m.slice(1).map(Number)], lanes: [Number(h.lane)] };
  const ref = JSON.parse(execFileSync(PYTHON, [path.join(ROOT, 'tests/python/weightmap_reference.py'), JSON.stringify(query)]));
  assert.equal(Number(h.value), ref.lanes[0].value, 'the hover reads the element exactly');
  assert.ok(Math.abs(Number(h.pixel) - ref.regions[0].mean) <= 1e-5 * Math.abs(ref.regions[0].mean), `pixel ${h.pixel} vs NumPy ${ref.regions[0].mean}`);
  // Only the file's header and the tensor's bytes were fetched (its statistics and its map).
  const served = s.data.requests.filter((r) => r.path === `/${F32}` && r.range);
  const { start, end, headerEnd } = tensorRange(path.join(WEIGHTS, F32), name);
  for (const r of served) {
    const [, a, z] = /^bytes=(\d+)-(\d+)$/.exec(r.range).map(Number);
    assert.ok(z < headerEnd || (a >= start && z < end), `fetched ${r.range} outside the header and ${name} (${start}..${end})`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'embed-values.png'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the host page CSS does not reach inside the element, and the element CSS does not reach the page', async () => {
  const page = await openHost([SMALL]);
  await page.waitForSelector('#view #tensor-table tbody tr');
  await event(page, 'bitlens-load');
  // A settled view (its statistics done), so both probes see the same elements.
  await reportWhen(page, (r) => r.files.length > 0 && r.files[0].tensors.every((t) => t.byte_entropy !== undefined));
  await page.waitForTimeout(300);
  const probe = () =>
    page.evaluate(() => {
      const root = document.getElementById('view').shadowRoot;
      const props = ['font-family', 'font-size', 'font-style', 'font-weight', 'color', 'background-color', 'line-height',
        'letter-spacing', 'word-spacing', 'text-transform', 'text-align', 'padding-top', 'padding-left', 'margin-top',
        'border-top-style', 'border-top-width', 'border-top-color', 'box-shadow', 'outline-style', 'border-spacing'];
      const pick = (el) => {
        const cs = getComputedStyle(el);
        return Object.fromEntries(props.map((p) => [p, cs.getPropertyValue(p)]));
      };
      const inner = {};
      for (const sel of ['.bitlens-root', '.bitlens-root div', 'table', 'th', 'td', 'tr', 'button', 'input', 'svg', 'span']) {
        const el = root.querySelector(sel);
        if (el) inner[sel] = pick(el);
      }
      const hostButton = getComputedStyle(document.querySelector('main button'));
      return { inner, hostButton: { padding: hostButton.paddingTop, font: hostButton.fontFamily } };
    });
  const styled = await probe();
  // The module's own `main` left the page alone (no full app mounted on <body>).
  assert.equal(await page.evaluate(() => document.querySelectorAll('.app').length), 0);
  for (const sel of ['.bitlens-root', 'table', 'td', 'button']) assert.ok(styled.inner[sel], `the view has a ${sel}`);
  // The page's own button keeps the page's style (the app's `.button`/`button` rules stay inside).
  assert.equal(styled.hostButton.padding, '12px');
  assert.match(styled.hostButton.font, /Impact/);
  await page.screenshot({ path: path.join(SHOTS, 'embed-host-page.png'), fullPage: true });
  await page.evaluate(() => {
    document.getElementById('host-css').disabled = true;
  });
  const plain = await probe();
  assert.deepEqual(styled.inner, plain.inner);
  assert.notEqual(plain.hostButton.padding, '12px', 'the host CSS was on in the first probe');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('two elements on one page share one worker pool', async () => {
  // Two cores as far as the page knows: one pool runs at most two workers, two pools up to four.
  let live = 0;
  let peak = 0;
  const page = await openHost([SMALL], { 'auto-stats': '200000000' }, {
    beforeLoad: async (page) => {
      const cdp = await s.context.newCDPSession(page);
      await cdp.send('Emulation.setHardwareConcurrencyOverride', { hardwareConcurrency: 2 });
      page.on('worker', (w) => {
        live += 1;
        peak = Math.max(peak, live);
        w.on('close', () => (live -= 1));
      });
    },
  });
  await page.evaluate((src) => {
    const second = document.createElement('bitlens-view');
    second.id = 'second';
    second.setAttribute('view', 'table');
    second.setAttribute('auto-stats', '200000000');
    second.setAttribute('src', src);
    document.querySelector('main').append(second);
  }, dataUrl(F32));
  const all = (r) => r.files.length > 0 && r.files.every((f) => f.tensors.every((t) => t.byte_entropy !== undefined));
  const [a, b] = await Promise.all([reportWhen(page, all, 'view'), reportWhen(page, all, 'second')]);
  assert.deepEqual(a.summary, reference(SMALL).summary);
  assert.deepEqual(b.summary, reference(F32).summary);
  const pool = await page.evaluate(() => customElements.get('bitlens-view').workers());
  assert.ok(pool >= 1 && pool <= 2, `the page's pool runs ${pool} workers`);
  assert.ok(peak >= 1 && peak <= 2, `${peak} workers ran at once for two elements`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('a missing file gives a bitlens-error naming its URL', async () => {
  const page = await openHost(['missing.safetensors']);
  const e = await event(page, 'bitlens-error');
  assert.equal(e.detail.url, dataUrl('missing.safetensors'));
  assert.match(e.detail.message, /404/);
  await page.close();
});

test('an element moved in the page mounts its view once, and inspect() follows it', async () => {
  const page = await openHost([SMALL], { 'auto-stats': '0' });
  await event(page, 'bitlens-load');
  const views = await page.evaluate(async () => {
    const view = document.getElementById('view');
    const home = view.parentElement;
    view.remove();
    const detached = await view.inspect().then(
      () => 'resolved',
      (e) => e.message,
    );
    document.body.append(view);
    home.append(view); // moved twice before the module answers
    const r = await view.inspect();
    return { detached, apps: view.shadowRoot.querySelectorAll('.bitlens-root > *').length, files: r.files.length };
  });
  assert.match(views.detached, /not mounted/);
  assert.equal(views.apps, 1);
  await event(page, 'bitlens-load', 'view', () => true);
  const r = await reportWhen(page, (r) => r.files.length === 1, 'view', 'the reloaded file');
  assert.equal(r.files[0].tensors.length, reference(SMALL).files[0].tensors.length);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('what a hub page downloads for the element (its module and one worker module) stays under 1.5 MB gzip', async () => {
  const zlib = await import('node:zlib');
  const gz = (names) => names.reduce((n, f) => n + zlib.gzipSync(fs.readFileSync(path.join(EMBED, f)), { level: 9 }).length, 0);
  const page = gz(['bitlens-embed.js', 'bitlens-web.js', 'bitlens-web_bg.wasm']);
  const worker = gz(['worker.js', 'bitlens-wasm.js', 'bitlens-wasm_bg.wasm']);
  assert.ok(page + worker <= 1.5e6, `page ${page} + worker ${worker} bytes gzip`);
});
